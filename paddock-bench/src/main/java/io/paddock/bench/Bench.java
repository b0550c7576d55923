package io.paddock.bench;

import io.paddock.ByteSize;
import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.ExecResult;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.PoolConfig;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.bench.Report.Figure;
import io.paddock.bench.Report.Quantity;
import io.paddock.bench.host.Host;
import io.paddock.bench.host.Native;
import io.paddock.bench.host.Peers;
import io.paddock.bench.host.PodmanImage;
import io.paddock.engine.internal.LocalPaddock;
import io.paddock.engine.internal.PoolStats;
import io.paddock.init.internal.InitBinary;
import io.paddock.runtime.internal.host.Cgroups;
import io.paddock.runtime.internal.host.Runc;
import io.paddock.server.PaddockServer;
import io.paddock.server.ServerOptions;

import java.io.InputStream;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

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
     * @param quick    the short mode (under two minutes); otherwise the full one (the spec's sample sizes, a
     *                 10-minute churn, 1000 idle sandboxes)
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

    private Bench(Options o, PrintStream out) {
        this.o = o;
        this.out = out;
    }

    private int n(int full, int quick, int min) {
        return Math.max(min, (int) Math.round((o.quick() ? quick : full) * o.scale()));
    }

    private double secs(double full, double quick, double min) {
        return Math.max(min, (o.quick() ? quick : full) * o.scale());
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
        try {
            if (wantsAny("P1", "P10")) {
                pooledFigures();
            }
            try (Paddock plain = Paddock.local(LocalOptions.builder().maxSandboxes(1500).build())) {
                warmUp(plain);
                timed("P2", () -> p2(plain));
                timed("P3", () -> p3(plain));
                timed("P4", () -> p4(plain));
                timed("P5", () -> p5(plain));
                timed("P6", () -> p6(plain));
                timed("P7", () -> p7(plain));
                timed("P8", () -> p8(plain));
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
            timed("P9", this::p9);
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
            for (int i = 0; i < n(20, 10, 2); i++) {
                awaitPoolFull(pooled);
                try (Sandbox sb = pooled.create(spec)) {
                    firstByte(sb, System.nanoTime());
                }
            }
            timed("P1", () -> p1(pooled));
            timed("P10", () -> p10(pooled));
        }
    }

    private void p1(LocalPaddock pooled) throws Exception {
        Figure f = report.figure("P1", "create -> first stdout byte, warm (sandbox from the pool)",
                "p50 <= 3 ms, p99 <= 15 ms; faster than a bwrap one-shot");
        int samples = n(1000, 100, 5);
        PoolStats before = pooled.poolStats().get(0);
        long[] first = new long[samples];
        long[] create = new long[samples];
        long[] destroy = new long[samples];
        for (int i = 0; i < samples; i++) {
            awaitPoolFull(pooled);
            long t0 = System.nanoTime();
            Sandbox sb = pooled.create(spec);
            create[i] = System.nanoTime() - t0;
            first[i] = firstByte(sb, t0);
            long t1 = System.nanoTime();
            sb.destroy();
            destroy[i] = System.nanoTime() - t1;
        }
        PoolStats after = pooled.poolStats().get(0);
        Stats warm = Stats.of(first);
        f.paddock.put("warm create -> first byte (pool hit)", warm);
        f.paddock.put("create() returns (pool hit)", Stats.of(create));
        f.paddock.put("destroy() (not in the figure)", Stats.of(destroy));
        f.paddock.put("pool", new Quantity(after.hits() - before.hits(), "hits", Map.of("misses", after.misses() - before.misses(),
                "refill_p50_ms", after.refillP50Ms(), "refill_p99_ms", after.refillP99Ms())));
        Stats bwrap = peer(f, "bwrap one-shot", n(300, 40, 3), Peers::bwrapOneShot, missingTools.get("bwrap"));
        Stats nat = nativeEcho(f, n(1000, 300, 5));
        if (bwrap != null) {
            f.ratio("Paddock warm / bwrap one-shot (p50)", warm.p50() / bwrap.p50());
            f.check("faster than a bwrap one-shot (p50)", warm.p50() < bwrap.p50(), ms(warm.p50()) + " vs " + ms(bwrap.p50()));
        }
        if (nat != null) {
            f.ratio("Paddock warm / native spawn of echo (p50)", warm.p50() / nat.p50());
        }
        f.check("p50 <= 3 ms", warm.p50() <= 3000, ms(warm.p50()));
        f.check("p99 <= 15 ms", warm.p99() <= 15000, ms(warm.p99()));
        f.notes.add("each sample waits for the pool to be full first, so that the refill (a cold create in the"
                + " background) does not share the two cores with the measured request");
    }

    private void p10(LocalPaddock pooled) throws Exception {
        Figure f = report.figure("P10", "the same through the remote API (REST/WebSocket on loopback), remote - embedded",
                "P1 and P3 each + <= 1 ms");
        String token = "bench-" + HexFormat.of().formatHex(new SecureRandom().generateSeed(16));
        try (PaddockServer server = PaddockServer.start(ServerOptions.builder().host("127.0.0.1").port(0).token(token).build(), pooled);
             Paddock remote = Paddock.connect(server.url(), token)) {
            for (int i = 0; i < n(20, 10, 2); i++) {
                awaitPoolFull(pooled);
                try (Sandbox sb = remote.create(spec)) {
                    firstByte(sb, System.nanoTime());
                }
            }
            int creates = n(300, 30, 4);
            long[][] warm = interleave(creates, () -> {
                awaitPoolFull(pooled);
                return createFirstByte(pooled);
            }, () -> {
                awaitPoolFull(pooled);
                return createFirstByte(remote);
            });
            int execs = n(1000, 200, 5);
            long[][] start;
            long[][] execTrue;
            try (Sandbox l = pooled.create(spec); Sandbox r = remote.create(spec)) {
                for (int i = 0; i < n(200, 50, 3); i++) {
                    firstByte(l, System.nanoTime());
                    firstByte(r, System.nanoTime());
                    execTrue(r);
                }
                start = interleave(execs, () -> firstByte(l, System.nanoTime()), () -> firstByte(r, System.nanoTime()));
                execTrue = interleave(execs, () -> execTrue(l), () -> execTrue(r));
            }
            Stats wl = Stats.of(warm[0]);
            Stats wr = Stats.of(warm[1]);
            Stats sl = Stats.of(start[0]);
            Stats sr = Stats.of(start[1]);
            f.paddock.put("P1 warm create -> first byte, embedded", wl);
            f.paddock.put("P1 warm create -> first byte, remote", wr);
            f.paddock.put("P3 start -> first byte (echo hi), embedded", sl);
            f.paddock.put("P3 start -> first byte (echo hi), remote", sr);
            f.paddock.put("exec(/bin/true) round trip, embedded", Stats.of(execTrue[0]));
            f.paddock.put("exec(/bin/true) round trip, remote", Stats.of(execTrue[1]));
            f.paddock.put("P1 remote added latency", wr.minus(wl));
            f.paddock.put("P3 remote added latency", sr.minus(sl));
            f.ratio("P1 remote / embedded (p50)", wr.p50() / wl.p50());
            f.ratio("P3 remote / embedded (p50)", sr.p50() / sl.p50());
            f.check("P1 remote - embedded p50 <= 1 ms", wr.p50() - wl.p50() <= 1000, ms(wr.p50() - wl.p50()));
            f.check("P3 remote - embedded p50 <= 1 ms", sr.p50() - sl.p50() <= 1000, ms(sr.p50() - sl.p50()));
            f.notes.add("samples interleaved (embedded, remote, remote, embedded, ...) so that drift hits both alike;"
                    + " the daemon runs in this JVM on 127.0.0.1");
        }
    }

    // ------------------------------------------------------------------ P2 cold

    private void p2(Paddock p) throws Exception {
        Figure f = report.figure("P2", "create -> first stdout byte, cold (everything made for this request)",
                "p50 <= runc one-shot + 10 ms");
        int samples = n(200, 30, 3);
        long[] first = new long[samples];
        long[] destroy = new long[samples];
        for (int i = 0; i < samples; i++) {
            long t0 = System.nanoTime();
            Sandbox sb = p.create(spec);
            first[i] = firstByte(sb, t0);
            long t1 = System.nanoTime();
            sb.destroy();
            destroy[i] = System.nanoTime() - t1;
        }
        Stats cold = Stats.of(first);
        f.paddock.put("cold create -> first byte", cold);
        f.paddock.put("destroy() (not in the figure)", Stats.of(destroy));
        Stats runc = peer(f, "runc run one-shot (same bundle settings)", samples, () -> peers.runcOneShot(), peersMissing);
        Stats bwrap = peer(f, "bwrap one-shot", samples, Peers::bwrapOneShot, missingTools.get("bwrap"));
        Stats podman = peer(f, "podman --runtime runc run --rm --network=none (bookworm minbase)", n(100, 10, 2),
                () -> Peers.podmanOneShot(podmanImage), podmanMissing);
        if (runc != null) {
            f.ratio("Paddock cold / runc one-shot (p50)", cold.p50() / runc.p50());
            f.check("p50 <= runc one-shot + 10 ms", cold.p50() <= runc.p50() + 10_000,
                    String.format(Locale.ROOT, "%+.2f ms", (cold.p50() - runc.p50()) / 1000));
        }
        if (bwrap != null) {
            f.ratio("Paddock cold / bwrap one-shot (p50)", cold.p50() / bwrap.p50());
        }
        if (podman != null) {
            f.ratio("podman run / Paddock cold (p50)", podman.p50() / cold.p50());
        }
    }

    // ------------------------------------------------------------------ P3 exec overhead

    private void p3(Paddock p) throws Exception {
        Figure f = report.figure("P3", "exec on a running sandbox, overhead over a native spawn",
                "overhead p50 <= 1 ms, p99 <= 5 ms; >= 15x faster than runc exec");
        int samples = n(2000, 300, 5);
        Stats echo;
        Stats tru;
        try (Sandbox sb = p.create(spec)) {
            for (int i = 0; i < n(300, 100, 3); i++) {
                firstByte(sb, System.nanoTime());
                execTrue(sb);
            }
            echo = Stats.of(sample(samples, () -> firstByte(sb, System.nanoTime())));
            tru = Stats.of(sample(samples, () -> execTrue(sb)));
        }
        f.paddock.put("start(echo hi) -> first byte", echo);
        f.paddock.put("exec(/bin/true) round trip", tru);
        Stats natEcho = nativeEcho(f, n(2000, 300, 5));
        Stats natTrue = null;
        if (nativeHelper != null) {
            natTrue = Stats.of(nativeHelper.spawn(n(2000, 300, 5), "/bin/true")[1]);
            f.peers.put("native posix_spawn of /bin/true -> exit", natTrue);
        }
        peer(f, "JVM ProcessBuilder spawn of echo hi", n(500, 100, 3), Peers::jvmSpawn, null);
        Stats runcExec = null;
        if (peers != null) {
            String running = peers.startRunning();
            runcExec = peer(f, "runc exec into a running container", n(200, 30, 3), () -> peers.runcExec(running), null);
        } else {
            f.peers.put("runc exec into a running container", "unavailable: " + peersMissing);
        }
        if (natEcho != null) {
            Stats over = echo.minus(natEcho);
            f.paddock.put("overhead: start(echo) - native spawn(echo), to first byte", over);
            f.check("overhead p50 <= 1 ms", over.p50() <= 1000, ms(over.p50()));
            f.check("overhead p99 <= 5 ms", over.p99() <= 5000, ms(over.p99()));
            f.ratio("Paddock exec / native spawn (p50, echo first byte)", echo.p50() / natEcho.p50());
        }
        if (natTrue != null) {
            f.paddock.put("overhead: exec(true) - native spawn(true), to exit", tru.minus(natTrue));
        }
        if (runcExec != null) {
            f.ratio("runc exec / Paddock exec (p50)", runcExec.p50() / echo.p50());
            f.check(">= 15x faster than runc exec", runcExec.p50() / echo.p50() >= 15,
                    String.format(Locale.ROOT, "%.1fx", runcExec.p50() / echo.p50()));
        }
    }

    // ------------------------------------------------------------------ P4 throughput

    private void p4(Paddock p) throws Exception {
        Figure f = report.figure("P4", "exec throughput, trivial commands (exec(\"/bin/true\") to its exit)",
                ">= 1000 execs/s over many sandboxes; >= 400/s one serial client");
        double seconds = secs(20, 3, 1);
        int sandboxes = 8;
        int threads = 8;
        double serial;
        double concurrent;
        List<Sandbox> all = new ArrayList<>();
        try {
            for (int i = 0; i < sandboxes; i++) {
                all.add(p.create(spec));
            }
            Sandbox one = all.get(0);
            for (int i = 0; i < 200 * o.scale(); i++) {
                execTrue(one);
            }
            serial = rate(1, seconds, i -> execTrue(one));
            long[] c0 = Host.machineCpuTicks();
            long j0 = Host.processCpuNanos();
            long w0 = System.nanoTime();
            concurrent = rate(threads, seconds, i -> execTrue(all.get((int) (i % sandboxes))));
            long[] c1 = Host.machineCpuTicks();
            double wall = (System.nanoTime() - w0) / 1e9;
            double busy = (double) (c1[0] - c0[0]) / Math.max(1, c1[1] - c0[1]);
            int cpus = Runtime.getRuntime().availableProcessors();
            double cpuPerExecUs = busy * cpus * 1e6 / concurrent;
            double jvmPerExecUs = (Host.processCpuNanos() - j0) / 1e3 / (concurrent * wall);
            f.paddock.put("machine CPU per exec at that rate (all processes)", new Quantity(cpuPerExecUs, "us",
                    Map.of("machine_busy_percent", Math.round(busy * 1000) / 10.0,
                            "engine_jvm_us_per_exec", Math.round(jvmPerExecUs),
                            "outside_jvm_us_per_exec", Math.round(cpuPerExecUs - jvmPerExecUs))));
        } finally {
            all.forEach(Sandbox::destroy);
        }
        f.paddock.put("one serial client, one sandbox", Quantity.of(serial, "execs/s"));
        f.paddock.put(threads + " clients over " + sandboxes + " sandboxes", Quantity.of(concurrent, "execs/s"));
        if (nativeHelper != null) {
            double nat = nativeHelper.rate(Math.min(seconds, secs(10, 2, 1)), "/bin/true");
            f.peers.put("native posix_spawn of /bin/true, serial", Quantity.of(nat, "spawns/s"));
            f.ratio("Paddock serial / native serial", serial / nat);
        } else {
            f.peers.put("native posix_spawn of /bin/true, serial", "unavailable: " + nativeMissing);
        }
        if (peers != null) {
            String running = peers.startRunning();
            double runcRate = rate(1, Math.min(seconds, secs(5, 2, 1)), i -> peers.runcExec(running));
            f.peers.put("runc exec, serial", Quantity.of(runcRate, "execs/s"));
            f.ratio("Paddock serial / runc exec serial", serial / runcRate);
        } else {
            f.peers.put("runc exec, serial", "unavailable: " + peersMissing);
        }
        f.check(">= 1000 execs/s over many sandboxes", concurrent >= 1000, Report.fmt(concurrent) + "/s");
        f.check(">= 400 execs/s one serial client", serial >= 400, Report.fmt(serial) + "/s");
    }

    // ------------------------------------------------------------------ P5 churn

    private void p5(Paddock p) throws Exception {
        Figure f = report.figure("P5", "create+destroy churn (cold creates; a pool cannot raise the sustained rate)",
                ">= 50 sandboxes/s sustained (10 min) with p99 drift <= 20 %; 100 concurrent creates ready in <= 3 s");
        double seconds = secs(600, 15, 3);
        int workers = 4;
        List<long[]> ops = Collections.synchronizedList(new ArrayList<>());
        long begin = System.nanoTime();
        long end = begin + (long) (seconds * 1e9);
        AtomicLong failures = new AtomicLong();
        ExecutorService pool = Executors.newFixedThreadPool(workers);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int w = 0; w < workers; w++) {
                fs.add(pool.submit(() -> {
                    while (System.nanoTime() < end) {
                        long t0 = System.nanoTime();
                        try {
                            p.create(spec).destroy();
                            ops.add(new long[] {t0 - begin, System.nanoTime() - t0});
                        } catch (RuntimeException e) {
                            failures.incrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> x : fs) {
                x.get();
            }
        } finally {
            pool.shutdown();
        }
        double elapsed = (System.nanoTime() - begin) / 1e9;
        List<long[]> sorted = new ArrayList<>(ops);
        sorted.sort((a, b) -> Long.compare(a[0], b[0]));
        long tenth = (long) (seconds * 1e9 / 10);
        Stats all = Stats.of(sorted.stream().mapToLong(x -> x[1]).toArray());
        Stats first = Stats.of(sorted.stream().filter(x -> x[0] < tenth).mapToLong(x -> x[1]).toArray());
        Stats last = Stats.of(sorted.stream().filter(x -> x[0] >= 9 * tenth).mapToLong(x -> x[1]).toArray());
        double rate = sorted.size() / elapsed;
        double drift = (last.p99() - first.p99()) / first.p99();
        f.paddock.put(String.format(Locale.ROOT, "churn, %d workers, %.0f s", workers, seconds),
                new Quantity(rate, "sandboxes/s", Map.of("count", sorted.size(), "failures", failures.get())));
        f.paddock.put("create+destroy latency, whole run", all);
        f.paddock.put("create+destroy latency, first tenth", first);
        f.paddock.put("create+destroy latency, last tenth", last);
        f.paddock.put("p99 drift, last tenth vs first", Quantity.of(drift * 100, "%"));

        int burst = n(100, 100, 4);
        long[] ready = new long[burst];
        List<Sandbox> made = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch go = new CountDownLatch(1);
        ExecutorService burstPool = Executors.newFixedThreadPool(burst);
        long t0;
        try {
            List<Future<?>> fs = new ArrayList<>();
            long[] base = new long[1];
            for (int i = 0; i < burst; i++) {
                int k = i;
                fs.add(burstPool.submit(() -> {
                    go.await();
                    made.add(p.create(spec));
                    ready[k] = System.nanoTime() - base[0];
                    return null;
                }));
            }
            Thread.sleep(200);
            base[0] = System.nanoTime();
            t0 = base[0];
            go.countDown();
            for (Future<?> x : fs) {
                x.get();
            }
        } finally {
            burstPool.shutdown();
            destroyAll(made, workers);
        }
        double allReady = Arrays.stream(ready).max().orElse(0) / 1e9;
        f.paddock.put(burst + " concurrent creates: all ready after", Quantity.of(allReady, "s"));
        f.paddock.put(burst + " concurrent creates: each ready after", Stats.of(ready));
        if (peers != null) {
            double peerSeconds = Math.min(seconds, secs(20, 5, 1));
            List<Path> bundles = new ArrayList<>();
            for (int w = 0; w < workers; w++) {
                bundles.add(peers.churnBundle(w));
            }
            AtomicLong count = new AtomicLong();
            double peerRate = rate(workers, peerSeconds, w -> {
                peers.runcChurn(bundles.get((int) (w % workers)));
                count.incrementAndGet();
                return 0;
            });
            f.peers.put("runc run of /bin/true (create, start, wait, delete), " + workers + " workers",
                    Quantity.of(peerRate, "containers/s"));
            f.ratio("Paddock churn / runc run churn", rate / peerRate);
        } else {
            f.peers.put("runc run churn", "unavailable: " + peersMissing);
        }
        f.check(">= 50 sandboxes/s sustained", rate >= 50, Report.fmt(rate) + "/s over " + Report.fmt(seconds) + " s"
                + (seconds < 600 ? " (the spec's duration is 10 min: run the full mode)" : ""));
        f.check("p99 drift <= 20 %", drift <= 0.20, String.format(Locale.ROOT, "%+.1f %%", drift * 100));
        f.check(burst + " concurrent creates all ready <= 3 s", allReady <= 3, Report.fmt(allReady) + " s");
    }

    // ------------------------------------------------------------------ P6 density

    private void p6(Paddock p) throws Exception {
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

    private static void destroyAll(List<Sandbox> all, int workers) throws InterruptedException {
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

    // ------------------------------------------------------------------ P7 streaming

    private void p7(Paddock p) throws Exception {
        Figure f = report.figure("P7", "output streaming: head -c SIZE /dev/zero, every byte counted",
                ">= 500 MiB/s into the engine, >= 100 MiB/s to a local client, zero loss");
        long size = (long) Math.max(8 << 20, (o.quick() ? 256L << 20 : 1L << 30) * o.scale());
        int runs = n(5, 2, 1);
        String token = "bench-" + HexFormat.of().formatHex(new SecureRandom().generateSeed(16));
        double[] local = new double[runs];
        double[] remote = new double[runs];
        long lost = 0;
        try (PaddockServer server = PaddockServer.start(ServerOptions.builder().host("127.0.0.1").port(0).token(token).build(), p);
             Paddock client = Paddock.connect(server.url(), token);
             Sandbox l = p.create(spec);
             Sandbox r = client.create(spec)) {
            stream(l, 8 << 20);
            stream(r, 8 << 20);
            for (int i = 0; i < runs; i++) {
                long t0 = System.nanoTime();
                lost += size - stream(l, size);
                local[i] = size / 1048576.0 / ((System.nanoTime() - t0) / 1e9);
                t0 = System.nanoTime();
                lost += size - stream(r, size);
                remote[i] = size / 1048576.0 / ((System.nanoTime() - t0) / 1e9);
            }
        }
        double lm = median(local);
        double rm = median(remote);
        f.paddock.put("into the engine (embedded SDK), " + (size >> 20) + " MiB", new Quantity(lm, "MiB/s",
                Map.of("runs", Arrays.toString(round(local)))));
        f.paddock.put("to a local client through the daemon (remote SDK, WebSocket)", new Quantity(rm, "MiB/s",
                Map.of("runs", Arrays.toString(round(remote)))));
        f.paddock.put("bytes lost (expected - counted, all runs)", Quantity.of(lost, "bytes"));
        double[] pipe = new double[runs];
        for (int i = 0; i < runs; i++) {
            long t0 = System.nanoTime();
            long got = hostPipe(size);
            pipe[i] = got / 1048576.0 / ((System.nanoTime() - t0) / 1e9);
        }
        double pm = median(pipe);
        f.peers.put("host pipe into this JVM (ProcessBuilder, head -c SIZE /dev/zero)", Quantity.of(pm, "MiB/s"));
        f.ratio("Paddock into engine / host pipe", lm / pm);
        f.check(">= 500 MiB/s into the engine", lm >= 500, Report.fmt(lm) + " MiB/s");
        f.check(">= 100 MiB/s to a local client", rm >= 100, Report.fmt(rm) + " MiB/s");
        f.check("zero silent loss", lost == 0, lost + " bytes lost");
    }

    private static long stream(Sandbox sb, long size) throws Exception {
        try (ExecProcess proc = sb.start(ExecRequest.builder().argv("head", "-c", Long.toString(size), "/dev/zero")
                .outputLimit(ExecRequest.UNLIMITED).build())) {
            proc.closeStdin();
            byte[] buf = new byte[1 << 16];
            long total = 0;
            int k;
            InputStream in = proc.stdout();
            while ((k = in.read(buf)) > 0) {
                total += k;
            }
            if (!proc.awaitExit().success()) {
                throw new IllegalStateException("head failed");
            }
            return total;
        }
    }

    private static long hostPipe(long size) throws Exception {
        Process pr = new ProcessBuilder("head", "-c", Long.toString(size), "/dev/zero").start();
        byte[] buf = new byte[1 << 16];
        long total = 0;
        int k;
        try (InputStream in = pr.getInputStream()) {
            while ((k = in.read(buf)) > 0) {
                total += k;
            }
        }
        pr.waitFor();
        return total;
    }

    // ------------------------------------------------------------------ P8 in-sandbox overhead

    private void p8(Paddock p) throws Exception {
        Figure f = report.figure("P8", "in-sandbox overhead: the same static binary inside and on the host",
                "CPU-bound work within 2 % of the host; getppid with seccomp <= 2.5x the host");
        if (nativeHelper == null) {
            f.unavailable = nativeMissing;
            return;
        }
        int reps = n(7, 3, 1);
        long calib = nativeHelper.spin(20_000_000);
        long iterations = Math.max(1_000_000, (long) (20_000_000L * (o.quick() ? 0.5e9 : 1e9) * o.scale() / Math.max(1, calib)));
        long calls = Math.max(100_000, (long) (2_000_000 * o.scale()));
        double[] hostSpin = new double[reps];
        double[] boxSpin = new double[reps];
        double[] hostPpid = new double[reps];
        double[] boxPpid = new double[reps];
        try (Sandbox sb = p.create(spec)) {
            ExecResult up = sb.exec(ExecRequest.builder().argv("sh", "-c", "cat > /workspace/pbench && chmod 755 /workspace/pbench")
                    .stdin(nativeHelper.bytes()).build());
            if (!up.success()) {
                throw new IllegalStateException("uploading the helper failed: " + up.stderrText());
            }
            for (int i = 0; i < reps; i++) {
                hostSpin[i] = nativeHelper.spin(iterations);
                boxSpin[i] = Double.parseDouble(inBox(sb, "spin", iterations));
                hostPpid[i] = nativeHelper.getppid(calls);
                boxPpid[i] = Double.parseDouble(inBox(sb, "getppid", calls));
            }
        }
        double hs = median(hostSpin) / 1e6;
        double bs = median(boxSpin) / 1e6;
        double hp = median(hostPpid);
        double bp = median(boxPpid);
        f.paddock.put("CPU-bound loop in a sandbox (median of " + reps + ")", new Quantity(bs, "ms", Map.of("runs_ms",
                Arrays.toString(round(div(boxSpin, 1e6))))));
        f.peers.put("same loop on the host (median of " + reps + ")", new Quantity(hs, "ms", Map.of("runs_ms",
                Arrays.toString(round(div(hostSpin, 1e6))))));
        f.paddock.put("getppid in a sandbox (seccomp filter)", Quantity.of(bp, "ns/call"));
        f.peers.put("getppid on the host", Quantity.of(hp, "ns/call"));
        f.ratio("CPU loop sandbox / host", bs / hs);
        f.ratio("getppid sandbox / host", bp / hp);
        f.check("CPU-bound within 2 % of host", Math.abs(bs / hs - 1) <= 0.02, String.format(Locale.ROOT, "%+.2f %%", (bs / hs - 1) * 100));
        f.check("getppid <= 2.5x host", bp / hp <= 2.5, String.format(Locale.ROOT, "%.2fx", bp / hp));
        f.notes.add("runs alternate host and sandbox so that load drift hits both alike");
    }

    private static String inBox(Sandbox sb, String mode, long n) {
        ExecResult r = sb.exec("/workspace/pbench", mode, Long.toString(n));
        if (!r.success()) {
            throw new IllegalStateException("pbench " + mode + " failed in the sandbox: " + r.stderrText());
        }
        return r.stdoutText().trim();
    }

    // ------------------------------------------------------------------ P9 gVisor tier

    private void p9() throws Exception {
        Figure f = report.figure("P9", "gVisor tier (runsc): warm and cold create -> first byte",
                "warm p50 <= 10 ms; exec p50 <= 5 ms; cold p50 <= runsc one-shot (#15)");
        SandboxSpec gspec = spec.toBuilder().runtime("runsc").build();
        LocalOptions options = LocalOptions.builder().maxSandboxes(100).warmPool(PoolConfig.builder()
                .shape(gspec.toBuilder().timeout(SandboxSpec.DEFAULT_TIMEOUT).build()).size(2).refillConcurrency(1)
                .build()).build();
        LocalPaddock engine;
        try {
            engine = (LocalPaddock) Paddock.local(options);
        } catch (RuntimeException e) {
            f.unavailable = "the engine has no runsc tier here: " + e.getMessage();
            return;
        }
        try (engine) {
            try (Sandbox probe = engine.create(spec.toBuilder().runtime("runsc").memory(ByteSize.mib(255)).build())) {
                firstByte(probe, System.nanoTime());
            } catch (RuntimeException e) {
                f.unavailable = "runsc sandboxes cannot be created here: " + e.getMessage();
                return;
            }
            int warmN = n(200, 10, 2);
            long[] warm = new long[warmN];
            for (int i = 0; i < warmN; i++) {
                awaitPoolFull(engine);
                long t0 = System.nanoTime();
                try (Sandbox sb = engine.create(gspec)) {
                    warm[i] = firstByte(sb, t0);
                }
            }
            int coldN = n(100, 10, 2);
            SandboxSpec cold = gspec.toBuilder().memory(ByteSize.mib(255)).build(); // another shape: no pool
            long[] c = new long[coldN];
            for (int i = 0; i < coldN; i++) {
                long t0 = System.nanoTime();
                try (Sandbox sb = engine.create(cold)) {
                    c[i] = firstByte(sb, t0);
                }
            }
            Stats w = Stats.of(warm);
            Stats cs = Stats.of(c);
            Stats running;
            try (Sandbox sb = engine.create(cold)) {
                for (int i = 0; i < 5; i++) {
                    firstByte(sb, System.nanoTime());
                }
                running = Stats.of(sample(n(200, 20, 2), () -> firstByte(sb, System.nanoTime())));
                // The floor beside it: the same command through runsc itself, into this very sandbox.
                peer(f, "runsc exec into the same running sandbox (echo hi, sandbox user)", n(200, 20, 2),
                        () -> peers.runscExec(LocalOptions.DEFAULT_STATE_DIR.resolve("runsc"), sb.id().value()),
                        peers == null ? peersMissing : missingTools.get("runsc"));
            }
            f.paddock.put("runsc exec on a running sandbox, start -> first byte (where warm time goes)", running);
            f.paddock.put("runsc warm create -> first byte (pool hit)", w);
            f.paddock.put("runsc cold create -> first byte", cs);
            Stats one = peer(f, "runsc run one-shot (same bundle, default platform)", coldN,
                    () -> peers.runscOneShot(), peers == null ? peersMissing : missingTools.get("runsc"));
            f.check("warm p50 <= 10 ms", w.p50() <= 10_000, String.format(Locale.ROOT, "%.2f ms", w.p50() / 1000));
            f.check("exec p50 <= 5 ms", running.p50() <= 5_000, String.format(Locale.ROOT, "%.2f ms", running.p50() / 1000));
            if (one != null) {
                f.ratio("Paddock runsc cold / runsc one-shot (p50)", cs.p50() / one.p50());
                f.ratio("runsc one-shot / Paddock runsc warm (p50)", one.p50() / w.p50());
                f.check("cold p50 <= runsc one-shot", cs.p50() <= one.p50(),
                        String.format(Locale.ROOT, "%+.2f ms", (cs.p50() - one.p50()) / 1000));
            }
        }
    }

    // ------------------------------------------------------------------ helpers

    interface Sample {
        long nanos() throws Exception;
    }

    interface Op {
        long run(long i) throws Exception;
    }

    static long[] sampleStatic(int n, Sample s) throws Exception {
        return sample(n, s);
    }

    static long[][] interleaveStatic(int n, Sample a, Sample b) throws Exception {
        return interleave(n, a, b);
    }

    private static long[] sample(int n, Sample s) throws Exception {
        long[] t = new long[n];
        for (int i = 0; i < n; i++) {
            t[i] = s.nanos();
        }
        return t;
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

    /** Runs op on `threads` threads for `seconds`; returns operations per second. */
    private static double rate(int threads, double seconds, Op op) throws Exception {
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
        return count.get() / elapsed;
    }

    /** Measures a peer, or records it as "unavailable: reason"; returns its stats or null. */
    private Stats peer(Figure f, String name, int n, Sample s, String missing) {
        if (missing != null) {
            f.peers.put(name, "unavailable: " + missing);
            return null;
        }
        try {
            for (int i = 0; i < Math.min(3, n); i++) {
                s.nanos();
            }
            Stats st = Stats.of(sample(n, s));
            f.peers.put(name, st);
            return st;
        } catch (Exception e) {
            f.peers.put(name, "unavailable: " + Host.shorten(String.valueOf(e.getMessage())));
            return null;
        }
    }

    private Stats nativeEcho(Figure f, int n) throws Exception {
        String name = "native posix_spawn of echo hi -> first byte";
        if (nativeHelper == null) {
            f.peers.put(name, "unavailable: " + nativeMissing);
            return null;
        }
        nativeHelper.spawn(20, "/bin/echo", "hi");
        Stats s = Stats.of(nativeHelper.spawn(n, "/bin/echo", "hi")[0]);
        f.peers.put(name, s);
        return s;
    }

    private static void awaitPoolFull(LocalPaddock p) throws InterruptedException {
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

    /** The repository the harness runs from (its python/ holds the Python client's part of P16). */
    private static Path repoRoot() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isRegularFile(p.resolve("python/bench/bench.py"))) {
                return p;
            }
        }
        return Path.of("").toAbsolutePath();
    }

    private long createFirstByte(Paddock p) throws Exception {
        long t0 = System.nanoTime();
        try (Sandbox sb = p.create(spec)) {
            return firstByte(sb, t0);
        }
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

    private static long execTrue(Sandbox sb) {
        long t0 = System.nanoTime();
        if (!sb.exec("/bin/true").success()) {
            throw new IllegalStateException("/bin/true failed");
        }
        return System.nanoTime() - t0;
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }

    private static double[] round(double[] v) {
        double[] r = new double[v.length];
        for (int i = 0; i < v.length; i++) {
            r[i] = Math.round(v[i] * 10) / 10.0;
        }
        return r;
    }

    private static double[] div(double[] v, double d) {
        double[] r = new double[v.length];
        for (int i = 0; i < v.length; i++) {
            r[i] = v[i] / d;
        }
        return r;
    }

    private static String ms(double micros) {
        return String.format(Locale.ROOT, "%.3f ms", micros / 1000);
    }

    private static Map<String, String> mapOf(String... kv) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return m;
    }
}
