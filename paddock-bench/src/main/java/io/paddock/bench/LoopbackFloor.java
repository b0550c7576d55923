package io.paddock.bench;

import io.paddock.bench.host.Peers;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.eclipse.jetty.websocket.api.Session;
import org.eclipse.jetty.websocket.server.ServerWebSocketContainer;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * P10's floor: what the remote API's transport costs with nothing behind it, on the stack the remote API uses
 * (the JDK's HTTP client and WebSocket against Jetty, on 127.0.0.1, in this JVM). A remote create adds one HTTP
 * request and one message each way on the reused exec socket to the embedded create; a remote exec adds the
 * messages. Their sum is what the remote API cannot go below on this machine, whatever the daemon does.
 *
 * <p>P7's floor is its host pipe relayed over the same stack: {@link #relayedHostPipe} has a WebSocket endpoint run
 * {@code head -c SIZE /dev/zero} on the host and send its output as the daemon sends a command's (64 KiB binary
 * messages after a stream byte, each send awaited), and the client hand each message's copy to the calling thread,
 * as the remote SDK's exec socket hands output to its reader.
 */
final class LoopbackFloor implements AutoCloseable {
    private static final byte[] BODY = "{\"id\":\"sb-0123456789abcdefghijklmnop\",\"state\":\"RUNNING\"}"
            .getBytes(StandardCharsets.UTF_8);

    private static final Duration IDLE = Duration.ofHours(1);
    private static final String START = "{\"argv\":[\"/bin/echo\",\"hi\"]}";

    private final Server server;
    private final HttpClient client;
    private final int port;
    private final HttpRequest post;
    private final WebSocket socket;
    private final BlockingQueue<String> echoes = new ArrayBlockingQueue<>(4);

    private LoopbackFloor(Server server, HttpClient client, int port) {
        this.server = server;
        this.client = client;
        this.port = port;
        this.post = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/sandboxes"))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofByteArray(BODY)).build();
        this.socket = client.newWebSocketBuilder().buildAsync(URI.create("ws://127.0.0.1:" + port + "/ws"), new WebSocket.Listener() {
            private final StringBuilder text = new StringBuilder();

            @Override
            public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
                text.append(data);
                if (last) {
                    echoes.add(text.toString());
                    text.setLength(0);
                }
                ws.request(1);
                return null;
            }
        }).join();
    }

    static LoopbackFloor start() throws Exception {
        QueuedThreadPool pool = new QueuedThreadPool(32, 8);
        pool.setName("bench-floor-http");
        pool.setDaemon(true);
        Server server = new Server(pool);
        ServerConnector connector = new ServerConnector(server, 1, 1);
        connector.setHost("127.0.0.1");
        connector.setPort(0);
        // the socket and the kept-alive connection wait through the figure's other rows: they must not idle out
        connector.setIdleTimeout(IDLE.toMillis());
        server.addConnector(connector);
        ServerWebSocketContainer websockets = ServerWebSocketContainer.ensure(server);
        websockets.setIdleTimeout(IDLE);
        server.setHandler(new Handler.Abstract() {
            @Override
            public boolean handle(Request request, Response response, Callback callback) throws Exception {
                if (request.getHttpURI().getPath().equals("/ws")) {
                    return websockets.upgrade((rq, rs, cb) -> new Echo(), request, response, callback);
                }
                if (request.getHttpURI().getPath().equals("/pipe")) {
                    return websockets.upgrade((rq, rs, cb) -> new Relay(), request, response, callback);
                }
                Content.Source.asString(request, StandardCharsets.UTF_8);
                response.getHeaders().put(HttpHeader.CONTENT_TYPE, "application/json");
                response.write(true, ByteBuffer.wrap(BODY), callback);
                return true;
            }
        });
        server.start();
        try {
            // configured as the remote client's calls and exec sockets are (Http#calls): callbacks on the selector thread
            HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).executor(Runnable::run).build();
            return new LoopbackFloor(server, client, connector.getLocalPort());
        } catch (RuntimeException e) {
            server.stop();
            throw e;
        }
    }

    /** A POST of a small JSON body answered with a small JSON body, as a create is, on a kept-alive connection. */
    long httpRoundTrip() throws Exception {
        long t0 = System.nanoTime();
        HttpResponse<byte[]> r = client.send(post, HttpResponse.BodyHandlers.ofByteArray());
        long t = System.nanoTime() - t0;
        if (r.statusCode() != 200 || r.body().length != BODY.length) {
            throw new IllegalStateException("floor: HTTP " + r.statusCode());
        }
        return t;
    }

    /** A text message to the echo endpoint and its echo back, on one open socket, as an exec's start and output. */
    long webSocketRoundTrip() throws Exception {
        long t0 = System.nanoTime();
        socket.sendText(START, true).join();
        String echo = echoes.poll(10, TimeUnit.SECONDS);
        long t = System.nanoTime() - t0;
        if (!START.equals(echo)) {
            throw new IllegalStateException("floor: no WebSocket echo within 10 s (got " + echo + ")");
        }
        return t;
    }

    /** {@code head -c size /dev/zero} on the host, relayed to this thread over a fresh socket; the bytes that came. */
    long relayedHostPipe(long size) throws Exception {
        BlockingQueue<byte[]> chunks = new LinkedBlockingQueue<>();
        byte[] end = new byte[0];
        WebSocket ws = client.newWebSocketBuilder().buildAsync(URI.create("ws://127.0.0.1:" + port + "/pipe"),
                new WebSocket.Listener() {
                    private boolean first = true;

                    @Override
                    public CompletionStage<?> onBinary(WebSocket w, ByteBuffer data, boolean last) {
                        if (first && data.hasRemaining()) {
                            data.get(); // the stream byte
                        }
                        first = last;
                        byte[] b = new byte[data.remaining()];
                        data.get(b);
                        chunks.add(b);
                        w.request(1);
                        return null;
                    }

                    @Override
                    public CompletionStage<?> onText(WebSocket w, CharSequence data, boolean last) {
                        chunks.add(end);
                        return null;
                    }

                    @Override
                    public void onError(WebSocket w, Throwable error) {
                        chunks.add(end);
                    }
                }).join();
        try {
            ws.sendText(Long.toString(size), true).join();
            long total = 0;
            while (true) {
                byte[] b = chunks.poll(60, TimeUnit.SECONDS);
                if (b == null) {
                    throw new IllegalStateException("floor: the relayed pipe stalled after " + total + " bytes");
                }
                if (b == end) {
                    return total;
                }
                total += b.length;
            }
        } finally {
            ws.abort();
        }
    }

    @Override
    public void close() throws Exception {
        socket.abort();
        server.stop();
    }

    /** A server end that keeps its session and asks for the first frame. */
    public abstract static class Endpoint implements Session.Listener {
        protected Session session;

        @Override
        public void onWebSocketOpen(Session s) {
            session = s;
            s.demand();
        }
    }

    /** Runs {@code head -c N /dev/zero} for a text message N and sends its output as the daemon sends a command's. */
    public static final class Relay extends Endpoint {
        private static final int CHUNK = 64 * 1024; // ExecSocket's

        @Override
        public void onWebSocketText(String text) {
            long size = Long.parseLong(text);
            Thread t = new Thread(() -> relay(size), "bench-relay");
            t.setDaemon(true);
            t.start();
        }

        private void relay(long size) {
            try {
                Process pr = Peers.zeroes(size);
                byte[] buf = new byte[CHUNK + 1];
                buf[0] = 1;
                try (InputStream in = pr.getInputStream()) {
                    int n;
                    while ((n = in.read(buf, 1, CHUNK)) > 0) {
                        CompletableFuture<Void> sent = new CompletableFuture<>();
                        session.sendBinary(ByteBuffer.wrap(buf, 0, n + 1), org.eclipse.jetty.websocket.api.Callback
                                .from(() -> sent.complete(null), sent::completeExceptionally));
                        sent.get();
                    }
                }
                pr.waitFor();
                session.sendText("end", org.eclipse.jetty.websocket.api.Callback.NOOP);
            } catch (IOException | ExecutionException e) {
                session.close();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                session.close();
            }
        }
    }

    /** Sends every text message back. */
    public static final class Echo extends Endpoint {
        @Override
        public void onWebSocketText(String text) {
            session.sendText(text, org.eclipse.jetty.websocket.api.Callback.NOOP);
            session.demand();
        }
    }
}
