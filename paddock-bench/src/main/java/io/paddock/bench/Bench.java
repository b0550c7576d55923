package io.paddock.bench;

import io.paddock.ByteSize;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.PoolConfig;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.bench.Report.Figure;
import io.paddock.bench.host.Host;
import io.paddock.bench.host.Native;
import io.paddock.bench.host.Peers;
import io.paddock.bench.host.PodmanImage;
import io.paddock.engine.internal.LocalPaddock;
import io.paddock.init.internal.InitBinary;
import io.paddock.runtime.internal.host.Cgroups;
import io.paddock.runtime.internal.host.Runc;
import io.paddock.server.PaddockServer;

import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import static io.paddock.bench.Sampling.awaitPoolFull;
import static io.paddock.bench.Sampling.execTrue;
import static io.paddock.bench.Sampling.firstByte;

/**
 * The benchmark harness: measures the figures P1-P12 of PERFORMANCE.md (and P13, pause and resume; P14, codebases; P15, the E2B-compatible API) and, in the same run, the peers
 * (native spawn, JVM spawn, bubblewrap, runc, runc exec, runsc, podman, pasta, slirp4netns), then prints a table and writes
 * JSON with the environment. Run it as {@code paddock bench [--quick] [--json FILE] [--only P1,P3]} (root).
 *
 * <p>Latencies are "start → first stdout byte of {@code echo hi}" unless a row says otherwise.
 */
public final class Bench {
    static final List<String> ALL = List.of("P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8", "P9", "P10", "P11", "P12", "P13", "P14", "P15", "P16");
    public static final Path DEFAULT_CACHE = Path.of("/var/cache/paddock-bench");

    /**
     * @param quick    the short mode (a few minutes); otherwise the full one (the spec's sample sizes, a
     *                 10-minute churn; both modes hold 1000 idle sandboxes)
     * @param json     where to write the JSON, or null
     * @param only     the figures to measure (empty: all)
     * @param scale    multiplies every sample count and duration (1 normally; the harness's own test uses a
     *                 tiny sample)
     * @param build    whether the podman peer's image may be built now (mmdebstrap, about a minute, once)
     * @param cacheDir where the native helper and the podman image's tarball are cached
     */
    public record Options(boolean quick, Path json, Set<String> only, double scale, boolean build, Path cacheDir) {
        public Options {
            only = Collections.unmodifiableSet(new LinkedHashSet<>(only));
            for (String id : only) {
                if (!ALL.contains(id)) {
                    throw new IllegalArgumentException("unknown figure " + id + "; known: " + String.join(",", ALL));
                }
            }
            if (!(scale > 0 && scale <= 1)) {
                throw new IllegalArgumentException("scale must be in (0, 1], got " + scale);
            }
        }

        boolean wants(String id) {
            return only.isEmpty() || only.contains(id);
        }

        /** A sample count: the full or the quick one, scaled, at least min. */
        int n(int full, int quick, int min) {
            return Math.max(min, (int) Math.round((quick() ? quick : full) * scale()));
        }

        /** How many rounds a latency figure's samples are split into (see {@link Rounds}): 3 quick, 5 full. */
        int rounds() {
            return quick() ? 3 : 5;
        }

        /** A duration in seconds: the full or the quick one, scaled, at least min. */
        double secs(double full, double quick, double min) {
            return Math.max(min, (quick() ? quick : full) * scale());
        }
    }

    public static void main(String[] args) throws Exception {
        boolean quick = false;
        Path json = null;
        Set<String> only = new LinkedHashSet<>();
        double scale = 1;
        boolean build = true;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--quick" -> quick = true;
                case "--json" -> json = Path.of(args[++i]);
                case "--only" -> only.addAll(parseOnly(args[++i]));
                case "--scale" -> scale = Double.parseDouble(args[++i]);
                case "--no-build" -> build = false;
                default -> throw new IllegalArgumentException("unknown argument " + args[i]
                        + "; usage: [--quick] [--json FILE] [--only P1,P3,...]");
            }
        }
        System.exit(run(new Options(quick, json, only, scale, build, DEFAULT_CACHE), System.out));
    }

    public static Set<String> parseOnly(String csv) {
        Set<String> out = new LinkedHashSet<>();
        for (String s : csv.split(",")) {
            if (!s.isBlank()) {
                out.add(s.trim().toUpperCase(Locale.ROOT));
            }
        }
        return out;
    }

    /** Runs the benchmark; returns 0 when it ran (missed targets are reported, not failures). */
    public static int run(Options o, PrintStream out) throws Exception {
        return new Bench(o, out).run();
    }

    // ------------------------------------------------------------------ sizes

    private final Options o;
    private final PrintStream out;
    private final Report report = new Report();
    private final SandboxSpec spec = SandboxSpec.builder().memory(ByteSize.mib(256)).timeout(Duration.ofMinutes(30)).build();
    private Native nativeHelper;
    private String nativeMissing;
    private Peers peers;
    private String peersMissing;
    private Map<String, String> missingTools = Map.of();
    private String podmanImage;
    private String podmanMissing;
    private Setup setup;

    private Bench(Options o, PrintStream out) {
        this.o = o;
        this.out = out;
    }

    private int n(int full, int quick, int min) {
        return o.n(full, quick, min);
    }

    // ------------------------------------------------------------------ the run

    private int run() throws Exception {
        long start = System.nanoTime();
        out.printf("paddock bench (%s mode%s), load average at start: %s%n", o.quick() ? "quick" : "full",
                o.scale() < 1 ? ", scale " + o.scale() : "", Host.loadavg());
        if (!Host.isRoot()) {
            out.println("warning: not root; the engine, runc and the peers need root. Missing tools cannot be installed.");
        }
        missingTools = Host.ensureTools(mapOf("bwrap", "bubblewrap", "podman", "podman", "mmdebstrap", "mmdebstrap",
                "gcc", "gcc", "runsc", "runsc"), out);
        missingTools.forEach((k, v) -> out.println("unavailable peer tool: " + v));
        environment();
        try {
            nativeHelper = Native.build(o.cacheDir());
        } catch (Exception e) {
            nativeMissing = e.getMessage();
        }
        Path stateDir = LocalOptions.DEFAULT_STATE_DIR;
        try {
            Path runsc = Host.which("runsc");
            peers = new Peers(stateDir, InitBinary.load().extractTo(stateDir.resolve("bin")), Runc.locate(), runsc);
        } catch (Exception e) {
            peersMissing = "cannot prepare the runc peer bundle: " + e.getMessage();
        }
        if (wantsAny("P2", "P11") && !missingTools.containsKey("podman")) {
            try {
                podmanImage = PodmanImage.ensure(o.cacheDir(), o.build(), out);
            } catch (Exception e) {
                podmanMissing = e.getMessage();
            }
        } else {
            podmanMissing = missingTools.getOrDefault("podman", "not measured in this run");
        }
        setup = new Setup(o, report, out, spec, nativeHelper, nativeMissing, peers, peersMissing, missingTools, podmanImage,
                podmanMissing);
        try {
            if (wantsAny("P1", "P10")) {
                pooledFigures();
            }
            try (Paddock plain = Paddock.local(LocalOptions.builder().maxSandboxes(1500).build())) {
                warmUp(plain);
                timed("P2", () -> new ColdFigure(setup).run(plain));
                timed("P3", () -> new ExecFigure(setup).run(plain));
                timed("P4", () -> new ThroughputFigure(setup).run(plain));
                timed("P5", () -> new ChurnFigure(setup).run(plain));
                timed("P6", () -> new DensityFigure(setup).run(plain));
                timed("P7", () -> new StreamingFigure(setup).run(plain));
                timed("P8", () -> new OverheadFigure(setup).run(plain));
                timed("P11", () -> {
                    Path work = Files.createTempDirectory("paddock-bench-p11");
                    try {
                        new ImagesFigure(report, out, peers, peersMissing, n(200, 30, 3)).run(plain, work, podmanImage,
                                podmanMissing);
                    } finally {
                        io.paddock.image.internal.store.ImageStore.deleteTree(work);
                    }
                });
                timed("P12", () -> new NetworkFigure(report, out, spec, new NetworkFigure.Sizes(n(200, 30, 3), n(50, 10, 2),
                        n(7, 5, 1), Math.max(8, Math.round((o.quick() ? 64 : 256) * o.scale())) << 20, n(2000, 300, 5)))
                        .run(plain));
                timed("P13", () -> new PauseFigure(report, out, spec, o.quick() ? List.of(0, 256) : List.of(0, 256, 1024),
                        n(5, 2, 1)).run(plain));
                timed("P15", () -> new E2bFigure(report, out, spec, n(30, 10, 3), n(100, 30, 5)).run(plain));
                timed("P14", () -> {
                    Path work = Files.createTempDirectory("paddock-bench-p14");
                    try {
                        new WorkspaceFigure(report, out, spec, n(30, 10, 3), Math.max(16, Math.round((o.quick() ? 128 : 512)
                                * o.scale())) << 20).run(plain, work);
                    } finally {
                        io.paddock.image.internal.store.ImageStore.deleteTree(work);
                    }
                });
                timed("P16", () -> new PythonFigure(report, out, spec, n(30, 10, 3), n(300, 100, 5),
                        Math.max(16, Math.round((o.quick() ? 256 : 1024) * o.scale())) << 20).run(plain, repoRoot()));
            }
            timed("P9", () -> new GvisorFigure(setup).run());
        } finally {
            if (peers != null) {
                peers.close();
            }
        }
        report.environment.put("load_average_end", Host.loadavg());
        report.environment.put("duration_s", Math.round((System.nanoTime() - start) / 1e8) / 10.0);
        report.printTable(out);
        if (o.json() != null) {
            report.writeJson(o.json());
            out.println("JSON written to " + o.json());
        }
        out.printf(Locale.ROOT, "done in %.1f s; load average at end: %s%n", (System.nanoTime() - start) / 1e9, Host.loadavg());
        return 0;
    }

    private boolean wantsAny(String... ids) {
        for (String id : ids) {
            if (o.wants(id)) {
                return true;
            }
        }
        return false;
    }

    interface Step {
        void run() throws Exception;
    }

    private void timed(String id, Step step) {
        if (!o.wants(id)) {
            return;
        }
        long t0 = System.nanoTime();
        double load0 = Host.load1();
        out.printf("measuring %s … (load %s)%n", id, Host.loadavg().split(" ")[0]);
        try {
            step.run();
        } catch (Exception | AssertionError e) {
            Figure f = report.figures.get(id);
            if (f == null) {
                f = report.figure(id, "", "");
            }
            f.unavailable = "failed: " + e;
            out.println(id + " failed: " + e);
        }
        Figure f = report.figures.get(id);
        if (f != null) {
            f.seconds = (System.nanoTime() - t0) / 1e9;
            f.load.add(load0);
            f.load.add(Host.load1());
        }
    }

    private void environment() {
        Map<String, Object> env = report.environment;
        env.put("date", Instant.now().toString());
        env.put("mode", o.quick() ? "quick" : "full");
        env.put("kernel", Host.kernel());
        env.put("cpu", Host.cpuModel());
        env.put("cpus", Runtime.getRuntime().availableProcessors());
        env.put("memory_total_mib", Host.meminfo().getOrDefault("MemTotal", 0L) / 1024);
        env.put("load_average_start", Host.loadavg());
        env.put("jdk", System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version"));
        env.put("gc", ManagementFactory.getGarbageCollectorMXBeans().stream().map(g -> g.getName()).toList());
        env.put("jvm_flags", ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
                .filter(a -> a.startsWith("-X")).toList());
        env.put("cgroups", Cgroups.detect().version().toString().toLowerCase(Locale.ROOT)
                + (Files.isDirectory(Path.of("/sys/fs/cgroup/unified")) ? " (hybrid)" : ""));
        env.put("runc", Host.version("runc"));
        env.put("runsc", Host.onPath("runsc") ? Host.version("runsc", "--version") : "unavailable: not installed");
        env.put("bwrap", Host.onPath("bwrap") ? Host.version("bwrap") : "unavailable: not installed");
        env.put("podman", Host.onPath("podman") ? Host.version("podman") : "unavailable: not installed");
        env.put("paddock", PaddockServer.version());
    }

    private void warmUp(Paddock p) throws Exception {
        for (int i = 0; i < n(30, 15, 3); i++) {
            Peers.jvmSpawn();
            try (Sandbox sb = p.create(spec)) {
                firstByte(sb, System.nanoTime());
                sb.exec("/bin/true");
            }
        }
    }

    // ------------------------------------------------------------------ P1 and P10 (a pooled engine)

    private void pooledFigures() throws Exception {
        int poolSize = 4;
        LocalOptions options = LocalOptions.builder().maxSandboxes(1500).warmPool(PoolConfig.builder()
                .shape(spec.toBuilder().timeout(SandboxSpec.DEFAULT_TIMEOUT).build()).size(poolSize).refillConcurrency(2)
                .build()).build();
        try (LocalPaddock pooled = (LocalPaddock) Paddock.local(options)) {
            awaitPoolFull(pooled);
            // P1 is the engine's steady state: its calls until the JIT has settled, every 20th round a create
            String settled;
            try (Sandbox warm = pooled.create(spec)) {
                settled = Sampling.untilJitSettles("engine calls", o.secs(30, 20, 2), i -> {
                    firstByte(warm, System.nanoTime());
                    execTrue(warm);
                    if (i % 20 == 19) {
                        awaitPoolFull(pooled);
                        try (Sandbox sb = pooled.create(spec)) {
                            firstByte(sb, System.nanoTime());
                        }
                        return 4;
                    }
                    return 2;
                });
            }
            awaitPoolFull(pooled);
            timed("P1", () -> new WarmFigure(setup).run(pooled));
            if (report.figures.get("P1") != null) {
                report.figures.get("P1").notes.add(settled);
            }
            timed("P10", () -> new RemoteFigure(setup).run(pooled));
        }
    }

    // ------------------------------------------------------------------ helpers

    /** The repository the harness runs from (its python/ holds the Python client's part of P16). */
    private static Path repoRoot() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isRegularFile(p.resolve("python/bench/bench.py"))) {
                return p;
            }
        }
        return Path.of("").toAbsolutePath();
    }

    private static Map<String, String> mapOf(String... kv) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return m;
    }
}
