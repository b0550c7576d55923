package io.paddock.image.internal.registry;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/** A JDK HttpServer on a free 127.0.0.1 port, for registry fronts and misbehaving registries in tests. */
final class FakeServer implements AutoCloseable {
    private final HttpServer server;
    private final ExecutorService executor = Executors.newCachedThreadPool();

    FakeServer(HttpHandler handler) {
        try {
            server = HttpServer.create(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0), 0);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        server.createContext("/", ex -> {
            try {
                handler.handle(ex);
            } catch (RuntimeException | IOException e) {
                e.printStackTrace();
                respond(ex, 500, Map.of(), new byte[0]);
            } finally {
                ex.close();
            }
        });
        server.setExecutor(executor);
        server.start();
    }

    int port() {
        return server.getAddress().getPort();
    }

    /** {@code 127.0.0.1:<port>}. */
    String host() {
        return "127.0.0.1:" + port();
    }

    /**
     * Sends a response. A null {@code body} sends none (HEAD, 202, 401); {@code chunked} sends the body
     * without a Content-Length.
     */
    static void respond(HttpExchange ex, int status, Map<String, String> headers, byte[] body, boolean chunked)
            throws IOException {
        headers.forEach((k, v) -> ex.getResponseHeaders().add(k, v));
        // The JDK server notices a request on a kept-alive connection only when its selector wakes (up to 1 s).
        ex.getResponseHeaders().set("Connection", "close");
        if (body == null || body.length == 0 || ex.getRequestMethod().equals("HEAD")) {
            ex.sendResponseHeaders(status, -1);
            return;
        }
        ex.sendResponseHeaders(status, chunked ? 0 : body.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(body);
        } catch (IOException clientWentAway) {
            // the client under test may refuse a body half-way; that is what some tests want
        }
    }

    static void respond(HttpExchange ex, int status, Map<String, String> headers, byte[] body) throws IOException {
        respond(ex, status, headers, body, false);
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
