package io.paddock.bench;

import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.bench.Report.Figure;
import io.paddock.bench.Report.Quantity;
import io.paddock.bench.host.Host;
import io.paddock.bench.host.Peers;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static io.paddock.bench.Sampling.destroyAll;

/**
 * P6, density: idle sandboxes alive at once, their host memory and the engine's idle CPU, beside idle runc
 * containers and bwrap sandboxes.
 */
final class DensityFigure {
    private final Report report;
    private final SandboxSpec spec;
    private final Bench.Options o;
    private final Peers peers;
    private final String peersMissing;
    private final Map<String, String> missingTools;

    DensityFigure(Setup setup) {
        this.report = setup.report;
        this.spec = setup.spec;
        this.o = setup.o;
        this.peers = setup.peers;
        this.peersMissing = setup.peersMissing;
        this.missingTools = setup.missingTools;
    }

    void run(Paddock p) throws Exception {
        Figure f = report.figure("P6", "density: idle sandboxes alive at once",
                ">= 1000 idle sandboxes, <= 1 MiB host memory each beyond the tenant's processes; engine idle CPU <= 1 %");
        // the peers first: after destroying N sandboxes the kernel frees their memory for a while
        int peerN = n(200, 30, 2);
        if (peers != null) {
            try {
                settle();
                long u0 = usedNow();
                peers.runcIdle(peerN);
                settle();
                double per = (usedNow() - u0) / 1024.0 / peerN;
                f.peers.put("runc idle container (sleep), same settings, n=" + peerN, Quantity.of(per, "MiB each"));
            } catch (Exception e) {
                f.peers.put("runc idle container (sleep)", "unavailable: " + e.getMessage());
            } finally {
                peers.runcIdleRemove(peerN);
            }
        } else {
            f.peers.put("runc idle container (sleep)", "unavailable: " + peersMissing);
        }
        if (!missingTools.containsKey("bwrap")) {
            try {
                settle();
                long u0 = usedNow();
                peers.bwrapIdle(peerN);
                Thread.sleep(500);
                settle();
                double per = (usedNow() - u0) / 1024.0 / peerN;
                f.peers.put("bwrap idle sandbox (sleep), n=" + peerN, Quantity.of(per, "MiB each"));
            } finally {
                peers.bwrapIdleRemove();
            }
        } else {
            f.peers.put("bwrap idle sandbox (sleep)", "unavailable: " + missingTools.get("bwrap"));
        }
        int wanted = n(1000, 100, 4);
        int workers = 4;
        long availBefore = Host.meminfo().getOrDefault("MemAvailable", 0L);
        List<Sandbox> made = Collections.synchronizedList(new ArrayList<>());
        try {
            settle();
            long u0 = usedNow();
            Map<String, Long> m0 = Host.meminfo();
            long rss0 = Host.rssKib();
            int threads0 = Thread.activeCount();
            long t0 = System.nanoTime();
            // a first batch to estimate the memory per sandbox, so that the full run stops where memory would
            int first = Math.min(wanted, 20);
            createMany(p, first, workers, made);
            long perKib = Math.max(1, (used(Host.meminfo()) - u0) / first);
            int target = wanted;
            if ((long) perKib * wanted > availBefore / 2) {
                target = (int) Math.max(first, availBefore / 2 / perKib);
                f.notes.add("memory allows about " + target + " sandboxes (half of MemAvailable), not " + wanted);
            }
            createMany(p, target - first, workers, made);
            double createSecs = (System.nanoTime() - t0) / 1e9;
            settle();
            long u1 = usedNow();
            Map<String, Long> m1 = Host.meminfo();
            long rss1 = Host.rssKib();
            int n = made.size();
            double perSandboxMib = (u1 - u0) / 1024.0 / n;
            double jvmMib = (rss1 - rss0) / 1024.0 / n;
            Map<String, Object> detail = new LinkedHashMap<>();
            for (String k : List.of("AnonPages", "Shmem", "Slab", "SUnreclaim", "KernelStack", "PageTables", "Cached")) {
                detail.put(k + "_kib_per_sandbox", Math.round((m1.getOrDefault(k, 0L) - m0.getOrDefault(k, 0L)) * 10.0 / n) / 10.0);
            }
            detail.put("engine_jvm_rss_kib_per_sandbox", Math.round((rss1 - rss0) * 10.0 / n) / 10.0);
            detail.put("engine_threads_per_sandbox", Math.round((Thread.activeCount() - threads0) * 100.0 / n) / 100.0);
            f.paddock.put("idle sandboxes alive at once", new Quantity(n, "sandboxes",
                    Map.of("create_rate_per_s", Math.round(n / createSecs * 10) / 10.0)));
            f.paddock.put("host memory per idle sandbox (MemTotal - MemAvailable delta)", new Quantity(perSandboxMib, "MiB", detail));
            f.paddock.put("  of which the engine's JVM (RSS delta)", Quantity.of(jvmMib, "MiB"));
            long[] init = Host.rssOf("init"); // the sandboxes' inits run /.paddock/init
            f.paddock.put("  of which the inits' resident sets", new Quantity(init[0] / 1024.0 / n, "MiB",
                    Map.of("init_processes", init[1])));
            f.paddock.put("  of which outside the engine (kernel, init, runtime)", Quantity.of(perSandboxMib - jvmMib, "MiB"));
            // all alive?
            int alive = 0;
            for (int i = 0; i < n; i += Math.max(1, n / 20)) {
                alive += made.get(i).exec("/bin/true").success() ? 1 : 0;
            }
            double idleSecs = secs(30, 3, 1);
            java.lang.management.ThreadMXBean tmx = ManagementFactory.getThreadMXBean();
            Map<Long, Long> cpuBefore = new java.util.HashMap<>();
            for (long id : tmx.getAllThreadIds()) {
                cpuBefore.put(id, tmx.getThreadCpuTime(id));
            }
            long cpu0 = Host.processCpuNanos();
            long w0 = System.nanoTime();
            Thread.sleep((long) (idleSecs * 1000));
            long wall = System.nanoTime() - w0;
            double idleCpu = (Host.processCpuNanos() - cpu0) * 100.0 / wall;
            // Java threads (the engine's: timers, channel readers; and this harness's) versus the JVM's own
            // (GC, JIT, VM threads), which ThreadMXBean does not list
            Map<String, Long> byGroup = new java.util.TreeMap<>();
            long javaThreads = 0;
            for (long id : tmx.getAllThreadIds()) {
                long t = tmx.getThreadCpuTime(id);
                java.lang.management.ThreadInfo info = tmx.getThreadInfo(id);
                if (t < 0 || info == null) {
                    continue;
                }
                long d = t - cpuBefore.getOrDefault(id, 0L);
                javaThreads += d;
                byGroup.merge(info.getThreadName().replaceAll("-?[0-9a-z]{26}$|-\\d+$", ""), d, Long::sum);
            }
            Map<String, Object> split = new LinkedHashMap<>();
            split.put("java_threads_percent", Math.round(javaThreads * 1000.0 / wall) / 10.0);
            byGroup.entrySet().stream().filter(e -> e.getValue() * 1000.0 / wall >= 0.05)
                    .forEach(e -> split.put(e.getKey() + "_percent", Math.round(e.getValue() * 1000.0 / wall) / 10.0));
            f.paddock.put("engine CPU while " + n + " sandboxes idle (% of one core, " + Report.fmt(idleSecs) + " s)",
                    new Quantity(idleCpu, "%", split));
            f.notes.add(alive + " sampled sandboxes answered exec(/bin/true) after the wait");
            f.check(">= 1000 idle sandboxes", n >= 1000, n + (o.quick() ? " (quick mode creates 100; run the full mode)" : ""));
            f.check("<= 1 MiB host memory each", perSandboxMib <= 1.0, String.format(Locale.ROOT, "%.2f MiB", perSandboxMib));
            f.check("engine idle CPU <= 1 %", idleCpu <= 1.0, String.format(Locale.ROOT, "%.2f %%", idleCpu));
        } finally {
            long d0 = System.nanoTime();
            int n = made.size();
            destroyAll(made, workers);
            f.notes.add(String.format(Locale.ROOT, "destroying %d sandboxes with %d threads took %.1f s", n, workers,
                    (System.nanoTime() - d0) / 1e9));
        }
    }

    private static long used(Map<String, Long> m) {
        return m.getOrDefault("MemTotal", 0L) - m.getOrDefault("MemAvailable", 0L);
    }

    /** Used memory (KiB), the median of five readings 200 ms apart. */
    private static long usedNow() throws InterruptedException {
        long[] v = new long[5];
        for (int i = 0; i < v.length; i++) {
            v[i] = used(Host.meminfo());
            Thread.sleep(200);
        }
        Arrays.sort(v);
        return v[2];
    }

    private static void settle() throws InterruptedException {
        System.gc();
        Thread.sleep(500);
    }

    private void createMany(Paddock p, int count, int workers, List<Sandbox> into) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(workers);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                fs.add(pool.submit(() -> into.add(p.create(spec))));
            }
            for (Future<?> x : fs) {
                x.get();
            }
        } finally {
            pool.shutdown();
        }
    }

    private int n(int full, int quick, int min) {
        return o.n(full, quick, min);
    }

    private double secs(double full, double quick, double min) {
        return o.secs(full, quick, min);
    }
}
