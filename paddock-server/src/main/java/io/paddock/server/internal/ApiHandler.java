package io.paddock.server.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.ErrorCode;
import io.paddock.ExecRequest;
import io.paddock.ImageInfo;
import io.paddock.ImageListener;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.SandboxInfo;
import io.paddock.SandboxQuery;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;
import io.paddock.code.CodePolicyException;
import io.paddock.code.CodeResult;
import io.paddock.code.internal.CodeWire;
import io.paddock.wire.HttpStatus;
import io.paddock.wire.ImageWire;
import io.paddock.wire.Wire;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.Fields;
import org.eclipse.jetty.websocket.server.ServerWebSocketContainer;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The HTTP API: authenticates, routes, translates JSON to {@link Paddock} calls and back, and maps every
 * failure to the one {@code Error} shape. Every sandbox it touches is looked up through {@link Tenancy}
 * with the request's {@link Caller}, so a tenant reaches only its own (ATTACKS.md A62). Blocking: Jetty
 * runs each request on a pool thread, bounded by the connection limit. Stateless apart from its
 * collaborators, so thread-safe.
 */
public final class ApiHandler extends Handler.Abstract {
    private static final System.Logger LOG = System.getLogger(ApiHandler.class.getName());
    private static final String JSON_TYPE = "application/json";
    private static final int DEFAULT_PAGE = 100;
    private static final int MAX_PAGE = 1000;
    private static final int COPY_CHUNK = 64 * 1024;
    /** Request attribute: the handler read the whole body, so the connection can carry the next request. */
    private static final String BODY_READ = "io.paddock.bodyRead";
    /** How long the rest of a body refused for its size is read and dropped after the 413 (nginx's lingering_time). */
    private static final long LINGER_NANOS = TimeUnit.SECONDS.toNanos(30);

    private final Paddock paddock;
    private final AuthGuard auth;
    private final Limits limits;
    private final byte[] openapi;
    private final String version;
    private final String apiVersion;
    private final Supplier<String> runtime;
    private final ServerWebSocketContainer websockets;
    private final ScheduledExecutorService pinger;
    private final CodeRegistry code;
    private final CodeApi codeApi;
    private final ImageApi imageApi;
    private final VolumeApi volumeApi;
    private final Tenancy tenancy;
    private final PortApi ports;
    private final DashboardSessions dashboard;
    private final Metrics metrics;
    private final Audit audit;
    private final Metrics.Bytes execBytes;
    private final Metrics.Bytes fileBytes;

    public ApiHandler(Paddock paddock, AuthGuard auth, Tenancy tenancy, Limits limits, byte[] openapi, String version,
                      Supplier<String> runtime, ServerWebSocketContainer websockets, ScheduledExecutorService pinger,
                      CodeRegistry code, PortApi ports, DashboardSessions dashboard, Metrics metrics, Audit audit) {
        super(InvocationType.BLOCKING);
        this.paddock = paddock;
        this.auth = auth;
        this.tenancy = tenancy;
        this.limits = limits;
        this.openapi = openapi.clone();
        this.version = version;
        this.apiVersion = Wire.parse(openapi).path("info").path("version").asText("1");
        this.runtime = runtime;
        this.websockets = websockets;
        this.pinger = pinger;
        this.code = code;
        this.codeApi = new CodeApi(code);
        this.imageApi = new ImageApi(paddock, tenancy, limits);
        this.volumeApi = new VolumeApi(paddock, tenancy);
        this.ports = ports;
        this.dashboard = dashboard;
        this.metrics = metrics;
        this.audit = audit;
        this.execBytes = metrics.bytes("exec");
        this.fileBytes = metrics.bytes("file");
    }

    @Override
    public boolean handle(Request request, Response response, Callback callback) {
        response.getHeaders().put(HttpHeader.CACHE_CONTROL, "no-store");
        response.getHeaders().put("X-Content-Type-Options", "nosniff");
        long began = System.nanoTime();
        Throwable failed = null;
        try {
            if (!ports.routeHost(request, response, callback)) { // a sandbox port's own host name: all of it is proxied
                dispatch(request, response, callback, began);
            }
        } catch (Throwable t) {
            failed = t;
            metrics.apiError(Audit.codeOf(t));
            fail(request, response, callback, t);
        }
        audit.end(request, response.getStatus(), failed); // state-changing calls only: Audit.audited
        return true;
    }

    private void dispatch(Request request, Response response, Callback callback, long began) throws IOException {
        String method = request.getMethod();
        String path = Request.getPathInContext(request);
        if ("GET".equals(method) && "/v1/health".equals(path)) {
            ObjectNode o = Wire.object();
            o.put("status", "ok");
            json(response, callback, 200, o);
            return;
        }
        if (PortApi.isSigned(path)) { // a signed port link: its token is the credential, there is no other
            ports.proxySigned(path, request, response, callback);
            return;
        }
        Fields query = query(request);
        boolean session = dashboard.presented(request); // the dashboard's cookie and no Authorization header
        Caller caller = session ? dashboard.check(request) : auth.check(Request.getRemoteAddr(request),
                request.getHeaders().getValuesList(HttpHeader.AUTHORIZATION),
                query.get("token") != null || query.get("access_token") != null);
        Route.Match m = Route.match(method, path);
        if (session) {
            DashboardSessions.permit(m.route());
        }
        audit.begin(request, caller, m, query, began);
        switch (m.route()) {
            case HEALTH, SIGNED_PROXY -> throw new IllegalStateException("handled above");
            case VERSION -> {
                ObjectNode o = Wire.object();
                o.put("version", version);
                o.put("api", apiVersion);
                o.put("runtime", runtime.get());
                if (paddock instanceof io.paddock.engine.internal.LocalPaddock local) {
                    ArrayNode pools = o.putArray("pools");
                    for (io.paddock.engine.internal.PoolStats s : local.poolStats()) {
                        ObjectNode n = pools.addObject();
                        n.put("shape", s.shape());
                        n.put("size", s.size());
                        n.put("idle", s.idle());
                        n.put("creating", s.creating());
                        n.put("hits", s.hits());
                        n.put("misses", s.misses());
                        n.put("created", s.created());
                        n.put("expired", s.expired());
                        n.put("failures", s.failures());
                        n.put("refillP50Ms", s.refillP50Ms());
                        n.put("refillP99Ms", s.refillP99Ms());
                    }
                }
                json(response, callback, 200, o);
            }
            case METRICS -> {
                if (!caller.isOperator()) { // counts across tenants: the operator's view, not a tenant's
                    throw new HttpError(403, ErrorCode.PERMISSION_DENIED, "metrics are the operator's: use the daemon's"
                            + " own token, not a tenant's");
                }
                byte[] text = metrics.scrape();
                response.setStatus(200);
                response.getHeaders().put(HttpHeader.CONTENT_TYPE, metrics.contentType());
                response.getHeaders().put(HttpHeader.CONTENT_LENGTH, text.length);
                response.write(true, ByteBuffer.wrap(text), callback);
            }
            case AUDIT -> json(response, callback, 200, audit.read(caller, query));
            case OPENAPI -> {
                response.setStatus(200);
                response.getHeaders().put(HttpHeader.CONTENT_TYPE, JSON_TYPE);
                response.write(true, ByteBuffer.wrap(openapi), callback);
            }
            case CREATE_SANDBOX -> {
                SandboxSpec spec = Wire.spec(readJson(request));
                Sandbox sb = tenancy.create(caller, spec);
                Audit.note(request, "sandbox", sb.id().value());
                response.getHeaders().put(HttpHeader.LOCATION, "/v1/sandboxes/" + sb.id().value());
                json(response, callback, 201, Wire.json(tenancy.view(caller, sb.info())));
            }
            case LIST_SANDBOXES -> json(response, callback, 200, list(caller, query));
            case GET_SANDBOX -> json(response, callback, 200, Wire.json(tenancy.view(caller, sandbox(caller, m).info())));
            case GET_SANDBOX_BY_NAME -> json(response, callback, 200,
                    Wire.json(tenancy.view(caller, tenancy.getByName(caller, m.param("name")).info())));
            case DELETE_SANDBOX -> {
                Sandbox sb = sandbox(caller, m);
                code.release(sb.id()); // its contexts and shells end first, then the sandbox
                sb.destroy();
                noContent(response, callback);
            }
            case SET_TIMEOUT -> {
                Sandbox sb = sandbox(caller, m);
                long ms = Wire.requiredLong(readJson(request), "timeout_ms");
                if (ms < 1) {
                    throw SandboxException.invalid("timeout_ms", "must be at least 1, got " + ms);
                }
                if (ms > SandboxSpec.MAX_TIMEOUT.toMillis()) {
                    throw SandboxException.invalid("timeout_ms", "must be at most " + SandboxSpec.MAX_TIMEOUT.toMillis()
                            + " (" + SandboxSpec.MAX_TIMEOUT.toDays() + " days), got " + ms);
                }
                sb.setTimeout(Duration.ofMillis(ms));
                json(response, callback, 200, Wire.json(tenancy.view(caller, sb.info())));
            }
            case PAUSE_SANDBOX -> {
                Sandbox sb = sandbox(caller, m);
                io.paddock.PauseMode mode = sb.pause();
                json(response, callback, 200, Wire.pauseResult(mode, Wire.json(tenancy.view(caller, sb.info()))));
            }
            case FORK_SANDBOX -> {
                Sandbox sb = sandbox(caller, m);
                com.fasterxml.jackson.databind.JsonNode body = readJson(request);
                long count = body.has("count") ? Wire.requiredLong(body, "count") : 1;
                if (count < 1 || count > 64) {
                    throw SandboxException.invalid("count", "must be between 1 and 64, got " + count);
                }
                java.util.List<Sandbox> forks = tenancy.fork(caller, sb, (int) count);
                Audit.forks(request, forks.stream().map(f -> f.id().value()).toList());
                json(response, callback, 201, Wire.forkResult(forks.stream()
                        .map(f -> Wire.json(tenancy.view(caller, f.info()))).toList()));
            }
            case RESUME_SANDBOX -> {
                Sandbox sb = sandbox(caller, m);
                sb.resume();
                json(response, callback, 200, Wire.json(tenancy.view(caller, sb.info())));
            }
            case UPDATE_LABELS -> {
                Sandbox sb = sandbox(caller, m);
                java.util.Map<String, String> labels = tenancy.checkLabels(caller, sb, Wire.labelsUpdate(readJson(request)));
                sb.updateLabels(labels);
                json(response, callback, 200, Wire.json(tenancy.view(caller, sb.info())));
            }
            case UPDATE_NETWORK -> {
                Sandbox sb = sandbox(caller, m);
                sb.updateNetwork(Wire.networkPolicy(readJson(request)));
                json(response, callback, 200, Wire.json(tenancy.view(caller, sb.info())));
            }
            case CREATE_CODEBASE -> {
                String name = beforeUpload(request, () -> tenancy.resourceName(caller, m.param("name"), "codebase"));
                io.paddock.CodebaseOptions options = beforeUpload(request, () -> CodebaseWire.options(query));
                try (ContextTar upload = readContext(request, "the codebase upload")) {
                    io.paddock.CodebaseInfo info = tenancy.createCodebase(caller,
                            () -> paddock.codebases().create(name, upload.root(), options), paddock.codebases()::remove);
                    response.getHeaders().put(HttpHeader.LOCATION, "/v1/codebases/" + m.param("name"));
                    json(response, callback, 201, CodebaseWire.json(tenancy.clientResourceName(caller, info.name()), info));
                }
            }
            case LIST_CODEBASES -> {
                ObjectNode out = Wire.object();
                ArrayNode all = out.putArray("codebases");
                paddock.codebases().list().stream().filter(c -> tenancy.ownsResource(caller, c.name()))
                        .forEach(c -> all.add(CodebaseWire.json(tenancy.clientResourceName(caller, c.name()), c)));
                json(response, callback, 200, out);
            }
            case GET_CODEBASE -> json(response, callback, 200, CodebaseWire.json(m.param("name"),
                    paddock.codebases().get(tenancy.resourceName(caller, m.param("name"), "codebase"))));
            case DELETE_CODEBASE -> {
                paddock.codebases().remove(tenancy.resourceName(caller, m.param("name"), "codebase"));
                noContent(response, callback);
            }
            case CODEBASE_DIFF -> json(response, callback, 200,
                    CodebaseWire.json(paddock.codebases().diff(sandbox(caller, m).id())));
            case CODEBASE_COMMIT -> {
                Sandbox committing = sandbox(caller, m);
                tenancy.checkCodebaseCommit(caller);
                io.paddock.CodebaseInfo info = paddock.codebases().commit(committing.id());
                json(response, callback, 200, CodebaseWire.json(tenancy.clientResourceName(caller, info.name()), info));
            }
            case SNAPSHOT -> {
                Sandbox sb = sandbox(caller, m);
                String tag = Wire.requiredText(readJson(request), "tag");
                Audit.note(request, "image", tag);
                // The new image is host-wide: a tenant names it in its own namespace, as for builds.
                tenancy.checkImageTags(caller, java.util.List.of(tag));
                // Its layer is the tenant's, charged to its image-bytes as its pulls and builds are (A83h).
                io.paddock.ImageInfo snapshot = tenancy.chargeImages(caller, images -> images.snapshot(sb, tag));
                json(response, callback, 200, io.paddock.wire.ImageWire.json(snapshot));
            }
            case PORT_URL -> {
                Sandbox sb = sandbox(caller, m);
                JsonNode body = carriesBody(request) ? readJson(request) : null;
                json(response, callback, 200, ports.issue(sb, m.param("port"), body, request));
            }
            case PORT_PROXY -> ports.proxyOwned(sandbox(caller, m), m.param("port"), request, response, callback);
            case LOGS -> json(response, callback, 200, Wire.json(sandbox(caller, m).logs()));
            case USAGE -> json(response, callback, 200, Wire.json(sandbox(caller, m).usage()));
            case EXEC -> {
                Sandbox sb = sandbox(caller, m);
                ExecRequest r = Wire.execRequest(readJson(request));
                if (r.outputLimit().bytes() > Limits.MAX_EXEC_OUTPUT_BYTES) {
                    throw SandboxException.invalid("output_limit_bytes", "at most " + Limits.MAX_EXEC_OUTPUT_BYTES
                            + " for a buffered exec (got " + r.outputLimit().bytes()
                            + "); use /exec/stream for more output");
                }
                json(response, callback, 200, Wire.json(sb.exec(r)));
            }
            case EXEC_STREAM -> execStream(request, response, callback, caller, sandbox(caller, m));
            case EXEC_SOCKET -> execSocket(request, response, callback, caller);
            case READ_FILE -> download(response, callback, sandbox(caller, m), pathParam(query, "path"));
            case WRITE_FILE -> upload(request, response, callback, sandbox(caller, m), pathParam(query, "path"));
            case LIST_FILES -> json(response, callback, 200,
                    Wire.fileList(sandbox(caller, m).files().list(pathParam(query, "path"))));
            case STAT_FILE -> json(response, callback, 200,
                    Wire.json(sandbox(caller, m).files().stat(pathParam(query, "path"))));
            case MKDIR -> {
                Sandbox sb = sandbox(caller, m);
                String p = Wire.requiredText(readJson(request), "path");
                Audit.note(request, "path", p);
                sb.files().mkdir(p);
                noContent(response, callback);
            }
            case REMOVE_FILE -> {
                Sandbox sb = sandbox(caller, m);
                JsonNode body = readJson(request);
                String p = Wire.requiredText(body, "path");
                Audit.note(request, "path", p);
                if (Wire.optionalBool(body, "recursive", false)) {
                    sb.files().removeRecursive(p);
                } else {
                    sb.files().remove(p);
                }
                noContent(response, callback);
            }
            case MOVE_FILE -> {
                Sandbox sb = sandbox(caller, m);
                JsonNode body = readJson(request);
                String from = Wire.requiredText(body, "from");
                String to = Wire.requiredText(body, "to");
                Audit.note(request, "path", from);
                Audit.note(request, "to", to);
                sb.files().move(from, to);
                noContent(response, callback);
            }
            case CODE_LANGUAGES -> json(response, callback, 200, CodeApi.languages());
            case CODE_RUN, RUN_CELL -> {
                Sandbox sb = sandbox(caller, m);
                JsonNode body = readJson(request);
                if (CodeStream.asked(request)) {
                    streamCode(request, response, callback, m, sb, body);
                } else {
                    reply(response, callback, codeApi.handle(m.route(), m.params(), sb, body));
                }
            }
            case CODE_CHECK, CODE_INSTALL, SANDBOX_LANGUAGES, LIST_CONTEXTS, CREATE_CONTEXT, GET_CONTEXT, DELETE_CONTEXT,
                    RESTART_CONTEXT, CREATE_SHELL, GET_SHELL, DELETE_SHELL, SHELL_EXEC -> {
                Sandbox sb = sandbox(caller, m);
                JsonNode body = "POST".equals(method) && m.route() != Route.RESTART_CONTEXT ? readJson(request) : null;
                reply(response, callback, codeApi.handle(m.route(), m.params(), sb, body));
            }
            case CREATE_VOLUME -> {
                JsonNode body = readJson(request);
                Audit.note(request, "name", body.path("name").isTextual() ? body.get("name").asText() : null);
                json(response, callback, 201, volumeApi.create(caller, body));
            }
            case LIST_VOLUMES -> json(response, callback, 200, volumeApi.list(caller));
            case GET_VOLUME -> json(response, callback, 200, volumeApi.get(caller, m.param("name")));
            case DELETE_VOLUME -> {
                volumeApi.remove(caller, m.param("name"));
                noContent(response, callback);
            }
            case LIST_IMAGES -> json(response, callback, 200, imageApi.list());
            case GET_IMAGE -> json(response, callback, 200, imageApi.inspect(ImageApi.ref(single(query, "ref"))));
            case DELETE_IMAGE -> {
                imageApi.remove(caller, ImageApi.ref(single(query, "ref")));
                noContent(response, callback);
            }
            case PRUNE_IMAGES -> json(response, callback, 200, imageApi.prune(caller));
            case PULL_IMAGE, PUSH_IMAGE -> {
                JsonNode body = readJson(request); // its credentials are never noted: only the references
                Audit.note(request, "image", body.path("ref").isTextual() ? body.get("ref").asText() : null);
                Audit.note(request, "target", body.path("target").isTextual() ? body.get("target").asText() : null);
                imageOperation(request, response, callback, m.route() == Route.PULL_IMAGE ? imageApi.pull(caller, body)
                        : imageApi.push(caller, body));
            }
            case BUILD_IMAGE -> {
                ImageApi.BuildRequest r = beforeUpload(request, () -> imageApi.buildRequest(caller, values(query, "tag"),
                        single(query, "dockerfile"), values(query, "build_arg")));
                try (ContextTar context = readContext(request)) {
                    imageOperation(request, response, callback, imageApi.build(caller, r, context));
                }
            }
            case BUILD_IMAGE_SPEC -> {
                ImageApi.BuildRequest r = beforeUpload(request, () -> imageApi.buildRequest(caller, values(query, "tag"),
                        null, List.of()));
                try (ContextTar context = readContext(request)) {
                    imageOperation(request, response, callback, imageApi.buildSpec(caller, r.tags(), context));
                }
            }
        }
    }

    /** A failure after a stream's 200 went out: the stream's error event says it; metrics and the audit count it. */
    private void streamFailed(Request request, RuntimeException e) {
        metrics.apiError(Audit.codeOf(e));
        Audit.failed(request, Audit.codeOf(e));
    }

    // ---- images ----

    /**
     * Runs a pull, push or build: answered with its {@code ImageInfo}, or, when the client asks for
     * {@code application/x-ndjson}, streamed as progress events ({@link ImageStream}), as a code run is. A
     * failure before the first event is thrown, so it gets its usual status and body; a later one becomes the
     * stream's {@code error} event.
     */
    private void imageOperation(Request request, Response response, Callback callback, ImageApi.Operation op) {
        if (!NdjsonStream.asked(request)) {
            json(response, callback, 200, ImageWire.json(op.run(ImageListener.NONE)));
            return;
        }
        ImageStream stream = new ImageStream(response, pinger, limits.idleTimeout().dividedBy(3));
        try {
            ImageInfo image;
            try {
                image = op.run(stream);
            } catch (RuntimeException e) {
                if (stream.abandonIfUnstarted()) {
                    throw e;
                }
                streamFailed(request, e);
                stream.failed(failure(request, e).body(), callback);
                return;
            }
            stream.done(image, callback);
        } finally {
            stream.close(); // no more heartbeats, whatever happened
        }
    }

    /**
     * Unpacks a build context body (a tar) into a fresh directory, with the upload limits: 413 from
     * Content-Length up front and again while streaming, 408 for a body under the minimum rate.
     */
    private ContextTar readContext(Request request) throws IOException {
        return readContext(request, "the build context");
    }

    /** As {@link #readContext(Request)}, for an upload named {@code what} in errors. */
    private ContextTar readContext(Request request, String what) throws IOException {
        long length = request.getLength();
        if (length > limits.maxUploadBytes()) {
            throw HttpError.tooLarge(what, limits.maxUploadBytes());
        }
        ContextTar context;
        try (BodyStream body = uploadBody(request, what)) {
            try {
                context = ContextTar.receive(body, limits.maxUploadBytes(), what); // reads the body to its end
            } catch (HttpError e) {
                throw e; // over the limit or too slow: the connection closes
            } catch (RuntimeException e) {
                drain(request, body); // a context refused part-way (400): the client still sending it sees why
                throw e;
            }
        }
        request.setAttribute(BODY_READ, Boolean.TRUE);
        return context;
    }

    /** The checks of an upload's query, made before its body is read; a refusal drains the body first ({@link #drain}). */
    private <T> T beforeUpload(Request request, Supplier<T> checks) {
        try {
            return checks.get();
        } catch (RuntimeException e) {
            drain(request, null);
            throw e;
        }
    }

    private BodyStream uploadBody(Request request, String what) {
        return BodyStream.of(request, limits.maxUploadBytes(), what, limits.idleTimeout().toNanos(), limits.minUploadRate());
    }

    /**
     * Reads and discards what is left of an authenticated upload the daemon refuses (a build's bad query, a
     * tenant's tag, a context refused part-way), within the upload limits, before answering. A client that
     * streams the body (the remote SDK) would otherwise meet a reset connection while still sending, and never
     * see the answer (java.net.http also cannot wait for {@code 100 Continue} here: it hangs on a final
     * answer). Refusals before authentication are never drained. A body too slow is given up on: the connection
     * then closes, as for any refusal before the body was read. A body over the limit is given up on too, and what
     * is left of it dropped once the answer has gone out ({@link #answerThenDropTheBody}).
     */
    private void drain(Request request, BodyStream started) {
        if (!carriesBody(request) || request.getLength() > limits.maxUploadBytes()) {
            return;
        }
        BodyStream body = started != null ? started : uploadBody(request, "the request body");
        try {
            body.transferTo(OutputStream.nullOutputStream());
            request.setAttribute(BODY_READ, Boolean.TRUE);
        } catch (IOException | RuntimeException e) {
            // given up: the answer says Connection: close
        } finally {
            if (started == null) {
                try {
                    body.close();
                } catch (IOException ignored) {
                    // the answer goes out either way
                }
            }
        }
    }

    private static void reply(Response response, Callback callback, CodeApi.Reply r) {
        if (r.location() != null) {
            response.getHeaders().put(HttpHeader.LOCATION, r.location());
        }
        if (r.body() == null) {
            noContent(response, callback);
        } else {
            json(response, callback, r.status(), r.body());
        }
    }

    // ---- streamed code runs ----

    /**
     * A run or cell answered as newline-delimited JSON events ({@link CodeStream}). A failure before the first
     * event is thrown, so it gets its usual status and body; a later one becomes the stream's {@code error} event.
     */
    private void streamCode(Request request, Response response, Callback callback, Route.Match m, Sandbox sb,
                            JsonNode body) {
        CodeStream stream = new CodeStream(response, pinger, limits.idleTimeout().dividedBy(3));
        try {
            CodeResult result;
            try {
                result = codeApi.run(m.route(), m.params(), sb, body, stream);
            } catch (RuntimeException e) {
                if (stream.abandonIfUnstarted()) {
                    throw e;
                }
                streamFailed(request, e);
                stream.failed(failure(request, e).body(), callback);
                return;
            }
            stream.done(result, callback);
        } finally {
            stream.close(); // no more heartbeats, whatever happened
        }
    }

    // ---- sandboxes ----

    /**
     * The sandbox of the route's {@code id}, if the caller may see it. Malformed, unknown and other tenants'
     * ids get the same 404 with the same message form, so the answer is no oracle for which ids exist
     * (ATTACKS.md A62). Every route with an id resolves it here first, before reading anything else.
     */
    private Sandbox sandbox(Caller caller, Route.Match m) {
        return tenancy.get(caller, m.param("id"));
    }

    private ObjectNode list(Caller caller, Fields query) {
        SandboxQuery.Builder q = SandboxQuery.builder();
        for (String label : values(query, "label")) {
            int eq = label.indexOf('=');
            if (eq <= 0) {
                throw SandboxException.invalid("label", "key=value is expected, got '" + Limits.shorten(label) + "'");
            }
            tenancy.checkFilter(caller, label.substring(0, eq));
            q.label(label.substring(0, eq), label.substring(eq + 1));
        }
        for (String s : values(query, "state")) {
            try {
                q.state(SandboxState.valueOf(s.trim().toUpperCase(Locale.ROOT)));
            } catch (IllegalArgumentException e) {
                throw SandboxException.invalid("state", "unknown state '" + Limits.shorten(s)
                        + "' (known: CREATING, RUNNING, STOPPING, STOPPED)");
            }
        }
        String name = single(query, "name");
        if (name != null) {
            q.name(tenancy.filterName(caller, name));
        }
        int limit = DEFAULT_PAGE;
        String l = single(query, "limit");
        if (l != null) {
            try {
                limit = Integer.parseInt(l.trim());
            } catch (NumberFormatException e) {
                throw SandboxException.invalid("limit", "an integer is expected, got '" + Limits.shorten(l) + "'");
            }
            if (limit < 1 || limit > MAX_PAGE) {
                throw SandboxException.invalid("limit", "must be between 1 and " + MAX_PAGE + ", got " + limit);
            }
        }
        PageToken after = PageToken.decode(single(query, "page_token"));
        List<SandboxInfo> all = tenancy.list(caller, q);
        List<SandboxInfo> page = new ArrayList<>(Math.min(limit, all.size()));
        boolean more = false;
        for (SandboxInfo i : all) {
            if (after != null && !after.isBefore(i)) {
                continue;
            }
            if (page.size() == limit) {
                more = true;
                break;
            }
            page.add(i);
        }
        ObjectNode o = Wire.object();
        ArrayNode a = o.putArray("sandboxes");
        page.forEach(i -> a.add(Wire.json(tenancy.view(caller, i))));
        if (more) {
            o.put("next_page_token", PageToken.of(page.get(page.size() - 1)).encode());
        } else {
            o.putNull("next_page_token");
        }
        return o;
    }

    /** Where a page ended: the engine's order is created_at, then id. Opaque to clients. */
    record PageToken(Instant createdAt, String id) {
        static PageToken of(SandboxInfo i) {
            return new PageToken(i.createdAt(), i.id().value());
        }

        String encode() {
            return Base64.getUrlEncoder().withoutPadding()
                    .encodeToString(("1 " + createdAt + " " + id).getBytes(StandardCharsets.UTF_8));
        }

        static PageToken decode(String token) {
            if (token == null) {
                return null;
            }
            try {
                String[] p = new String(Base64.getUrlDecoder().decode(token.trim()), StandardCharsets.UTF_8).split(" ");
                if (p.length != 3 || !p[0].equals("1") || !SandboxId.isValid(p[2])) {
                    throw new IllegalArgumentException("bad form");
                }
                return new PageToken(Instant.parse(p[1]), p[2]);
            } catch (RuntimeException e) {
                throw SandboxException.invalid("page_token", "not a next_page_token this server issued");
            }
        }

        boolean isBefore(SandboxInfo i) {
            int c = createdAt.compareTo(i.createdAt());
            return c < 0 || (c == 0 && id.compareTo(i.id().value()) < 0);
        }
    }

    // ---- exec stream ----

    private void execStream(Request request, Response response, Callback callback, Caller caller, Sandbox sb) {
        SandboxState state = sb.info().state();
        if (state != SandboxState.RUNNING) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "sandbox " + sb.id() + " is "
                    + state.name().toLowerCase(Locale.ROOT) + "; exec needs a running sandbox");
        }
        upgrade(request, response, callback, caller, () -> ExecSocket.bound(sb, pinger, pingMillis(), execBytes));
    }

    /** {@code /v1/exec/stream}: a socket the caller reuses for command after command, in any of its sandboxes. */
    private void execSocket(Request request, Response response, Callback callback, Caller caller) {
        String remote = Request.getRemoteAddr(request);
        String requestId = request.getHeaders().get("X-Request-Id");
        upgrade(request, response, callback, caller, () -> ExecSocket.reusable(id -> tenancy.get(caller, id),
                (id, failure, began) -> audit.execOnSocket(caller, remote, requestId, id,
                        failure == null ? null : failure.code(), began),
                pinger, pingMillis(), execBytes));
    }

    private long pingMillis() {
        return Math.max(50, limits.idleTimeout().toMillis() / 3);
    }

    /** Upgrades to an exec socket, counted in the caller's tenant's share until it ends (A83). */
    private void upgrade(Request request, Response response, Callback callback, Caller caller,
                         Supplier<ExecSocket> socket) {
        Runnable release = tenancy.admitExecSocket(caller);
        boolean upgraded = false;
        try {
            upgraded = websockets.upgrade((upReq, upResp, upCb) -> socket.get().whenEnded(release), request, response,
                    callback);
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new SandboxException(ErrorCode.INTERNAL, "WebSocket upgrade failed: " + e.getClass().getSimpleName(), e);
        } finally {
            if (!upgraded) {
                release.run();
            }
        }
        if (!upgraded) {
            throw new HttpError(400, ErrorCode.INVALID_ARGUMENT,
                    "this endpoint is a WebSocket: send an upgrade request (Connection: Upgrade, Upgrade: websocket)");
        }
    }

    // ---- files ----

    private void download(Response response, Callback callback, Sandbox sb, String path) throws IOException {
        InputStream in = sb.files().openRead(path); // fails here (before the 200) if the file is missing
        try (in) {
            response.setStatus(200);
            response.getHeaders().put(HttpHeader.CONTENT_TYPE, "application/octet-stream");
            OutputStream out = Content.Sink.asOutputStream(response);
            byte[] buf = new byte[COPY_CHUNK];
            for (int n; (n = in.read(buf)) >= 0; ) {
                out.write(buf, 0, n); // blocks while the client is slow: the engine's window holds the rest
                fileBytes.out(n);
            }
            out.close();
        }
        callback.succeeded();
    }

    private void upload(Request request, Response response, Callback callback, Sandbox sb, String path) throws IOException {
        long length = request.getLength();
        if (length > limits.maxUploadBytes()) {
            throw HttpError.tooLarge("the upload", limits.maxUploadBytes());
        }
        try (BodyStream body = uploadBody(request, "the upload")) {
            try {
                sb.files().write(path, body); // streamed in chunks; aborted (no file left) if the body fails
            } finally {
                fileBytes.in(body.count());
            }
        }
        request.setAttribute(BODY_READ, Boolean.TRUE);
        noContent(response, callback);
    }

    private static String pathParam(Fields query, String name) {
        String v = single(query, name);
        if (v == null || v.isEmpty()) {
            throw SandboxException.invalid(name, "missing (a query parameter)");
        }
        if (v.length() > Limits.MAX_PATH_CHARS) {
            throw SandboxException.invalid(name, "longer than " + Limits.MAX_PATH_CHARS + " characters");
        }
        return v;
    }

    // ---- request helpers ----

    private static Fields query(Request request) {
        try {
            return Request.extractQueryParameters(request);
        } catch (RuntimeException e) {
            throw SandboxException.invalid("query", "malformed query string");
        }
    }

    private static List<String> values(Fields query, String name) {
        List<String> v = query.getValues(name);
        return v == null ? List.of() : v;
    }

    private static String single(Fields query, String name) {
        List<String> v = values(query, name);
        if (v.size() > 1) {
            throw SandboxException.invalid(name, "given more than once");
        }
        return v.isEmpty() ? null : v.get(0);
    }

    /** Reads a JSON body: 413 from Content-Length up front, 413 again while streaming, 400 if malformed. */
    private JsonNode readJson(Request request) throws IOException {
        long length = request.getLength();
        if (length > limits.maxJsonBytes()) {
            throw HttpError.tooLarge("the JSON body", limits.maxJsonBytes());
        }
        byte[] bytes;
        try (BodyStream in = BodyStream.of(request, limits.maxJsonBytes(), "the JSON body", limits.idleTimeout().toNanos(), 0)) {
            bytes = in.readAllBytes();
        }
        request.setAttribute(BODY_READ, Boolean.TRUE);
        return Wire.parse(bytes);
    }

    /** Whether the request has a body (its length, or chunks that say nothing of it). */
    private static boolean carriesBody(Request request) {
        return request.getLength() > 0 || request.getHeaders().contains(HttpHeader.TRANSFER_ENCODING);
    }

    // ---- responses ----

    private static void json(Response response, Callback callback, int status, JsonNode body) {
        byte[] bytes = Wire.bytes(body);
        response.setStatus(status);
        response.getHeaders().put(HttpHeader.CONTENT_TYPE, JSON_TYPE);
        response.getHeaders().put(HttpHeader.CONTENT_LENGTH, bytes.length);
        response.write(true, ByteBuffer.wrap(bytes), callback);
    }

    private static void noContent(Response response, Callback callback) {
        response.setStatus(204);
        response.write(true, null, callback);
    }

    private static void fail(Request request, Response response, Callback callback, Throwable t) {
        if (response.isCommitted()) {
            LOG.log(System.Logger.Level.DEBUG, "response failed after it was committed", t);
            callback.failed(t);
            return;
        }
        Failure f = failure(request, t);
        response.getHeaders().remove(HttpHeader.LOCATION);
        if (t instanceof HttpError h) {
            if (h.headerName() != null) {
                response.getHeaders().put(h.headerName(), h.headerValue());
            }
        } else if (f.status() == 429) {
            response.getHeaders().put(HttpHeader.RETRY_AFTER, "1");
        }
        if (f.status() == 408 || f.status() == 413 || carriesBody(request) && request.getAttribute(BODY_READ) == null) {
            // A refusal before the body was read (401, 404, 408, 413, …): the connection cannot carry another
            // request. Say so in this answer; were it closed only afterwards, a client that reused it meanwhile
            // would get no answer at all. Decided by what the handler read, not by how much of the body has
            // arrived, so that the same refusal always has the same headers (A62: no oracle).
            response.getHeaders().put(HttpHeader.CONNECTION, "close");
        }
        if (f.status() == 413 || BodyStream.refusedForSize(request)) {
            answerThenDropTheBody(request, response, callback, f);
        } else {
            json(response, callback, f.status(), f.body());
        }
    }

    /**
     * Sends a refusal of a body over the limit at once (A58: early), then reads and drops what the client goes on
     * sending ({@link BodyStream#dropRest}) before the exchange ends and the connection closes.
     */
    private static void answerThenDropTheBody(Request request, Response response, Callback callback, Failure f) {
        Callback.Completable sent = new Callback.Completable();
        json(response, sent, f.status(), f.body());
        try {
            sent.get(); // the write completes or fails within Jetty's idle timeout
            BodyStream.dropRest(request, LINGER_NANOS);
            callback.succeeded();
        } catch (ExecutionException e) {
            callback.failed(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            callback.failed(e);
        }
    }

    /** The request's path as logs may show it: a signed port link's token is hidden. */
    private static String loggable(Request request) {
        return PortApi.redact(Request.getPathInContext(request));
    }

    /** The status and {@code Error} body a failure answers with. */
    private record Failure(int status, ObjectNode body) {
    }

    /** Maps a failure to its answer (the one ErrorCode ⇄ HTTP mapping); logs what is the daemon's own fault. */
    private static Failure failure(Request request, Throwable t) {
        if (t instanceof HttpError h) {
            return new Failure(h.status(), Wire.error(h.code(), h.getMessage()));
        }
        if (t instanceof SandboxException e) {
            if (e.code() == ErrorCode.INTERNAL) {
                LOG.log(System.Logger.Level.WARNING, request.getMethod() + " " + loggable(request)
                        + " failed: " + e.getMessage(), e);
            }
            return new Failure(HttpStatus.of(e.code()), e instanceof CodePolicyException p ? CodeWire.error(p) : Wire.error(e));
        }
        LOG.log(System.Logger.Level.WARNING, request.getMethod() + " " + loggable(request) + " failed", t);
        return new Failure(500, Wire.error(ErrorCode.INTERNAL, "internal error (" + t.getClass().getSimpleName()
                + "); see the daemon's log"));
    }
}
