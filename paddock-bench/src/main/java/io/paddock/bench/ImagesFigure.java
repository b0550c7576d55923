package io.paddock.bench;

import io.paddock.ImageListener;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.RegistryAuth;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.bench.Report.Figure;
import io.paddock.bench.host.Host;
import io.paddock.bench.host.LoopbackRegistry;
import io.paddock.bench.host.Peers;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;

/**
 * P11, images (PERFORMANCE.md): a cached rebuild's time in Paddock; the first sandbox of a freshly built
 * image beside the {@code host} image and runc's one-shot; a pull of a multi-layer image beside
 * {@code skopeo copy} of the same image from the same loopback registry; and a cold build beside
 * {@code podman build} of the same Dockerfile. All in one run, on the same host.
 */
final class ImagesFigure {
    static final String IMAGE = "paddock-bench/p11:1";

    private final Report report;
    private final PrintStream out;
    private final Peers peers;
    private final String peersMissing;
    private final int samples;

    ImagesFigure(Report report, PrintStream out, Peers peers, String peersMissing, int samples) {
        this.report = report;
        this.out = out;
        this.peers = peers;
        this.peersMissing = peersMissing;
        this.samples = samples;
    }

    void run(Paddock p, Path work, String podmanImage, String podmanMissing) throws Exception {
        Figure f = report.figure("P11", "images: cached rebuild, first sandbox of a built image, pull, build",
                "cached rebuild <= 0.2 s; first sandbox <= runc one-shot + 5 ms; pull >= skopeo copy");
        Path ctx = Files.createDirectories(work.resolve("p11-context"));
        Files.writeString(ctx.resolve("app.txt"), "app\n");
        Files.writeString(ctx.resolve("Dockerfile"), """
                FROM debian:bookworm-slim
                COPY app.txt /app/app.txt
                ENV MODE=bench
                WORKDIR /app
                RUN echo built > /app/built.txt && cp -r /usr/share/zoneinfo /app/zoneinfo
                """);
        out.println("  P11: building the figure's image (the Debian base once, with mmdebstrap, if not cached)");
        p.images().build(ctx, null, Map.of(), List.of(IMAGE), ImageListener.NONE);

        // A cached rebuild, in this JVM: Paddock's own time, no JVM start.
        long[] rebuild = Sampling.sample(Math.max(3, samples / 10), () -> {
            long t0 = System.nanoTime();
            p.images().build(ctx, null, Map.of(), List.of(IMAGE), ImageListener.NONE);
            return System.nanoTime() - t0;
        });
        Stats cached = Stats.of(rebuild);
        f.paddock.put("cached rebuild (every step cached), in-process", cached);
        f.check("cached rebuild p50 <= 0.2 s", cached.p50() <= 200_000, ms(cached.p50()));

        // The first sandbox: a built image's cold create -> first byte, interleaved with the host image's.
        SandboxSpec img = SandboxSpec.builder().image(IMAGE).build();
        SandboxSpec host = SandboxSpec.builder().build();
        long[][] both = Sampling.interleave(samples, () -> firstByte(p, img), () -> firstByte(p, host));
        Stats image = Stats.of(both[0]);
        f.paddock.put("cold create -> first byte, built image (overlay + btrfs writable layer)", image);
        f.paddock.put("cold create -> first byte, host image (same run)", Stats.of(both[1]));
        if (peersMissing == null) {
            Stats runc = Stats.of(Sampling.sample(samples, peers::runcOneShot));
            f.peers.put("runc run one-shot (host image's bundle settings)", runc);
            f.check("first sandbox p50 <= runc one-shot + 5 ms", image.p50() <= runc.p50() + 5_000,
                    String.format(Locale.ROOT, "%+.2f ms", (image.p50() - runc.p50()) / 1000));
        } else {
            f.peers.put("runc run one-shot", "unavailable: " + peersMissing);
        }

        pull(f, p, work);
        build(f, p, ctx, podmanImage, podmanMissing);
    }

    private static long firstByte(Paddock p, SandboxSpec spec) throws Exception {
        long t0 = System.nanoTime();
        try (Sandbox sb = p.create(spec)) {
            return Sampling.firstByte(sb, t0);
        }
    }

    /** Paddock's pull into an empty store against skopeo copy into an empty OCI layout, alternating. */
    private void pull(Figure f, Paddock p, Path work) throws Exception {
        if (!Host.onPath("docker-registry") || !Host.onPath("skopeo")) {
            f.peers.put("skopeo copy", "unavailable: docker-registry and skopeo are needed (apt-get install -y docker-registry skopeo)");
            return;
        }
        Path regDir = work.resolve("p11-registry");
        try (LoopbackRegistry registry = LoopbackRegistry.start(regDir)) {
            String target = registry.address() + "/bench/p11:1";
            p.images().push(IMAGE, target, RegistryAuth.none().insecure(), ImageListener.NONE);
            int n = Math.max(1, samples / 10);
            List<Long> paddock = new ArrayList<>();
            List<Long> skopeo = new ArrayList<>();
            List<Long> unpack = new ArrayList<>();
            boolean umoci = Host.onPath("umoci");
            for (int i = 0; i < n; i++) {
                Path store = work.resolve("p11-store-" + i);
                try (Paddock fresh = Paddock.local(LocalOptions.builder().storageDir(store).build())) {
                    long t0 = System.nanoTime();
                    fresh.images().pull(target, RegistryAuth.none().insecure(), ImageListener.NONE);
                    paddock.add(System.nanoTime() - t0);
                }
                delete(store);
                Path layout = work.resolve("p11-oci-" + i);
                long t0 = System.nanoTime();
                Host.Result r = Host.run(Duration.ofMinutes(5), "skopeo", "copy", "-q", "--src-tls-verify=false",
                        "docker://" + target, "oci:" + layout + ":p11");
                skopeo.add(System.nanoTime() - t0);
                if (!r.ok()) {
                    throw new IOException("skopeo copy failed: " + r.output());
                }
                if (umoci) {
                    Path rootfs = work.resolve("p11-unpacked-" + i);
                    Host.Result u = Host.run(Duration.ofMinutes(5), "umoci", "raw", "unpack", "--image",
                            layout + ":p11", rootfs.toString());
                    unpack.add(System.nanoTime() - t0); // the copy and the unpack: what a pull does
                    if (!u.ok()) {
                        umoci = false;
                        f.peers.put("skopeo copy + umoci raw unpack", "unavailable: " + Host.shorten(u.output()));
                    }
                    delete(rootfs);
                }
                delete(layout);
            }
            Stats pd = Stats.of(paddock);
            Stats sk = Stats.of(skopeo);
            f.paddock.put("pull of the built image into an empty store (download, verify, unpack)", pd);
            f.peers.put("skopeo copy docker:// -> oci: (download only, nothing unpacked)", sk);
            f.ratio("skopeo copy / Paddock pull (p50)", sk.p50() / pd.p50());
            if (umoci && !unpack.isEmpty()) {
                Stats su = Stats.of(unpack);
                f.peers.put("skopeo copy + umoci raw unpack (download and unpack, like a pull)", su);
                f.ratio("skopeo copy + umoci unpack / Paddock pull (p50)", su.p50() / pd.p50());
            }
            f.check("pull p50 <= skopeo copy p50", pd.p50() <= sk.p50(), ms(pd.p50()) + " vs " + ms(sk.p50()));
        } finally {
            delete(regDir);
        }
    }

    /** A cold build (every layer step run) in Paddock against podman build --no-cache of the same Dockerfile. */
    private void build(Figure f, Paddock p, Path ctx, String podmanImage, String podmanMissing) throws Exception {
        int n = Math.max(1, samples / 25);
        List<Long> paddock = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Files.writeString(ctx.resolve("app.txt"), "app " + System.nanoTime() + "\n"); // misses COPY and RUN
            long t0 = System.nanoTime();
            p.images().build(ctx, null, Map.of(), List.of(IMAGE), ImageListener.NONE);
            paddock.add(System.nanoTime() - t0);
        }
        Stats pd = Stats.of(paddock);
        f.paddock.put("build, COPY and RUN not cached (base cached)", pd);
        if (podmanMissing != null || podmanImage == null) {
            f.peers.put("podman build --no-cache", "unavailable: " + (podmanMissing == null ? "no podman image" : podmanMissing));
            return;
        }
        Path podmanCtx = Files.createDirectories(ctx.resolveSibling("p11-podman-context"));
        Files.writeString(podmanCtx.resolve("app.txt"), "app\n");
        Files.writeString(podmanCtx.resolve("Dockerfile"), Files.readString(ctx.resolve("Dockerfile"))
                .replace("FROM debian:bookworm-slim", "FROM " + podmanImage));
        List<Long> podman = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            Host.Result r = Host.run(Duration.ofMinutes(10), "podman", "build", "--no-cache", "--runtime", "runc",
                    "--network=none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096", "-q", "-t",
                    "localhost/paddock-bench/p11:1", podmanCtx.toString());
            podman.add(System.nanoTime() - t0);
            if (!r.ok()) {
                f.peers.put("podman build --no-cache", "unavailable: " + Host.shorten(r.output()));
                return;
            }
        }
        Host.run(Duration.ofMinutes(1), "podman", "rmi", "-f", "localhost/paddock-bench/p11:1");
        Stats pm = Stats.of(podman);
        f.peers.put("podman build --no-cache --runtime runc (same Dockerfile, base imported)", pm);
        f.ratio("podman build / Paddock build (p50)", pm.p50() / pd.p50());
    }

    private static void delete(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> w = Files.walk(dir)) {
            for (Path q : w.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(q);
            }
        }
    }

    private static String ms(double micros) {
        return String.format(Locale.ROOT, "%.3f ms", micros / 1000);
    }
}
