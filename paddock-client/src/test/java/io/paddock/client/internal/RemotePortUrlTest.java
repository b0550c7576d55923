package io.paddock.client.internal;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.paddock.ErrorCode;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.SandboxInfo;
import io.paddock.SandboxState;
import io.paddock.wire.Wire;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code Sandbox.url(port)} of the remote SDK: one {@code POST …/ports/{port}/url}, and the signed path on
 * this client's own base URL. Against a stub of the daemon's answers (the daemon's side is tested in
 * paddock-server's PortProxyTest).
 */
class RemotePortUrlTest {
    private static final String ID = "sb-" + "abcdefghijklmnopqrstuvwxyz";
    private static final String TOKEN = "t0ken-for-the-stub";
    private HttpServer stub;
    private final List<String> calls = new CopyOnWriteArrayList<>();

    @BeforeEach
    void start() throws IOException {
        stub = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        stub.createContext("/base/", this::answer);
        stub.start();
    }

    @AfterEach
    void stop() {
        stub.stop(0);
    }

    private void answer(HttpExchange x) throws IOException {
        String path = x.getRequestURI().getRawPath().substring("/base".length());
        calls.add(x.getRequestMethod() + " " + path + " " + x.getRequestHeaders().getFirst("Authorization"));
        x.getRequestBody().readAllBytes();
        int status = 200;
        Object body;
        if (path.equals("/v1/version")) {
            body = Wire.object().put("version", "test").put("api", "1").put("runtime", "stub");
        } else if (path.equals("/v1/sandboxes/" + ID)) {
            body = Wire.json(new SandboxInfo(new SandboxId(ID), Optional.empty(), Map.of(), SandboxState.RUNNING,
                    Optional.empty(), Instant.now(), Instant.now().plusSeconds(600), "host", "runc", Optional.empty()));
        } else if (path.equals("/v1/sandboxes/" + ID + "/ports/8000/url")) {
            body = Wire.object().put("url", "http://as-the-daemon-saw-it/v1/p/SIGNED/").put("path", "/v1/p/SIGNED/")
                    .put("expires_at", Instant.now().plusSeconds(600).toString());
        } else {
            status = 400;
            body = Wire.error(ErrorCode.INVALID_ARGUMENT, "port 9 was not exposed (exposed: [8000])");
        }
        byte[] bytes = Wire.bytes((com.fasterxml.jackson.databind.JsonNode) body);
        x.getResponseHeaders().add("Content-Type", "application/json");
        x.sendResponseHeaders(status, bytes.length);
        x.getResponseBody().write(bytes);
        x.close();
    }

    @Test
    void aPortsUrlIsTheSignedPathOnThisClientsBase() {
        URI base = URI.create("http://127.0.0.1:" + stub.getAddress().getPort() + "/base");
        try (Paddock p = Paddock.connect(base, TOKEN)) {
            Sandbox sb = p.get(ID);
            assertThat(sb.url(8000)).isEqualTo(URI.create(base + "/v1/p/SIGNED/"));
            assertThat(calls).contains("POST /v1/sandboxes/" + ID + "/ports/8000/url Bearer " + TOKEN);
            assertThatThrownBy(() -> sb.url(9)).isInstanceOf(SandboxException.class)
                    .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.INVALID_ARGUMENT))
                    .hasMessageContaining("[8000]");
            int before = calls.size();
            assertThatThrownBy(() -> sb.url(0)).isInstanceOf(SandboxException.class).hasMessageContaining("port");
            assertThatThrownBy(() -> sb.url(65536)).isInstanceOf(SandboxException.class);
            assertThat(calls).hasSize(before); // refused here, before any call
        }
    }
}
