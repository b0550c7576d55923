package io.paddock.server.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.ErrorCode;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.SandboxState;
import io.paddock.wire.Wire;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

import java.io.IOException;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The sandbox ports as the daemon serves them: three ways in to the same proxy ({@link PortProxy}), each
 * resolving a sandbox and port and deciding who may use it.
 * <ul>
 *   <li>{@code /v1/sandboxes/{id}/ports/{port}/…}: the caller's bearer token, owner checked as on every
 *       sandbox route ({@link Tenancy}).</li>
 *   <li>{@code /v1/p/{token}/…}: a signed token ({@link UrlTokens}) from {@code POST …/ports/{port}/url}, and
 *       nothing else: a link for a browser. It dies with its expiry, or with the sandbox.</li>
 *   <li>host-name routing, with a port domain: {@code {port}-{id}.{domain}} is that sandbox port, with the
 *       owner's bearer token, or a signed token in {@code ?paddock_token=} (which then becomes a cookie of that
 *       host, so the page's own requests work) or in that cookie. Each sandbox port is then an origin of its
 *       own, which path routes (all on the daemon's origin) are not.</li>
 * </ul>
 * Failed signed tokens answer 403 with one message whatever was wrong; tokens appear in no message and no log.
 */
public final class PortApi {
    /** The cookie (and query parameter) holding a signed token on a port host. */
    public static final String COOKIE = "paddock_token";
    private static final String SIGNED_PREFIX = "/v1/p/";
    private static final Pattern HOST_LABEL = Pattern.compile("([0-9]{1,5})-(sb-[a-z2-7]{26})");
    private static final String BAD_TOKEN = "this link is not valid (it was not issued by this daemon, or was altered)";

    private final Paddock paddock;
    private final AuthGuard auth;
    private final Tenancy tenancy;
    private final UrlTokens tokens;
    private final PortProxy proxy;
    private final String portDomain;

    /**
     * @param portDomain the domain under which {@code {port}-{id}.{domain}} host names route to sandbox ports,
     *                   lower case; null for none
     */
    public PortApi(Paddock paddock, AuthGuard auth, Tenancy tenancy, UrlTokens tokens, PortProxy proxy, String portDomain) {
        this.paddock = paddock;
        this.auth = auth;
        this.tenancy = tenancy;
        this.tokens = tokens;
        this.proxy = proxy;
        this.portDomain = portDomain;
    }

    // ---- issuing URLs ----

    /**
     * {@code POST /v1/sandboxes/{id}/ports/{port}/url}: a signed URL for a port of the caller's sandbox, valid
     * until the sandbox's deadline (at most {@link UrlTokens#MAX_LIFETIME}) or {@code expires_in_ms}.
     */
    public ObjectNode issue(Sandbox sb, String portParam, JsonNode body, Request request) {
        int port = port(portParam);
        requireRunning(sb);
        sb.url(port); // the engine says whether the port was exposed (400 naming the exposed ones)
        Instant now = Instant.now();
        Instant max = now.plus(UrlTokens.MAX_LIFETIME);
        Instant expires;
        if (body != null && !body.isObject()) {
            throw SandboxException.invalid("body", "a JSON object is expected ({} or {\"expires_in_ms\": N})");
        }
        JsonNode ttl = body == null ? null : body.get("expires_in_ms");
        if (body != null) {
            for (Iterator<String> it = body.fieldNames(); it.hasNext(); ) {
                String f = it.next();
                if (!f.equals("expires_in_ms")) {
                    throw SandboxException.invalid(f, "unknown field (known: expires_in_ms)");
                }
            }
        }
        if (ttl != null && !ttl.isNull()) {
            if (!ttl.isIntegralNumber() || ttl.asLong() < 1 || ttl.asLong() > UrlTokens.MAX_LIFETIME.toMillis()) {
                throw SandboxException.invalid("expires_in_ms", "a number of milliseconds from 1 to "
                        + UrlTokens.MAX_LIFETIME.toMillis() + " (7 days) is expected");
            }
            expires = now.plusMillis(ttl.asLong());
        } else {
            Instant deadline = sb.info().expiresAt();
            expires = deadline.isAfter(max) ? max : deadline.isAfter(now) ? deadline : now.plusSeconds(1);
        }
        String token = tokens.sign(sb.id(), port, expires);
        String path = SIGNED_PREFIX + token + "/";
        ObjectNode o = Wire.object();
        o.put("url", base(request, null) + path);
        o.put("path", path);
        o.put("expires_at", expires.toString());
        if (portDomain != null) {
            o.put("host_url", base(request, port + "-" + sb.id().value() + "." + portDomain) + "/?" + COOKIE + "=" + token);
        }
        return o;
    }

    /** {@code scheme://host[:port]} as the client reached the daemon, with another host name if given. */
    private static String base(Request request, String hostName) {
        String scheme = request.getHttpURI().getScheme();
        if (scheme == null) {
            scheme = request.isSecure() ? "https" : "http";
        }
        String host = hostName != null ? hostName : Request.getServerName(request);
        if (host.contains(":") && !host.startsWith("[")) {
            host = "[" + host + "]";
        }
        int port = Request.getServerPort(request);
        boolean usual = port <= 0 || port == 80 && scheme.equals("http") || port == 443 && scheme.equals("https");
        return scheme + "://" + host + (usual ? "" : ":" + port);
    }

    // ---- the owner's route ----

    /** {@code /v1/sandboxes/{id}/ports/{port}/…} with the owner's bearer token (the sandbox is resolved already). */
    public void proxyOwned(Sandbox sb, String portParam, Request request, Response response, Callback callback)
            throws IOException {
        int port = port(portParam);
        requireRunning(sb);
        URI base = sb.url(port);
        String prefix = "/v1/sandboxes/" + sb.id().value() + "/ports/" + portParam;
        proxy.relay(new PortProxy.Target(sb, port, base, rest(request, prefix), request.getHttpURI().getQuery(), null,
                List.of()), request, response, callback);
    }

    // ---- signed links ----

    /** Whether the path is a signed link's ({@code /v1/p/…}), served with no other credential. */
    public static boolean isSigned(String path) {
        return path.startsWith(SIGNED_PREFIX);
    }

    /** The path with a signed link's token hidden, for logs. */
    public static String redact(String path) {
        if (path == null || !isSigned(path)) {
            return path;
        }
        int end = path.indexOf('/', SIGNED_PREFIX.length());
        return SIGNED_PREFIX + "<token>" + (end < 0 ? "" : path.substring(end));
    }

    /** {@code /v1/p/{token}/…}: the token is the only credential. */
    public void proxySigned(String path, Request request, Response response, Callback callback) throws IOException {
        int end = path.indexOf('/', SIGNED_PREFIX.length());
        String token = path.substring(SIGNED_PREFIX.length(), end < 0 ? path.length() : end);
        UrlTokens.Claims claims = verified(token, null);
        Sandbox sb = live(claims);
        URI base = sb.url(claims.port());
        proxy.relay(new PortProxy.Target(sb, claims.port(), base, rest(request, SIGNED_PREFIX + token),
                request.getHttpURI().getQuery(), token, List.of()), request, response, callback);
    }

    /** The claims of a valid, unexpired token (for {@code host}'s sandbox port if given); 403 otherwise. */
    private UrlTokens.Claims verified(String token, HostTarget host) {
        UrlTokens.Claims c = tokens.verify(token).orElse(null);
        if (c == null || host != null && (!c.id().equals(host.id) || c.port() != host.port)) {
            throw new HttpError(403, ErrorCode.PERMISSION_DENIED, BAD_TOKEN);
        }
        if (c.expired(Instant.now())) {
            throw new HttpError(403, ErrorCode.PERMISSION_DENIED, "this link has expired (at " + c.expiresAt()
                    + "); ask for a new one (POST /v1/sandboxes/{id}/ports/{port}/url)");
        }
        return c;
    }

    /** The running sandbox a token names: 404 once it is gone, 410 while it is stopped but still known. */
    private Sandbox live(UrlTokens.Claims c) {
        Sandbox sb;
        try {
            sb = paddock.get(c.id());
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.NOT_FOUND) {
                throw new HttpError(404, ErrorCode.NOT_FOUND, "the sandbox of this link no longer exists");
            }
            throw e;
        }
        if (sb.info().state() != SandboxState.RUNNING) {
            throw new HttpError(410, ErrorCode.NOT_FOUND, "the sandbox of this link has stopped");
        }
        return sb;
    }

    // ---- host-name routing ----

    private record HostTarget(SandboxId id, int port, String portText) {
    }

    /** Whether the request is for a sandbox port's own host name, all of which {@link #routeHost} proxies. */
    public boolean isPortHost(Request request) {
        String host = portDomain == null ? null : request.getHttpURI().getHost();
        if (host == null) {
            return false;
        }
        host = host.toLowerCase(Locale.ROOT);
        return (host.endsWith(".") ? host.substring(0, host.length() - 1) : host).endsWith("." + portDomain);
    }

    /**
     * Serves the request if its host is a port host ({@code {port}-{id}.{domain}}); returns false, having done
     * nothing, for any other host.
     */
    public boolean routeHost(Request request, Response response, Callback callback) throws IOException {
        if (portDomain == null) {
            return false;
        }
        String host = request.getHttpURI().getHost();
        if (host == null) {
            return false;
        }
        host = host.toLowerCase(Locale.ROOT);
        if (host.endsWith(".")) {
            host = host.substring(0, host.length() - 1);
        }
        if (!host.endsWith("." + portDomain)) {
            return false;
        }
        String label = host.substring(0, host.length() - portDomain.length() - 1);
        Matcher m = HOST_LABEL.matcher(label);
        if (!m.matches()) {
            throw new HttpError(404, ErrorCode.NOT_FOUND, "no sandbox port is served at this host name (the form is"
                    + " PORT-SANDBOXID." + portDomain + ")");
        }
        HostTarget target = new HostTarget(new SandboxId(m.group(2)), Integer.parseInt(m.group(1)), m.group(1));
        int port = port(target.portText);

        String rawQuery = request.getHttpURI().getQuery();
        List<String> queryTokens = queryValues(rawQuery, COOKIE);
        List<String> setCookies = new ArrayList<>();
        String secret = null;
        Sandbox sb;
        if (!queryTokens.isEmpty()) {
            if (queryTokens.size() > 1) {
                throw SandboxException.invalid(COOKIE, "given more than once");
            }
            secret = queryTokens.get(0);
            UrlTokens.Claims c = verified(secret, target);
            sb = live(c);
            setCookies.add(cookie(secret, c.expiresAt(), request.isSecure()));
            rawQuery = withoutQuery(rawQuery, COOKIE);
        } else {
            Optional<UrlTokens.Claims> fromCookie = Optional.empty();
            for (String t : cookieValues(request.getHeaders().getValuesList(HttpHeader.COOKIE))) {
                Optional<UrlTokens.Claims> c = tokens.verify(t).filter(x -> x.id().equals(target.id)
                        && x.port() == target.port && !x.expired(Instant.now()));
                if (c.isPresent()) {
                    fromCookie = c;
                    secret = t;
                    break;
                }
            }
            if (fromCookie.isPresent()) {
                sb = live(fromCookie.get());
            } else if (!request.getHeaders().getValuesList(HttpHeader.AUTHORIZATION).isEmpty()) {
                Caller caller = auth.check(Request.getRemoteAddr(request),
                        request.getHeaders().getValuesList(HttpHeader.AUTHORIZATION), false);
                sb = tenancy.get(caller, target.id.value());
                requireRunning(sb);
            } else {
                throw new HttpError(401, ErrorCode.PERMISSION_DENIED, "this sandbox port needs 'Authorization: Bearer"
                        + " <token>', or a signed link (POST /v1/sandboxes/{id}/ports/{port}/url gives one)",
                        "WWW-Authenticate", "Bearer realm=\"paddock\"");
            }
        }
        URI base = sb.url(port);
        String rawPath = request.getHttpURI().getPath();
        proxy.relay(new PortProxy.Target(sb, port, base, rawPath == null || rawPath.isEmpty() ? "/" : rawPath, rawQuery,
                secret, setCookies), request, response, callback);
        return true;
    }

    /** The cookie that carries a signed token on its port host: HttpOnly, SameSite=Lax, until the token expires. */
    private static String cookie(String token, Instant expires, boolean secure) {
        long maxAge = Math.max(0, Duration.between(Instant.now(), expires).toSeconds());
        return COOKIE + "=" + token + "; Path=/; Max-Age=" + maxAge + "; HttpOnly; SameSite=Lax" + (secure ? "; Secure" : "");
    }

    /** A Cookie header's value without the daemon's own cookies, this one and the dashboard's (they never reach the sandbox). */
    static String withoutOwnCookie(String header) {
        StringBuilder out = new StringBuilder();
        for (String pair : header.split(";")) {
            String p = pair.trim();
            if (p.isEmpty()) {
                continue;
            }
            int eq = p.indexOf('=');
            String name = (eq < 0 ? p : p.substring(0, eq)).trim();
            if (name.equals(COOKIE) || name.equals(DashboardSessions.COOKIE)) {
                continue;
            }
            if (out.length() > 0) {
                out.append("; ");
            }
            out.append(p);
        }
        return out.toString();
    }

    private static List<String> cookieValues(List<String> headers) {
        List<String> values = new ArrayList<>();
        for (String h : headers) {
            for (String pair : h.split(";")) {
                String p = pair.trim();
                int eq = p.indexOf('=');
                if (eq > 0 && p.substring(0, eq).trim().equals(COOKIE)) {
                    String v = p.substring(eq + 1).trim();
                    if (v.length() > 1 && v.startsWith("\"") && v.endsWith("\"")) {
                        v = v.substring(1, v.length() - 1);
                    }
                    values.add(v);
                }
            }
        }
        return values;
    }

    private static List<String> queryValues(String rawQuery, String name) {
        List<String> values = new ArrayList<>();
        if (rawQuery == null) {
            return values;
        }
        for (String pair : rawQuery.split("&")) {
            int eq = pair.indexOf('=');
            if (decode(eq < 0 ? pair : pair.substring(0, eq)).equals(name)) {
                values.add(eq < 0 ? "" : decode(pair.substring(eq + 1)));
            }
        }
        return values;
    }

    /** The raw query without the {@code name} parameters, the rest as it came; null if nothing is left. */
    static String withoutQuery(String rawQuery, String name) {
        if (rawQuery == null) {
            return null;
        }
        StringBuilder out = new StringBuilder();
        for (String pair : rawQuery.split("&", -1)) {
            int eq = pair.indexOf('=');
            if (decode(eq < 0 ? pair : pair.substring(0, eq)).equals(name)) {
                continue;
            }
            if (out.length() > 0) {
                out.append('&');
            }
            out.append(pair);
        }
        return out.length() == 0 ? null : out.toString();
    }

    private static String decode(String s) {
        try {
            return URLDecoder.decode(s, StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return s;
        }
    }

    // ---- helpers ----

    /** A {@code {port}} path parameter: 1 to 65535. */
    static int port(String text) {
        if (text == null || text.isEmpty() || text.length() > 5 || !text.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw SandboxException.invalid("port", "a port number from 1 to 65535 is expected, got '"
                    + Limits.shorten(text) + "'");
        }
        int p = Integer.parseInt(text);
        if (p < 1 || p > 65535) {
            throw SandboxException.invalid("port", "a port number from 1 to 65535 is expected, got " + p);
        }
        return p;
    }

    private static void requireRunning(Sandbox sb) {
        SandboxState state = sb.info().state();
        if (state != SandboxState.RUNNING) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "sandbox " + sb.id() + " is "
                    + state.name().toLowerCase(Locale.ROOT) + "; its ports are served only while it runs");
        }
    }

    /**
     * The raw (still encoded) path after {@code prefix}, "/" if nothing follows. The route was matched on the
     * decoded, normalised path; a raw path that does not start with the same prefix (an encoded or dot segment
     * inside it) is refused rather than guessed at.
     */
    private static String rest(Request request, String prefix) {
        String raw = request.getHttpURI().getPath();
        if (raw == null || !raw.startsWith(prefix)) {
            throw new HttpError(400, ErrorCode.INVALID_ARGUMENT, "write the path of a port route plainly, without"
                    + " encoded characters or dot segments before the sandbox's own path");
        }
        String rest = raw.substring(prefix.length());
        if (rest.isEmpty()) {
            return "/";
        }
        if (!rest.startsWith("/")) {
            throw new HttpError(404, ErrorCode.NOT_FOUND, "no such endpoint (see GET /v1/openapi.json)");
        }
        return rest;
    }
}
