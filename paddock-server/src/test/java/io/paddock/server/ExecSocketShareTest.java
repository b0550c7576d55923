package io.paddock.server;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.net.http.WebSocketHandshakeException;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.CompletionException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * ATTACKS.md A83 (one tenant starves the others), for exec WebSockets: a tenant's open exec sockets stop at
 * {@code maxExecSocketsPerTenant}, with 429 before the upgrade, while another tenant and the operator go on, and
 * a closed socket gives its place back. Before the cap, one tenant could hold every one of the server's
 * connections with idle reusable sockets. A real {@link PaddockServer} over {@link FakePaddock}: a reusable
 * socket ({@code /v1/exec/stream}) needs no sandbox to open.
 */
class ExecSocketShareTest {
    private static final String OPERATOR = newToken();
    private static final String ALICE = newToken();
    private static final String BOB = newToken();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @TempDir
    Path dataDir;

    private static String newToken() {
        byte[] raw = new byte[32];
        new SecureRandom().nextBytes(raw);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
    }

    @Test
    void aTenantsExecSocketsAreCappedWhileOthersGoOn() throws Exception {
        List<WsClient> open = new ArrayList<>();
        try (PaddockServer server = PaddockServer.start(ServerOptions.builder().port(0).token(OPERATOR)
                .tenant("alice", ALICE).tenant("bob", BOB).dataDir(dataDir).maxExecSocketsPerTenant(2)
                .maxFailedAuthPerMinutePerIp(100_000).build(), new FakePaddock())) {
            URI socket = URI.create(server.url() + "/v1/exec/stream");
            WsClient first = WsClient.connect(http, socket, ALICE, true);
            open.add(first);
            open.add(WsClient.connect(http, socket, ALICE, true));
            assertThatThrownBy(() -> WsClient.connect(http, socket, ALICE, true))
                    .as("alice's third exec socket, over her share of 2")
                    .isInstanceOf(CompletionException.class)
                    .hasCauseInstanceOf(WebSocketHandshakeException.class)
                    .satisfies(e -> assertThat(((WebSocketHandshakeException) e.getCause()).getResponse().statusCode())
                            .isEqualTo(429));
            open.add(WsClient.connect(http, socket, BOB, true)); // another tenant's are counted apart
            for (int i = 0; i < 3; i++) {
                open.add(WsClient.connect(http, socket, OPERATOR, true)); // the operator's are not counted
            }

            first.socket.sendClose(WebSocket.NORMAL_CLOSURE, "bye").join();
            long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
            WsClient again = null;
            int refused = 0;
            while (again == null && System.nanoTime() < deadline) {
                try {
                    again = WsClient.connect(http, socket, ALICE, true);
                } catch (CompletionException e) {
                    refused++;
                    Thread.sleep(20);
                }
            }
            assertThat(again).as("alice's share, back once her socket closed (refused %d times first)", refused)
                    .isNotNull();
            open.add(again);
        } finally {
            for (WsClient c : open) {
                c.socket.abort();
            }
        }
    }
}
