package io.paddock.engine.internal;

import io.paddock.DestinationRule;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.image.internal.oci.ImageRef;
import io.paddock.image.internal.registry.PullListener;
import io.paddock.image.internal.registry.RegistryClient;
import io.paddock.image.internal.store.BlobStore;
import io.paddock.network.DestinationGate;
import io.paddock.network.Destinations;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetAddress;
import java.net.ProxySelector;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * DNS rebinding between the destination check and the connect (docs/SECURITY.md, A82c): a registry name that
 * answers an allowed address to the check and loopback when the pull connects. "Loopback" is a listener on
 * 127.0.0.1 that counts what reaches it; the allowed address (198.18.251.7) is only ever answered to the check, so
 * nothing is sent anywhere but loopback. The name is {@code localhost}, so that the JDK's own resolution, which the
 * HTTP client uses when it connects without the gate, gives the rebound answer too.
 */
class RegistryRebindingTest {
    @TempDir
    Path tmp;

    /** {@code localhost}: first 198.18.251.7 (allowed), then 127.0.0.1, as a rebinding name server answers. */
    private static DestinationGate.Resolver rebinding(AtomicInteger asked) {
        return host -> List.of(InetAddress.getByName(asked.getAndIncrement() == 0 ? "198.18.251.7" : "127.0.0.1"));
    }

    /** The rule a daemon gives a tenant's pull (Tenancy.registryDestinations), with or without the gate's proxy. */
    private static DestinationRule rule(DestinationGate gate, boolean throughGate) {
        return new DestinationRule() {
            @Override
            public void accept(URI uri) {
                gate.check("ref", "the registry " + uri.getHost(), uri.getHost());
            }

            @Override
            public Optional<ProxySelector> proxy() {
                return throughGate ? Optional.of(gate.proxySelector()) : Optional.empty();
            }
        };
    }

    private void pull(DestinationRule rule, int port) {
        RegistryClient.builder().destinations(rule).proxy(rule.proxy().orElse(null)).build()
                .pull(ImageRef.parse("localhost:" + port + "/acc/x:1"), "linux/amd64",
                        new BlobStore(tmp.resolve("store")), PullListener.NONE);
    }

    @Test
    void aNameReboundAfterTheCheckNeverMakesThePullConnectThere() throws Exception {
        AtomicInteger asked = new AtomicInteger();
        try (ServerSocket refused = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
             DestinationGate gate = DestinationGate.start(Destinations.defaults(), rebinding(asked))) {
            int port = refused.getLocalPort();
            AtomicInteger reached = new AtomicInteger();
            Thread counter = new Thread(() -> {
                while (!refused.isClosed()) {
                    try (Socket s = refused.accept()) {
                        reached.incrementAndGet(); // closed at once: the client fails fast
                    } catch (java.io.IOException e) {
                        return;
                    }
                }
            });
            counter.setDaemon(true);
            counter.start();

            // Without the gate (the old path) the check passes and the client connects where the name now points.
            assertThatThrownBy(() -> pull(rule(gate, false), port)).isInstanceOf(SandboxException.class);
            assertThat(reached.get()).as("connections to 127.0.0.1 without the gate").isPositive();

            asked.set(0);
            reached.set(0);
            assertThatThrownBy(() -> pull(rule(gate, true), port))
                    .isInstanceOfSatisfying(SandboxException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.PERMISSION_DENIED);
                        assertThat(e.getMessage()).contains("connect time");
                    });
            assertThat(asked.get()).as("the check's and the gate's resolutions").isEqualTo(2);
            Thread.sleep(300);
            assertThat(reached.get()).as("connections to 127.0.0.1 through the gate").isZero();
        }
    }
}
