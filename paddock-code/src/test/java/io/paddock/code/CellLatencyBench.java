package io.paddock.code;

import io.paddock.ByteSize;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;

import java.time.Duration;
import java.util.Arrays;
import java.util.function.Supplier;

/**
 * Measures (not a unit test) a trivial cell in an existing context beside a fresh interpreter process in
 * the same sandbox, in the same run:
 * <pre>
 * mvn -o -q -pl paddock-code test-compile exec:java -Dexec.classpathScope=test \
 *     -Dexec.mainClass=io.paddock.code.CellLatencyBench [-Dexec.args="500 runsc"]
 * </pre>
 */
public final class CellLatencyBench {
    private CellLatencyBench() {
    }

    public static void main(String[] args) {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 300;
        SandboxSpec.Builder spec = SandboxSpec.builder().memory(ByteSize.mib(512)).timeout(Duration.ofMinutes(20));
        if (args.length > 1) {
            spec.runtime(args[1]);
        }
        try (Paddock paddock = Paddock.local();
             Sandbox sb = paddock.create(spec.build());
             CodeInterpreter code = CodeInterpreter.of(sb);
             CodeContext py = code.createContext("python");
             CodeContext js = code.createContext("javascript")) {
            py.run("x = 0");
            System.out.println("tier: " + sb.info().runtime() + ", load average: " + loadAverage());
            System.out.printf("%-46s %6s %9s %9s %9s %9s%n", "operation (ms)", "n", "p50", "p90", "p99", "max");
            row("python cell `x += 1` in an existing context", n, () -> check(py.run("x += 1").success()));
            row("python cell `x` (rich output) in a context", n, () -> check(py.run("x").value().isPresent()));
            row("javascript cell `1 + 1` in an existing context", n, () -> check(js.run("1 + 1").success()));
            row("fresh `python3 -c pass` (sandbox.exec)", n, () -> check(sb.exec("python3", "-c", "pass").success()));
            row("fresh `node -e 0` (sandbox.exec)", Math.max(50, n / 4), () -> check(sb.exec("node", "-e", "0").success()));
            row("one-shot run(\"python\", \"pass\")", Math.max(50, n / 4), () -> check(code.run("python", "pass").success()));
            System.out.println("python cells run: " + py.info().cells() + ", final x = " + py.run("x").value().orElseThrow().text());
        }
    }

    private static String loadAverage() {
        try {
            return java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg")).trim();
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }

    private static boolean check(boolean ok) {
        if (!ok) {
            throw new IllegalStateException("an operation failed");
        }
        return true;
    }

    private static void row(String name, int n, Supplier<Boolean> op) {
        for (int i = 0; i < Math.min(30, n); i++) {
            op.get();
        }
        long[] t = new long[n];
        for (int i = 0; i < n; i++) {
            long s = System.nanoTime();
            op.get();
            t[i] = System.nanoTime() - s;
        }
        Arrays.sort(t);
        System.out.printf("%-46s %6d %9.3f %9.3f %9.3f %9.3f%n", name, n, pct(t, 50), pct(t, 90), pct(t, 99), t[n - 1] / 1e6);
    }

    private static double pct(long[] sorted, double p) {
        int i = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))] / 1e6;
    }
}
