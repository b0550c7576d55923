package io.paddock.server;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.wire.Wire;
import org.eclipse.jetty.http.HttpField;
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
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * What stands for a server in a sandbox: HTTP and WebSocket on 127.0.0.1, which tells what it received.
 * <ul>
 *   <li>{@code /echo…} (any other path too): JSON of the method, raw path, raw query, headers and body;</li>
 *   <li>{@code /stream}: "first|", then waits for {@link #firstSeen} (the client got it) before "second";</li>
 *   <li>{@code /upload}: reads 5 bytes, counts {@link #part1Read} down, answers with the whole body;</li>
 *   <li>{@code /big?mb=N}: N MiB of {@link #pattern} bytes, chunked;</li>
 *   <li>{@code /hang}: "x", then nothing until the connection ends;</li>
 *   <li>{@code /cookies}: four Set-Cookie headers, one with a Domain, two named as the daemon's own;</li>
 *   <li>{@code /ws}: a WebSocket echoing text as "echo:TEXT" and binary as is ("chat" subprotocol taken).</li>
 * </ul>
 */
final class Backend implements AutoCloseable {
    final Server server;
    final int port;
    /** The headers of every WebSocket upgrade, lower-case names (newest last). */
    final BlockingQueue<ObjectNode> upgrades = new LinkedBlockingQueue<>();
    volatile CountDownLatch firstSeen = new CountDownLatch(1);
    volatile CountDownLatch part1Read = new CountDownLatch(1);
    private final CountDownLatch stopped = new CountDownLatch(1);

    Backend() throws Exception {
        QueuedThreadPool pool = new QueuedThreadPool(64, 4);
        pool.setDaemon(true);
        server = new Server(pool);
        server.setStopTimeout(1000);
        ServerConnector c = new ServerConnector(server);
        c.setHost("127.0.0.1");
        c.setPort(0);
        server.addConnector(c);
        ServerWebSocketContainer ws = ServerWebSocketContainer.ensure(server);
        ws.setMaxBinaryMessageSize(64 << 20);
        ws.setMaxTextMessageSize(64 << 20);
        ws.setMaxFrameSize(64 << 20);
        server.setHandler(new Handler.Abstract(org.eclipse.jetty.util.thread.Invocable.InvocationType.BLOCKING) {
            @Override
            public boolean handle(Request request, Response response, Callback callback) throws Exception {
                String path = request.getHttpURI().getPath();
                switch (path) {
                    case "/ws" -> {
                        upgrades.add(headers(request));
                        ws.upgrade((rq, rs, cb) -> {
                            if (rq.getSubProtocols().contains("chat")) {
                                rs.setAcceptedSubProtocol("chat");
                            }
                            return new Echo();
                        }, request, response, callback);
                    }
                    case "/stream" -> {
                        response.setStatus(200);
                        OutputStream out = Content.Sink.asOutputStream(response);
                        out.write("first|".getBytes(StandardCharsets.UTF_8));
                        out.flush();
                        boolean seen = firstSeen.await(10, TimeUnit.SECONDS);
                        out.write((seen ? "second" : "late").getBytes(StandardCharsets.UTF_8));
                        out.close();
                        callback.succeeded();
                    }
                    case "/upload" -> {
                        InputStream in = Content.Source.asInputStream(request);
                        byte[] part1 = new byte[5]; // not readNBytes: its last read asks for 0 bytes, which blocks here
                        for (int at = 0, n; at < 5 && (n = in.read(part1, at, 5 - at)) > 0; ) {
                            at += n;
                        }
                        part1Read.countDown();
                        byte[] rest = in.readAllBytes();
                        byte[] all = new byte[part1.length + rest.length];
                        System.arraycopy(part1, 0, all, 0, part1.length);
                        System.arraycopy(rest, 0, all, part1.length, rest.length);
                        response.setStatus(200);
                        response.write(true, ByteBuffer.wrap(all), callback);
                    }
                    case "/big" -> {
                        int mb = Integer.parseInt(request.getHttpURI().getQuery().replace("mb=", ""));
                        response.setStatus(200);
                        response.getHeaders().put("Content-Type", "application/octet-stream");
                        OutputStream out = Content.Sink.asOutputStream(response);
                        byte[] chunk = pattern(1 << 20);
                        for (int i = 0; i < mb; i++) {
                            out.write(chunk);
                        }
                        out.close();
                        callback.succeeded();
                    }
                    case "/hang" -> {
                        response.setStatus(200);
                        OutputStream out = Content.Sink.asOutputStream(response);
                        out.write('x');
                        out.flush();
                        stopped.await(5, TimeUnit.MINUTES); // the proxy ends the exchange, not this side
                        callback.succeeded();
                    }
                    case "/cookies" -> {
                        response.setStatus(200);
                        response.getHeaders().add("Set-Cookie", "app=1; Path=/; HttpOnly");
                        response.getHeaders().add("Set-Cookie", "wide=1; Domain=ports.test; Path=/");
                        response.getHeaders().add("Set-Cookie", "paddock_token=forged; Path=/");
                        response.getHeaders().add("Set-Cookie", "paddock_session=forged; Path=/");
                        response.write(true, null, callback);
                    }
                    default -> echo(request, response, callback);
                }
                return true;
            }
        });
        server.start();
        port = c.getLocalPort();
    }

    /** The bytes {@code /big} sends, per MiB. */
    static byte[] pattern(int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (i * 31 + (i >> 11));
        }
        return b;
    }

    private static ObjectNode headers(Request request) {
        ObjectNode h = Wire.object();
        for (HttpField f : request.getHeaders()) {
            String name = f.getName().toLowerCase(Locale.ROOT);
            ArrayNode a = h.has(name) ? (ArrayNode) h.get(name) : h.putArray(name);
            a.add(f.getValue());
        }
        return h;
    }

    private static void echo(Request request, Response response, Callback callback) throws IOException {
        byte[] body = Content.Source.asInputStream(request).readAllBytes();
        ObjectNode o = Wire.object();
        o.put("method", request.getMethod());
        o.put("path", request.getHttpURI().getPath());
        if (request.getHttpURI().getQuery() != null) {
            o.put("query", request.getHttpURI().getQuery());
        }
        o.set("headers", headers(request));
        o.put("body", new String(body, StandardCharsets.UTF_8));
        byte[] bytes = Wire.bytes(o);
        response.setStatus(200);
        response.getHeaders().put("Content-Type", "application/json");
        response.getHeaders().put("Cache-Control", "max-age=60");
        response.getHeaders().put("X-Backend", "yes");
        response.getHeaders().put("Content-Length", bytes.length);
        response.write(true, ByteBuffer.wrap(bytes), callback);
    }

    /** Echoes text as "echo:TEXT" and binary as it came. */
    public static final class Echo extends Session.Listener.AbstractAutoDemanding {
        @Override
        public void onWebSocketText(String message) {
            getSession().sendText("echo:" + message, org.eclipse.jetty.websocket.api.Callback.NOOP);
        }

        @Override
        public void onWebSocketBinary(ByteBuffer payload, org.eclipse.jetty.websocket.api.Callback callback) {
            ByteBuffer copy = ByteBuffer.allocate(payload.remaining());
            copy.put(payload).flip();
            callback.succeed();
            getSession().sendBinary(copy, org.eclipse.jetty.websocket.api.Callback.NOOP);
        }
    }

    @Override
    public void close() throws Exception {
        stopped.countDown();
        server.stop();
    }
}
