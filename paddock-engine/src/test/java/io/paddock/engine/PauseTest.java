package io.paddock.engine;

import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.PauseMode;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;
import io.paddock.StopReason;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Pause and resume on both tiers, against real runc and runsc: a process started before the pause, with its
 * memory and its live channel, goes on after the resume; gVisor's pause frees the memory (no host process of
 * the sandbox is left) and runc's freezes it. Needs root, runc and runsc; fails (never skips) without them.
 */
class PauseTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    private static Paddock paddock;

    @BeforeAll
    static void start() throws java.io.IOException {
        assertThat(Files.getAttribute(Path.of("/proc/self"), "unix:uid")).as("PauseTest needs root").isEqualTo(0);
        paddock = Paddock.local(LocalOptions.builder().build());
    }

    @AfterAll
    static void stop() {
        if (paddock != null) {
            paddock.close();
        }
    }

    private static SandboxSpec.Builder small(String runtime) {
        return SandboxSpec.builder().runtime(runtime).memory(ByteSize.mib(256)).pids(128).disk(ByteSize.mib(64))
                .timeout(Duration.ofMinutes(3));
    }

    @Test
    void runscCheckpointsMemoryAndAProcessGoesOnAfterResume() throws Exception {
        try (Sandbox sb = paddock.create(small("runsc").build())) {
            ExecProcess p = startCounter(sb);
            PauseMode mode = sb.pause();
            assertThat(mode).isEqualTo(PauseMode.CHECKPOINTED);
            assertThat(sb.state()).isEqualTo(SandboxState.PAUSED);
            assertThat(cgroupProcesses(sb)).as("no host process of a checkpointed sandbox").isEmpty();
            assertThat(checkpointDir(sb)).isDirectory();
            assertThatThrownBy(() -> sb.exec("true")).isInstanceOfSatisfying(SandboxException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.FAILED_PRECONDITION));
            sb.resume();
            assertThat(sb.state()).isEqualTo(SandboxState.RUNNING);
            assertThat(checkpointDir(sb)).doesNotExist();
            assertCounterGoesOn(p);
            assertThat(sb.exec("sh", "-c", "echo after").stdoutText()).isEqualTo("after\n");
            // twice: a restored sandbox pauses again
            assertThat(sb.pause()).isEqualTo(PauseMode.CHECKPOINTED);
            sb.resume();
            assertThat(sb.exec("echo", "again").stdoutText()).isEqualTo("again\n");
        }
    }

    @Test
    void runcFreezesAndSaysMemoryStaysResident() throws Exception {
        try (Sandbox sb = paddock.create(small("runc").build())) {
            ExecProcess p = startCounter(sb);
            assertThat(sb.pause()).isEqualTo(PauseMode.FROZEN);
            assertThat(sb.state()).isEqualTo(SandboxState.PAUSED);
            assertThat(cgroupProcesses(sb)).as("frozen, not gone").isNotEmpty();
            assertThatThrownBy(() -> sb.exec("true")).isInstanceOf(SandboxException.class)
                    .hasMessageContaining("paused");
            sb.resume();
            sb.resume(); // resuming a running sandbox does nothing
            assertCounterGoesOn(p);
        }
    }

    @Test
    void destroyWhilePausedLeavesNothing() {
        Sandbox g = paddock.create(small("runsc").build());
        Sandbox r = paddock.create(small("runc").build());
        g.pause();
        r.pause();
        g.setTimeout(Duration.ofMinutes(1)); // works while paused
        g.destroy();
        r.destroy();
        assertThat(g.state()).isEqualTo(SandboxState.STOPPED);
        assertThat(r.state()).isEqualTo(SandboxState.STOPPED);
        assertThat(checkpointDir(g)).doesNotExist();
    }

    @Test
    void pausedSandboxIsDestroyedAtItsDeadline() {
        Sandbox sb = paddock.create(small("runsc").timeout(Duration.ofSeconds(4)).build());
        sb.pause();
        assertThat(sb.awaitStop(Duration.ofSeconds(30))).hasValueSatisfying(i ->
                assertThat(i.stopReason()).contains(StopReason.TIMEOUT));
        assertThat(checkpointDir(sb)).doesNotExist();
    }

    /**
     * A networked sandbox on both tiers: gVisor checkpoints and restores it inside its own network namespace
     * (kept, with its veth and rules, while paused), runc freezes it; each reaches the test world before and after.
     */
    @Test
    void aNetworkedSandboxIsCheckpointedOnGvisorAndFrozenOnRunc() throws Exception {
        try (TestWorld world = new TestWorld(13)) {
            io.paddock.NetworkPolicy policy = io.paddock.NetworkPolicy.allow(world.a + "/32");
            try (Sandbox g = paddock.create(small("runsc").network(policy).build());
                 Sandbox r = paddock.create(small("runc").network(policy).build())) {
                for (Sandbox sb : List.of(g, r)) {
                    ExecProcess p = startCounter(sb);
                    assertThat(fetch(sb, world.url(world.a))).isEqualTo("world " + world.a);
                    assertThat(sb.pause()).isEqualTo(sb == g ? PauseMode.CHECKPOINTED : PauseMode.FROZEN);
                    if (sb == g) {
                        assertThat(cgroupProcesses(sb)).as("no host process of a checkpointed sandbox").isEmpty();
                    }
                    sb.resume();
                    assertCounterGoesOn(p);
                    assertThat(fetch(sb, world.url(world.a))).as(sb == g ? "runsc" : "runc").isEqualTo("world " + world.a);
                    assertThat(fetch(sb, world.url(world.b))).startsWith("ERR"); // its rules are still there
                }
                assertThat(g.pause()).isEqualTo(PauseMode.CHECKPOINTED); // a restored networked sandbox pauses again
                g.resume();
                assertThat(fetch(g, world.url(world.a))).isEqualTo("world " + world.a);
            }
        }
    }

    private static String fetch(Sandbox sb, String url) {
        return sb.exec("python3", "-c", NetworkSandboxTest.FETCH, url).stdoutText().strip();
    }

    /**
     * on_timeout pause: at its deadline a running sandbox is paused, not destroyed, and kept for the retention; a
     * resume gives it a whole lifetime again (it pauses again at the end of it); runc freezes it the same way, and
     * a sandbox already paused at its deadline is destroyed.
     */
    @Test
    void onTimeoutPauseKeepsTheSandboxPausedAndResumeRearmsItsLifetime() throws Exception {
        try (Sandbox g = paddock.create(small("runsc").timeout(Duration.ofSeconds(3))
                    .onTimeout(io.paddock.TimeoutAction.PAUSE).build());
             Sandbox r = paddock.create(small("runc").timeout(Duration.ofSeconds(3))
                    .onTimeout(io.paddock.TimeoutAction.PAUSE).build())) {
            ExecProcess p = startCounter(g);
            awaitState(g, SandboxState.PAUSED);
            awaitState(r, SandboxState.PAUSED);
            assertThat(checkpointDir(g)).isDirectory();
            assertThat(g.info().expiresAt()).isAfter(java.time.Instant.now().plus(Duration.ofHours(23)));
            g.resume();
            assertThat(g.info().expiresAt()).isBefore(java.time.Instant.now().plus(Duration.ofSeconds(4)));
            assertCounterGoesOn(p);
            awaitState(g, SandboxState.PAUSED); // a fresh lifetime, which ends in a pause again
            g.resume();
            assertThat(g.exec("echo", "back").stdoutText()).isEqualTo("back\n");

            r.setTimeout(Duration.ofMillis(200)); // the retention, shortened: a paused sandbox's deadline destroys it
            assertThat(r.awaitStop(Duration.ofSeconds(30))).hasValueSatisfying(i ->
                    assertThat(i.stopReason()).contains(StopReason.TIMEOUT));
        }
    }

    private static void awaitState(Sandbox sb, SandboxState state) throws InterruptedException {
        long end = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (sb.state() != state && System.nanoTime() < end) {
            Thread.sleep(50);
        }
        assertThat(sb.state()).isEqualTo(state);
    }

    /** ATTACKS.md: a checkpoint changed on disk while paused is refused before runsc reads it; nothing of it runs. */
    @Test
    void corruptedCheckpointIsRefusedAndNothingRuns() throws Exception {
        Sandbox sb = paddock.create(small("runsc").build());
        sb.exec("sh", "-c", "echo 41 > /tmp/x");
        sb.pause();
        Path image;
        try (Stream<Path> s = Files.list(checkpointDir(sb))) {
            image = s.filter(Files::isRegularFile).max((a, b) -> Long.compare(a.toFile().length(), b.toFile().length()))
                    .orElseThrow();
        }
        try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
            long at = f.length() / 2;
            f.seek(at);
            int b = f.read();
            f.seek(at);
            f.write(b ^ 0x40);
        }
        assertThatThrownBy(sb::resume).isInstanceOfSatisfying(SandboxException.class, e -> {
            assertThat(e.code()).isEqualTo(ErrorCode.FAILED_PRECONDITION);
            assertThat(e.getMessage()).contains("SHA-256");
        });
        assertThat(sb.state()).isEqualTo(SandboxState.STOPPED);
        assertThat(sb.info().stopReason()).contains(StopReason.FAILED);
        assertThat(cgroupProcesses(sb)).isEmpty();
        assertThat(checkpointDir(sb)).doesNotExist();
    }

    /** A shell started before the pause keeps its variable and its stdin/stdout across it. */
    private static ExecProcess startCounter(Sandbox sb) throws Exception {
        ExecProcess p = sb.start(ExecRequest.of("sh", "-c", "x=41; while read l; do x=$((x+l)); echo $x; done"));
        p.stdin().write("0\n".getBytes(StandardCharsets.UTF_8));
        p.stdin().flush();
        assertThat(reader(p).readLine()).isEqualTo("41");
        return p;
    }

    private static void assertCounterGoesOn(ExecProcess p) throws Exception {
        p.stdin().write("1\n".getBytes(StandardCharsets.UTF_8));
        p.stdin().flush();
        assertThat(reader(p).readLine()).isEqualTo("42");
        p.closeStdin();
        assertThat(p.awaitExit(Duration.ofSeconds(20))).hasValueSatisfying(s -> assertThat(s.exitCode()).isZero());
    }

    private static final java.util.Map<ExecProcess, BufferedReader> READERS = new java.util.concurrent.ConcurrentHashMap<>();

    private static BufferedReader reader(ExecProcess p) {
        return READERS.computeIfAbsent(p, k -> new BufferedReader(new InputStreamReader(k.stdout(), StandardCharsets.UTF_8)));
    }

    private static Path checkpointDir(Sandbox sb) {
        return LocalOptions.DEFAULT_STORAGE_DIR.resolve("checkpoints").resolve(sb.id().value());
    }

    /** Host processes in the sandbox's cgroups, every hierarchy. */
    private static List<String> cgroupProcesses(Sandbox sb) throws Exception {
        List<String> out = new java.util.ArrayList<>();
        try (Stream<Path> hs = Files.list(Path.of("/sys/fs/cgroup"))) {
            for (Path h : hs.toList()) {
                Path procs = h.resolve("paddock").resolve(sb.id().value()).resolve("cgroup.procs");
                if (Files.isReadable(procs)) {
                    Files.readAllLines(procs).stream().filter(l -> !l.isBlank()).forEach(out::add);
                }
            }
        }
        Path v2 = Path.of("/sys/fs/cgroup/paddock", sb.id().value(), "cgroup.procs");
        if (Files.isReadable(v2)) {
            Files.readAllLines(v2).stream().filter(l -> !l.isBlank()).forEach(out::add);
        }
        return out;
    }
}
