package io.paddock.client.internal;

import io.paddock.ByteSize;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.code.CodeContext;
import io.paddock.code.CodeInterpreter;

import java.time.Duration;
import java.util.Arrays;
import java.util.function.BooleanSupplier;

/**
 * Measures (not a unit test) a trivial Python cell in a context the daemon keeps, through the remote SDK,
 * beside a fresh {@code python3 -c} in the same sandbox, in the same run; the embedded figures come from
 * paddock-code's {@code CellLatencyBench}:
 * <pre>
 * mvn -o -q -pl paddock-client test-compile exec:java -Dexec.classpathScope=test \
 *     -Dexec.mainClass=io.paddock.client.internal.RemoteCellLatencyBench [-Dexec.args=300]
 * </pre>
 */
public final class RemoteCellLatencyBench {
    private RemoteCellLatencyBench() {
    }

    public static void main(String[] args) {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 300;
        try (LoopbackDaemon daemon = LoopbackDaemon.start();
             Paddock paddock = daemon.connect();
             Sandbox sb = paddock.create(SandboxSpec.builder().memory(ByteSize.mib(512)).timeout(Duration.ofMinutes(20)).build());
             CodeInterpreter code = CodeInterpreter.of(sb)) {
            CodeContext py = code.createContext("python");
            py.run("x = 0");
            System.out.println("interpreter: " + code + ", load average: " + loadAverage());
            System.out.printf("%-52s %6s %9s %9s %9s %9s%n", "operation over REST (ms)", "n", "p50", "p90", "p99", "max");
            row("python cell `x += 1` in a daemon context", n, () -> py.run("x += 1").success());
            row("python cell `x` (rich output) in a daemon context", n, () -> py.run("x").value().isPresent());
            row("fresh `python3 -c pass` (sandbox.exec)", n, () -> sb.exec("python3", "-c", "pass").success());
            py.close();
        }
    }

    private static String loadAverage() {
        try {
            return java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg")).trim();
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }

    private static void row(String name, int n, BooleanSupplier op) {
        for (int i = 0; i < Math.min(30, n); i++) {
            check(op.getAsBoolean());
        }
        long[] t = new long[n];
        for (int i = 0; i < n; i++) {
            long s = System.nanoTime();
            check(op.getAsBoolean());
            t[i] = System.nanoTime() - s;
        }
        Arrays.sort(t);
        System.out.printf("%-52s %6d %9.3f %9.3f %9.3f %9.3f%n", name, n, pct(t, 50), pct(t, 90), pct(t, 99), t[n - 1] / 1e6);
    }

    private static void check(boolean ok) {
        if (!ok) {
            throw new IllegalStateException("an operation failed");
        }
    }

    private static double pct(long[] sorted, double p) {
        int i = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))] / 1e6;
    }
}
