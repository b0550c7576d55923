package io.paddock.engine;

import io.paddock.ByteSize;
import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.ExecResult;
import io.paddock.ExitStatus;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxQuery;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * ATTACKS.md R15, the leak soak: create → exec → upload → download → destroy cycles on both tiers, every
 * cycle with one of a rotation of faults (an exec past its timeout, a destroy while output streams, an upload
 * that fails half-way, a download abandoned, a killed process, a double destroy). After the cycles the
 * engine's own file descriptors and threads are back where they were, its heap after a GC has not grown with
 * the cycle count, and the leak check (after the test) finds nothing on the host.
 *
 * <p>The suite runs {@value #DEFAULT_CYCLES} cycles; {@code -Dpaddock.soak.cycles=10000} is the full soak
 * (docs/SECURITY.md, R15, has its figures). Every fourth cycle is on runsc. Needs root, runc and runsc.
 */
class SoakTest {
    private static final int DEFAULT_CYCLES = 120;
    private static final int WARM_UP = 28; // every fault on each tier (7 faults, runsc every 4th cycle)
    private static final int FAULTS = 7;
    private static final long MIB = 1 << 20;

    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    private static Paddock paddock;
    private static ExecutorService helpers;

    @BeforeAll
    static void start() {
        paddock = Paddock.local();
        helpers = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "soak-helper");
            t.setDaemon(true);
            return t;
        });
    }

    @AfterAll
    static void stop() {
        if (helpers != null) {
            helpers.shutdownNow();
        }
        if (paddock != null) {
            paddock.close();
        }
    }

    /**
     * What the engine's process holds: file descriptors, Java threads, heap used after a GC. Threads the JDK
     * keeps idle for a minute after a burst are not counted: its process reapers (one per child process running
     * at once) and the JVM's own JIT compiler threads (not Java threads).
     */
    private record Usage(int fds, long heap, List<String> threadNames) {
        static Usage now() throws IOException, InterruptedException {
            for (int i = 0; i < 3; i++) {
                System.gc();
                Thread.sleep(50);
            }
            List<String> names = Thread.getAllStackTraces().keySet().stream().map(Thread::getName)
                    .filter(n -> !n.equals("process reaper")).sorted().toList();
            return new Usage(count(Path.of("/proc/self/fd")), ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed(),
                    names);
        }

        int threads() {
            return threadNames.size();
        }

        private static int count(Path dir) throws IOException {
            try (Stream<Path> s = Files.list(dir)) {
                return (int) s.count();
            }
        }

        @Override
        public String toString() {
            return fds + " fds, " + threads() + " threads, " + heap / MIB + " MiB heap";
        }
    }

    /**
     * Usage once the engine has settled: idle pool threads end and fds close asynchronously, so this waits (up
     * to 20 s) for fds and threads to come down to {@code floor}, and returns what it then sees.
     */
    private static Usage settled(Usage floor) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        Usage u = Usage.now();
        while (System.nanoTime() < deadline && (u.fds > floor.fds || u.threads() > floor.threads())) {
            Thread.sleep(250);
            u = Usage.now();
        }
        return u;
    }

    @Test
    void cyclesWithFaultsOnBothTiersLeaveTheEngineFlat() throws Exception {
        int cycles = Integer.getInteger("paddock.soak.cycles", DEFAULT_CYCLES);
        Random random = new Random(Long.getLong("paddock.soak.seed", 15L));
        for (int i = 0; i < WARM_UP; i++) {
            cycle(i, random); // every fault once on each tier: lazily made pools and caches exist before the baseline
        }
        Usage baseline = Usage.now();
        long start = System.nanoTime();
        Usage half = null;
        long[] latencies = new long[cycles];
        for (int i = 0; i < cycles; i++) {
            long t = System.nanoTime();
            cycle(i, random);
            latencies[i] = System.nanoTime() - t;
            if (i == cycles / 2) {
                half = Usage.now();
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        Usage end = settled(baseline);
        long[] sorted = latencies.clone();
        java.util.Arrays.sort(sorted);
        System.out.printf("R15 soak: %d cycles (1 in 4 on runsc) in %.1f s, cycle p50 %.1f ms, p99 %.1f ms;"
                        + " baseline %s, half-way %s, end %s%n", cycles, seconds, sorted[cycles / 2] / 1e6,
                sorted[Math.min(cycles - 1, cycles * 99 / 100)] / 1e6, baseline, half, end);

        assertThat(end.fds).as("engine fds after %d cycles (baseline %s)", cycles, baseline).isLessThanOrEqualTo(baseline.fds);
        assertThat(end.threads()).as("engine threads after %d cycles: %s (baseline %s: %s)", cycles, end.threadNames,
                baseline, baseline.threadNames).isLessThanOrEqualTo(baseline.threads());
        // the heap does not grow with the number of cycles: a leak of even 1 KiB a cycle would show at 10000
        assertThat(end.heap).as("heap after a GC, %d cycles (baseline %s)", cycles, baseline)
                .isLessThanOrEqualTo(baseline.heap + 32 * MIB + cycles * 1024L);
        // destroyed sandboxes stay listed as STOPPED for their retention (10 minutes); none is still alive
        assertThat(paddock.list(SandboxQuery.builder().label("soak", "r15").build()))
                .allSatisfy(info -> assertThat(info.state()).isEqualTo(SandboxState.STOPPED));
    }

    /** One create → exec → upload → download → destroy cycle, with fault {@code i % FAULTS}. */
    private static void cycle(int i, Random random) throws Exception {
        String tier = i % 4 == 3 ? "runsc" : "runc";
        Sandbox sb = paddock.create(SandboxSpec.builder().runtime(tier).memory(ByteSize.mib(128))
                .timeout(Duration.ofMinutes(2)).label("soak", "r15").build());
        boolean destroyed = false;
        try {
            ExecResult hello = sb.exec("echo", "cycle " + i);
            assertThat(hello.stdoutText()).isEqualTo("cycle " + i + "\n");
            byte[] data = new byte[16 * 1024 + random.nextInt(48 * 1024)];
            random.nextBytes(data);
            switch (i % FAULTS) {
                case 0 -> { // the plain cycle
                    sb.files().write("/workspace/data.bin", data);
                    assertThat(sb.files().read("/workspace/data.bin")).isEqualTo(data);
                }
                case 1 -> { // an exec past its timeout: the whole tree is killed
                    ExecResult r = sb.exec(ExecRequest.builder().argv("sh", "-c", "sleep 60 & sleep 60")
                            .timeout(Duration.ofMillis(100)).build());
                    assertThat(r.status().outcome()).isEqualTo(ExitStatus.Outcome.TIMED_OUT);
                }
                case 2 -> { // destroyed while its output streams, nobody reading the rest
                    ExecProcess p = sb.start(ExecRequest.builder().argv("yes", "soak").build());
                    assertThat(p.stdout().readNBytes(4096)).hasSize(4096);
                    sb.destroy();
                    destroyed = true;
                    p.close();
                }
                case 3 -> { // an upload whose source fails half-way: nothing is left under the name
                    assertThatThrownBy(() -> sb.files().write("/workspace/half.bin", new FailingStream(data, data.length / 2)))
                            .isInstanceOf(SandboxException.class);
                    assertThat(sb.files().exists("/workspace/half.bin")).isFalse();
                }
                case 4 -> { // a download abandoned after a few bytes; the sandbox still answers
                    sb.files().write("/workspace/big.bin", new byte[(int) MIB]);
                    try (InputStream in = sb.files().openRead("/workspace/big.bin")) {
                        assertThat(in.readNBytes(10)).hasSize(10);
                    }
                    assertThat(sb.exec("true").success()).isTrue();
                }
                case 5 -> { // a process killed from outside, its stdin still open
                    ExecProcess p = sb.start(ExecRequest.builder().argv("cat").build());
                    p.stdin().write(data, 0, 1024);
                    p.stdin().flush();
                    assertThat(p.stdout().readNBytes(1024)).isEqualTo(java.util.Arrays.copyOf(data, 1024));
                    p.kill();
                    assertThat(p.awaitExit(Duration.ofSeconds(10))).isPresent();
                    p.close();
                }
                case 6 -> { // two destroys at once
                    List<CompletableFuture<Void>> both = new ArrayList<>();
                    for (int k = 0; k < 2; k++) {
                        both.add(CompletableFuture.runAsync(sb::destroy, helpers));
                    }
                    CompletableFuture.allOf(both.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
                    destroyed = true;
                }
                default -> throw new AssertionError(i);
            }
        } finally {
            if (!destroyed) {
                sb.destroy();
            }
        }
    }

    /** Gives {@code failAt} bytes of {@code data}, then fails as a broken source would. */
    private static final class FailingStream extends InputStream {
        private final byte[] data;
        private final int failAt;
        private int pos;

        FailingStream(byte[] data, int failAt) {
            this.data = data;
            this.failAt = failAt;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (pos >= failAt) {
                throw new IOException("the source broke");
            }
            int n = Math.min(len, failAt - pos);
            System.arraycopy(data, pos, b, off, n);
            pos += n;
            return n;
        }
    }
}
