package io.paddock.client.internal;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.wire.Wire;

import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.net.http.WebSocket;
import java.net.http.WebSocketHandshakeException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

/**
 * The HTTP side of a {@link RemotePaddock} (two JDK clients, see {@link #calls}): builds {@code /v1} URLs, adds the bearer token to every
 * request, turns error bodies back into {@link SandboxException} ({@link Wire#exception}) and transport
 * failures into {@code UNAVAILABLE} naming the daemon's URL.
 *
 * <p>The token lives only in {@link #authorization}: never in a URL, a message or {@link #toString()}.
 * Thread-safe.
 */
final class Http {
    /** Connecting (TCP and, for streams, the WebSocket upgrade) gives up after this. */
    static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(10);
    /** Idle reusable exec sockets kept per client (more commands at once open more; the surplus is closed). */
    static final int MAX_IDLE_CHANNELS = 8;
    /** How long an idle reusable exec socket is kept. */
    static final Duration CHANNEL_IDLE = Duration.ofMinutes(1);
    /** Requests that only read or change metadata; exec, create and file transfers are not bounded. */
    static final Duration CONTROL_TIMEOUT = Duration.ofMinutes(2);

    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    /**
     * Transfers that read or fill the caller's streams (file and archive uploads and downloads, event streams):
     * a body publisher reading the caller's {@code InputStream} may block, so their callbacks run on the client's
     * own thread pool.
     */
    private final HttpClient client;
    /**
     * JSON calls ({@link #call}) and the exec sockets: bodies in memory and listeners that never block, so their
     * callbacks run on the client's selector thread where the bytes arrive. Handing each response or message to a
     * pool thread first cost 0.1–0.3 ms a round trip on the PVM development hosts (docs/BENCHMARKS.md, round 8),
     * which P10 pays on every remote create and exec.
     */
    private final HttpClient calls;
    /** The daemon's base URL without a trailing slash, for example {@code http://127.0.0.1:7070}. */
    private final String base;
    private final String authorization;
    private final Set<RemoteExecProcess> streams = ConcurrentHashMap.newKeySet();
    /** Idle reusable exec sockets, the most recently used last. */
    private final java.util.ArrayDeque<ExecChannel> idleChannels = new java.util.ArrayDeque<>();
    /** Whether the daemon has reusable exec sockets (false once it answered 404 for the route). */
    private volatile boolean channels = true;
    private final java.util.concurrent.atomic.AtomicLong channelsOpened = new java.util.concurrent.atomic.AtomicLong();
    private volatile boolean closed;

    Http(URI url, String token) {
        this.base = stripSlash(url.toString());
        this.authorization = "Bearer " + token;
        this.client = clientBuilder().build();
        this.calls = clientBuilder().executor(Runnable::run).build();
    }

    /** What both JDK clients share: HTTP/1.1 to the daemon, a bounded connect, no redirects followed. */
    private static HttpClient.Builder clientBuilder() {
        return HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(CONNECT_TIMEOUT)
                .followRedirects(HttpClient.Redirect.NEVER);
    }

    /** The daemon's base URL (it never holds credentials: {@link RemotePaddock} refuses user info). */
    String base() {
        return base;
    }

    // ------------------------------------------------------------------ URLs

    /** A URL under the base: {@code path} starts with {@code /v1/} and has its segments encoded already. */
    URI uri(String path, Query query) {
        return URI.create(base + path + (query == null ? "" : query.toString()));
    }

    /** The WebSocket form ({@code ws:}/{@code wss:}) of {@link #uri}. */
    URI wsUri(String path) {
        String http = base + path;
        return URI.create(http.startsWith("https:") ? "wss:" + http.substring(6) : "ws:" + http.substring(5));
    }

    /** Percent-encodes one path segment or query value (UTF-8; everything but RFC 3986 unreserved characters). */
    static String encode(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        StringBuilder out = new StringBuilder(b.length + 8);
        for (byte x : b) {
            int c = x & 0xFF;
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                    || c == '-' || c == '.' || c == '_' || c == '~') {
                out.append((char) c);
            } else {
                out.append('%').append(HEX[c >> 4]).append(HEX[c & 0xF]);
            }
        }
        return out.toString();
    }

    /** Query parameters in order; repeated names are allowed. */
    static final class Query {
        private final List<String> pairs = new ArrayList<>();

        Query add(String name, String value) {
            pairs.add(encode(name) + "=" + encode(value));
            return this;
        }

        @Override
        public String toString() {
            return pairs.isEmpty() ? "" : "?" + String.join("&", pairs);
        }
    }

    // ------------------------------------------------------------------ requests

    HttpRequest.Builder request(URI uri, Duration timeout) {
        checkOpen();
        HttpRequest.Builder b = HttpRequest.newBuilder(uri).header("Authorization", authorization);
        if (timeout != null) {
            b.timeout(timeout);
        }
        return b;
    }

    /**
     * Sends a request with an optional JSON body and returns the JSON answer, or {@code null} for an empty
     * one (204). A non-2xx answer is thrown as the {@link SandboxException} its body describes.
     */
    JsonNode call(String method, String path, Query query, JsonNode body, Duration timeout) {
        HttpRequest.Builder b = request(uri(path, query), timeout).header("Accept", "application/json");
        if (body != null) {
            b.header("Content-Type", "application/json")
                    .method(method, HttpRequest.BodyPublishers.ofByteArray(Wire.bytes(body)));
        } else {
            b.method(method, HttpRequest.BodyPublishers.noBody());
        }
        HttpResponse<byte[]> r = send(calls, b.build(), HttpResponse.BodyHandlers.ofByteArray(), method + " " + path);
        return json(r, method + " " + path);
    }

    /** The JSON of a 2xx response ({@code null} if empty); the error it describes otherwise. */
    /** DELETEs {@code path}; one that is already gone counts as deleted (idempotent closes). */
    void deleteIfPresent(String path) {
        try {
            call("DELETE", path, null, null, CONTROL_TIMEOUT);
        } catch (SandboxException e) {
            if (e.code() != ErrorCode.NOT_FOUND) {
                throw e;
            }
        }
    }

    static JsonNode json(HttpResponse<byte[]> r, String what) {
        byte[] body = r.body() == null ? new byte[0] : r.body();
        if (r.statusCode() / 100 != 2) {
            throw Wire.exception(r.statusCode(), body);
        }
        if (body.length == 0) {
            return null;
        }
        try {
            return Wire.JSON.readTree(body);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, what + ": the daemon answered with malformed JSON: "
                    + e.getMessage(), e);
        }
    }

    /** Sends a request; transport failures become {@code UNAVAILABLE}, interrupts {@code UNAVAILABLE "interrupted"}. */
    <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler, String what) {
        return send(client, request, handler, what);
    }

    private <T> HttpResponse<T> send(HttpClient via, HttpRequest request, HttpResponse.BodyHandler<T> handler, String what) {
        try {
            return via.send(request, handler);
        } catch (IOException e) {
            throw unavailable(what, e);
        } catch (InterruptedException e) {
            throw interrupted();
        }
    }

    /**
     * POSTs a JSON body asking for newline-delimited JSON ({@code Accept: ndjson}) and hands each event to
     * {@code onEvent} on the calling thread as it arrives, until one returns the final value. Lines are taken
     * one at a time (demand 1), so a slow {@code onEvent} slows the daemon instead of filling memory here.
     * A daemon that answers plain JSON instead (one that does not stream) is read whole into {@code onPlain}.
     *
     * <p>The whole exchange must end within {@code limit}; past it, on an interrupt, or when the connection
     * closes before the final event, the request is cancelled (closing the connection, which the daemon sees)
     * and {@code UNAVAILABLE} is thrown, as for any transport failure. A non-2xx answer is thrown as the error
     * its body describes.
     */
    <T> T stream(String path, JsonNode body, String ndjson, Duration limit, Function<JsonNode, Optional<T>> onEvent,
                 Function<JsonNode, T> onPlain) {
        return stream(path, null, HttpRequest.BodyPublishers.ofByteArray(Wire.bytes(body)), "application/json", false,
                ndjson, limit, onEvent, onPlain);
    }

    /**
     * {@link #stream(String, JsonNode, String, Duration, Function, Function)} with any body: {@code body} is sent
     * as {@code contentType} (a build context streams from the disk as a tar, for example). With
     * {@code expectContinue} the body waits for the daemon's {@code 100 Continue}, which it sends only once it
     * starts reading: a request it refuses first (a bad query, a tenant's rule) is answered before any of a
     * large body is sent, rather than cut off while sending it.
     */
    <T> T stream(String path, Query query, HttpRequest.BodyPublisher body, String contentType, boolean expectContinue,
                 String ndjson, Duration limit, Function<JsonNode, Optional<T>> onEvent, Function<JsonNode, T> onPlain) {
        String what = "POST " + path;
        HttpRequest request = request(uri(path, query), limit).header("Accept", ndjson + ", application/json;q=0.5")
                .header("Content-Type", contentType).expectContinue(expectContinue)
                .POST(body).build();
        Lines lines = new Lines();
        CompletableFuture<HttpResponse<Void>> sent = client.sendAsync(request, info -> {
            lines.answered(info.statusCode(), info.headers().firstValue("Content-Type").orElse(""));
            return HttpResponse.BodySubscribers.fromLineSubscriber(lines, s -> null, StandardCharsets.UTF_8, "\n");
        });
        sent.whenComplete((r, t) -> {
            if (t != null) {
                lines.onError(t);
            }
        });
        long deadline = System.nanoTime() + limit.toNanos();
        boolean ended = false;
        try {
            List<String> plain = new ArrayList<>();
            T last = null;
            for (String line; (line = lines.next(deadline)) != null; ) {
                if (lines.status / 100 != 2 || !lines.contentType.toLowerCase(Locale.ROOT).startsWith(ndjson)) {
                    plain.add(line);
                } else if (last == null && !line.isBlank()) {
                    last = onEvent.apply(parse(line, what)).orElse(null);
                }
            }
            ended = true;
            byte[] whole = String.join("\n", plain).getBytes(StandardCharsets.UTF_8);
            if (lines.status / 100 != 2) {
                throw Wire.exception(lines.status, whole);
            }
            if (!lines.contentType.toLowerCase(Locale.ROOT).startsWith(ndjson)) {
                return onPlain.apply(parse(String.join("\n", plain), what));
            }
            if (last == null) {
                throw unavailable(what, new IOException("the connection closed before the answer's last event arrived"));
            }
            return last;
        } catch (InterruptedException e) {
            throw interrupted();
        } catch (IOException e) {
            throw unavailable(what, e);
        } finally {
            if (!ended) {
                lines.cancel();
                sent.cancel(true);
            }
        }
    }

    private static JsonNode parse(String json, String what) {
        try {
            return Wire.JSON.readTree(json);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, what + ": the daemon answered with malformed JSON: "
                    + e.getMessage(), e);
        }
    }

    /**
     * The lines of one streamed answer, handed from the client's threads to the caller one at a time: the
     * caller asks for the next line only after taking one, so at most one line (and the end) waits here.
     */
    private static final class Lines implements Flow.Subscriber<String> {
        private static final Object END = new Object();
        private final BlockingQueue<Object> queue = new LinkedBlockingQueue<>();
        private final AtomicReference<Flow.Subscription> subscription = new AtomicReference<>();
        private volatile boolean cancelled;
        volatile int status;
        volatile String contentType = "";

        void answered(int status, String contentType) {
            this.status = status;
            this.contentType = contentType;
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
            subscription.set(s);
            if (cancelled) {
                s.cancel();
            } else {
                s.request(1);
            }
        }

        @Override
        public void onNext(String line) {
            queue.add(line);
        }

        @Override
        public void onError(Throwable t) {
            queue.add(t instanceof CompletionException && t.getCause() != null ? t.getCause() : t);
        }

        @Override
        public void onComplete() {
            queue.add(END);
        }

        /** The next line, or null at the end; the failure that ended the answer is thrown. */
        String next(long deadline) throws InterruptedException, IOException {
            Object o = queue.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (o == null) {
                throw new HttpTimeoutException("the answer did not end in time");
            }
            if (o == END) {
                queue.add(END); // a later call sees the end again
                return null;
            }
            if (o instanceof IOException e) {
                throw e;
            }
            if (o instanceof Throwable t) {
                throw new IOException(t.getClass().getSimpleName() + (t.getMessage() == null ? "" : ": " + t.getMessage()), t);
            }
            subscription.get().request(1);
            return (String) o;
        }

        void cancel() {
            cancelled = true;
            Flow.Subscription s = subscription.get();
            if (s != null) {
                s.cancel();
            }
        }
    }

    /** Throws the error of a non-2xx response whose body is a stream (reading at most 64 KiB of it). */
    static void check(HttpResponse<InputStream> r) {
        if (r.statusCode() / 100 == 2) {
            return;
        }
        byte[] body;
        try (InputStream in = r.body()) {
            body = in.readNBytes(64 * 1024);
        } catch (IOException e) {
            body = new byte[0];
        }
        throw Wire.exception(r.statusCode(), body);
    }

    /** Opens a WebSocket; a refused upgrade is thrown as the error its status (and body, if any) describes. */
    WebSocket openWebSocket(String path, WebSocket.Listener listener) {
        checkOpen();
        CompletableFuture<WebSocket> f = calls.newWebSocketBuilder()
                .header("Authorization", authorization)
                .connectTimeout(CONNECT_TIMEOUT)
                .buildAsync(wsUri(path), listener);
        try {
            return f.get();
        } catch (InterruptedException e) {
            f.thenAccept(WebSocket::abort);
            throw interrupted();
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof WebSocketHandshakeException h && h.getResponse() != null) {
                HttpResponse<?> r = h.getResponse();
                Object b = r.body();
                byte[] body = b instanceof String s ? s.getBytes(StandardCharsets.UTF_8)
                        : b instanceof byte[] bytes ? bytes : new byte[0];
                throw Wire.exception(r.statusCode(), body);
            }
            if (c instanceof IOException io) {
                throw unavailable("GET " + path + " (WebSocket)", io);
            }
            throw new SandboxException(ErrorCode.INTERNAL, "opening the exec stream at " + base + path
                    + " failed: " + c, c);
        }
    }

    // ------------------------------------------------------------------ errors

    SandboxException unavailable(String what, IOException e) {
        String why;
        if (e instanceof HttpConnectTimeoutException) {
            why = "connecting timed out after " + CONNECT_TIMEOUT.toSeconds() + "s";
        } else if (e instanceof HttpTimeoutException) {
            why = "no answer in time (" + e.getMessage() + ")";
        } else if (e instanceof ConnectException) {
            why = "connection refused; is the daemon (paddock serve) running?";
        } else {
            why = e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage());
        }
        return new SandboxException(ErrorCode.UNAVAILABLE,
                "cannot reach the Paddock daemon at " + base + " (" + what + "): " + why, e);
    }

    static SandboxException interrupted() {
        Thread.currentThread().interrupt();
        return new SandboxException(ErrorCode.UNAVAILABLE, "interrupted");
    }

    // ------------------------------------------------------------------ lifecycle

    void track(RemoteExecProcess p) {
        streams.add(p);
        if (closed) {
            p.abort("the Paddock client was closed");
        }
    }

    void untrack(RemoteExecProcess p) {
        streams.remove(p);
    }

    private void checkOpen() {
        if (closed) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "this Paddock client (" + base + ") is closed");
        }
    }

    // ------------------------------------------------------------------ reusable exec sockets

    /**
     * An idle reusable exec socket ({@code /v1/exec/stream}), or a new one; null if the daemon has none (one older
     * than the route: its commands then open {@code …/exec/stream} each). Sockets idle for longer than
     * {@link #CHANNEL_IDLE} are closed rather than reused.
     */
    ExecChannel execChannel() {
        checkOpen();
        if (!channels) {
            return null;
        }
        long now = System.nanoTime();
        synchronized (idleChannels) {
            ExecChannel c;
            while ((c = idleChannels.pollLast()) != null) {
                if (c.usable() && now - c.idleSince < CHANNEL_IDLE.toNanos()) {
                    return c;
                }
                c.close();
            }
        }
        ExecChannel c = new ExecChannel();
        try {
            c.opened(openWebSocket("/v1/exec/stream", c));
            channelsOpened.incrementAndGet();
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.NOT_FOUND) {
                channels = false; // a daemon without the route
                return null;
            }
            throw e;
        }
        return c;
    }

    /** How many reusable exec sockets this client opened. */
    long channelsOpened() {
        return channelsOpened.get();
    }

    /** A command is done with {@code c}: kept for the next one if it is sound and there is room, else closed. */
    void offerChannel(ExecChannel c) {
        c.idleSince = System.nanoTime();
        synchronized (idleChannels) {
            if (!closed && c.usable() && idleChannels.size() < MAX_IDLE_CHANNELS) {
                idleChannels.addLast(c);
                return;
            }
        }
        c.close();
    }

    /** Refuses further calls and drops the exec streams still open (the daemon kills their commands). */
    void close() {
        closed = true;
        synchronized (idleChannels) {
            idleChannels.forEach(ExecChannel::close);
            idleChannels.clear();
        }
        for (RemoteExecProcess p : List.copyOf(streams)) {
            p.abort("the Paddock client was closed");
        }
        streams.clear();
    }

    private static String stripSlash(String s) {
        String out = s;
        while (out.endsWith("/")) {
            out = out.substring(0, out.length() - 1);
        }
        return out;
    }

    @Override
    public String toString() {
        return "Http[" + base + "]";
    }
}
