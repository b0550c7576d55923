package io.paddock.client.internal;

import io.paddock.ByteSize;
import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;

import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;

/**
 * P10 of PERFORMANCE.md: the same latencies through the remote SDK (REST/WebSocket on loopback) and through
 * {@code Paddock.local()}, in one run, samples interleaved so that drift hits both alike. Not a test (it is
 * not named *Test, so surefire skips it); run it as a main, as root:
 *
 * <pre>
 *   mvn -o -q -pl paddock-client test-compile dependency:build-classpath \
 *       -Dmdep.outputFile=target/cp.txt -Dmdep.includeScope=test
 *   cd paddock-client && java -cp target/test-classes:target/classes:$(cat target/cp.txt) \
 *       io.paddock.client.internal.RemoteLatency [createSamples=200] [execSamples=1000]
 * </pre>
 *
 * Figures: create → first stdout byte of {@code echo hi} (a cold create: the engine has no pool yet, so this
 * is P2's method, the remote overhead being what P10 bounds); {@code exec("/bin/true")} round trip on a
 * running sandbox (P3's API part); start → first stdout byte of {@code echo hi} on a running sandbox.
 */
public final class RemoteLatency {
    private RemoteLatency() {
    }

    public static void main(String[] args) throws Exception {
        int creates = args.length > 0 ? Integer.parseInt(args[0]) : 200;
        int execs = args.length > 1 ? Integer.parseInt(args[1]) : 1000;
        SandboxSpec spec = SandboxSpec.builder().memory(ByteSize.mib(256)).timeout(Duration.ofMinutes(30)).build();
        try (LoopbackDaemon daemon = LoopbackDaemon.start(); Paddock remote = daemon.connect()) {
            Paddock local = daemon.engine; // the daemon's own engine: same JVM, same host state
            System.out.printf("kernel %s, %s %s, %d cpus, GC %s%n", System.getProperty("os.version"),
                    System.getProperty("java.vm.name"), System.getProperty("java.version"),
                    Runtime.getRuntime().availableProcessors(),
                    ManagementFactory.getGarbageCollectorMXBeans().stream().map(g -> g.getName()).toList());
            // warm-up: JIT on both paths, connections, page cache
            for (int i = 0; i < 30; i++) {
                createFirstByte(local, spec);
                createFirstByte(remote, spec);
            }
            long[][] create = interleave(creates, () -> createFirstByte(local, spec), () -> createFirstByte(remote, spec));
            long[][] exec;
            long[][] start;
            try (Sandbox l = local.create(spec); Sandbox r = remote.create(spec)) {
                for (int i = 0; i < 300; i++) {
                    execTrue(l);
                    execTrue(r);
                    startFirstByte(l);
                    startFirstByte(r);
                }
                exec = interleave(execs, () -> execTrue(l), () -> execTrue(r));
                start = interleave(execs, () -> startFirstByte(l), () -> startFirstByte(r));
                System.out.printf(Locale.ROOT, "%nstreaming 256 MiB of stdout (start(), read to the end), MiB/s, 5 runs each:%n");
                for (int i = 0; i < 5; i++) {
                    System.out.printf(Locale.ROOT, "  local %7.1f   remote %7.1f%n", throughput(l), throughput(r));
                }
            }
            System.out.printf("%n%-46s %6s %9s %9s %9s %9s%n", "figure (ms)", "n", "p50", "p90", "p99", "max");
            row("create -> first byte (echo hi), local", create[0]);
            row("create -> first byte (echo hi), remote", create[1]);
            row("exec(/bin/true) round trip, local", exec[0]);
            row("exec(/bin/true) round trip, remote", exec[1]);
            row("start -> first byte (echo hi), local", start[0]);
            row("start -> first byte (echo hi), remote", start[1]);
            System.out.println();
            delta("create -> first byte", create);
            delta("exec(/bin/true)", exec);
            delta("start -> first byte", start);
        }
    }

    interface Sample {
        long nanos() throws Exception;
    }

    private static long[][] interleave(int n, Sample a, Sample b) throws Exception {
        long[] x = new long[n];
        long[] y = new long[n];
        for (int i = 0; i < n; i++) {
            if ((i & 1) == 0) {
                x[i] = a.nanos();
                y[i] = b.nanos();
            } else {
                y[i] = b.nanos();
                x[i] = a.nanos();
            }
        }
        return new long[][] {x, y};
    }

    private static long createFirstByte(Paddock p, SandboxSpec spec) throws Exception {
        long t0 = System.nanoTime();
        try (Sandbox sb = p.create(spec)) {
            return firstByte(sb, t0);
        }
    }

    private static long startFirstByte(Sandbox sb) throws Exception {
        return firstByte(sb, System.nanoTime());
    }

    private static long firstByte(Sandbox sb, long t0) throws Exception {
        try (ExecProcess p = sb.start(ExecRequest.of("/bin/echo", "hi"))) {
            p.closeStdin();
            InputStream in = p.stdout();
            if (in.read() < 0) {
                throw new IllegalStateException("no output");
            }
            long t = System.nanoTime() - t0;
            in.readAllBytes();
            p.awaitExit();
            return t;
        }
    }

    private static double throughput(Sandbox sb) throws Exception {
        long size = 256L << 20;
        long t0 = System.nanoTime();
        try (ExecProcess p = sb.start(ExecRequest.builder().argv("head", "-c", Long.toString(size), "/dev/zero")
                .outputLimit(ExecRequest.UNLIMITED).build())) {
            byte[] buf = new byte[1 << 16];
            long total = 0;
            int n;
            while ((n = p.stdout().read(buf)) > 0) {
                total += n;
            }
            if (total != size || !p.awaitExit().success()) {
                throw new IllegalStateException("got " + total + " bytes");
            }
        }
        return (size / (1024.0 * 1024.0)) / ((System.nanoTime() - t0) / 1e9);
    }

    private static long execTrue(Sandbox sb) {
        long t0 = System.nanoTime();
        if (!sb.exec("/bin/true").success()) {
            throw new IllegalStateException("/bin/true failed");
        }
        return System.nanoTime() - t0;
    }

    private static double pct(long[] sorted, double p) {
        int i = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))] / 1e6;
    }

    private static void row(String name, long[] samples) {
        long[] s = samples.clone();
        Arrays.sort(s);
        System.out.printf(Locale.ROOT, "%-46s %6d %9.3f %9.3f %9.3f %9.3f%n", name, s.length, pct(s, 50), pct(s, 90),
                pct(s, 99), s[s.length - 1] / 1e6);
    }

    private static void delta(String name, long[][] xy) {
        long[] l = xy[0].clone();
        long[] r = xy[1].clone();
        Arrays.sort(l);
        Arrays.sort(r);
        System.out.printf(Locale.ROOT, "P10 %-22s remote - local: p50 %+.3f ms, p99 %+.3f ms (target <= +1 ms)%n", name,
                pct(r, 50) - pct(l, 50), pct(r, 99) - pct(l, 99));
    }
}
