package io.paddock.server.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.wire.Wire;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.util.Fields;

import java.io.IOException;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Predicate;
import java.util.regex.Pattern;

/**
 * What the daemon writes to its audit log ({@link AuditLog}) and who may read it back ({@code GET /v1/audit}).
 *
 * <p>Every authenticated call to a state-changing route ({@link #audited}) gets one entry when its answer is
 * decided: {@code time}, {@code caller} ({@code operator} or {@code tenant}), {@code tenant} (its name; absent
 * for the operator), {@code action} (the route, as {@code create_sandbox}), {@code sandbox} (the id the call
 * named, or the id it created), what else names the call's object ({@code path} and {@code to} of file calls,
 * {@code name}, {@code context}, {@code shell}, {@code port}, {@code image}, {@code target}, {@code tags},
 * {@code forks}), {@code outcome} ({@code OK} or the error code), {@code status} (HTTP), {@code duration_ms},
 * {@code remote} (the client's address) and {@code request_id} (the client's {@code X-Request-Id}, when it sent
 * a well-formed one).
 *
 * <p>Never in an entry: a token (the caller is named, never its credential), a request body (spec, env,
 * secrets, a command's argv or stdin, code, file contents, registry credentials), response bodies, labels. What
 * is kept comes from the route's path parameters, its {@code path}, {@code ref} and {@code tag} query
 * parameters, and the few fields {@link ApiHandler} notes ({@link #note}), each cut to
 * {@value #MAX_FIELD_CHARS} characters.
 *
 * <p>Reading: the operator reads every entry; a tenant only its own (its {@code tenant} filter is forced).
 * Unauthenticated calls have no entry (no one to attribute them to); they count in
 * {@code paddock_api_errors_total{code="PERMISSION_DENIED"}}.
 *
 * <p>Thread-safe: the state of one request lives in its {@link Entry}, a request attribute; the log serialises
 * appends.
 */
public final class Audit {
    private static final System.Logger LOG = System.getLogger(Audit.class.getName());
    private static final String ATTRIBUTE = "io.paddock.audit";
    static final int MAX_FIELD_CHARS = 1024;
    /** The most entries one read returns. */
    public static final int MAX_LIMIT = 10_000;
    static final int DEFAULT_LIMIT = 100;
    private static final Pattern REQUEST_ID = Pattern.compile("[A-Za-z0-9._:/+=-]{1,128}");
    private static final Pattern ACTION = Pattern.compile("[a-z_]{1,64}");

    private final AuditLog log;
    private final Metrics metrics;
    /** When the last write failure was logged (they are counted always, logged at most once a minute). */
    private volatile long lastFailureLogged = System.nanoTime() - 120_000_000_000L;

    /**
     * @param log     where entries go; null when the daemon has no data directory (nothing is recorded, and
     *                reads answer FAILED_PRECONDITION)
     * @param metrics counts entries that could not be written
     */
    public Audit(AuditLog log, Metrics metrics) {
        this.log = log;
        this.metrics = metrics;
    }

    /**
     * Whether calls to this route change something and so are recorded: every route but reads ({@code GET}),
     * with the exec stream (a GET that runs a command) recorded and the port proxies (a sandbox's own web
     * traffic) not.
     */
    static boolean audited(Route r) {
        return switch (r) {
            case EXEC_STREAM -> true;
            case EXEC_SOCKET -> false; // opening it runs nothing: each command it runs has its entry (execOnSocket)
            case PORT_PROXY, SIGNED_PROXY -> false;
            default -> !"GET".equals(r.method());
        };
    }

    /** One request's entry, filled in as the request goes. Used by one request thread at a time. */
    static final class Entry {
        final ObjectNode json = Wire.object();
        final long startNanos;
        ErrorCode failure;

        Entry(long startNanos) {
            this.startNanos = startNanos;
        }
    }

    /**
     * Starts the entry of an authenticated request to {@code m}'s route, if that route is audited: the caller,
     * the action and what its path and query name.
     */
    void begin(Request request, Caller caller, Route.Match m, Fields query, long startNanos) {
        if (log == null || !audited(m.route())) {
            return;
        }
        Entry e = new Entry(startNanos);
        ObjectNode o = e.json;
        o.put("time", Instant.now().truncatedTo(ChronoUnit.MILLIS).toString());
        String rid = request.getHeaders().get("X-Request-Id");
        if (rid != null && REQUEST_ID.matcher(rid).matches()) {
            o.put("request_id", rid);
        }
        o.put("caller", caller.isOperator() ? "operator" : "tenant");
        caller.tenant().ifPresent(t -> o.put("tenant", t));
        o.put("action", m.route().name().toLowerCase(Locale.ROOT));
        String id = m.param("id");
        if (id != null && SandboxId.isValid(id)) {
            o.put("sandbox", id);
        }
        for (String p : List.of("name", "context", "shell", "port")) {
            put(o, p, m.param(p));
        }
        List<String> path = query.getValues("path");
        if (path != null && path.size() == 1) {
            put(o, "path", path.get(0));
        }
        List<String> ref = query.getValues("ref");
        if (ref != null && ref.size() == 1) {
            put(o, "image", ref.get(0));
        }
        List<String> tags = query.getValues("tag");
        if (tags != null && !tags.isEmpty()) {
            ArrayNode a = o.putArray("tags");
            tags.stream().limit(16).forEach(t -> a.add(cut(t)));
        }
        request.setAttribute(ATTRIBUTE, e);
    }

    /** Adds what the request's body names (a file's path, a volume's name, an image reference) to its entry. */
    static void note(Request request, String field, String value) {
        if (request.getAttribute(ATTRIBUTE) instanceof Entry e) {
            put(e.json, field, value);
        }
    }

    /** The sandboxes a fork made. */
    static void forks(Request request, List<String> ids) {
        if (request.getAttribute(ATTRIBUTE) instanceof Entry e) {
            ArrayNode a = e.json.putArray("forks");
            ids.forEach(a::add);
        }
    }

    /** The request failed after its answer had begun (a streamed run or pull): its entry says so. */
    static void failed(Request request, ErrorCode code) {
        if (request.getAttribute(ATTRIBUTE) instanceof Entry e) {
            e.failure = code;
        }
    }

    private static void put(ObjectNode o, String field, String value) {
        if (value != null) {
            o.put(field, cut(value));
        }
    }

    private static String cut(String s) {
        return s.length() <= MAX_FIELD_CHARS ? s : s.substring(0, MAX_FIELD_CHARS) + "…";
    }

    /**
     * An MCP tool call that may change something ({@link McpEndpoint}, paddock-mcp's {@code ToolAudit}): an entry of
     * its own, {@code via} {@code mcp}, its action {@code mcp_<tool>}; no HTTP status (the tool's answer is one
     * message of the MCP exchange).
     */
    void tool(Caller caller, String remote, String requestId, String tool, Optional<String> sandbox,
              Optional<ErrorCode> failure, java.time.Duration took) {
        if (log == null) {
            return;
        }
        write(outOfRequest(caller, remote, requestId, "mcp", "mcp_" + tool, sandbox.orElse(null), failure.orElse(null), took));
    }

    /**
     * A command started (or refused) on a reusable exec socket ({@code /v1/exec/stream}): an entry of its own, as
     * a call to {@code /v1/sandboxes/{id}/exec/stream} has, its action {@code exec_stream}, {@code via}
     * {@code exec_socket}; no HTTP status (the request is one message on the socket).
     */
    void execOnSocket(Caller caller, String remote, String requestId, String sandbox, ErrorCode failure, long startNanos) {
        if (log == null) {
            return;
        }
        write(outOfRequest(caller, remote, requestId, "exec_socket", "exec_stream", sandbox, failure,
                java.time.Duration.ofNanos(System.nanoTime() - startNanos)));
    }

    /**
     * An entry for something done outside an HTTP request's own span (an MCP tool call, a command on a reusable
     * exec socket): when it began, who, through what, which sandbox, its outcome; no HTTP status.
     */
    private static ObjectNode outOfRequest(Caller caller, String remote, String requestId, String via, String action,
                                           String sandbox, ErrorCode failure, java.time.Duration took) {
        ObjectNode o = Wire.object();
        o.put("time", Instant.now().minus(took).truncatedTo(ChronoUnit.MILLIS).toString());
        if (requestId != null && REQUEST_ID.matcher(requestId).matches()) {
            o.put("request_id", requestId);
        }
        o.put("caller", caller.isOperator() ? "operator" : "tenant");
        caller.tenant().ifPresent(t -> o.put("tenant", t));
        o.put("via", via);
        o.put("action", action);
        if (sandbox != null && SandboxId.isValid(sandbox)) {
            o.put("sandbox", sandbox);
        }
        o.put("outcome", failure == null ? "OK" : failure.name());
        o.put("duration_ms", took.toMillis());
        o.put("remote", remote);
        return o;
    }

    /**
     * Ends and writes the request's entry, if it has one: {@code failure} is what the request failed with
     * (null when it did not), {@code status} the status answered.
     */
    void end(Request request, int status, Throwable failure) {
        if (!(request.getAttribute(ATTRIBUTE) instanceof Entry e)) {
            return;
        }
        request.removeAttribute(ATTRIBUTE);
        ErrorCode code = failure != null ? codeOf(failure) : e.failure;
        e.json.put("outcome", code == null ? "OK" : code.name());
        e.json.put("status", status);
        e.json.put("duration_ms", (System.nanoTime() - e.startNanos) / 1_000_000);
        e.json.put("remote", Request.getRemoteAddr(request));
        write(e.json);
    }

    private void write(ObjectNode entry) {
        try {
            log.append(entry);
        } catch (IOException | RuntimeException ex) {
            metrics.auditWriteFailed();
            long now = System.nanoTime();
            if (now - lastFailureLogged > 60_000_000_000L) {
                lastFailureLogged = now;
                LOG.log(System.Logger.Level.WARNING, "cannot write the audit log " + log.file() + ": " + ex.getMessage()
                        + " (counted in paddock_audit_write_failures_total; logged at most once a minute)");
            }
        }
    }

    /** The error code a failure answers with (the one mapping of {@link ApiHandler}'s answers). */
    static ErrorCode codeOf(Throwable t) {
        if (t instanceof HttpError h) {
            return h.code();
        }
        if (t instanceof SandboxException s) {
            return s.code();
        }
        return ErrorCode.INTERNAL;
    }

    // ---- reading ----

    /**
     * {@code GET /v1/audit}: the caller's entries (a tenant's own; the operator's view is every entry), filtered
     * by {@code tenant}, {@code action}, {@code sandbox}, {@code since} (an RFC 3339 time), the last {@code limit}
     * of them (default {@value #DEFAULT_LIMIT}, at most {@link #MAX_LIMIT}), oldest first.
     */
    JsonNode read(Caller caller, Fields query) {
        String tenant = single(query, "tenant");
        String action = single(query, "action");
        String sandbox = single(query, "sandbox");
        String since = single(query, "since");
        String limitText = single(query, "limit");
        if (tenant != null && !Tenancy.NAME.matcher(tenant).matches()) {
            throw SandboxException.invalid("tenant", "not a tenant name: '" + Limits.shorten(tenant) + "'");
        }
        if (action != null && !ACTION.matcher(action).matches()) {
            throw SandboxException.invalid("action", "an action is lower-case words joined by '_' (for example"
                    + " create_sandbox), got '" + Limits.shorten(action) + "'");
        }
        if (sandbox != null && !SandboxId.isValid(sandbox)) {
            throw SandboxException.invalid("sandbox", "not a sandbox id: '" + Limits.shorten(sandbox) + "'");
        }
        Instant from = null;
        if (since != null) {
            try {
                from = Instant.parse(since.trim());
            } catch (DateTimeParseException ex) {
                throw SandboxException.invalid("since", "an RFC 3339 time such as 2025-01-31T12:00:00Z is expected, got '"
                        + Limits.shorten(since) + "'");
            }
        }
        int limit = DEFAULT_LIMIT;
        if (limitText != null) {
            try {
                limit = Integer.parseInt(limitText.trim());
            } catch (NumberFormatException ex) {
                throw SandboxException.invalid("limit", "an integer is expected, got '" + Limits.shorten(limitText) + "'");
            }
            if (limit < 1 || limit > MAX_LIMIT) {
                throw SandboxException.invalid("limit", "must be between 1 and " + MAX_LIMIT + ", got " + limit);
            }
        }
        if (log == null) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "this daemon keeps no audit log (it has no data"
                    + " directory)");
        }
        Optional<String> own = caller.tenant();
        if (own.isPresent() && tenant != null && !tenant.equals(own.get())) {
            // a tenant reads only its own entries: another tenant's filter finds nothing, as if it had none
            return page(List.of());
        }
        String who = own.orElse(tenant);
        Instant after = from;
        Predicate<JsonNode> filter = e -> (who == null || who.equals(e.path("tenant").asText(null)))
                && (action == null || action.equals(e.path("action").asText()))
                && (sandbox == null || sandbox.equals(e.path("sandbox").asText()) || contains(e.get("forks"), sandbox))
                && (after == null || !before(e.path("time").asText(), after));
        // ids and tenant names are written as they are (no character needs escaping), so a line without them cannot match
        String hint = sandbox != null ? sandbox : who != null ? "\"tenant\":\"" + who + "\"" : null;
        try {
            return page(log.read(hint, filter, limit));
        } catch (IOException ex) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot read the audit log: " + ex.getMessage(), ex);
        }
    }

    private static boolean contains(JsonNode array, String id) {
        if (array == null || !array.isArray()) {
            return false;
        }
        for (JsonNode n : array) {
            if (id.equals(n.asText())) {
                return true;
            }
        }
        return false;
    }

    private static boolean before(String time, Instant since) {
        try {
            return Instant.parse(time).isBefore(since);
        } catch (DateTimeParseException e) {
            return true;
        }
    }

    private static JsonNode page(List<JsonNode> entries) {
        ObjectNode o = Wire.object();
        ArrayNode a = o.putArray("entries");
        entries.forEach(a::add);
        return o;
    }

    private static String single(Fields query, String name) {
        List<String> v = query.getValues(name);
        if (v == null || v.isEmpty()) {
            return null;
        }
        if (v.size() > 1) {
            throw SandboxException.invalid(name, "given more than once");
        }
        return v.get(0).isEmpty() ? null : v.get(0);
    }
}
