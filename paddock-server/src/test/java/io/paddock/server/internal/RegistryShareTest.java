package io.paddock.server.internal;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.image.internal.oci.ImageRef;
import io.paddock.image.internal.registry.PullListener;
import io.paddock.image.internal.registry.RegistryClient;
import io.paddock.image.internal.store.BlobStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.net.Proxy;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * ATTACKS.md A83i: one tenant cannot take every tunnel of the daemon's destination gate. Alice's pull holds her
 * share (2 here) of the gate's tunnels (connections to her lane that never finish their CONNECT, as a registry
 * trickling nothing would hold them); then Bob's pull still reaches the gate and is answered there (his registry
 * name resolves nowhere: 502, UNAVAILABLE, not a share refusal), while Alice's next pull, the real registry client
 * through the real gate, fails 429 RESOURCE_EXHAUSTED naming {@code --max-registry-connections-per-tenant}; and
 * so does a pull beyond her share of pulls at once. When her holding pull ends its lane closes, and her next pull
 * gets a tunnel again. Failed before the share (the gate's accept counted no owner): Alice's third tunnel was made.
 */
class RegistryShareTest {
    @TempDir
    Path blobs;

    private static final Caller ALICE = Caller.tenant("alice");
    private static final Caller BOB = Caller.tenant("bob");

    /** A pull by the registry client as the daemon makes it, of a registry whose name resolves nowhere. */
    private SandboxException pull(Tenancy tenancy, Caller caller) {
        try {
            tenancy.registry(caller, rule -> RegistryClient.builder().destinations(rule).proxy(rule.proxy().orElseThrow())
                    .timeout(Duration.ofSeconds(5)).build()
                    .pull(ImageRef.parse("registry.paddock.invalid/app:1"), "linux/amd64", new BlobStore(blobs),
                            PullListener.NONE));
        } catch (SandboxException e) {
            return e;
        }
        throw new AssertionError("the pull succeeded");
    }

    @Test
    void aTenantHoldsAtMostItsShareOfTheGateAndOthersStillPull() throws Exception {
        try (Tenancy tenancy = new Tenancy(null, Set.of("alice", "bob"), 10).maxRegistryConnectionsPerTenant(2)) {
            CountDownLatch holding = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            List<Socket> held = new ArrayList<>();
            Thread slowPull = new Thread(() -> tenancy.registry(ALICE, rule -> {
                Proxy p = rule.proxy().orElseThrow().select(URI.create("https://registry.paddock.invalid/")).get(0);
                InetSocketAddress lane = (InetSocketAddress) p.address();
                try {
                    for (int i = 0; i < 2; i++) {
                        held.add(new Socket(lane.getAddress(), lane.getPort())); // counted at accept, never ended
                    }
                    holding.countDown();
                    release.await(30, TimeUnit.SECONDS);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
                return null;
            }));
            slowPull.start();
            assertThat(holding.await(10, TimeUnit.SECONDS)).isTrue();
            Thread.sleep(200); // the gate has accepted both

            SandboxException bobs = pull(tenancy, BOB);
            assertThat(bobs.code()).as("bob's pull reached the gate: " + bobs.getMessage()).isEqualTo(ErrorCode.UNAVAILABLE);
            assertThat(bobs.getMessage()).contains("502");

            SandboxException alices = pull(tenancy, ALICE);
            assertThat(alices.code()).as(alices.getMessage()).isEqualTo(ErrorCode.RESOURCE_EXHAUSTED);
            assertThat(alices.getMessage()).contains("tenant 'alice' already has 2 connections to registries open")
                    .contains("--max-registry-connections-per-tenant");

            assertThatThrownBy(() -> tenancy.registry(ALICE, rule -> tenancy.registry(ALICE, inner -> null)))
                    .as("a third pull at once, her first two lanes open")
                    .isInstanceOfSatisfying(SandboxException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.RESOURCE_EXHAUSTED);
                        assertThat(e.getMessage()).contains("2 pulls and pushes running")
                                .contains("--max-registry-connections-per-tenant");
                    });

            release.countDown();
            slowPull.join(10_000);
            for (Socket s : held) {
                s.close();
            }
            long until = System.nanoTime() + Duration.ofSeconds(5).toNanos();
            SandboxException again = pull(tenancy, ALICE);
            while (again.code() == ErrorCode.RESOURCE_EXHAUSTED && System.nanoTime() < until) {
                Thread.sleep(20);
                again = pull(tenancy, ALICE);
            }
            assertThat(again.code()).as("her share back once her pull ended: " + again.getMessage())
                    .isEqualTo(ErrorCode.UNAVAILABLE);
        }
        assertThatThrownBy(() -> new Tenancy(null, Set.of("alice"), 1).maxRegistryConnectionsPerTenant(129))
                .hasMessageContaining("maxRegistryConnectionsPerTenant");
    }
}
