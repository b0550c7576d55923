package io.paddock.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.SandboxInfo;
import io.paddock.SandboxState;
import io.paddock.wire.Wire;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.function.Consumer;

/**
 * A real server on loopback (port 0) over a real embedded engine, and a plain java.net.http client.
 * Every sandbox created through {@link #createSandbox} is destroyed by {@link #close()}.
 */
final class Fixture implements AutoCloseable {
    static final String SMALL = "{\"memory\":\"128m\",\"pids\":64,\"timeout_ms\":120000";

    final String token;
    final Paddock paddock;
    final PaddockServer server;
    final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final List<String> created = new ArrayList<>();

    private Fixture(Paddock paddock, PaddockServer server, String token) {
        this.paddock = paddock;
        this.server = server;
        this.token = token;
    }

    static Fixture start() {
        return start(b -> { }, 1000);
    }

    static Fixture start(Consumer<ServerOptions.Builder> options, int maxSandboxes) {
        byte[] raw = new byte[24];
        new SecureRandom().nextBytes(raw);
        String token = Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
        Paddock paddock = Paddock.local(LocalOptions.builder().maxSandboxes(maxSandboxes).build());
        try {
            ServerOptions.Builder b = ServerOptions.builder().port(0).token(token);
            options.accept(b);
            return new Fixture(paddock, PaddockServer.start(b.build(), paddock), token);
        } catch (RuntimeException e) {
            paddock.close();
            throw e;
        }
    }

    URI uri(String pathAndQuery) {
        return URI.create(server.url() + pathAndQuery);
    }

    HttpRequest.Builder request(String pathAndQuery) {
        return HttpRequest.newBuilder(uri(pathAndQuery)).timeout(Duration.ofSeconds(60))
                .header("Authorization", "Bearer " + token);
    }

    HttpResponse<String> send(HttpRequest request) {
        try {
            return http.send(request, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    HttpResponse<String> get(String path) {
        return send(request(path).GET().build());
    }

    HttpResponse<String> delete(String path) {
        return send(request(path).DELETE().build());
    }

    HttpResponse<String> post(String path, String json) {
        return send(request(path).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)).build());
    }

    HttpResponse<String> patch(String path, String json) {
        return send(request(path).header("Content-Type", "application/json")
                .method("PATCH", HttpRequest.BodyPublishers.ofString(json)).build());
    }

    HttpResponse<String> put(String path, byte[] body) {
        return send(request(path).header("Content-Type", "application/octet-stream")
                .PUT(HttpRequest.BodyPublishers.ofByteArray(body)).build());
    }

    /** Creates a small sandbox; {@code extra} is more JSON members (with a leading comma) or "". */
    JsonNode createSandbox(String extra) {
        HttpResponse<String> r = post("/v1/sandboxes", SMALL + extra + "}");
        if (r.statusCode() != 201) {
            throw new AssertionError("create failed: " + r.statusCode() + " " + r.body());
        }
        JsonNode info = json(r);
        created.add(info.get("id").asText());
        return info;
    }

    String createSandboxId() {
        return createSandbox("").get("id").asText();
    }

    static JsonNode json(HttpResponse<String> r) {
        return Wire.parse(r.body().getBytes(StandardCharsets.UTF_8));
    }

    /** Destroys everything this fixture's engine still runs, then stops the server and the engine. */
    @Override
    public void close() {
        try {
            for (SandboxInfo i : paddock.list()) {
                if (i.state() != SandboxState.STOPPED) {
                    paddock.get(i.id()).destroy();
                }
            }
        } finally {
            try {
                server.close();
            } finally {
                paddock.close();
            }
        }
    }
}
