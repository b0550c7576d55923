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
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;

/**
 * The one HTTP client of a {@link RemotePaddock}: builds {@code /v1} URLs, adds the bearer token to every
 * request, turns error bodies back into {@link SandboxException} ({@link Wire#exception}) and transport
 * failures into {@code UNAVAILABLE} naming the daemon's URL.
 *
 * <p>The token lives only in {@link #authorization}: never in a URL, a message or {@link #toString()}.
 * Thread-safe.
 */
final class Http {
    /** Connecting (TCP and, for streams, the WebSocket upgrade) gives up after this. */
    static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(10);
    /** Requests that only read or change metadata; exec, create and file transfers are not bounded. */
    static final Duration CONTROL_TIMEOUT = Duration.ofMinutes(2);

    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    private final HttpClient client;
    /** The daemon's base URL without a trailing slash, for example {@code http://127.0.0.1:7070}. */
    private final String base;
    private final String authorization;
    private final Set<RemoteExecProcess> streams = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    Http(URI url, String token) {
        this.base = stripSlash(url.toString());
        this.authorization = "Bearer " + token;
        this.client = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(CONNECT_TIMEOUT)
                .followRedirects(HttpClient.Redirect.NEVER)
                .build();
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
        HttpResponse<byte[]> r = send(b.build(), HttpResponse.BodyHandlers.ofByteArray(), method + " " + path);
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
        try {
            return client.send(request, handler);
        } catch (IOException e) {
            throw unavailable(what, e);
        } catch (InterruptedException e) {
            throw interrupted();
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
        CompletableFuture<WebSocket> f = client.newWebSocketBuilder()
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

    /** Refuses further calls and drops the exec streams still open (the daemon kills their commands). */
    void close() {
        closed = true;
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
