package io.paddock.engine;

import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.ExecRequest;
import io.paddock.ExecResult;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxInfo;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;
import io.paddock.StopReason;
import io.paddock.engine.host.EngineProcess;
import io.paddock.testkit.HostLeakCheck;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Fault injection on the engine (ATTACKS.md R1-R3, R6, R11): a persistent engine in a child JVM is killed
 * with SIGKILL, or dies at a failpoint, and a new engine on the same data directory must take over
 * without losing or leaking anything.
 */
class RestartTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    @TempDir
    Path dataDir;

    private Paddock restarted() {
        return Paddock.local(LocalOptions.builder().dataDir(dataDir).build());
    }

    @Test
    void r1_sandboxesSurviveAnEngineKilledWithSigkill() throws Exception {
        List<String> ids;
        try (EngineProcess child = EngineProcess.start(dataDir, null, "plain", "named:survivor", "entrypoint", "short")) {
            ids = child.awaitReady(Duration.ofSeconds(60));
            assertThat(ids).hasSize(4);
            child.kill();
        }
        try (Paddock paddock = restarted()) {
            List<SandboxInfo> listed = paddock.list();
            assertThat(listed).extracting(i -> i.id().value()).containsAll(ids);
            assertThat(listed).allSatisfy(i -> assertThat(i.state()).isEqualTo(SandboxState.RUNNING));
            for (String id : ids) {
                Sandbox sb = paddock.get(id);
                ExecResult r = sb.exec("cat", "/workspace/marker");
                assertThat(r.stdoutText()).isEqualTo(id);
                assertThat(sb.exec("sh", "-c", "ps -eo args= | grep -c '^sleep 600'").stdoutText().trim())
                        .as("the exec started before the crash is still running").isNotEqualTo("0");
            }
            assertThat(paddock.getByName("survivor").id().value()).isEqualTo(ids.get(1));

            // The new engine starts with empty logs: every tick in them was printed after the restart.
            Sandbox withEntrypoint = paddock.get(ids.get(2));
            long until = System.nanoTime() + 15_000_000_000L;
            while (!withEntrypoint.logs().stdoutText().contains("tick") && System.nanoTime() < until) {
                Thread.sleep(100);
            }
            assertThat(withEntrypoint.logs().stdoutText()).as("entrypoint output after the restart").contains("tick");
            assertThat(withEntrypoint.info().state()).isEqualTo(SandboxState.RUNNING);

            Sandbox shortLived = paddock.get(ids.get(3));
            SandboxInfo stopped = shortLived.awaitStop(Duration.ofSeconds(30)).orElseThrow();
            assertThat(stopped.stopReason()).as("the persisted deadline still fires").contains(StopReason.TIMEOUT);

            for (String id : ids) {
                paddock.get(id).destroy();
            }
        }
        try (Paddock again = restarted()) {
            assertThat(again.list()).allSatisfy(i -> assertThat(i.state()).isEqualTo(SandboxState.STOPPED));
        }
    }

    @Test
    void r1_aGracefulDaemonStopLeavesSandboxesForTheNextOne() throws Exception {
        String id;
        try (Paddock first = restarted()) {
            id = first.create(small()).id().value();
        }
        try (Paddock second = restarted()) {
            assertThat(second.get(id).exec("echo", "adopted").stdoutText()).isEqualTo("adopted\n");
            second.get(id).destroy();
        }
    }

    @Test
    void r2_aCrashMidCreateLeavesNothingBehind() throws Exception {
        for (String failpoint : List.of("create.before-runtime-start", "create.after-runtime-start")) {
            try (EngineProcess child = EngineProcess.start(dataDir, failpoint, "plain")) {
                assertThat(child.awaitExit()).as(failpoint).isEqualTo(137);
            }
            try (Paddock paddock = restarted()) {
                assertThat(paddock.list()).as(failpoint).allSatisfy(i -> {
                    assertThat(i.state()).isEqualTo(SandboxState.STOPPED);
                    assertThat(i.stopReason()).contains(StopReason.FAILED);
                });
                assertThat(new HostLeakCheck(LocalOptions.DEFAULT_STATE_DIR).sandboxResources())
                        .as("host resources after recovering from " + failpoint)
                        .noneMatch(r -> paddock.list().stream().anyMatch(i -> r.contains(i.id().value())));
            }
        }
    }

    @Test
    void r3_aCrashMidDestroyIsFinishedOnRestart() throws Exception {
        String id;
        try (Paddock first = restarted()) {
            id = first.create(small()).id().value();
        }
        // A child engine adopts it, starts destroying it and dies half-way.
        try (EngineProcess child = EngineProcess.start(dataDir, "destroy.after-stopping-recorded", "destroy:" + id)) {
            assertThat(child.awaitExit()).as("the child died at the failpoint").isEqualTo(137);
        }
        assertThat(new HostLeakCheck(LocalOptions.DEFAULT_STATE_DIR).sandboxResources())
                .as("the half-destroyed sandbox is still on the host before the restart").anyMatch(r -> r.contains(id));
        try (Paddock paddock = restarted()) {
            Sandbox sb = paddock.get(id);
            assertThat(sb.state()).as("finished on restart").isEqualTo(SandboxState.STOPPED);
            assertThat(sb.info().stopReason()).contains(StopReason.DESTROYED);
            sb.destroy();
            assertThat(new HostLeakCheck(LocalOptions.DEFAULT_STATE_DIR).sandboxResources()).noneMatch(r -> r.contains(id));
        }
    }

    @Test
    void r6_destroyWorksWhenTheRuntimeStateIsLost() throws Exception {
        try (Paddock paddock = Paddock.local()) {
            Sandbox sb = paddock.create(small());
            sb.start(ExecRequest.builder().argv("sh", "-c", "sleep 600 & setsid sleep 601 & sleep 602").build());
            Path runcState = LocalOptions.DEFAULT_STATE_DIR.resolve("runc").resolve(sb.id().value());
            assertThat(runcState).isDirectory();
            try (var walk = Files.walk(runcState)) {
                for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
            sb.destroy();
            assertThat(sb.state()).isEqualTo(SandboxState.STOPPED);
        }
    }

    @Test
    void r11_destroyRacesAllTerminate() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(6);
        try (Paddock paddock = Paddock.local()) {
            for (int round = 0; round < 3; round++) {
                Sandbox sb = paddock.create(small());
                List<CompletableFuture<?>> all = new ArrayList<>();
                all.add(CompletableFuture.runAsync(() -> ignoreStopped(() -> sb.exec("sleep", "30")), pool));
                all.add(CompletableFuture.runAsync(() -> ignoreStopped(() -> sb.files().write("/workspace/big",
                        new java.io.ByteArrayInputStream(new byte[8 << 20]))), pool));
                all.add(CompletableFuture.runAsync(() -> ignoreStopped(() -> sb.exec(
                        ExecRequest.builder().argv("cat").stdin(new byte[1 << 20]).build())), pool));
                Thread.sleep(200);
                all.add(CompletableFuture.runAsync(sb::destroy, pool));
                all.add(CompletableFuture.runAsync(sb::destroy, pool));
                CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
                assertThat(sb.state()).isEqualTo(SandboxState.STOPPED);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void operationsOnAnUnknownIdAfterRestartAreNotFound() {
        try (Paddock paddock = restarted()) {
            assertThatThrownBy(() -> paddock.get("sb-" + "b".repeat(26))).isInstanceOf(SandboxException.class)
                    .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.NOT_FOUND));
        }
    }

    private static SandboxSpec small() {
        return SandboxSpec.builder().memory(ByteSize.mib(128)).pids(64).disk(ByteSize.mib(64))
                .timeout(Duration.ofMinutes(3)).build();
    }

    private static void ignoreStopped(Runnable r) {
        try {
            r.run();
        } catch (SandboxException e) {
            if (e.code() != ErrorCode.FAILED_PRECONDITION && e.code() != ErrorCode.UNAVAILABLE) {
                throw e;
            }
        }
    }
}
