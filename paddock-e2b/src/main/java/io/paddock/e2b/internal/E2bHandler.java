package io.paddock.e2b.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.ErrorCode;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxInfo;
import io.paddock.SandboxQuery;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;
import io.paddock.e2b.E2bAccess;
import io.paddock.e2b.E2bOptions;
import io.paddock.wire.Wire;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.Fields;

import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The E2B listener's one handler: in-sandbox calls (those with an {@code E2b-Sandbox-Id} header) go to
 * {@link SandboxCalls}; everything else is E2B's control plane, answered here over {@link E2bAccess}. Every
 * request runs blocking on a pool thread. Errors have E2B's shape, {@code {"code","message"}}, and the statuses
 * its SDKs map to their exceptions. Thread-safe.
 */
public final class E2bHandler extends Handler.Abstract {
    private static final System.Logger LOG = System.getLogger(E2bHandler.class.getName());
    /** The envd version reported: the SDK gates features on it (0.5.7: octet-stream uploads, stdin close). */
    static final String ENVD_VERSION = "0.5.7";
    /** The label that remembers which template a sandbox was created from. */
    static final String TEMPLATE_LABEL = "e2b.dev/template";
    /** Metadata that picks the isolation tier ({@code runc} or {@code runsc}); kept as a label too. */
    static final String RUNTIME_METADATA = "paddock.io/runtime";
    private static final Pattern SANDBOX = Pattern.compile("(?:/v2)?/sandboxes/([^/]+)(/[a-z]+)?");
    /** E2B's lowest and highest timeouts, in seconds (E2B allows up to 24 h on its paid plans). */
    private static final long MAX_TIMEOUT_S = SandboxSpec.MAX_TIMEOUT.toSeconds();

    private final E2bOptions options;
    private final E2bAccess access;
    private final AccessTokens tokens;
    private final SandboxCalls inSandbox;
    private final TemplateImages templateImages;

    public E2bHandler(E2bOptions options, E2bAccess access, CodeState code) {
        super(InvocationType.BLOCKING);
        this.options = options;
        this.access = access;
        this.tokens = new AccessTokens(options.key());
        this.inSandbox = new SandboxCalls(options, access, tokens, code);
        this.templateImages = new TemplateImages(access);
    }

    @Override
    public boolean handle(Request request, Response response, Callback callback) {
        response.getHeaders().put(HttpHeader.CACHE_CONTROL, "no-store");
        try {
            if (request.getHeaders().get(SandboxCalls.SANDBOX_ID) != null) {
                inSandbox.handle(request, response, callback);
            } else {
                controlPlane(request, response, callback);
            }
        } catch (Throwable t) {
            fail(request, response, callback, t);
        }
        return true;
    }

    private void controlPlane(Request request, Response response, Callback callback) throws IOException {
        String method = request.getMethod();
        String path = Request.getPathInContext(request);
        if ("GET".equals(method) && "/health".equals(path)) {
            Http.noContent(response, callback);
            return;
        }
        E2bAccess.Holder holder = authenticate(request);
        if ("/sandboxes".equals(path) || "/v2/sandboxes".equals(path)) {
            switch (method) {
                case "POST" -> {
                    created(response, callback, create(holder, Http.json(request, options.maxJsonBytes())));
                    return;
                }
                case "GET" -> {
                    Http.json(response, callback, 200, list(holder, query(request)));
                    return;
                }
                default -> throw E2bError.unsupported(method, path);
            }
        }
        Matcher m = SANDBOX.matcher(path);
        if (!m.matches()) {
            throw E2bError.unsupported(method, path);
        }
        String id = m.group(1);
        String action = m.group(2) == null ? "" : m.group(2);
        switch (method + " " + action) {
            case "GET " -> Http.json(response, callback, 200, detail(live(holder, id)));
            case "DELETE " -> {
                Sandbox sb = live(holder, id);
                inSandbox.release(sb);
                sb.destroy();
                Http.noContent(response, callback);
            }
            case "POST /timeout" -> {
                Sandbox sb = live(holder, id);
                sb.setTimeout(timeout(Http.json(request, options.maxJsonBytes()), true));
                Http.noContent(response, callback);
            }
            case "POST /connect" -> {
                Sandbox sb = live(holder, id);
                JsonNode body = Http.json(request, options.maxJsonBytes());
                boolean resumed = false;
                if (sb.state() == SandboxState.PAUSED) {
                    sb.resume();
                    resumed = true;
                }
                if (body.has("timeout")) { // "TTL is only extended"
                    Duration t = timeout(body, true);
                    if (Instant.now().plus(t).isAfter(sb.info().expiresAt())) {
                        sb.setTimeout(t);
                    }
                }
                Http.json(response, callback, resumed ? 201 : 200, sandbox(sb.info()));
            }
            case "POST /pause" -> {
                Sandbox sb = live(holder, id);
                if (sb.state() == SandboxState.PAUSED) {
                    throw new E2bError(409, "sandbox " + id + " is already paused");
                }
                sb.pause();
                Http.noContent(response, callback);
            }
            case "POST /resume" -> {
                Sandbox sb = live(holder, id);
                JsonNode body = Http.json(request, options.maxJsonBytes());
                if (sb.state() != SandboxState.PAUSED) {
                    throw new E2bError(409, "sandbox " + id + " is not paused");
                }
                sb.resume();
                if (body.has("timeout")) {
                    sb.setTimeout(timeout(body, true));
                }
                created(response, callback, sb);
            }
            default -> throw E2bError.unsupported(method, path);
        }
    }

    private E2bAccess.Holder authenticate(Request request) {
        String key = request.getHeaders().get("X-API-Key");
        if (key == null) {
            String auth = request.getHeaders().get(HttpHeader.AUTHORIZATION);
            if (auth != null && auth.regionMatches(true, 0, "Bearer ", 0, 7)) {
                key = auth.substring(7).trim();
            }
        }
        try {
            return access.authenticate(Request.getRemoteAddr(request), key == null ? "" : key.trim());
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.PERMISSION_DENIED) {
                throw new E2bError(401, key == null ? "an X-API-Key header is required (E2B_API_KEY: a Paddock tenant"
                        + " token or the operator's token)" : "the API key is not a Paddock token this daemon knows");
            }
            throw e;
        }
    }

    /** A sandbox of this holder that E2B would still call alive (running or paused); 404 otherwise. */
    private static Sandbox live(E2bAccess.Holder holder, String id) {
        Sandbox sb;
        try {
            sb = holder.get(id);
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.NOT_FOUND || e.code() == ErrorCode.INVALID_ARGUMENT) {
                throw notFound(id);
            }
            throw e;
        }
        SandboxState s = sb.state();
        if (s != SandboxState.RUNNING && s != SandboxState.PAUSED) {
            throw notFound(id);
        }
        return sb;
    }

    private static E2bError notFound(String id) {
        return new E2bError(404, "sandbox \"" + id + "\" doesn't exist or you don't have access to it");
    }

    private Sandbox create(E2bAccess.Holder holder, JsonNode body) {
        for (String field : List.of("mcp", "network", "volumeMounts", "autoResume", "iam")) {
            if (body.hasNonNull(field)) {
                throw new E2bError(400, "'" + field + "' is not supported by Paddock's E2B API (see docs/COMPAT.md)");
            }
        }
        if (body.path("autoPause").asBoolean(false)) {
            throw new E2bError(400, "'autoPause' (onTimeout: 'pause') is not supported by Paddock's E2B API; sandboxes"
                    + " are killed at their timeout (see docs/COMPAT.md)");
        }
        String template = body.hasNonNull("templateID") ? body.get("templateID").asText() : E2bOptions.BASE_TEMPLATE;
        String image = options.image(template).orElseThrow(() -> new E2bError(404, "template '" + template
                + "' not found; this daemon serves " + String.join(", ", new java.util.TreeSet<>(options.templates().keySet()))));
        SandboxSpec.Builder spec = SandboxSpec.builder().image(image);
        spec.timeout(body.has("timeout") ? timeout(body, false) : Duration.ofSeconds(300));
        JsonNode metadata = body.path("metadata");
        if (metadata.isObject()) {
            for (Iterator<Map.Entry<String, JsonNode>> it = metadata.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                if (!e.getValue().isTextual()) {
                    throw new E2bError(400, "metadata: the value of '" + e.getKey() + "' must be a string");
                }
                if (e.getKey().startsWith("e2b.dev/")) {
                    throw new E2bError(400, "metadata: keys under 'e2b.dev/' are reserved");
                }
                try {
                    spec.label(e.getKey(), e.getValue().asText());
                } catch (SandboxException x) {
                    throw new E2bError(400, "metadata: Paddock keeps metadata as labels, so " + x.getMessage()
                            .replaceFirst("^labels: ", ""));
                }
                if (RUNTIME_METADATA.equals(e.getKey())) {
                    spec.runtime(e.getValue().asText());
                }
            }
        } else if (!metadata.isMissingNode() && !metadata.isNull()) {
            throw new E2bError(400, "metadata: an object of strings is expected");
        }
        if (template.length() <= 63 && template.matches("[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")) {
            spec.label(TEMPLATE_LABEL, template);
        }
        JsonNode env = body.path("envVars");
        if (env.isObject()) {
            Map<String, String> vars = new LinkedHashMap<>();
            env.fields().forEachRemaining(e -> vars.put(e.getKey(), e.getValue().asText()));
            spec.env(vars);
        }
        if (body.has("allow_internet_access") && body.get("allow_internet_access").asBoolean()) {
            spec.network(io.paddock.NetworkMode.OPEN); // public addresses only; the deny list stays
        }
        SandboxSpec built = spec.build();
        options.recipe(template).ifPresent(recipe -> templateImages.await(template, image, recipe, options.prepareWait()));
        return holder.create(built);
    }

    private static Duration timeout(JsonNode body, boolean required) {
        JsonNode t = body.path("timeout");
        if (t.isMissingNode() && !required) {
            return Duration.ofSeconds(300);
        }
        if (!t.canConvertToLong() || !t.isIntegralNumber()) {
            throw new E2bError(400, "timeout: a number of seconds is expected");
        }
        long s = t.asLong();
        if (s < 1 || s > MAX_TIMEOUT_S) {
            throw new E2bError(400, "timeout: must be between 1 and " + MAX_TIMEOUT_S + " seconds, got " + s);
        }
        return Duration.ofSeconds(s);
    }

    private void created(Response response, Callback callback, Sandbox sb) {
        Http.json(response, callback, 201, sandbox(sb.info()));
    }

    /** E2B's {@code Sandbox}: what create and connect answer, with the access token. */
    private ObjectNode sandbox(SandboxInfo info) {
        ObjectNode o = Wire.object();
        String id = info.id().value();
        o.put("templateID", templateOf(info));
        o.put("sandboxID", id);
        info.name().ifPresent(n -> o.put("alias", n));
        o.put("clientID", "paddock");
        o.put("envdVersion", ENVD_VERSION);
        String token = tokens.token(id);
        o.put("envdAccessToken", token);
        o.put("trafficAccessToken", token);
        o.putNull("domain");
        return o;
    }

    private ObjectNode detail(Sandbox sb) {
        return listed(sb.info(), true);
    }

    private ObjectNode listed(SandboxInfo info, boolean withToken) {
        ObjectNode o = Wire.object();
        String id = info.id().value();
        o.put("templateID", templateOf(info));
        info.name().ifPresent(n -> o.put("alias", n));
        o.put("sandboxID", id);
        o.put("clientID", "paddock");
        o.put("startedAt", info.createdAt().toString());
        o.put("endAt", info.expiresAt().toString());
        o.put("envdVersion", ENVD_VERSION);
        if (withToken) {
            o.put("envdAccessToken", tokens.token(id));
            o.putNull("domain");
        }
        // Paddock's defaults; the engine does not report a sandbox's limits back (docs/COMPAT.md).
        o.put("cpuCount", 1);
        o.put("memoryMB", 512);
        o.put("diskSizeMB", 1024);
        ObjectNode metadata = o.putObject("metadata");
        new java.util.TreeMap<>(info.labels()).forEach((k, v) -> {
            if (!k.startsWith("e2b.dev/")) {
                metadata.put(k, v);
            }
        });
        o.put("state", info.state() == SandboxState.PAUSED ? "paused" : "running");
        o.putArray("volumeMounts");
        return o;
    }

    private static String templateOf(SandboxInfo info) {
        return info.labels().getOrDefault(TEMPLATE_LABEL, info.image());
    }

    private ArrayNode list(E2bAccess.Holder holder, Fields query) {
        SandboxQuery.Builder q = SandboxQuery.builder();
        String metadata = query.getValue("metadata");
        if (metadata != null && !metadata.isEmpty()) {
            for (String pair : metadata.split("&")) {
                int eq = pair.indexOf('=');
                if (eq <= 0) {
                    throw new E2bError(400, "metadata: 'key=value' pairs joined by '&' are expected");
                }
                q.label(decode(pair.substring(0, eq)), decode(pair.substring(eq + 1)));
            }
        }
        List<SandboxState> states = new ArrayList<>();
        for (String v : query.getValuesOrEmpty("state")) {
            for (String s : v.split(",")) {
                switch (s.trim().toLowerCase(Locale.ROOT)) {
                    case "running" -> states.add(SandboxState.RUNNING);
                    case "paused" -> states.add(SandboxState.PAUSED);
                    case "" -> { }
                    default -> throw new E2bError(400, "state: 'running' or 'paused' is expected, got '" + s + "'");
                }
            }
        }
        if (states.isEmpty()) {
            states = List.of(SandboxState.RUNNING, SandboxState.PAUSED);
        }
        q.state(states.toArray(new SandboxState[0]));
        String template = query.getValue("template");
        boolean newestFirst = !"asc".equalsIgnoreCase(query.getValue("order"));
        int limit = 1000;
        String l = query.getValue("limit");
        if (l != null) {
            try {
                limit = Math.max(1, Math.min(1000, Integer.parseInt(l)));
            } catch (NumberFormatException e) {
                throw new E2bError(400, "limit: a number is expected");
            }
        }
        List<SandboxInfo> found = new ArrayList<>(holder.list(q));
        if (newestFirst) {
            java.util.Collections.reverse(found);
        }
        ArrayNode a = Wire.JSON.createArrayNode();
        for (SandboxInfo info : found) {
            SandboxInfo v = holder.view(info);
            if (template != null && !template.equals(templateOf(v))) {
                continue;
            }
            if (a.size() >= limit) {
                break;
            }
            a.add(listed(v, false));
        }
        return a;
    }

    /** A metadata key or value as the SDK sends it: URL-encoded, then encoded again with the pairs. */
    private static String decode(String s) {
        String v = s;
        for (int i = 0; i < 2 && v.indexOf('%') >= 0; i++) {
            try {
                v = URLDecoder.decode(v, StandardCharsets.UTF_8);
            } catch (IllegalArgumentException e) {
                break;
            }
        }
        return v;
    }

    private static Fields query(Request request) {
        try {
            return Request.extractQueryParameters(request);
        } catch (RuntimeException e) {
            throw new E2bError(400, "malformed query string");
        }
    }

    // ---- errors ----

    static void fail(Request request, Response response, Callback callback, Throwable t) {
        if (response.isCommitted()) {
            LOG.log(System.Logger.Level.DEBUG, "E2B response failed after it was committed", t);
            callback.failed(t);
            return;
        }
        int status;
        String message;
        if (t instanceof E2bError e) {
            status = e.status();
            message = e.getMessage();
        } else if (t instanceof SandboxException e) {
            status = E2bError.status(e);
            message = e.getMessage();
            if (status == 429) {
                response.getHeaders().put(HttpHeader.RETRY_AFTER, "1");
            }
            if (e.code() == ErrorCode.INTERNAL) {
                LOG.log(System.Logger.Level.WARNING, request.getMethod() + " " + Request.getPathInContext(request)
                        + " failed: " + e.getMessage(), e);
            }
        } else {
            LOG.log(System.Logger.Level.WARNING, request.getMethod() + " " + Request.getPathInContext(request) + " failed", t);
            status = 500;
            message = "internal error (" + t.getClass().getSimpleName() + "); see the daemon's log";
        }
        if (status == 413 || request.getLength() > 0 || request.getHeaders().contains(HttpHeader.TRANSFER_ENCODING)) {
            response.getHeaders().put(HttpHeader.CONNECTION, "close"); // the body may be unread
        }
        if (status == 413) {
            Http.discardRest(request); // the client may still be sending it
        }
        if (SandboxCalls.isCodeInterpreter(request)) {
            Http.text(response, callback, status, message); // the code interpreter answers plain text
        } else {
            Http.json(response, callback, status, Http.error(status, message));
        }
    }
}
