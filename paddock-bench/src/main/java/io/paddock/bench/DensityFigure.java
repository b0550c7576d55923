package io.paddock.bench;

import io.paddock.LocalOptions;
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
import java.util.Set;
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
        // 1000 in both modes, the spec's number: creating them takes 30-80 s here and destroying them 22-57 s,
        // with the load; P6 takes 2.5-4 minutes in all (docs/BENCHMARKS.md, "Density")
        int wanted = n(1000, 1000, 4);
        int workers = 4;
        long availBefore = Host.meminfo().getOrDefault("MemAvailable", 0L);
        List<Sandbox> made = Collections.synchronizedList(new ArrayList<>());
        Set<String> ids = java.util.concurrent.ConcurrentHashMap.newKeySet();
        java.lang.management.MemoryMXBean mem = ManagementFactory.getMemoryMXBean();
        try {
            // The JDK reaps each child process (the peers', runc's) on a pooled "process reaper" thread that
            // lingers 60 s; their exit during the run would read as the engine shrinking. Wait them out (not
            // for a tiny sample, as the build's BenchQuickTest takes, whose per-sandbox memory is noise anyway).
            long quiet = System.nanoTime() + (wanted >= 100 ? 70_000_000_000L : 0);
            long waited = System.nanoTime();
            while (Density.reaperThreads() > 0 && System.nanoTime() < quiet) {
                Thread.sleep(1000);
            }
            f.notes.add(String.format(Locale.ROOT, "waited %.0f s for the JDK's idle process-reaper threads to end"
                    + " before the baseline (%d left)", (System.nanoTime() - waited) / 1e9, Density.reaperThreads()));
            settle();
            long u0 = usedNow();
            Map<String, Long> m0 = Host.meminfo();
            Map<String, Long> slab0 = Density.slabBytes();
            long rss0 = Host.rssKib();
            long heap0 = mem.getHeapMemoryUsage().getUsed();
            long direct0 = directBytes();
            long threads0 = Density.selfStatus("Threads") - Density.reaperThreads();
            long fds0 = Density.openFds();
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
            made.forEach(s -> ids.add(s.id().value()));
            settle();
            long u1 = usedNow();
            Map<String, Long> m1 = Host.meminfo();
            Map<String, Long> slab1 = Density.slabBytes();
            long rss1 = Host.rssKib();
            long heap1 = mem.getHeapMemoryUsage().getUsed();
            long direct1 = directBytes();
            int n = made.size();
            long[] procs = Density.sandboxProcesses(ids);
            f.paddock.put("idle sandboxes alive at once", new Quantity(n, "sandboxes",
                    Map.of("workers", workers, "processes_in_their_cgroups", procs[0])));
            f.paddock.put("create all " + n + " (" + workers + " workers)", new Quantity(createSecs, "s",
                    Map.of("per_sandbox_ms", Math.round(createSecs * 1e4 / n) / 10.0)));
            f.paddock.put("  create rate", Quantity.of(n / createSecs, "sandboxes/s"));
            // What the host spends on each: the engine's growth (resident set, or live heap + direct buffers
            // if the heap had already grown before), the sandboxes' processes (proportional set: the init's
            // text is shared) and the kernel's unreclaimable memory (slab, stacks, page tables, per-cpu).
            // Reclaimable slab (dentries, inodes) is left out as MemAvailable leaves it out.
            double engineKib = Math.max(rss1 - rss0, ((heap1 - heap0) + (direct1 - direct0)) / 1024.0) / n;
            double procKib = procs[1] / (double) n;
            Map<String, Object> kernel = new LinkedHashMap<>();
            double kernelKib = 0;
            for (String k : List.of("SUnreclaim", "KernelStack", "PageTables", "Percpu")) {
                double d = (m1.getOrDefault(k, 0L) - m0.getOrDefault(k, 0L)) / (double) n;
                kernel.put(k + "_kib_per_sandbox", Math.round(d * 10) / 10.0);
                kernelKib += d;
            }
            kernel.put("SReclaimable_kib_per_sandbox_not_counted",
                    Math.round((m1.getOrDefault("SReclaimable", 0L) - m0.getOrDefault("SReclaimable", 0L)) * 10.0 / n) / 10.0);
            double perSandboxMib = (engineKib + procKib + kernelKib) / 1024.0;
            double globalMib = (u1 - u0) / 1024.0 / n;
            f.paddock.put("host memory per idle sandbox (engine + sandbox processes + kernel)",
                    new Quantity(perSandboxMib, "MiB", Map.of("engine_kib", Math.round(engineKib * 10) / 10.0,
                            "sandbox_processes_kib", Math.round(procKib * 10) / 10.0,
                            "kernel_kib", Math.round(kernelKib * 10) / 10.0)));
            Map<String, Object> engine = new LinkedHashMap<>();
            engine.put("rss_delta_kib_per_sandbox", Math.round((rss1 - rss0) * 10.0 / n) / 10.0);
            engine.put("heap_used_delta_kib_per_sandbox", Math.round((heap1 - heap0) / 102.4 / n) / 10.0);
            engine.put("direct_buffers_delta_kib_per_sandbox", Math.round((direct1 - direct0) / 102.4 / n) / 10.0);
            f.paddock.put("  of which the engine's JVM", new Quantity(engineKib / 1024.0, "MiB", engine));
            f.paddock.put("  of which the sandboxes' processes (PSS)", new Quantity(procKib / 1024.0, "MiB",
                    Map.of("processes", procs[0])));
            f.paddock.put("  of which the kernel (unreclaimable slab, stacks, page tables, per-cpu)",
                    new Quantity(kernelKib / 1024.0, "MiB", kernel));
            f.paddock.put("  kernel: slab caches that grew most", new Quantity(
                    (m1.getOrDefault("Slab", 0L) - m0.getOrDefault("Slab", 0L)) / 1024.0 / n, "MiB",
                    Density.slabGrowth(slab0, slab1, n, 8)));
            Map<String, Object> global = new LinkedHashMap<>();
            for (String k : List.of("AnonPages", "Slab", "Cached", "Shmem")) {
                global.put(k + "_kib_per_sandbox", Math.round((m1.getOrDefault(k, 0L) - m0.getOrDefault(k, 0L)) * 10.0 / n) / 10.0);
            }
            f.paddock.put("  cross-check: MemTotal - MemAvailable delta (every process on the host)",
                    new Quantity(globalMib, "MiB", global));
            f.paddock.put("engine threads per idle sandbox", Quantity.of(
                    (Density.selfStatus("Threads") - Density.reaperThreads() - threads0) / (double) n, "threads"));
            f.paddock.put("engine open files per idle sandbox", Quantity.of(
                    (Density.openFds() - fds0) / (double) n, "fds"));
            // all alive?
            int alive = 0;
            for (int i = 0; i < n; i += Math.max(1, n / 20)) {
                alive += made.get(i).exec("/bin/true").success() ? 1 : 0;
            }
            // Idle means nothing left to do: the JIT is still compiling what the burst of creates made hot
            // (seconds on a loaded 2-core machine), and would compile the readers below if they first ran in
            // the window: run them once, then wait until the JIT has been quiet for a second (at most 20 s)
            Density.sandboxCpuTicks(ids);
            Density.threadTicks();
            java.lang.management.CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
            long jitQuiet = System.nanoTime() + 20_000_000_000L;
            long jitBefore = -1;
            while (jit != null && jit.isCompilationTimeMonitoringSupported() && System.nanoTime() < jitQuiet
                    && jit.getTotalCompilationTime() != jitBefore) {
                jitBefore = jit.getTotalCompilationTime();
                Thread.sleep(1000);
            }
            double idleSecs = secs(30, 10, 1);
            long ticks0 = Density.sandboxCpuTicks(ids);
            long s0 = System.nanoTime();
            // every thread of this process, the JVM's own (GC, JIT, VM thread) included, read before and after
            Map<Long, Map.Entry<String, Long>> tasks0 = Density.threadTicks();
            long cpu0 = Host.processCpuNanos();
            long w0 = System.nanoTime();
            Thread.sleep((long) (idleSecs * 1000));
            long wall = System.nanoTime() - w0;
            double idleCpu = (Host.processCpuNanos() - cpu0) * 100.0 / wall;
            Map<Long, Map.Entry<String, Long>> tasks1 = Density.threadTicks();
            Map<String, Object> split = Density.ticksByName(tasks0, tasks1, wall);
            f.paddock.put("engine CPU while " + n + " sandboxes idle (% of one core, " + Report.fmt(idleSecs) + " s)",
                    new Quantity(idleCpu, "%", split));
            // USER_HZ is 100 on Linux
            double sandboxCpu = (Density.sandboxCpuTicks(ids) - ticks0) * 1e7 * 100.0 / (System.nanoTime() - s0);
            f.paddock.put("  the " + n + " sandboxes' own processes, all together", Quantity.of(sandboxCpu, "% of one core"));
            f.notes.add(alive + " sampled sandboxes answered exec(/bin/true) after the wait");
            f.check(">= 1000 idle sandboxes", n >= 1000, String.valueOf(n));
            f.check("<= 1 MiB host memory each", perSandboxMib <= 1.0, String.format(Locale.ROOT, "%.2f MiB", perSandboxMib));
            f.check("engine idle CPU <= 1 %", idleCpu <= 1.0, String.format(Locale.ROOT, "%.2f %%", idleCpu));
        } finally {
            long d0 = System.nanoTime();
            int n = made.size();
            made.forEach(s -> ids.add(s.id().value()));
            destroyAll(made, workers);
            double destroySecs = (System.nanoTime() - d0) / 1e9;
            if (n > 0) {
                f.paddock.put("destroy all " + n + " (" + workers + " workers)", new Quantity(destroySecs, "s",
                        Map.of("per_sandbox_ms", Math.round(destroySecs * 1e4 / n) / 10.0)));
                f.paddock.put("  destroy rate", Quantity.of(n / destroySecs, "sandboxes/s"));
                Map<String, Integer> left = Density.leftovers(ids, LocalOptions.DEFAULT_STATE_DIR);
                int total = left.values().stream().mapToInt(Integer::intValue).sum();
                f.paddock.put("left behind after destroying all " + n, new Quantity(total, "items", Map.copyOf(left)));
                f.check("nothing left after destroy", total == 0, left.toString());
                long zombies = Density.sandboxProcesses(ids)[3];
                if (zombies > 0) {
                    f.notes.add(zombies + " of their inits were zombies when checked: their parent, runc, exits after"
                            + " starting them, so the host's PID 1 reaps them (not counted as left behind)");
                }
            }
        }
    }

    /** Bytes of the JVM's direct buffers (the init channels' read buffers among them). */
    private static long directBytes() {
        for (java.lang.management.BufferPoolMXBean b : ManagementFactory.getPlatformMXBeans(java.lang.management.BufferPoolMXBean.class)) {
            if (b.getName().equals("direct")) {
                return b.getMemoryUsed();
            }
        }
        return 0;
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
