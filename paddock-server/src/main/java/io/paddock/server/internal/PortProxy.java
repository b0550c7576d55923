package io.paddock.server.internal;

import io.paddock.ErrorCode;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxState;
import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.websocket.server.ServerWebSocketContainer;

import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.net.http.WebSocketHandshakeException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Relays one HTTP/1.1 exchange, or one WebSocket, between a client of the daemon and a server in a sandbox
 * ({@link Target}). Bodies stream both ways at the slower side's pace: the request body is read from the
 * client only as fast as the sandbox takes it, the response read from the sandbox only as fast as the client
 * takes it, so neither is held in memory.
 *
 * <p>What is forwarded: the method, the path and query the caller decided, and the request headers except
 * hop-by-hop ones (RFC 9110 §7.6.1, and those the {@code Connection} header names), {@code Authorization}
 * (the caller's daemon token, or anything else: the daemon never hands credentials to a sandbox), {@code Host}
 * (the sandbox sees its own address; {@code X-Forwarded-Host} has the caller's), and the daemon's own cookie
 * and token. {@code X-Forwarded-For} (appended to), {@code -Proto} and {@code -Host} are set. Responses come
 * back with their status and headers except hop-by-hop ones and cookies that would reach beyond the host
 * they were answered on ({@link #cookieAllowed}).
 *
 * <p>Time: connecting gets {@link #CONNECT_TIMEOUT}; then an exchange that makes no progress either way (no
 * request byte read, no response byte received) for the idle timeout is ended, as is every exchange and
 * WebSocket of a sandbox that stops (a sandbox's address can vanish without a reset, leaving a read that
 * would never return). Thread-safe.
 */
public final class PortProxy implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(PortProxy.class.getName());
    public static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);
    public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofMinutes(5);
    /** Exchanges and WebSockets one tenant's sandboxes may have relayed at once, together (issue 32). */
    public static final int DEFAULT_MAX_PER_TENANT = 128;
    private static final long WATCH_MILLIS = 1000;
    private static final int CHUNK = 64 * 1024;
    /** Hop-by-hop headers (RFC 9110 §7.6.1, and the old ones still seen). */
    private static final Set<String> HOP_BY_HOP = Set.of("connection", "keep-alive", "proxy-connection",
            "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade");
    /** Request headers never forwarded besides the hop-by-hop ones: the proxy sets or refuses to pass them. */
    private static final Set<String> NOT_FORWARDED = Set.of("authorization", "host", "content-length", "expect",
            "x-forwarded-proto", "x-forwarded-host", "x-forwarded-for");
    /** Response headers not copied back besides the hop-by-hop ones (Jetty sets its own date). */
    private static final Set<String> NOT_RETURNED = Set.of("content-length", "date");

    /**
     * Where and what to relay.
     *
     * @param sandbox      the sandbox (watched: its exchanges end when it stops)
     * @param port         the sandbox port, for messages
     * @param base         {@code sandbox.url(port)}: scheme, host and port of the sandbox's server
     * @param rawPath      the path to ask for there, encoded as received, starting with '/'
     * @param rawQuery     the query to pass, encoded as received, or null
     * @param secret       a text that must not reach the sandbox (a signed token: a Referer holding it is dropped), or null
     * @param setCookies   {@code Set-Cookie} values to add to the response
     */
    public record Target(Sandbox sandbox, int port, URI base, String rawPath, String rawQuery, String secret,
                         List<String> setCookies) {
        URI uri(boolean websocket) {
            String scheme = base.getScheme();
            if (websocket) {
                scheme = "https".equals(scheme) ? "wss" : "ws";
            }
            String prefix = base.getRawPath() == null ? "" : base.getRawPath();
            if (prefix.endsWith("/")) {
                prefix = prefix.substring(0, prefix.length() - 1);
            }
            try {
                return URI.create(scheme + "://" + base.getRawAuthority() + prefix + rawPath
                        + (rawQuery == null ? "" : "?" + rawQuery));
            } catch (IllegalArgumentException e) {
                throw new HttpError(400, ErrorCode.INVALID_ARGUMENT, "the path or query has characters that cannot be"
                        + " forwarded; percent-encode them");
            }
        }
    }

    private final HttpClient client;
    private final ExecutorService executor;
    private final ServerWebSocketContainer websockets;
    private final long idleNanos;
    private final long pingMillis;
    private final ScheduledExecutorService timers;
    private final Set<Exchange> live = ConcurrentHashMap.newKeySet();
    private final TenantSlots byTenant = new TenantSlots("port-proxy exchanges and WebSockets",
            "maxPortConnectionsPerTenant", DEFAULT_MAX_PER_TENANT);
    private final ScheduledFuture<?> watch;

    /**
     * @param websockets  the server's WebSocket container (upgrades)
     * @param timers      runs the watch over live exchanges and WebSocket pings
     * @param idleTimeout how long an exchange may make no progress
     * @param pingEvery   how often to ping a proxied WebSocket's client, so that a quiet one stays open
     */
    public PortProxy(ServerWebSocketContainer websockets, ScheduledExecutorService timers, Duration idleTimeout,
                     Duration pingEvery) {
        this.websockets = websockets;
        this.timers = timers;
        this.idleNanos = idleTimeout.toNanos();
        this.pingMillis = Math.max(50, pingEvery.toMillis());
        this.executor = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "paddock-port-proxy");
            t.setDaemon(true);
            return t;
        });
        this.client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(CONNECT_TIMEOUT)
                .followRedirects(HttpClient.Redirect.NEVER).executor(executor).build();
        this.watch = timers.scheduleWithFixedDelay(this::watch, WATCH_MILLIS, WATCH_MILLIS, TimeUnit.MILLISECONDS);
    }

    /** Whether the request asks for a WebSocket ({@code Upgrade: websocket} on a GET). */
    public static boolean isWebSocket(Request request) {
        if (!"GET".equals(request.getMethod())) {
            return false;
        }
        for (String v : request.getHeaders().getValuesList(HttpHeader.UPGRADE)) {
            if (v.trim().equalsIgnoreCase("websocket")) {
                return true;
            }
        }
        return false;
    }

    /** Sets how many exchanges and WebSockets one tenant's sandboxes may have relayed at once; returns this. */
    public PortProxy maxPerTenant(int max) {
        byTenant.max(max);
        return this;
    }

    /**
     * Relays the request to the target: a WebSocket for an upgrade, an HTTP exchange otherwise. A tenant's
     * sandboxes (labelled {@link Tenancy#LABEL}) have at most {@link #maxPerTenant(int)} relayed at once, together:
     * beyond it, 429 RESOURCE_EXHAUSTED before anything connects.
     */
    public void relay(Target target, Request request, Response response, Callback callback) throws IOException {
        String tenant = target.sandbox().info().labels().get(Tenancy.LABEL);
        Runnable release = admit(tenant);
        boolean handedOff = false;
        try {
            if (isWebSocket(request)) {
                websocket(target, request, response, callback, release);
                handedOff = true;
            } else {
                http(target, request, response, callback);
            }
        } finally {
            if (!handedOff) {
                release.run();
            }
        }
    }

    /** Counts one relay for {@code tenant} (none: nothing counted); the returned action, idempotent, ends it. */
    private Runnable admit(String tenant) {
        return byTenant.admit(tenant);
    }

    // ---- HTTP ----

    private void http(Target t, Request request, Response response, Callback callback) throws IOException {
        HttpRequest.Builder b = HttpRequest.newBuilder(t.uri(false)).expectContinue(false);
        forwardHeaders(t, request, false).forEach((name, values) -> values.forEach(v -> {
            try {
                b.header(name, v);
            } catch (IllegalArgumentException e) {
                // a header java.net.http will not send (a restricted name or a malformed value): dropped
            }
        }));
        Exchange x = new Exchange(t.sandbox(), Thread.currentThread(), null);
        live.add(x);
        try {
            try {
                b.method(request.getMethod(), body(request, x));
            } catch (IllegalArgumentException e) {
                throw new HttpError(405, ErrorCode.INVALID_ARGUMENT, "the port proxy does not forward the method "
                        + Limits.shorten(request.getMethod()));
            }
            HttpResponse<InputStream> r;
            x.blocking(true);
            try {
                r = client.send(b.build(), HttpResponse.BodyHandlers.ofInputStream());
            } catch (InterruptedException e) {
                throw x.abortedFailure(t);
            } catch (HttpConnectTimeoutException e) {
                throw unreachable(t, "it did not accept a connection within " + CONNECT_TIMEOUT.toSeconds() + " s");
            } catch (ConnectException e) {
                throw unreachable(t, "nothing is listening there (connection refused)");
            } catch (IOException e) {
                if (x.aborted != null) {
                    throw x.abortedFailure(t);
                }
                throw new HttpError(502, ErrorCode.UNAVAILABLE, "the server on port " + t.port() + " of sandbox "
                        + t.sandbox().id() + " failed before answering: " + describe(e));
            } catch (IllegalArgumentException e) {
                throw new HttpError(400, ErrorCode.INVALID_ARGUMENT, "the request cannot be forwarded: " + e.getMessage());
            } finally {
                x.blocking(false);
            }
            x.progress();
            InputStream in = r.body();
            x.body(in); // from now on the watch ends the exchange by closing it, which wakes a blocked read
            try (in) {
                respond(t, r, response);
                OutputStream out = Content.Sink.asOutputStream(response);
                out.flush(); // the status and headers go out now: a slow or streamed body starts arriving as it comes
                byte[] buf = new byte[CHUNK];
                for (int n; (n = in.read(buf)) >= 0; ) {
                    x.progress();
                    out.write(buf, 0, n); // blocks while the client is slow; the sandbox then waits for us
                }
                out.close();
            } catch (IOException e) {
                if (x.aborted != null) {
                    throw new InterruptedIOException("the exchange with port " + t.port() + " of sandbox "
                            + t.sandbox().id() + " was ended: " + x.aborted);
                }
                throw e;
            }
            callback.succeeded();
        } finally {
            x.finish();
        }
    }

    /**
     * The request body as java.net.http takes it: pushed chunk by chunk as the client sends it. (Its own
     * {@code ofInputStream} reads one chunk ahead before sending the previous one, headers included, which
     * would stall a client that waits for an answer between chunks.)
     */
    private HttpRequest.BodyPublisher body(Request request, Exchange x) {
        long length = request.getLength();
        boolean chunked = request.getHeaders().contains(HttpHeader.TRANSFER_ENCODING);
        if (length <= 0 && !chunked) {
            return HttpRequest.BodyPublishers.noBody();
        }
        StreamPublisher p = new StreamPublisher(Content.Source.asInputStream(request), executor, x::progress);
        return length > 0 && !chunked ? HttpRequest.BodyPublishers.fromPublisher(p, length)
                : HttpRequest.BodyPublishers.fromPublisher(p);
    }

    private static void respond(Target t, HttpResponse<InputStream> r, Response response) {
        response.getHeaders().remove(HttpHeader.CACHE_CONTROL); // the daemon's own defaults: the sandbox's answer decides
        response.getHeaders().remove("X-Content-Type-Options");
        response.setStatus(r.statusCode());
        Set<String> named = connectionNamed(r.headers().allValues("connection"));
        boolean chunked = false;
        for (Map.Entry<String, List<String>> h : r.headers().map().entrySet()) {
            String name = h.getKey().toLowerCase(Locale.ROOT);
            if (name.equals("transfer-encoding")) {
                chunked = true;
            }
            if (name.startsWith(":") || HOP_BY_HOP.contains(name) || NOT_RETURNED.contains(name) || named.contains(name)) {
                continue;
            }
            for (String v : h.getValue()) {
                if (name.equals("set-cookie") && !cookieAllowed(v)) {
                    continue;
                }
                response.getHeaders().add(h.getKey(), v);
            }
        }
        t.setCookies().forEach(c -> response.getHeaders().add(HttpHeader.SET_COOKIE, c));
        long length = r.headers().firstValueAsLong("content-length").orElse(-1);
        if (length >= 0 && !chunked) {
            response.getHeaders().put(HttpHeader.CONTENT_LENGTH, length);
        }
    }

    /**
     * A sandbox's cookies come back unless they are named as the daemon's own (a port host's or the dashboard's), or carry a {@code Domain}
     * attribute: that would reach beyond the host the sandbox answered on (to its neighbours under a port
     * domain, or to the daemon's parent domain). Without it a cookie stays on that one host.
     */
    static boolean cookieAllowed(String setCookie) {
        String[] parts = setCookie.split(";");
        String name = parts[0].contains("=") ? parts[0].substring(0, parts[0].indexOf('=')).trim() : "";
        if (name.equalsIgnoreCase(PortApi.COOKIE) || name.equalsIgnoreCase(DashboardSessions.COOKIE)) {
            return false;
        }
        for (int i = 1; i < parts.length; i++) {
            String a = parts[i].trim();
            int eq = a.indexOf('=');
            if ((eq < 0 ? a : a.substring(0, eq)).trim().equalsIgnoreCase("domain")) {
                return false;
            }
        }
        return true;
    }

    // ---- WebSocket ----

    private void websocket(Target t, Request request, Response response, Callback callback, Runnable release) {
        List<String> protocols = new ArrayList<>();
        for (String v : request.getHeaders().getValuesList(HttpHeader.SEC_WEBSOCKET_SUBPROTOCOL)) {
            for (String p : v.split(",")) {
                if (!p.isBlank()) {
                    protocols.add(p.trim());
                }
            }
        }
        WebSocket.Builder b = client.newWebSocketBuilder().connectTimeout(CONNECT_TIMEOUT);
        forwardHeaders(t, request, true).forEach((name, values) -> values.forEach(v -> {
            try {
                b.header(name, v);
            } catch (IllegalArgumentException e) {
                // dropped, as for HTTP
            }
        }));
        if (!protocols.isEmpty()) {
            b.subprotocols(protocols.get(0), protocols.subList(1, protocols.size()).toArray(new String[0]));
        }
        ProxySocket relay = new ProxySocket(t.sandbox().id().value(), t.port(), timers, pingMillis);
        WebSocket backend;
        try {
            backend = b.buildAsync(t.uri(true), relay.backendListener())
                    .get(CONNECT_TIMEOUT.toMillis() + idleNanos / 1_000_000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new HttpError(502, ErrorCode.UNAVAILABLE, "interrupted while opening the WebSocket");
        } catch (TimeoutException e) {
            throw new HttpError(504, ErrorCode.DEADLINE_EXCEEDED, "the server on port " + t.port() + " of sandbox "
                    + t.sandbox().id() + " did not answer the WebSocket upgrade in time");
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof WebSocketHandshakeException h) {
                throw new HttpError(502, ErrorCode.UNAVAILABLE, "the server on port " + t.port() + " of sandbox "
                        + t.sandbox().id() + " refused the WebSocket upgrade (HTTP " + h.getResponse().statusCode() + ")");
            }
            if (c instanceof HttpConnectTimeoutException) {
                throw unreachable(t, "it did not accept a connection within " + CONNECT_TIMEOUT.toSeconds() + " s");
            }
            if (c instanceof ConnectException) {
                throw unreachable(t, "nothing is listening there (connection refused)");
            }
            throw new HttpError(502, ErrorCode.UNAVAILABLE, "the WebSocket to port " + t.port() + " of sandbox "
                    + t.sandbox().id() + " failed: " + describe(c));
        }
        relay.backend(backend);
        Exchange x = new Exchange(t.sandbox(), null, relay);
        relay.onEnd(() -> {
            live.remove(x);
            release.run();
        });
        live.add(x);
        boolean upgraded;
        try {
            upgraded = websockets.upgrade((upReq, upResp, upCb) -> {
                String chosen = backend.getSubprotocol();
                if (chosen != null && !chosen.isEmpty()) {
                    upResp.setAcceptedSubProtocol(chosen);
                }
                return relay;
            }, request, response, callback);
        } catch (Exception e) {
            relay.abort("the upgrade failed");
            throw new SandboxException(ErrorCode.INTERNAL, "the WebSocket upgrade failed: " + e.getClass().getSimpleName(), e);
        }
        if (!upgraded) {
            relay.abort("not an upgrade");
            throw new HttpError(400, ErrorCode.INVALID_ARGUMENT,
                    "a WebSocket needs an upgrade request (Connection: Upgrade, Upgrade: websocket, Sec-WebSocket-Key)");
        }
    }

    // ---- headers ----

    /** The request headers to send on, by name, in the client's order; X-Forwarded-* set. */
    private static Map<String, List<String>> forwardHeaders(Target t, Request request, boolean websocket) {
        Map<String, List<String>> out = new java.util.LinkedHashMap<>();
        Set<String> named = connectionNamed(request.getHeaders().getValuesList(HttpHeader.CONNECTION));
        for (HttpField f : request.getHeaders()) {
            String name = f.getName().toLowerCase(Locale.ROOT);
            if (HOP_BY_HOP.contains(name) || NOT_FORWARDED.contains(name) || named.contains(name)
                    || websocket && name.startsWith("sec-websocket-")) {
                continue;
            }
            String value = f.getValue();
            if (name.equals("cookie")) {
                value = PortApi.withoutOwnCookie(value);
                if (value.isEmpty()) {
                    continue;
                }
            }
            if (name.equals("referer") && t.secret() != null && value.contains(t.secret())) {
                continue; // the signed URL's page linking to itself: its token stays out of the sandbox
            }
            out.computeIfAbsent(f.getName(), k -> new ArrayList<>()).add(value);
        }
        String remote = Request.getRemoteAddr(request);
        String previous = request.getHeaders().get("X-Forwarded-For");
        out.put("X-Forwarded-For", List.of(previous == null || previous.isBlank() ? remote : previous + ", " + remote));
        String scheme = request.getHttpURI().getScheme();
        out.put("X-Forwarded-Proto", List.of(scheme == null ? (request.isSecure() ? "https" : "http") : scheme));
        String host = request.getHeaders().get(HttpHeader.HOST);
        if (host != null && !host.isBlank()) {
            out.put("X-Forwarded-Host", List.of(host.trim()));
        }
        return out;
    }

    /** The header names a Connection header lists (they are hop-by-hop too), lower case. */
    private static Set<String> connectionNamed(List<String> connection) {
        Set<String> names = new TreeSet<>();
        for (String v : connection) {
            for (String n : v.split(",")) {
                if (!n.isBlank()) {
                    names.add(n.trim().toLowerCase(Locale.ROOT));
                }
            }
        }
        return names;
    }

    private static HttpError unreachable(Target t, String why) {
        return new HttpError(502, ErrorCode.UNAVAILABLE, "cannot reach port " + t.port() + " of sandbox "
                + t.sandbox().id() + ": " + why + "; is a server running in the sandbox, listening on 0.0.0.0:"
                + t.port() + "?");
    }

    private static String describe(Throwable e) {
        String m = e.getMessage();
        return m == null || m.isBlank() ? e.getClass().getSimpleName() : m;
    }

    // ---- the watch ----

    /** Ends exchanges whose sandbox stopped, and HTTP exchanges idle for longer than the idle timeout. */
    private void watch() {
        try {
            long now = System.nanoTime();
            Map<Sandbox, Boolean> running = new java.util.IdentityHashMap<>();
            for (Exchange x : live) {
                if (!running.computeIfAbsent(x.sandbox, PortProxy::isRunning)) {
                    x.abort("the sandbox stopped");
                } else if (x.thread != null && now - x.lastProgress > idleNanos) {
                    x.abort("no data either way for " + Duration.ofNanos(idleNanos).toSeconds() + " s");
                }
            }
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "watching proxied exchanges failed", e);
        }
    }

    private static boolean isRunning(Sandbox sb) {
        try {
            return sb.info().state() == SandboxState.RUNNING;
        } catch (RuntimeException e) {
            return false; // gone
        }
    }

    /** How many exchanges and WebSockets are being relayed (tests). */
    int liveCount() {
        return live.size();
    }

    /** Stops watching and ends every relayed WebSocket (HTTP exchanges end with the server's connections). */
    @Override
    public void close() {
        watch.cancel(false);
        for (Exchange x : live) {
            x.abort("the daemon is stopping");
        }
        executor.shutdownNow();
    }

    /** One relayed HTTP exchange (on {@code thread}) or WebSocket ({@code socket}). */
    private final class Exchange {
        final Sandbox sandbox;
        final Thread thread;
        final ProxySocket socket;
        volatile long lastProgress = System.nanoTime();
        volatile String aborted;
        private boolean blocking;
        private boolean done;
        private InputStream body;

        Exchange(Sandbox sandbox, Thread thread, ProxySocket socket) {
            this.sandbox = sandbox;
            this.thread = thread;
            this.socket = socket;
        }

        void progress() {
            lastProgress = System.nanoTime();
        }

        /** Whether the thread waits for the sandbox's answer (then, and only then, it may be interrupted). */
        synchronized void blocking(boolean b) {
            blocking = b;
        }

        /** The answer's body, which an abort closes (java.net.http's stream ignores interrupts, not a close). */
        synchronized void body(InputStream in) throws IOException {
            body = in;
            if (aborted != null) {
                in.close();
            }
        }

        synchronized void abort(String why) {
            if (done || aborted != null) {
                return;
            }
            aborted = why;
            if (socket != null) {
                socket.abort(why);
            } else if (body != null) {
                try {
                    body.close();
                } catch (IOException e) {
                    // closed either way
                }
            } else if (blocking) {
                thread.interrupt();
            }
        }

        /** The exchange is over: no interrupt can come after this, and none is left on the thread. */
        void finish() {
            synchronized (this) {
                done = true;
            }
            live.remove(this);
            if (thread != null) {
                Thread.interrupted();
            }
        }

        HttpError abortedFailure(Target t) {
            Thread.interrupted();
            String why = aborted == null ? "interrupted" : aborted;
            return why.startsWith("no data")
                    ? new HttpError(504, ErrorCode.DEADLINE_EXCEEDED, "the server on port " + t.port() + " of sandbox "
                    + t.sandbox().id() + " did not answer: " + why)
                    : new HttpError(502, ErrorCode.UNAVAILABLE, "the exchange with port " + t.port() + " of sandbox "
                    + t.sandbox().id() + " was ended: " + why);
        }
    }
}
