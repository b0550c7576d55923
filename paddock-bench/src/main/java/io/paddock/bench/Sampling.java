package io.paddock.bench;

import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.Sandbox;
import io.paddock.engine.internal.LocalPaddock;
import io.paddock.engine.internal.PoolStats;

import java.io.InputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The sampling helpers every figure shares: n samples of a latency, two interleaved, a rate over threads, and the
 * probes themselves (first byte of {@code echo hi}, {@code exec(/bin/true)}).
 */
final class Sampling {
    private Sampling() {
    }

    interface Sample {
        long nanos() throws Exception;
    }

    interface Op {
        long run(long i) throws Exception;
    }

    static long[] sample(int n, Sample s) throws Exception {
        long[] t = new long[n];
        for (int i = 0; i < n; i++) {
            t[i] = s.nanos();
        }
        return t;
    }

    static long[][] interleave(int n, Sample a, Sample b) throws Exception {
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

    /** Runs op on `threads` threads for `seconds`; returns operations per second. */
    static double rate(int threads, double seconds, Op op) throws Exception {
        double[] c = counted(threads, seconds, op);
        return c[0] / c[1];
    }

    /** Runs op on `threads` threads for `seconds`; returns {operations, elapsed seconds}. */
    static double[] counted(int threads, double seconds, Op op) throws Exception {
        AtomicLong count = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<?>> fs = new ArrayList<>();
        long t0 = System.nanoTime();
        for (int t = 0; t < threads; t++) {
            long id = t;
            fs.add(pool.submit(() -> {
                long i = id;
                while (!stop.get()) {
                    op.run(i);
                    i += threads;
                    count.incrementAndGet();
                }
                return null;
            }));
        }
        Thread.sleep((long) (seconds * 1000));
        stop.set(true);
        for (Future<?> f : fs) {
            f.get();
        }
        double elapsed = (System.nanoTime() - t0) / 1e9;
        pool.shutdown();
        return new double[] {count.get(), elapsed};
    }

    /**
     * Runs {@code step} (one unit of warm-up work: it returns how many calls it made) until the JIT has settled:
     * it compiled for under 2 % of the last second, after at least 3 s, or until {@code capSeconds}. A daemon or an
     * embedding application serves its first thousands of calls with code still being compiled (a profile of
     * the remote exec stream showed the compiler threads taking more CPU than the calls for the first 4000), and
     * P1 and P10 are steady-state figures. Returns the note saying how it ended.
     */
    static String untilJitSettles(String what, double capSeconds, Op step) throws Exception {
        java.lang.management.CompilationMXBean jit = java.lang.management.ManagementFactory.getCompilationMXBean();
        long start = System.nanoTime();
        long cap = (long) (capSeconds * 1e9);
        long calls = 0;
        long lastCompile = jit.getTotalCompilationTime();
        long lastCheck = start;
        for (long i = 0; System.nanoTime() - start < cap; i++) {
            calls += step.run(i);
            long now = System.nanoTime();
            if (now - lastCheck >= 1_000_000_000L) {
                long compiled = jit.getTotalCompilationTime();
                boolean settled = (compiled - lastCompile) * 1_000_000L < (now - lastCheck) / 50;
                lastCompile = compiled;
                lastCheck = now;
                if (settled && now - start >= 3_000_000_000L) {
                    return String.format(Locale.ROOT, "warm-up: %d %s over %.1f s, until the JIT compiled for under 2%%"
                            + " of the last second", calls, what, (now - start) / 1e9);
                }
            }
        }
        return String.format(Locale.ROOT, "warm-up: %d %s over %.1f s (the cap; the JIT was still compiling)", calls, what,
                (System.nanoTime() - start) / 1e9);
    }

    static void awaitPoolFull(LocalPaddock p) throws InterruptedException {
        long until = System.nanoTime() + 60_000_000_000L;
        while (System.nanoTime() < until) {
            PoolStats s = p.poolStats().get(0);
            if (s.idle() >= s.size() && s.creating() == 0) {
                return;
            }
            Thread.sleep(1);
        }
        throw new IllegalStateException("the warm pool did not refill within 60 s: " + p.poolStats());
    }

    static long firstByte(Sandbox sb, long t0) throws Exception {
        try (ExecProcess p = sb.start(ExecRequest.builder().argv("/bin/echo", "hi").build())) {
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

    static long execTrue(Sandbox sb) {
        long t0 = System.nanoTime();
        if (!sb.exec("/bin/true").success()) {
            throw new IllegalStateException("/bin/true failed");
        }
        return System.nanoTime() - t0;
    }

    static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }

    static double[] round(double[] v) {
        double[] r = new double[v.length];
        for (int i = 0; i < v.length; i++) {
            r[i] = Math.round(v[i] * 10) / 10.0;
        }
        return r;
    }

    static double[] div(double[] v, double d) {
        double[] r = new double[v.length];
        for (int i = 0; i < v.length; i++) {
            r[i] = v[i] / d;
        }
        return r;
    }

    static String ms(double micros) {
        return String.format(Locale.ROOT, "%.3f ms", micros / 1000);
    }

    static void destroyAll(List<Sandbox> all, int workers) throws InterruptedException {
        ExecutorService pool = Executors.newFixedThreadPool(workers);
        for (Sandbox sb : List.copyOf(all)) {
            pool.execute(() -> {
                try {
                    sb.destroy();
                } catch (RuntimeException e) {
                    // reported by the engine; the leak check is the tests' job
                }
            });
        }
        pool.shutdown();
        pool.awaitTermination(10, java.util.concurrent.TimeUnit.MINUTES);
        all.clear();
    }
}
