package io.paddock.engine;

import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.ExecRequest;
import io.paddock.ExecResult;
import io.paddock.FileInfo;
import io.paddock.LocalOptions;
import io.paddock.NetworkPolicy;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.SandboxInfo;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;
import io.paddock.StopReason;
import io.paddock.engine.host.EngineProcess;
import io.paddock.engine.host.HostFaults;
import io.paddock.testkit.HostLeakCheck;
import io.paddock.testkit.HostView;
import io.paddock.testkit.LeakCheckExtension;
import io.paddock.testkit.Tier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
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
 * Fault injection on the engine (ATTACKS.md R1-R11): a persistent engine in a child JVM is killed with
 * SIGKILL, dies at a failpoint or runs out of heap, a runtime helper or a sandbox's host processes are
 * killed, a reboot is simulated, the daemon's data disk fills up; the engine (or a new one on the same data
 * directory) must take over without losing or leaking anything. Run per tier by {@link RuncRestartTest} and
 * {@link RunscRestartTest}; the leak check runs after every test.
 */
abstract class RestartTest {
    static final Path STATE = LocalOptions.DEFAULT_STATE_DIR;

    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(STATE);

    @TempDir
    Path dataDir;

    /** The tier every sandbox of the test runs on. */
    protected abstract Tier tier();

    /** This tier's view of a sandbox's host processes. */
    protected abstract HostView host();

    /**
     * The host processes a sandbox of this tier cannot live without, by name (runc: its init; runsc: the
     * Sentry and the gofer), for R5 to kill one at a time.
     */
    protected abstract List<String> helpers();

    /** The host pid of one of {@link #helpers()} for a running sandbox. */
    protected abstract long helperPid(SandboxId id, String helper);

    private Paddock restarted() {
        return Paddock.local(LocalOptions.builder().dataDir(dataDir).defaultRuntime(tier().runtimeName()).build());
    }

    /** An embedded engine (its sandboxes die with it) on this tier. */
    private Paddock embedded() {
        return Paddock.local(LocalOptions.builder().defaultRuntime(tier().runtimeName()).build());
    }

    /** A child engine on this tier. */
    private EngineProcess child(String failpoint, String... plan) throws IOException {
        return childWithJvm(List.of(), failpoint, plan);
    }

    private EngineProcess childWithJvm(List<String> jvmOptions, String failpoint, String... plan) throws IOException {
        List<String> all = new ArrayList<>(List.of("runtime:" + tier().runtimeName()));
        all.addAll(List.of(plan));
        return EngineProcess.start(jvmOptions, dataDir, failpoint, all.toArray(String[]::new));
    }

    @Test
    void r1_sandboxesSurviveAnEngineKilledWithSigkill() throws Exception {
        List<String> ids;
        try (EngineProcess child = child(null, "plain", "named:survivor", "entrypoint", "short")) {
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

    /** A paused sandbox stays paused across a restart and resumes with its processes (runsc: from its checkpoint). */
    @Test
    void r1_aPausedSandboxIsAdoptedPausedAndResumesWhereItWas() throws Exception {
        String id;
        try (Paddock first = restarted()) {
            Sandbox sb = first.create(small());
            id = sb.id().value();
            sb.exec("sh", "-c", "echo kept > /tmp/m; sleep 6041 >/dev/null 2>&1 &");
            sb.pause();
        }
        // The stopped engine holds nothing of it any more (not left for the garbage collector to close).
        assertThat(openFilesUnder(STATE.resolve("sandboxes").resolve(id))).as("descriptors after the engine stopped").isEmpty();
        try (Paddock second = restarted()) {
            Sandbox sb = second.get(id);
            assertThat(sb.state()).isEqualTo(SandboxState.PAUSED);
            assertThatThrownBy(() -> sb.exec("true")).hasMessageContaining("paused");
            sb.resume();
            assertThat(sb.state()).isEqualTo(SandboxState.RUNNING);
            assertThat(sb.exec("cat", "/tmp/m").stdoutText()).isEqualTo("kept\n");
            assertThat(sb.exec("sh", "-c", "ps -eo args= | grep -c '^sleep 6041'").stdoutText().trim())
                    .as("the process started before the pause runs").isEqualTo("1");
            sb.destroy();
        }
    }

    @Test
    void r1_aVolumeStaysInUseAndKeepsItsFilesAcrossARestart() throws Exception {
        String volume = "restart-" + java.util.UUID.randomUUID().toString().substring(0, 8);
        String id;
        try (Paddock first = restarted()) {
            first.volumes().create(volume, io.paddock.ByteSize.mib(16));
            Sandbox sb = first.create(small().toBuilder().volume(io.paddock.VolumeMount.parse(volume + ":/data")).build());
            id = sb.id().value();
            assertThat(sb.exec("sh", "-c", "echo before > /data/f").exitCode()).isZero();
        }
        try (Paddock second = restarted()) {
            // The adopted sandbox still mounts it: the new engine refuses to delete it under it.
            assertThat(second.volumes().get(volume).sandboxes()).extracting(SandboxId::value).containsExactly(id);
            assertThatThrownBy(() -> second.volumes().remove(volume)).isInstanceOfSatisfying(SandboxException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.FAILED_PRECONDITION));
            assertThat(second.get(id).exec("cat", "/data/f").stdoutText()).isEqualTo("before\n");
            second.get(id).destroy();
            Sandbox again = second.create(small().toBuilder().volume(io.paddock.VolumeMount.parse(volume + ":/data:ro")).build());
            assertThat(again.exec("cat", "/data/f").stdoutText()).isEqualTo("before\n");
            again.destroy();
            second.volumes().remove(volume);
        }
    }

    @Test
    void r1_aCodebaseSandboxsChangesCanBeReviewedAndCommittedAfterARestart() throws Exception {
        String codebase = "restart-cb-" + java.util.UUID.randomUUID().toString().substring(0, 8);
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("paddock-restart-cb");
        java.nio.file.Files.writeString(dir.resolve("a.txt"), "a");
        String id;
        try (Paddock first = restarted()) {
            first.codebases().create(codebase, dir);
            Sandbox sb = first.create(small().toBuilder().codebase(new io.paddock.CodebaseMount(codebase, "/workspace",
                    io.paddock.PermissionPreset.FULL_ACCESS, java.util.List.of())).build());
            id = sb.id().value();
            assertThat(sb.exec("sh", "-c", "echo b > /workspace/b.txt").exitCode()).isZero();
        }
        try (Paddock second = restarted()) {
            assertThat(second.codebases().diff(SandboxId.parse(id))).containsExactly(
                    new io.paddock.CodebaseChange("b.txt", io.paddock.CodebaseChange.Kind.ADDED, true));
            assertThatThrownBy(() -> second.codebases().remove(codebase)).isInstanceOfSatisfying(SandboxException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.FAILED_PRECONDITION));
            assertThat(second.codebases().commit(SandboxId.parse(id)).revision()).isEqualTo(2);
            second.get(id).destroy();
            second.codebases().remove(codebase);
        } finally {
            io.paddock.image.internal.store.ImageStore.deleteTree(dir);
        }
    }

    @Test
    void r1_aNetworkedSandboxKeepsItsNetworkAndItsChangedPolicyAcrossARestart() throws Exception {
        try (TestWorld world = new TestWorld(11)) {
            LocalOptions options = LocalOptions.builder().dataDir(dataDir).defaultRuntime(tier().runtimeName())
                    .dnsUpstream(world.a).build();
            NetworkPolicy changed = NetworkPolicy.allow(world.b + "/32", "allowed.paddock.test");
            String id;
            try (Paddock first = Paddock.local(options)) {
                Sandbox sb = first.create(small().toBuilder().network(NetworkPolicy.allow(world.a + "/32")).build());
                id = sb.id().value();
                sb.updateNetwork(changed);
            }
            try (Paddock second = Paddock.local(options)) {
                Sandbox sb = second.get(id);
                assertThat(sb.info().network()).isEqualTo(changed);
                // The new engine's resolver answers (another port: the redirect was re-pointed), with the policy
                // the first engine recorded.
                ExecResult r = sb.exec(io.paddock.ExecRequest.builder().argv("python3", "-c", NetworkSandboxTest.FETCH,
                        world.url(world.a), world.url(world.b), "http://allowed.paddock.test:8080/")
                        .timeout(Duration.ofSeconds(60)).build());
                assertThat(r.stdoutText().lines().toList()).as(r.stderrText()).hasSize(3).satisfies(l -> {
                    assertThat(l.get(0)).as("no longer allowed (until its name resolves)").startsWith("ERR");
                    assertThat(l.get(1)).isEqualTo("world " + world.b);
                    assertThat(l.get(2)).isEqualTo("world " + world.a);
                });
                sb.destroy();
            }
        }
    }

    @Test
    void r1_aSandboxOfAnImageIsAdoptedWithItsRootAndLeavesNothingWhenDestroyed() throws Exception {
        ImageFixtures.busybox();
        String id;
        try (Paddock first = restarted()) {
            Sandbox sb = first.create(small().toBuilder().image(ImageFixtures.BUSYBOX).build());
            id = sb.id().value();
            assertThat(sb.exec("sh", "-c", "echo kept > /workspace/f; echo also > /etc/changed").exitCode()).isZero();
        }
        try (Paddock second = restarted()) {
            ExecResult r = second.get(id).exec("sh", "-c", "cat /workspace/f /etc/changed /hello.txt; echo $GREETING; id -u");
            assertThat(r.stdoutText()).as(r.stderrText()).isEqualTo("kept\nalso\nhello-from-layer-1\nfixture\n0\n");
            second.get(id).destroy();
        }
    }

    @Test
    void r1_withNoEngineBackASandboxStillEndsAtItsDeadline() throws Exception {
        String id;
        // The init's backstop trails the lifetime by a second here instead of 30.
        try (EngineProcess child = childWithJvm(List.of("-Dpaddock.test.initDeadlineGrace=PT1S"), null, "short")) {
            id = child.awaitReady(Duration.ofSeconds(60)).get(0);
            child.kill();
        }
        long until = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!HostFaults.cgroupProcesses(id).isEmpty() && System.nanoTime() < until) {
            Thread.sleep(100);
        }
        assertThat(HostFaults.cgroupProcesses(id)).as("the init's own deadline ended the sandbox, no engine running").isEmpty();
        try (Paddock paddock = restarted()) {
            SandboxInfo info = paddock.get(id).awaitStop(Duration.ofSeconds(20)).orElseThrow();
            assertThat(info.stopReason()).as("ended at its deadline while no engine ran").contains(StopReason.TIMEOUT);
        }
    }

    /**
     * A daemon gone for good (killed, its data directory then removed: a test's temp directory, an operator wiping
     * /var/lib/paddock) leaves sandboxes no engine can adopt. Once their inits ended at their deadlines, the next
     * engine to start, whoever's, reclaims everything of them: bundle, runtime state, cgroups, root overlay and
     * writable layer, network namespace, veth, nft chains, network slot, resolv.conf, and the daemon's owner record.
     */
    @Test
    void r12_aGoneDaemonsSandboxesAreReclaimedByTheNextEngineToStart() throws Exception {
        ImageFixtures.busybox();
        Path gone = Files.createTempDirectory("paddock-gone-daemon");
        String id;
        String daemon;
        try (EngineProcess child = EngineProcess.start(List.of("-Dpaddock.test.initDeadlineGrace=PT1S"), gone, null,
                "runtime:" + tier().runtimeName(), "short:5+networked+image:" + ImageFixtures.BUSYBOX)) {
            id = child.awaitReady(Duration.ofSeconds(90)).get(0);
            daemon = Files.readString(gone.resolve("engine-id")).trim();
            child.kill();
        }
        io.paddock.image.internal.store.ImageStore.deleteTree(gone);
        awaitEnded(id);
        assertThat(resourcesOf(id)).as("left on the host by the gone daemon").contains("bundle " + id, "netns paddock-" + id)
                .anyMatch(r -> r.startsWith("mount ") && r.contains("/roots/" + id));
        Path ownerRecord = STATE.resolve("owners").resolve(daemon.substring("daemon:".length()));
        assertThat(ownerRecord).as("the daemon's owner record").exists();
        try (Paddock next = embedded()) {
            assertThat(resourcesOf(id)).as("what the gone daemon's sandbox left, after another engine started").isEmpty();
            assertThat(ownerRecord).as("the owner record of a daemon gone with its last sandbox").doesNotExist();
        }
    }

    /**
     * A gone daemon's paused sandbox never ends by itself (its init is frozen, so its own deadline never fires)
     * and nobody is left to resume it: the next engine to start reclaims it like an ended one, thawing and
     * killing it first.
     */
    @Test
    void r12_aGoneDaemonsPausedSandboxIsReclaimedAtOnce() throws Exception {
        Path gone = Files.createTempDirectory("paddock-gone-daemon");
        String id;
        try (EngineProcess child = EngineProcess.start(List.of(), gone, null,
                "runtime:" + tier().runtimeName(), "paused+networked")) {
            id = child.awaitReady(Duration.ofSeconds(90)).get(0);
            child.kill();
        }
        io.paddock.image.internal.store.ImageStore.deleteTree(gone);
        if (tier().runtimeName().equals("runc")) { // gVisor pauses a networked sandbox by checkpointing it: no process
            assertThat(HostFaults.cgroupProcesses(id)).as("the paused sandbox's processes, frozen").isNotEmpty();
        }
        assertThat(resourcesOf(id)).as("left on the host by the gone daemon").contains("bundle " + id, "netns paddock-" + id);
        try (Paddock next = embedded()) {
            assertThat(resourcesOf(id)).as("what the gone daemon's paused sandbox left, after another engine started")
                    .isEmpty();
            assertThat(HostFaults.cgroupProcesses(id)).isEmpty();
        }
    }

    /**
     * What another engine starting must leave of a daemon's sandboxes, even ended ones: all of a daemon that runs
     * (its data directory removed or not; stopped with SIGSTOP here, so that it does not clean them up itself), and all of a daemon killed with its data directory in place, which
     * adopts them when it starts again. Reclaimed only once it is gone for good.
     */
    @Test
    void r12_aDaemonsSandboxesAreLeftWhileItRunsOrMayComeBack() throws Exception {
        Path kept = Files.createTempDirectory("paddock-kept-daemon");
        Path wiped = Files.createTempDirectory("paddock-wiped-daemon");
        List<String> grace = List.of("-Dpaddock.test.initDeadlineGrace=PT1S");
        String runtime = "runtime:" + tier().runtimeName();
        try (EngineProcess a = EngineProcess.start(grace, kept, null, runtime, "short:8+networked");
             EngineProcess b = EngineProcess.start(grace, wiped, null, runtime, "short:8")) {
            String ofA = a.awaitReady(Duration.ofSeconds(90)).get(0);
            String ofB = b.awaitReady(Duration.ofSeconds(90)).get(0);
            // Both still run but act no more: their sandboxes' inits end at their own deadlines, no daemon cleans up.
            a.suspend();
            b.suspend();
            io.paddock.image.internal.store.ImageStore.deleteTree(wiped);
            awaitEnded(ofA);
            awaitEnded(ofB);
            try (Paddock other = embedded()) {
                assertThat(resourcesOf(ofA)).as("a running daemon's ended sandbox").contains("bundle " + ofA, "netns paddock-" + ofA);
                assertThat(resourcesOf(ofB)).as("a running daemon's ended sandbox, its data directory removed")
                        .contains("bundle " + ofB);
            }
            a.kill();
            b.kill();
            try (Paddock other = embedded()) {
                assertThat(resourcesOf(ofA)).as("a killed daemon's sandbox, its data directory in place")
                        .contains("bundle " + ofA, "netns paddock-" + ofA);
                assertThat(resourcesOf(ofB)).as("a killed daemon's sandbox, its data directory removed").isEmpty();
            }
            try (Paddock back = Paddock.local(LocalOptions.builder().dataDir(kept).defaultRuntime(tier().runtimeName()).build())) {
                assertThat(back.get(ofA).awaitStop(Duration.ofSeconds(20))).as("adopted by its daemon").isPresent();
                back.get(ofA).destroy();
            }
            assertThat(resourcesOf(ofA)).isEmpty();
        } finally {
            io.paddock.image.internal.store.ImageStore.deleteTree(kept);
            io.paddock.image.internal.store.ImageStore.deleteTree(wiped);
        }
    }

    /** Waits until no process is left in the sandbox's cgroups (its init ended at its own deadline). */
    private static void awaitEnded(String id) throws InterruptedException {
        long until = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!HostFaults.cgroupProcesses(id).isEmpty() && System.nanoTime() < until) {
            Thread.sleep(100);
        }
        assertThat(HostFaults.cgroupProcesses(id)).as("the init's own deadline ended " + id).isEmpty();
    }

    /** What the host holds of the sandbox {@code id}, whoever owns it. */
    private static List<String> resourcesOf(String id) {
        return new HostLeakCheck(STATE).allSandboxResources().stream().filter(r -> r.contains(id)).toList();
    }

    @Test
    void r2_aCrashMidCreateLeavesNothingBehind() throws Exception {
        for (String failpoint : List.of("create.before-runtime-start", "create.after-runtime-start",
                "create.after-runtime-start networked")) {
            String[] parts = failpoint.split(" ");
            try (EngineProcess child = child(parts[0], parts.length > 1 ? parts[1] : "plain")) {
                assertThat(child.awaitExit()).as(failpoint).isEqualTo(137);
            }
            try (Paddock paddock = restarted()) {
                assertThat(paddock.list()).as(failpoint).allSatisfy(i -> {
                    assertThat(i.state()).isEqualTo(SandboxState.STOPPED);
                    assertThat(i.stopReason()).contains(StopReason.FAILED);
                });
                assertThat(new HostLeakCheck(STATE).sandboxResources())
                        .as("host resources after recovering from " + failpoint)
                        .noneMatch(r -> paddock.list().stream().anyMatch(i -> r.contains(i.id().value())));
            }
        }
    }

    /**
     * What an engine killed while it staged a new bundle leaves (ATTACKS.md R2): the staging directory, named
     * with its owner, with or without the owner's files in it. The restarted daemon removes its own; any engine
     * removes a dead engine's; a live engine's stays.
     */
    @Test
    void r2_aCrashWhileABundleIsStagedLeavesNothingBehind() throws Exception {
        String daemon;
        try (Paddock first = restarted()) {
            daemon = Files.readString(dataDir.resolve("engine-id")).trim();
        }
        Path sandboxes = STATE.resolve("sandboxes");
        Files.createDirectories(sandboxes);
        // A pid that no process has: the pid limit is above it on no Linux.
        String deadEmbedded = "4194305.123.00112233aabbccdd";
        String otherDaemon = "daemon:00112233445566778899aabbccddeeff";
        Path ownEmpty = Files.createDirectory(sandboxes.resolve(".sb-aaaaaaaaaaaaaaaaaaaaaaaaaa@" + daemon));
        Path ownWritten = Files.createDirectory(sandboxes.resolve(".sb-bbbbbbbbbbbbbbbbbbbbbbbbbb@" + daemon));
        Files.writeString(ownWritten.resolve("owner"), daemon);
        Files.writeString(ownWritten.resolve("runtime"), tier().runtimeName());
        Path dead = Files.createDirectory(sandboxes.resolve(".sb-cccccccccccccccccccccccccc@" + deadEmbedded));
        Path live = Files.createDirectory(sandboxes.resolve(".sb-dddddddddddddddddddddddddd@" + otherDaemon));
        try {
            try (Paddock paddock = restarted()) {
                assertThat(ownEmpty).as("the daemon's own staging directory, owner not yet written").doesNotExist();
                assertThat(ownWritten).as("the daemon's own staging directory, owner written").doesNotExist();
                assertThat(dead).as("a dead engine's staging directory").doesNotExist();
                assertThat(live).as("another daemon's staging directory: only it can tell").exists();
                assertThat(paddock.list()).isEmpty();
            }
        } finally {
            Files.deleteIfExists(live);
        }
    }

    @Test
    void r3_aCrashMidDestroyIsFinishedOnRestart() throws Exception {
        String id;
        try (Paddock first = restarted()) {
            id = first.create(small()).id().value();
        }
        // A child engine adopts it, starts destroying it and dies half-way.
        try (EngineProcess child = child("destroy.after-stopping-recorded", "destroy:" + id)) {
            assertThat(child.awaitExit()).as("the child died at the failpoint").isEqualTo(137);
        }
        assertThat(new HostLeakCheck(STATE).sandboxResources())
                .as("the half-destroyed sandbox is still on the host before the restart").anyMatch(r -> r.contains(id));
        try (Paddock paddock = restarted()) {
            Sandbox sb = paddock.get(id);
            assertThat(sb.state()).as("finished on restart").isEqualTo(SandboxState.STOPPED);
            assertThat(sb.info().stopReason()).contains(StopReason.DESTROYED);
            sb.destroy();
            assertThat(new HostLeakCheck(STATE).sandboxResources()).noneMatch(r -> r.contains(id));
        }
    }

    @Test
    void r6_destroyWorksWhenTheRuntimeStateIsLost() throws Exception {
        try (Paddock paddock = embedded()) {
            Sandbox sb = paddock.create(small());
            sb.start(ExecRequest.builder().argv("sh", "-c", "sleep 600 & setsid sleep 601 & sleep 602").build());
            List<Path> state = runtimeState(sb.id().value());
            assertThat(state).as("the runtime's state for the sandbox").isNotEmpty();
            for (Path top : state) {
                try (var walk = Files.walk(top)) {
                    for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                        Files.delete(p);
                    }
                }
            }
            sb.destroy();
            assertThat(sb.state()).isEqualTo(SandboxState.STOPPED);
        }
    }

    @Test
    void r11_destroyRacesAllTerminate() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(6);
        try (Paddock paddock = embedded()) {
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
    void r4_aCrashMidUploadLeavesNoPartialFileAndTheSandboxUsable() throws Exception {
        String id;
        try (EngineProcess child = child(null, "plain", "after:upload")) {
            id = child.awaitReady(Duration.ofSeconds(60)).get(0);
            assertThat(child.awaitLine("UPLOADING", Duration.ofSeconds(60))).as("the upload got going").isTrue();
            if (tier().hostSeesTenantProcesses()) {
                // runc: the host sees the sandbox's files; the upload is in its temp file, not yet under "big"
                Path workspace = Path.of("/proc", Long.toString(host().initPid(new SandboxId(id))), "root", "workspace");
                try (var files = Files.list(workspace)) {
                    assertThat(files.map(p -> p.getFileName().toString()))
                            .anyMatch(n -> n.startsWith(".paddock-upload-")).doesNotContain("big");
                }
            }
            child.kill();
        }
        try (Paddock paddock = restarted()) {
            Sandbox sb = paddock.get(id);
            assertThat(sb.files().list("/workspace")).as("no partial file under the final name, no temp file")
                    .extracting(FileInfo::name).containsExactly("marker");
            assertThat(bundleBytes(id)).as("nothing of the upload was kept on the host").isLessThan(1 << 20);
            sb.files().writeString("/workspace/big", "whole");
            assertThat(sb.files().readString("/workspace/big")).isEqualTo("whole");
            sb.destroy();
        }
    }

    @Test
    void r4_aCrashMidDownloadLeavesTheFileAndTheSandboxIntact() throws Exception {
        String id;
        try (EngineProcess child = child(null, "plain", "after:download")) {
            id = child.awaitReady(Duration.ofSeconds(60)).get(0);
            assertThat(child.awaitLine("DOWNLOADING", Duration.ofSeconds(60))).as("the download got going").isTrue();
            child.kill();
        }
        try (Paddock paddock = restarted()) {
            Sandbox sb = paddock.get(id);
            assertThat(sb.files().list("/workspace")).extracting(FileInfo::name).containsExactlyInAnyOrder("marker", "big");
            try (var in = sb.files().openRead("/workspace/big")) {
                assertThat(in.transferTo(java.io.OutputStream.nullOutputStream())).isEqualTo(16L << 20);
            }
            assertThat(bundleBytes(id)).as("nothing of the download was kept on the host").isLessThan(1 << 20);
            sb.destroy();
        }
    }

    @Test
    void r5_aRuntimeKilledDuringCreateFailsOnlyThatCreate() throws Exception {
        ExecutorService killer = Executors.newSingleThreadExecutor();
        try (Paddock paddock = embedded()) {
            Sandbox neighbour = paddock.create(small());
            var killed = killer.submit(() -> HostFaults.killChildWhenItAppears(
                    List.of(STATE.resolve(tier().runtimeName()).toString(), " run --detach "), Duration.ofSeconds(60)));
            SandboxException failed = null;
            for (int attempt = 0; attempt < 10 && failed == null; attempt++) {
                try {
                    // the kill came too late for this one (the runtime had already exited)
                    paddock.create(small()).destroy();
                } catch (SandboxException e) {
                    failed = e;
                }
            }
            String cmd = killed.get(60, TimeUnit.SECONDS).orElseThrow();
            assertThat(failed).as("a create whose runtime was killed (" + cmd + ") fails").isNotNull();
            assertThat(failed.code()).isEqualTo(ErrorCode.INTERNAL);
            assertThat(failed.getMessage()).contains("could not start the sandbox");
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("sb-[a-z2-7]{26}").matcher(cmd);
            assertThat(m.find()).isTrue();
            String victim = m.group();
            assertThat(paddock.list()).extracting(i -> i.id().value()).doesNotContain(victim);
            assertThat(new HostLeakCheck(STATE).sandboxResources()).as("cleaned up at once").noneMatch(r -> r.contains(victim));
            assertThat(neighbour.exec("echo", "fine").stdoutText()).isEqualTo("fine\n");
            paddock.create(small()).destroy();
        } finally {
            killer.shutdownNow();
        }
    }

    @Test
    void r5_aHelperKilledUnderAnExecStopsItsSandboxFailedAndSparesTheRest() throws Exception {
        try (Paddock paddock = embedded()) {
            Sandbox neighbour = paddock.create(small());
            for (String helper : helpers()) {
                Sandbox victim = paddock.create(small());
                CompletableFuture<ExecResult> exec = CompletableFuture.supplyAsync(() -> victim.exec("sleep", "30"));
                Thread.sleep(300);
                HostFaults.kill(helperPid(victim.id(), helper));
                assertThatThrownBy(() -> exec.get(20, TimeUnit.SECONDS)).as(helper)
                        .hasCauseInstanceOf(SandboxException.class).hasMessageContaining("closed its channel")
                        .hasMessageContaining("stopped unexpectedly");
                SandboxInfo stopped = victim.awaitStop(Duration.ofSeconds(20)).orElseThrow();
                assertThat(stopped.state()).as(helper).isEqualTo(SandboxState.STOPPED);
                assertThat(stopped.stopReason()).as(helper).contains(StopReason.FAILED);
                assertThat(new HostLeakCheck(STATE).sandboxResources()).as("cleaned up after killing the " + helper)
                        .noneMatch(r -> r.contains(victim.id().value()));
                assertThat(neighbour.exec("echo", "fine").stdoutText()).as(helper).isEqualTo("fine\n");
            }
        }
    }

    @Test
    void r7_afterASimulatedRebootNoSandboxIsReportedRunningAndLeftoversAreReclaimed() throws Exception {
        List<String> ids;
        try (EngineProcess child = child(null, "plain", "entrypoint")) {
            ids = child.awaitReady(Duration.ofSeconds(60));
            assertThat(ids).hasSize(2);
            child.kill();
        }
        for (String id : ids) {
            HostFaults.rebootLoses(STATE, id);
            assertThat(HostFaults.cgroupExists(id)).as("a stale cgroup left for the engine to reclaim").isTrue();
        }
        try (Paddock paddock = restarted()) {
            for (String id : ids) {
                SandboxInfo info = paddock.get(id).awaitStop(Duration.ofSeconds(20)).orElseThrow();
                assertThat(info.state()).isEqualTo(SandboxState.STOPPED);
                assertThat(info.stopReason()).as("lost in the reboot").contains(StopReason.FAILED);
                assertThat(HostFaults.cgroupExists(id)).as("stale cgroup of " + id).isFalse();
            }
            assertThat(paddock.list()).noneMatch(i -> i.state() == SandboxState.RUNNING);
        }
    }

    @Test
    void r8_aFullDataDiskRefusesCreatesUntilSpaceReturnsWithoutARestart() throws Exception {
        Path volume = Files.createTempDirectory("paddock-r8-");
        HostFaults.mountTmpfs(volume, "4m");
        Path data = volume.resolve("data");
        try {
            try (Paddock paddock = Paddock.local(LocalOptions.builder().dataDir(data)
                    .defaultRuntime(tier().runtimeName()).build())) {
                Sandbox running = paddock.create(small());
                HostFaults.fill(volume.resolve("filler"));
                assertThatThrownBy(() -> paddock.create(small())).isInstanceOf(SandboxException.class)
                        .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.UNAVAILABLE))
                        .hasMessageContaining("disk full or read-only");
                assertThat(running.exec("echo", "unaffected").stdoutText()).isEqualTo("unaffected\n");
                assertThat(paddock.list()).as("the refused create left no record").hasSize(1);

                try (var leftovers = Files.list(volume)) {
                    for (Path p : leftovers.filter(p -> p.getFileName().toString().startsWith("filler")).toList()) {
                        Files.delete(p);
                    }
                }
                Sandbox after = paddock.create(small());
                assertThat(after.exec("echo", "recovered").stdoutText()).isEqualTo("recovered\n");
            }
            try (java.sql.Connection db = java.sql.DriverManager.getConnection("jdbc:sqlite:" + data.resolve("paddock.db"));
                 java.sql.ResultSet rs = db.createStatement().executeQuery("PRAGMA integrity_check")) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getString(1)).as("the database after ENOSPC").isEqualTo("ok");
            }
            try (Paddock again = Paddock.local(LocalOptions.builder().dataDir(data).build())) {
                assertThat(again.list()).hasSize(2).allSatisfy(i -> assertThat(i.state()).isEqualTo(SandboxState.RUNNING));
                again.list().forEach(i -> again.get(i.id().value()).destroy());
            }
        } finally {
            HostFaults.unmount(volume);
            Files.deleteIfExists(volume);
        }
    }

    @Test
    void r9_anEngineOutOfHeapExitsAndTheNextOneAdoptsItsSandboxes() throws Exception {
        assertThat(Files.readString(Path.of("..", "paddock"))).as("./paddock runs the shared JVM launcher")
                .contains("scripts/paddock-java");
        assertThat(Files.readString(Path.of("..", "scripts", "paddock-java")))
                .as("the JVM launcher of ./paddock and the package's /usr/bin/paddock (and so `paddock serve`)")
                .contains("-XX:+ExitOnOutOfMemoryError");
        String id;
        try (EngineProcess child = childWithJvm(List.of("-Xmx128m", "-XX:+ExitOnOutOfMemoryError"), null, "plain", "after:oom")) {
            id = child.awaitReady(Duration.ofSeconds(60)).get(0);
            assertThat(child.awaitExit()).as("ExitOnOutOfMemoryError's status, not a hang").isEqualTo(3);
        }
        try (Paddock paddock = restarted()) {
            Sandbox sb = paddock.get(id);
            assertThat(sb.state()).isEqualTo(SandboxState.RUNNING);
            assertThat(sb.exec("cat", "/workspace/marker").stdoutText()).isEqualTo(id);
            sb.destroy();
        }
    }

    @Test
    void r10_persistedDeadlinesIgnoreAWallClockStepWhileNoEngineRan() throws Exception {
        List<String> ids;
        try (EngineProcess child = child(null, "short:12", "short:12")) {
            ids = child.awaitReady(Duration.ofSeconds(60));
            child.kill();
        }
        // As if the wall clock had been stepped by an hour, one way for each sandbox, between the recording of
        // their deadlines and the restart: the wall-clock deadlines are now an hour off.
        try (java.sql.Connection db = java.sql.DriverManager.getConnection("jdbc:sqlite:" + dataDir.resolve("paddock.db"));
             java.sql.PreparedStatement step = db.prepareStatement("UPDATE sandboxes SET expires_at = expires_at + ? WHERE id = ?")) {
            step.setLong(1, -3_600_000L);
            step.setString(2, ids.get(0));
            assertThat(step.executeUpdate()).isEqualTo(1);
            step.setLong(1, 3_600_000L);
            step.setString(2, ids.get(1));
            assertThat(step.executeUpdate()).isEqualTo(1);
        }
        try (Paddock paddock = restarted()) {
            try {
                for (String id : ids) {
                    SandboxInfo info = paddock.get(id).info();
                    assertThat(info.state()).as("not expired early").isEqualTo(SandboxState.RUNNING);
                    assertThat(info.expiresAt()).as("the deadline shown is today's wall clock")
                            .isBetween(java.time.Instant.now(), java.time.Instant.now().plusSeconds(12));
                }
                for (String id : ids) {
                    SandboxInfo stopped = paddock.get(id).awaitStop(Duration.ofSeconds(30)).orElseThrow();
                    assertThat(stopped.stopReason()).as("expired on time, not an hour late").contains(StopReason.TIMEOUT);
                }
            } finally {
                // a persistent engine leaves its sandboxes running when it closes: never leave them on failure
                ids.forEach(id -> paddock.get(id).destroy());
            }
        }
    }

    /** Bytes under a sandbox's bundle on the host (its config, FIFOs, logs). */
    private static long bundleBytes(String id) throws IOException {
        try (var walk = Files.walk(STATE.resolve("sandboxes").resolve(id))) {
            return walk.filter(Files::isRegularFile).mapToLong(p -> p.toFile().length()).sum();
        }
    }

    @Test
    void operationsOnAnUnknownIdAfterRestartAreNotFound() {
        try (Paddock paddock = restarted()) {
            assertThatThrownBy(() -> paddock.get("sb-" + "b".repeat(26))).isInstanceOf(SandboxException.class)
                    .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.NOT_FOUND));
        }
    }

    /** 128 MiB on runc; 512 on runsc, whose limit also holds the Sentry's and gofer's memory (docs/SECURITY.md). */
    private SandboxSpec small() {
        return SandboxSpec.builder().memory(ByteSize.mib(tier() == Tier.RUNSC ? 512 : 128)).pids(64)
                .disk(ByteSize.mib(64)).timeout(Duration.ofMinutes(3)).build();
    }

    /** The runtime's own state for a sandbox: runc's directory, or runsc's state and lock files. */
    private List<Path> runtimeState(String id) throws IOException {
        try (var files = Files.list(STATE.resolve(tier().runtimeName()))) {
            return files.filter(p -> p.getFileName().toString().startsWith(id)).toList();
        }
    }

    /** This JVM's open descriptors on files under {@code dir}. */
    private static List<String> openFilesUnder(Path dir) throws IOException {
        List<String> out = new ArrayList<>();
        try (var fds = Files.list(Path.of("/proc/self/fd"))) {
            for (Path fd : fds.toList()) {
                try {
                    Path target = Files.readSymbolicLink(fd);
                    if (target.startsWith(dir)) {
                        out.add(fd.getFileName() + " -> " + target);
                    }
                } catch (IOException e) {
                    // closed meanwhile
                }
            }
        }
        return out;
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
