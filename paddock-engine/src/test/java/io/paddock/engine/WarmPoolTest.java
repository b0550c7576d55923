package io.paddock.engine;

import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.ExecResult;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.PoolConfig;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxInfo;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;
import io.paddock.engine.host.EngineProcess;
import io.paddock.engine.internal.LocalPaddock;
import io.paddock.engine.internal.PoolStats;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Predicate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Warm pools on real runc sandboxes, with the leak check around every test: a pooled sandbox is taken
 * once, carries the tenant's identity and nothing of anyone else, is refilled, expires when idle too
 * long, counts against the engine's maximum, and is destroyed on close (or removed by a restarted daemon).
 */
class WarmPoolTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    private static final SandboxSpec SHAPE = SandboxSpec.builder().memory(ByteSize.mib(128)).pids(64)
            .disk(ByteSize.mib(64)).build();

    @TempDir
    Path dataDir;

    private static LocalPaddock engine(PoolConfig pool, int maxSandboxes) {
        return (LocalPaddock) Paddock.local(LocalOptions.builder().maxSandboxes(maxSandboxes).warmPool(pool).build());
    }

    private static PoolStats stats(LocalPaddock p) {
        return p.poolStats().get(0);
    }

    private static PoolStats await(LocalPaddock p, Predicate<PoolStats> condition) throws InterruptedException {
        long until = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < until) {
            PoolStats s = stats(p);
            if (condition.test(s)) {
                return s;
            }
            Thread.sleep(10);
        }
        throw new AssertionError("pool never reached the condition: " + stats(p));
    }

    @Test
    void aClaimedSandboxCarriesTheTenantsIdentityAndNothingOfThePreviousTenant() throws Exception {
        try (LocalPaddock paddock = engine(PoolConfig.builder().shape(SHAPE).size(2).build(), 100)) {
            await(paddock, s -> s.idle() == 2);
            Set<String> seen = new HashSet<>();
            for (int i = 0; i < 3; i++) {
                Instant before = Instant.now();
                try (Sandbox sb = paddock.create(SHAPE.toBuilder().name("tenant-" + i).label("round", "" + i)
                        .env("ROUND", "" + i).secret("TOKEN", "s" + i).timeout(Duration.ofSeconds(90 + i)).build())) {
                    assertThat(seen.add(sb.id().value())).as("a pooled sandbox is never handed out twice").isTrue();
                    SandboxInfo info = sb.info();
                    assertThat(info.name()).contains("tenant-" + i);
                    assertThat(info.labels()).containsEntry("round", "" + i);
                    assertThat(info.state()).isEqualTo(SandboxState.RUNNING);
                    assertThat(info.createdAt()).isAfterOrEqualTo(before.minusMillis(5));
                    assertThat(Duration.between(Instant.now(), info.expiresAt())).isBetween(Duration.ofSeconds(80 + i),
                            Duration.ofSeconds(91 + i));
                    assertThat(paddock.getByName("tenant-" + i).id()).isEqualTo(sb.id());
                    ExecResult r = sb.exec("sh", "-c", "echo $ROUND $TOKEN; ls -A /workspace /tmp; ps -e -o comm=");
                    assertThat(r.stdoutText()).startsWith(i + " s" + i + "\n");
                    assertThat(r.stdoutText()).doesNotContain("left-by");
                    sb.files().writeString("/workspace/left-by-" + i, "x");
                    sb.exec("sh", "-c", "echo x > /tmp/left-by-" + i);
                    sb.start(io.paddock.ExecRequest.of("sleep", "600")).closeStdin();
                }
                await(paddock, s -> s.idle() == 2);
            }
            PoolStats s = stats(paddock);
            assertThat(s.hits()).isEqualTo(3);
            assertThat(s.created()).isGreaterThanOrEqualTo(5);
            assertThat(s.refillP50Ms()).isPositive();
        }
    }

    @Test
    void drainingThePoolMissesThenRefillsAndOtherShapesAndEntrypointsBypassIt() throws Exception {
        try (LocalPaddock paddock = engine(PoolConfig.builder().shape(SHAPE).size(1).refillConcurrency(1).build(), 100)) {
            await(paddock, s -> s.idle() == 1);
            List<Sandbox> all = new ArrayList<>();
            try {
                all.add(paddock.create(SHAPE));
                all.add(paddock.create(SHAPE)); // the refill takes tens of ms: a miss, created cold
                all.add(paddock.create(SHAPE.toBuilder().memory(ByteSize.mib(96)).build()));
                all.add(paddock.create(SHAPE.toBuilder().entrypoint("sleep", "600").build()));
                PoolStats s = stats(paddock);
                assertThat(s.hits()).isEqualTo(1);
                assertThat(s.misses()).isEqualTo(1);
                for (Sandbox sb : all) {
                    assertThat(sb.exec("true").success()).isTrue();
                }
                await(paddock, st -> st.idle() == 1);
            } finally {
                all.forEach(Sandbox::destroy);
            }
        }
    }

    @Test
    void idleSandboxesOlderThanMaxIdleAreReplaced() throws Exception {
        try (LocalPaddock paddock = engine(PoolConfig.builder().shape(SHAPE).size(1).maxIdle(Duration.ofSeconds(1)).build(), 100)) {
            await(paddock, s -> s.idle() == 1);
            PoolStats s = await(paddock, st -> st.expired() >= 1 && st.idle() == 1);
            assertThat(s.created()).isGreaterThanOrEqualTo(2);
            try (Sandbox sb = paddock.create(SHAPE)) {
                assertThat(sb.exec("true").success()).isTrue();
            }
        }
    }

    @Test
    void pooledSandboxesCountAgainstTheEnginesMaximum() throws Exception {
        try (LocalPaddock paddock = engine(PoolConfig.builder().shape(SHAPE).size(2).build(), 3)) {
            await(paddock, s -> s.idle() == 2);
            List<Sandbox> all = new ArrayList<>();
            try {
                // the fourth is refused; a cold create at the limit evicts an idle pooled sandbox first
                all.add(paddock.create(SHAPE.toBuilder().memory(ByteSize.mib(96)).build()));
                assertThat(stats(paddock).idle() + stats(paddock).creating()).isLessThanOrEqualTo(2);
                all.add(paddock.create(SHAPE));
                all.add(paddock.create(SHAPE));
                assertThatThrownBy(() -> paddock.create(SHAPE)).isInstanceOfSatisfying(SandboxException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.RESOURCE_EXHAUSTED));
                assertThat(stats(paddock).idle() + stats(paddock).creating()).isZero();
                // a destroyed sandbox stays listed (stopped) for a while, but no longer counts
                all.remove(0).destroy();
                assertThat(paddock.list()).hasSize(3);
                all.add(paddock.create(SHAPE.toBuilder().memory(ByteSize.mib(96)).build()));
                assertThatThrownBy(() -> paddock.create(SHAPE)).isInstanceOfSatisfying(SandboxException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.RESOURCE_EXHAUSTED));
            } finally {
                all.forEach(Sandbox::destroy);
            }
        }
    }

    @Test
    void aTenantsCreateAtTheMaximumWinsOverARefillInFlight() throws Exception {
        try (LocalPaddock paddock = engine(PoolConfig.builder().shape(SHAPE).size(1).build(), 2)) {
            await(paddock, s -> s.idle() == 1);
            List<Sandbox> all = new ArrayList<>();
            try {
                // the claim leaves room for one: the pool refills it (a runc create, ≥ 20 ms) ...
                all.add(paddock.create(SHAPE));
                await(paddock, s -> s.creating() == 1 || s.idle() == 1);
                // ... and a cold create at the maximum waits for that creation and evicts it, rather than refuse
                all.add(paddock.create(SHAPE.toBuilder().memory(ByteSize.mib(96)).build()));
                assertThat(all.get(1).exec("true").exitCode()).isZero();
                assertThat(stats(paddock).idle() + stats(paddock).creating()).isZero();
                assertThatThrownBy(() -> paddock.create(SHAPE)).isInstanceOfSatisfying(SandboxException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.RESOURCE_EXHAUSTED));
                // no refill takes the room back while the engine is full
                Thread.sleep(300);
                assertThat(stats(paddock).idle() + stats(paddock).creating()).isZero();
            } finally {
                all.forEach(Sandbox::destroy);
            }
        }
    }

    @Test
    void aCreateInterruptedWhileWaitingForRoomSaysSoAndLeavesNothingAdmitted() throws Exception {
        try (LocalPaddock paddock = engine(PoolConfig.builder().shape(SHAPE).size(1).build(), 2)) {
            SandboxException refused = null;
            for (int attempt = 0; attempt < 5 && refused == null; attempt++) {
                await(paddock, s -> s.idle() == 1);
                try (Sandbox claimed = paddock.create(SHAPE)) {
                    // the claim leaves room for one, which the pool's refill takes while it is being made
                    long until = System.nanoTime() + Duration.ofSeconds(30).toNanos();
                    while (stats(paddock).creating() == 0 && stats(paddock).idle() == 0 && System.nanoTime() < until) {
                        Thread.onSpinWait();
                    }
                    if (stats(paddock).creating() == 0) {
                        continue; // the refill ended before it was seen: a cold create would evict it, try again
                    }
                    // a cold create at the maximum waits for that creation; interrupted, it must say so
                    Thread.currentThread().interrupt();
                    try {
                        paddock.create(SHAPE.toBuilder().memory(ByteSize.mib(96)).build()).destroy();
                    } catch (SandboxException e) {
                        refused = e;
                    } finally {
                        Thread.interrupted();
                    }
                }
            }
            assertThat(refused).as("a create interrupted while it waits for room").isNotNull();
            assertThat(refused.code()).isEqualTo(ErrorCode.UNAVAILABLE);
            assertThat(refused.getMessage()).contains("interrupted").doesNotContain("already runs");
            // nothing of it stayed admitted: the engine still takes two sandboxes
            await(paddock, s -> s.idle() == 1);
            try (Sandbox a = paddock.create(SHAPE); Sandbox b = paddock.create(SHAPE.toBuilder().memory(ByteSize.mib(96)).build())) {
                assertThat(b.exec("true").exitCode()).isZero();
            }
        }
    }

    @Test
    void aRestartedDaemonRemovesLeftoverPooledSandboxesAndKeepsClaimedOnes() throws Exception {
        List<String> ids;
        try (EngineProcess child = EngineProcess.start(dataDir, null, "pool:2", "plain")) {
            ids = child.awaitReady(Duration.ofSeconds(60));
            assertThat(ids).hasSize(1);
            child.kill();
        }
        try (Paddock paddock = Paddock.local(LocalOptions.builder().dataDir(dataDir).build())) {
            List<SandboxInfo> listed = paddock.list();
            assertThat(listed).extracting(i -> i.id().value()).containsExactly(ids.get(0));
            Sandbox sb = paddock.get(ids.get(0));
            assertThat(sb.files().readString("/workspace/marker")).isEqualTo(ids.get(0));
            sb.destroy();
        }
    }

    @Test
    void aPoolIsPerImageAndItsSandboxesRunTheImage() throws Exception {
        ImageFixtures.busybox();
        SandboxSpec shape = SHAPE.toBuilder().image(ImageFixtures.BUSYBOX).build();
        try (LocalPaddock p = engine(PoolConfig.builder().shape(shape).size(2).build(), 10)) {
            await(p, s -> s.idle() == 2);
            try (Sandbox sb = p.create(shape.toBuilder().env("MINE", "yes").build())) {
                assertThat(stats(p).hits()).isEqualTo(1);
                ExecResult r = sb.exec("sh", "-c", "cat /hello.txt; echo $GREETING $MINE; id -u; echo x > /root-is-writable");
                assertThat(r.stdoutText()).as(r.stderrText()).isEqualTo("hello-from-layer-1\nfixture yes\n0\n");
            }
            try (Sandbox host = p.create(SHAPE)) {
                assertThat(stats(p).hits()).as("the host image's shape has no pool").isEqualTo(1);
                assertThat(host.exec("sh", "-c", "test -e /hello.txt || echo host").stdoutText()).isEqualTo("host\n");
            }
            assertThatThrownBy(() -> p.images().remove(ImageFixtures.BUSYBOX))
                    .as("an image a pool holds is in use").isInstanceOf(io.paddock.SandboxException.class)
                    .hasMessageContaining("in use");
        }
    }

    @Test
    void poolConfigIsValidated() {
        assertThatThrownBy(() -> PoolConfig.builder().size(0)).isInstanceOf(SandboxException.class);
        assertThatThrownBy(() -> PoolConfig.builder().shape(SHAPE.toBuilder().entrypoint("sleep", "1").build()))
                .isInstanceOf(SandboxException.class);
        assertThatThrownBy(() -> PoolConfig.builder().shape(SHAPE.toBuilder().name("x").build()))
                .isInstanceOf(SandboxException.class);
        assertThatThrownBy(() -> PoolConfig.builder().maxIdle(Duration.ZERO)).isInstanceOf(SandboxException.class);
        assertThatThrownBy(() -> LocalOptions.builder().maxSandboxes(2).warmPool(PoolConfig.builder().size(3).build()).build())
                .isInstanceOf(SandboxException.class);
    }
}
