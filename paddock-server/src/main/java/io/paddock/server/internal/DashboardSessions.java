package io.paddock.server.internal;

import io.paddock.ErrorCode;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.Request;

import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * The dashboard's sessions (docs/ARCHITECTURE.md, "The dashboard"). A login exchanges a token for two fresh
 * 256-bit secrets: the session id, which travels only as the {@code HttpOnly}, {@code SameSite=Strict} cookie
 * {@value #COOKIE}, and the CSRF token, which the login answers in its body and the page sends as
 * {@value #CSRF_HEADER} on every call. Neither is stored: the map is keyed by the id's SHA-256 digest and holds the
 * token's digest, compared with {@link MessageDigest#isEqual}.
 *
 * <p>The cookie never authorizes anything alone: every request it authenticates needs the header too, reads
 * included. A cross-site page cannot send the header (no CORS is allowed), and another page of the daemon's
 * origin (a sandbox's, on a path route) cannot read the token, which only the dashboard's own page holds. What
 * the pair authorizes is the dashboard's few routes ({@link #ROUTES}); everything else still needs a bearer
 * token. A request that carries an {@code Authorization} header is a bearer request, whatever cookies it has.
 *
 * <p>Sessions end at logout, after {@link #IDLE} without a request, after {@link #LIFETIME} in any case, and with the
 * daemon (they are kept in memory only). Forged, expired and ended sessions count as failed authentications
 * ({@link AuthGuard#refuse}). Thread-safe.
 */
public final class DashboardSessions {
    /** The session cookie's name. */
    public static final String COOKIE = "paddock_session";
    /** The header carrying the session's CSRF token. */
    public static final String CSRF_HEADER = "X-Paddock-CSRF";
    /** A session unused this long ends. */
    static final Duration IDLE = Duration.ofMinutes(30);
    /** A session ends this long after its login, used or not. */
    static final Duration LIFETIME = Duration.ofHours(12);
    /** The most sessions kept at once; a login past it ends the oldest. */
    static final int MAX_SESSIONS = 1000;
    /** The REST routes a dashboard session may call: what the page shows, and destroy. */
    static final Set<Route> ROUTES = EnumSet.of(Route.VERSION, Route.LIST_SANDBOXES, Route.GET_SANDBOX, Route.LOGS,
            Route.USAGE, Route.DELETE_SANDBOX, Route.LIST_IMAGES);

    private static final SecureRandom RANDOM = new SecureRandom();

    private final AuthGuard auth;
    private final LongSupplier nanoTime;
    private final Map<String, Session> sessions = new ConcurrentHashMap<>();

    /** One session: whose it is, its CSRF token's digest, when it began and was last used (monotonic nanos). */
    private static final class Session {
        final Caller caller;
        final byte[] csrfDigest;
        final long createdNanos;
        volatile long usedNanos;

        Session(Caller caller, byte[] csrfDigest, long now) {
            this.caller = caller;
            this.csrfDigest = csrfDigest;
            this.createdNanos = now;
            this.usedNanos = now;
        }
    }

    /** A login's answer: the cookie to set and the CSRF token for the page. */
    public record Login(Caller caller, String setCookie, String csrfToken) {
    }

    public DashboardSessions(AuthGuard auth) {
        this(auth, System::nanoTime);
    }

    DashboardSessions(AuthGuard auth, LongSupplier nanoTime) {
        this.auth = auth;
        this.nanoTime = nanoTime;
    }

    /**
     * Checks {@code token} as a bearer token would be checked (the same rate limit, 401 when wrong) and opens a
     * session for its owner.
     */
    public Login login(Request request, String token) {
        if (!request.isSecure() && !forwardedHttps(request) && !toLoopback(request)) {
            throw new HttpError(403, ErrorCode.PERMISSION_DENIED, "the dashboard signs in over HTTPS (a TLS proxy in front,"
                    + " which sets X-Forwarded-Proto: https) or on a loopback address only: its session cookie is Secure,"
                    + " and this is plain HTTP to another address");
        }
        return open(auth.check(Request.getRemoteAddr(request), List.of("Bearer " + token), false), secure(request));
    }

    /** Opens a session for {@code caller}, whose token was checked. */
    Login open(Caller caller, boolean secure) {
        String id = secret();
        String csrf = secret();
        long now = nanoTime.getAsLong();
        sweep(now);
        while (sessions.size() >= MAX_SESSIONS) {
            evictOldest();
        }
        sessions.put(digestHex(id), new Session(caller, AuthGuard.sha256(csrf), now));
        return new Login(caller, COOKIE + "=" + id + "; Path=/; HttpOnly; SameSite=Strict" + (secure ? "; Secure" : ""), csrf);
    }

    /** Ends the request's session, if it has one; the answer's Set-Cookie removes the cookie. */
    public String logout(Request request) {
        cookie(request).ifPresent(this::end);
        return expiredCookie(request);
    }

    /** Ends the session with this id, if there is one. */
    void end(String id) {
        sessions.remove(digestHex(id));
    }

    /** A Set-Cookie that removes the session cookie. */
    public static String expiredCookie(Request request) {
        return COOKIE + "=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict" + (secure(request) ? "; Secure" : "");
    }

    /** Whether the request is the dashboard's: it carries the session cookie and no Authorization header. */
    public boolean presented(Request request) {
        return !request.getHeaders().contains(HttpHeader.AUTHORIZATION) && cookie(request).isPresent();
    }

    /**
     * The caller of a dashboard request ({@link #presented}): 401 (counted as a failed authentication) for a
     * session that is forged, expired or ended, 403 when its CSRF header is missing or wrong.
     */
    public Caller check(Request request) {
        return check(Request.getRemoteAddr(request), cookie(request), request.getHeaders().getValuesList(CSRF_HEADER));
    }

    /** {@link #check(Request)} on the request's parts: its address, its session cookie, its CSRF headers. */
    Caller check(String address, Optional<String> cookie, List<String> csrf) {
        long now = nanoTime.getAsLong();
        String key = cookie.map(DashboardSessions::digestHex).orElse(null);
        Session s = key == null ? null : sessions.get(key);
        if (s != null && expired(s, now)) {
            sessions.remove(key, s);
            s = null;
        }
        if (s == null) {
            throw auth.refuse(address, "the dashboard session is unknown or has expired; sign in again");
        }
        byte[] presented = AuthGuard.sha256(csrf.size() == 1 ? csrf.get(0).trim() : "");
        if (csrf.size() != 1 || csrf.get(0).isBlank() || !MessageDigest.isEqual(s.csrfDigest, presented)) {
            throw new HttpError(403, ErrorCode.PERMISSION_DENIED, "a request with the dashboard's session needs its "
                    + CSRF_HEADER + " header (the token its login answered with)");
        }
        s.usedNanos = now;
        return s.caller;
    }

    /** 403 unless a dashboard session may call {@code route}. */
    public static void permit(Route route) {
        if (!ROUTES.contains(route)) {
            throw new HttpError(403, ErrorCode.PERMISSION_DENIED, "the dashboard's session is only for the dashboard's"
                    + " own calls; send 'Authorization: Bearer <token>' for this one");
        }
    }

    /** How many sessions are open (expired ones not yet swept included). */
    int size() {
        return sessions.size();
    }

    private boolean expired(Session s, long now) {
        return now - s.usedNanos > IDLE.toNanos() || now - s.createdNanos > LIFETIME.toNanos();
    }

    private void sweep(long now) {
        sessions.values().removeIf(s -> expired(s, now));
    }

    private void evictOldest() {
        String oldest = null;
        long at = Long.MAX_VALUE;
        for (Iterator<Map.Entry<String, Session>> it = sessions.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<String, Session> e = it.next();
            if (oldest == null || e.getValue().createdNanos - at < 0) {
                oldest = e.getKey();
                at = e.getValue().createdNanos;
            }
        }
        if (oldest != null) {
            sessions.remove(oldest);
        }
    }

    /** The session cookie's value: empty when absent; a cookie sent twice counts as absent (none is trusted). */
    static Optional<String> cookie(Request request) {
        List<String> values = new ArrayList<>();
        for (String h : request.getHeaders().getValuesList(HttpHeader.COOKIE)) {
            for (String pair : h.split(";")) {
                String p = pair.trim();
                int eq = p.indexOf('=');
                if (eq > 0 && p.substring(0, eq).trim().equals(COOKIE)) {
                    values.add(p.substring(eq + 1).trim());
                }
            }
        }
        return values.size() == 1 && !values.get(0).isEmpty() ? Optional.of(values.get(0)) : Optional.empty();
    }

    /**
     * Whether the cookie is marked {@code Secure}: always, except for plain HTTP to a loopback address (where
     * browsers would refuse nothing and curl-like clients would not send it back), unless a TLS proxy in front
     * says the browser's side is HTTPS.
     */
    static boolean secure(Request request) {
        return request.isSecure() || forwardedHttps(request) || !toLoopback(request);
    }

    /** Whether a proxy in front says the browser's side is HTTPS (a client could lie, but only to make it stricter). */
    private static boolean forwardedHttps(Request request) {
        String proto = request.getHeaders().get("X-Forwarded-Proto");
        return proto != null && proto.trim().equalsIgnoreCase("https");
    }

    /** Whether the connection came to one of this host's loopback addresses. */
    private static boolean toLoopback(Request request) {
        SocketAddress local = request.getConnectionMetaData().getLocalSocketAddress();
        return local instanceof InetSocketAddress i && i.getAddress() != null && i.getAddress().isLoopbackAddress();
    }

    private static String secret() {
        byte[] b = new byte[32];
        RANDOM.nextBytes(b);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
    }

    private static String digestHex(String value) {
        return HexFormat.of().formatHex(AuthGuard.sha256(value));
    }
}
