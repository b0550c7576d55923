package io.paddock.server.internal;

import io.paddock.ErrorCode;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * Every route the server serves, one per (method, path template) of openapi.json, except the proxy routes
 * (method {@code *}), which take every method and whose last segment {@code {path}} is the rest of the path;
 * the document lists them under {@link #DOCUMENTED_ANY}. The conformance test checks this table against the
 * document in both directions. Host-name routing to sandbox ports happens before this table ({@link PortApi}).
 */
public enum Route {
    HEALTH("GET", "/v1/health"),
    VERSION("GET", "/v1/version"),
    OPENAPI("GET", "/v1/openapi.json"),
    METRICS("GET", "/metrics"),
    AUDIT("GET", "/v1/audit"),
    CREATE_SANDBOX("POST", "/v1/sandboxes"),
    LIST_SANDBOXES("GET", "/v1/sandboxes"),
    GET_SANDBOX_BY_NAME("GET", "/v1/sandboxes/by-name/{name}"),
    GET_SANDBOX("GET", "/v1/sandboxes/{id}"),
    DELETE_SANDBOX("DELETE", "/v1/sandboxes/{id}"),
    SET_TIMEOUT("POST", "/v1/sandboxes/{id}/timeout"),
    PAUSE_SANDBOX("POST", "/v1/sandboxes/{id}/pause"),
    RESUME_SANDBOX("POST", "/v1/sandboxes/{id}/resume"),
    FORK_SANDBOX("POST", "/v1/sandboxes/{id}/fork"),
    LOGS("GET", "/v1/sandboxes/{id}/logs"),
    USAGE("GET", "/v1/sandboxes/{id}/usage"),
    EXEC("POST", "/v1/sandboxes/{id}/exec"),
    EXEC_STREAM("GET", "/v1/sandboxes/{id}/exec/stream"),
    EXEC_SOCKET("GET", "/v1/exec/stream"),
    READ_FILE("GET", "/v1/sandboxes/{id}/files"),
    WRITE_FILE("PUT", "/v1/sandboxes/{id}/files"),
    LIST_FILES("GET", "/v1/sandboxes/{id}/files/list"),
    STAT_FILE("GET", "/v1/sandboxes/{id}/files/stat"),
    MKDIR("POST", "/v1/sandboxes/{id}/files/mkdir"),
    REMOVE_FILE("POST", "/v1/sandboxes/{id}/files/remove"),
    MOVE_FILE("POST", "/v1/sandboxes/{id}/files/move"),
    CODE_LANGUAGES("GET", "/v1/code/languages"),
    CODE_RUN("POST", "/v1/sandboxes/{id}/code/run"),
    CODE_CHECK("POST", "/v1/sandboxes/{id}/code/check"),
    SANDBOX_LANGUAGES("GET", "/v1/sandboxes/{id}/code/languages"),
    CODE_INSTALL("POST", "/v1/sandboxes/{id}/code/install"),
    LIST_CONTEXTS("GET", "/v1/sandboxes/{id}/code/contexts"),
    CREATE_CONTEXT("POST", "/v1/sandboxes/{id}/code/contexts"),
    GET_CONTEXT("GET", "/v1/sandboxes/{id}/code/contexts/{context}"),
    DELETE_CONTEXT("DELETE", "/v1/sandboxes/{id}/code/contexts/{context}"),
    RUN_CELL("POST", "/v1/sandboxes/{id}/code/contexts/{context}/run"),
    RESTART_CONTEXT("POST", "/v1/sandboxes/{id}/code/contexts/{context}/restart"),
    CREATE_SHELL("POST", "/v1/sandboxes/{id}/code/shells"),
    GET_SHELL("GET", "/v1/sandboxes/{id}/code/shells/{shell}"),
    DELETE_SHELL("DELETE", "/v1/sandboxes/{id}/code/shells/{shell}"),
    SHELL_EXEC("POST", "/v1/sandboxes/{id}/code/shells/{shell}/exec"),
    LIST_IMAGES("GET", "/v1/images"),
    GET_IMAGE("GET", "/v1/image"),
    DELETE_IMAGE("DELETE", "/v1/image"),
    PULL_IMAGE("POST", "/v1/images/pull"),
    PUSH_IMAGE("POST", "/v1/images/push"),
    BUILD_IMAGE("POST", "/v1/images/build"),
    BUILD_IMAGE_SPEC("POST", "/v1/images/build-spec"),
    PRUNE_IMAGES("POST", "/v1/images/prune"),
    CREATE_VOLUME("POST", "/v1/volumes"),
    LIST_VOLUMES("GET", "/v1/volumes"),
    GET_VOLUME("GET", "/v1/volumes/{name}"),
    DELETE_VOLUME("DELETE", "/v1/volumes/{name}"),
    UPDATE_NETWORK("PATCH", "/v1/sandboxes/{id}/network"),
    UPDATE_LABELS("PATCH", "/v1/sandboxes/{id}/labels"),
    CREATE_CODEBASE("POST", "/v1/codebases/{name}"),
    LIST_CODEBASES("GET", "/v1/codebases"),
    GET_CODEBASE("GET", "/v1/codebases/{name}"),
    DELETE_CODEBASE("DELETE", "/v1/codebases/{name}"),
    CODEBASE_DIFF("GET", "/v1/sandboxes/{id}/codebase/diff"),
    CODEBASE_COMMIT("POST", "/v1/sandboxes/{id}/codebase/commit"),
    SNAPSHOT("POST", "/v1/sandboxes/{id}/snapshot"),
    // before PORT_PROXY, which would take it: a POST to exactly .../url asks for a signed URL
    PORT_URL("POST", "/v1/sandboxes/{id}/ports/{port}/url"),
    // "*": any method, and {path} is the rest of the path, even none
    PORT_PROXY("*", "/v1/sandboxes/{id}/ports/{port}/{path}"),
    SIGNED_PROXY("*", "/v1/p/{token}/{path}");

    /** A proxy route's method: any, and so the whole path after it ({@code {path}}, possibly empty). */
    private static final String ANY_METHOD = "*";
    /** The methods openapi.json lists for a proxy route (HEAD and OPTIONS are proxied too, undocumented). */
    public static final List<String> DOCUMENTED_ANY = List.of("GET", "POST", "PUT", "PATCH", "DELETE");

    private final String method;
    private final String template;
    private final String[] segments;

    Route(String method, String template) {
        this.method = method;
        this.template = template;
        this.segments = template.substring(1).split("/");
    }

    /** The method, or {@code *} for a proxy route, which takes any. */
    public String method() {
        return method;
    }

    /** The methods openapi.json documents for this route. */
    public List<String> methods() {
        return method.equals(ANY_METHOD) ? DOCUMENTED_ANY : List.of(method);
    }

    /** Whether this route proxies: any method, and its last segment {@code {path}} takes the rest of the path. */
    public boolean proxies() {
        return method.equals(ANY_METHOD);
    }

    public String template() {
        return template;
    }

    /** A matched route and its path parameters. */
    public record Match(Route route, Map<String, String> params) {
        public String param(String name) {
            return params.get(name);
        }
    }

    /** The route for this request; 404 if no template matches the path, 405 (with Allow) if the method is wrong. */
    public static Match match(String method, String path) {
        if (path == null || !path.startsWith("/")) {
            throw notFound(path);
        }
        String[] parts = path.substring(1).split("/", -1);
        TreeSet<String> allowed = new TreeSet<>();
        for (Route r : values()) {
            Map<String, String> params = r.bind(parts);
            if (params == null) {
                continue;
            }
            if (r.method.equals(method) || r.proxies()) {
                return new Match(r, params);
            }
            allowed.add(r.method);
        }
        if (allowed.isEmpty()) {
            throw notFound(path);
        }
        throw new HttpError(405, ErrorCode.INVALID_ARGUMENT, "method " + method + " is not allowed on " + path
                + " (allowed: " + String.join(", ", allowed) + ")", "Allow", String.join(", ", allowed));
    }

    private Map<String, String> bind(String[] parts) {
        int fixed = proxies() ? segments.length - 1 : segments.length; // a proxy's {path} is the rest, even none
        if (proxies() ? parts.length < fixed : parts.length != fixed) {
            return null;
        }
        List<String> names = new ArrayList<>(1);
        List<String> values = new ArrayList<>(1);
        for (int i = 0; i < fixed; i++) {
            String s = segments[i];
            if (s.startsWith("{")) {
                if (parts[i].isEmpty()) {
                    return null;
                }
                names.add(s.substring(1, s.length() - 1));
                values.add(parts[i]);
            } else if (!s.equals(parts[i])) {
                return null;
            }
        }
        return names.isEmpty() ? Map.of() : names.size() == 1 ? Map.of(names.get(0), values.get(0))
                : Map.of(names.get(0), values.get(0), names.get(1), values.get(1));
    }

    private static HttpError notFound(String path) {
        return new HttpError(404, ErrorCode.NOT_FOUND, "no such endpoint: " + Limits.shorten(path)
                + " (see GET /v1/openapi.json)");
    }
}
