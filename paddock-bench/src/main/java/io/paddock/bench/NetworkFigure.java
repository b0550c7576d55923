package io.paddock.bench;

import io.paddock.ExecRequest;
import io.paddock.ExecResult;
import io.paddock.NetworkPolicy;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.bench.Report.Figure;
import io.paddock.bench.Report.Quantity;
import io.paddock.bench.host.Host;
import io.paddock.bench.host.TestNet;
import io.paddock.server.PaddockServer;
import io.paddock.server.ServerOptions;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * P12, network (PERFORMANCE.md), in one run: cold create → first byte with an {@code allow} policy beside the
 * same spec with none (runc, and runsc where it runs), interleaved; an HTTP download from a test host in the
 * harness's own namespace ({@link TestNet}) inside a runc sandbox, beside the same download from namespaces
 * connected by {@code pasta} and by {@code slirp4netns} and from the host itself (the ceiling); and GET latency
 * to a server in a sandbox at {@code sandbox.url(port)}, beside the same server on the host's loopback and,
 * where the daemon has the route, through its port proxy.
 */
final class NetworkFigure {
    /** The sizes of one run. */
    record Sizes(int creates, int runscCreates, int downloads, long fileBytes, int gets) {
    }

    /** The same download command everywhere: curl to /dev/null, its own wall time and byte count. */
    private static final List<String> CURL = List.of("curl", "-sS", "-o", "/dev/null", "-w", "%{size_download} %{time_total}");
    private static final int PORT = 8000;
    /**
     * A tiny HTTP/1.1 keep-alive server (so that a GET measures a request, not a TCP handshake), Nagle off so
     * that headers and body never wait for a delayed ACK. Arguments: address, port.
     */
    static final String SERVER = """
            import http.server as h, sys
            class H(h.BaseHTTPRequestHandler):
                protocol_version = "HTTP/1.1"
                disable_nagle_algorithm = True
                def do_GET(self):
                    self.send_response(200)
                    self.send_header("Content-Length", "3")
                    self.end_headers()
                    self.wfile.write(b"ok\\n")
                def log_message(self, *a):
                    pass
            h.ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), H).serve_forever()
            """;

    private final Report report;
    private final PrintStream out;
    private final SandboxSpec base;
    private final Sizes sizes;

    NetworkFigure(Report report, PrintStream out, SandboxSpec base, Sizes sizes) {
        this.report = report;
        this.out = out;
        this.base = base;
        this.sizes = sizes;
    }

    void run(Paddock p) throws Exception {
        Figure f = report.figure("P12", "network: create with an allowlist, sandbox -> test host HTTP, port latency",
                "create with allow <= none + 5 ms (p50); sandbox -> test host >= 1 Gbit/s; port proxy <= direct + 1 ms");
        Map<String, String> missing = Host.ensureTools(Map.of("curl", "curl", "busybox", "busybox-static",
                "pasta", "passt", "slirp4netns", "slirp4netns", "setpriv", "util-linux"), out);
        versions();
        if (missing.containsKey("curl") || missing.containsKey("busybox") || missing.containsKey("setpriv")) {
            f.unavailable = String.join("; ", missing.values());
            return;
        }
        List<String> left;
        try (TestNet net = TestNet.start(sizes.fileBytes(), out)) {
            createLatency(f, p, "runc", sizes.creates());
            createLatency(f, p, "runsc", sizes.runscCreates());
            throughput(f, p, net, missing);
            net.close();
            left = net.remaining();
        }
        ports(f, p);
        f.notes.add("the test host " + TestNet.SERVER + " is busybox httpd in a namespace this run made, reached from"
                + " the host through a veth; everything it made is removed at the end"
                + (left.isEmpty() ? " (checked: nothing left)" : "; LEFT BEHIND: " + left));
    }

    private void versions() {
        Map<String, Object> env = report.environment;
        env.put("passt", dpkgVersion("passt"));
        env.put("slirp4netns", Host.onPath("slirp4netns") ? Host.version("slirp4netns", "--version") : "unavailable: not installed");
        env.put("curl", Host.onPath("curl") ? Host.version("curl") : "unavailable: not installed");
        env.put("busybox", dpkgVersion("busybox-static"));
    }

    private static String dpkgVersion(String pkg) {
        Host.Result r = Host.run(Duration.ofSeconds(10), "dpkg-query", "-W", "-f", "${Version}", pkg);
        return r.ok() && !r.output().isBlank() ? pkg + " " + r.output() : "unavailable: " + pkg + " not installed";
    }

    // ------------------------------------------------------------------ 1. create latency, allow vs none

    private void createLatency(Figure f, Paddock p, String tier, int n) throws Exception {
        SandboxSpec none = base.toBuilder().runtime(tier).build();
        SandboxSpec allow = none.toBuilder().network(NetworkPolicy.allow(TestNet.SERVER + "/32")).build();
        String label = tier.equals("runc") ? "" : ", " + tier;
        try {
            for (int i = 0; i < 2; i++) { // warm-up: the first networked create loads the nft table, the slot files
                sample(p, none, null);
                sample(p, allow, null);
            }
        } catch (RuntimeException e) {
            f.paddock.put("create -> first byte" + label, "unavailable: " + Host.shorten(String.valueOf(e.getMessage())));
            return;
        }
        List<Long> destroyNone = new ArrayList<>();
        List<Long> destroyAllow = new ArrayList<>();
        long[][] both = Sampling.interleave(n, () -> sample(p, none, destroyNone), () -> sample(p, allow, destroyAllow));
        Stats sn = Stats.of(both[0]);
        Stats sa = Stats.of(both[1]);
        f.paddock.put("cold create -> first byte, network none" + label, sn);
        f.paddock.put("cold create -> first byte, allow " + TestNet.SERVER + "/32" + label, sa);
        f.paddock.put("allow - none (the network's cost)" + label, sa.minus(sn));
        f.paddock.put("destroy(), none (not in the figure)" + label, Stats.of(destroyNone));
        f.paddock.put("destroy(), allow (not in the figure)" + label, Stats.of(destroyAllow));
        f.ratio("create allow / none (p50)" + label, sa.p50() / sn.p50());
        f.check("create with allow p50 <= none + 5 ms" + label, sa.p50() - sn.p50() <= 5_000,
                String.format(Locale.ROOT, "%+.2f ms (p99 %+.2f ms)", (sa.p50() - sn.p50()) / 1000, (sa.p99() - sn.p99()) / 1000));
    }

    private static long sample(Paddock p, SandboxSpec spec, List<Long> destroy) throws Exception {
        long t0 = System.nanoTime();
        Sandbox sb = p.create(spec);
        long t;
        try {
            t = Sampling.firstByte(sb, t0);
        } finally {
            long t1 = System.nanoTime();
            sb.destroy();
            if (destroy != null) {
                destroy.add(System.nanoTime() - t1);
            }
        }
        return t;
    }

    // ------------------------------------------------------------------ 2. throughput, sandbox -> test host

    private interface Download {
        /** Runs CURL + the URL somewhere; returns {bytes, seconds} as curl measured them. */
        double[] run(List<String> argv) throws Exception;
    }

    private void throughput(Figure f, Paddock p, TestNet net, Map<String, String> missing) throws Exception {
        List<String> argv = new ArrayList<>(CURL);
        argv.add(net.url());
        String mib = (net.fileBytes() >> 20) + " MiB";
        Map<String, Download> paths = new LinkedHashMap<>();
        Map<String, String> unavailable = new LinkedHashMap<>();
        List<Sandbox> sandboxes = new ArrayList<>();
        try {
            SandboxSpec allow = base.toBuilder().network(NetworkPolicy.allow(TestNet.SERVER + "/32")).build();
            Sandbox runc = p.create(allow);
            sandboxes.add(runc);
            paths.put("Paddock runc sandbox (veth + nftables, allow " + TestNet.SERVER + "/32)", a -> inSandbox(runc, a));
            try {
                Sandbox runsc = p.create(allow.toBuilder().runtime("runsc").build());
                sandboxes.add(runsc);
                paths.put("Paddock runsc sandbox (gVisor netstack on the same veth)", a -> inSandbox(runsc, a));
            } catch (RuntimeException e) {
                unavailable.put("Paddock runsc sandbox", Host.shorten(String.valueOf(e.getMessage())));
            }
            peerPath(paths, unavailable, missing, "pasta", "namespace connected by pasta (passt; MTU 65520)", net::pastaNamespace);
            peerPath(paths, unavailable, missing, "slirp4netns", "namespace connected by slirp4netns (MTU 65520)",
                    net::slirpNamespace);
            paths.put("the host itself (the ceiling: straight onto the test host's veth)", NetworkFigure::onHost);

            Map<String, List<Double>> gbits = new LinkedHashMap<>();
            for (Map.Entry<String, Download> e : paths.entrySet()) {
                try {
                    check(e.getValue().run(argv), net.fileBytes()); // warm-up: page cache, connections, JIT
                    gbits.put(e.getKey(), new ArrayList<>());
                } catch (Exception ex) {
                    unavailable.put(e.getKey(), Host.shorten(String.valueOf(ex.getMessage())));
                }
            }
            for (int round = 0; round < sizes.downloads(); round++) { // rounds: drift hits every path alike
                List<String> order = new ArrayList<>(gbits.keySet());
                if ((round & 1) == 1) {
                    java.util.Collections.reverse(order);
                }
                for (String name : order) {
                    double[] r = check(paths.get(name).run(argv), net.fileBytes());
                    gbits.get(name).add(r[0] * 8 / r[1] / 1e9);
                }
            }
            String paddockRow = paths.keySet().iterator().next();
            Map<String, Double> median = new LinkedHashMap<>();
            for (Map.Entry<String, List<Double>> e : gbits.entrySet()) {
                double m = median(e.getValue());
                median.put(e.getKey(), m);
                Map<String, Object> detail = new LinkedHashMap<>();
                detail.put("runs_gbit_s", Arrays.toString(round(e.getValue())));
                detail.put("file", mib);
                Quantity q = new Quantity(m, "Gbit/s", detail);
                if (e.getKey().startsWith("Paddock")) {
                    f.paddock.put("HTTP download " + mib + ", " + e.getKey(), q);
                } else {
                    f.peers.put("HTTP download " + mib + ", " + e.getKey(), q);
                }
            }
            unavailable.forEach((k, v) -> (k.startsWith("Paddock") ? f.paddock : f.peers).put("HTTP download, " + k,
                    "unavailable: " + v));
            Double pd = median.get(paddockRow);
            if (pd == null) {
                f.check("sandbox -> test host >= 1 Gbit/s", false, "not measured: " + unavailable.get(paddockRow));
                return;
            }
            median.forEach((k, v) -> {
                if (!k.equals(paddockRow)) {
                    String peer = k.startsWith("namespace connected by pasta") ? "pasta"
                            : k.startsWith("namespace connected by slirp4netns") ? "slirp4netns"
                            : k.startsWith("the host") ? "host" : "runsc";
                    if (peer.equals("runsc")) {
                        f.ratio("Paddock runsc / Paddock runc (median)", v / pd);
                    } else {
                        f.ratio("Paddock runc / " + peer + " (median)", pd / v);
                    }
                }
            });
            f.check("sandbox -> test host >= 1 Gbit/s (runc, median)", pd >= 1, Report.fmt(pd) + " Gbit/s");
            f.notes.add("downloads: curl -o /dev/null of a " + mib + " file from busybox httpd, the same command in every"
                    + " row; Gbit/s = bytes / curl's own time_total (measured where curl runs), median of "
                    + sizes.downloads() + " rounds after one warm-up, the rows' order alternating by round");
        } finally {
            for (Sandbox sb : sandboxes) {
                sb.destroy();
            }
        }
    }

    private interface NamespaceMaker {
        String make() throws Exception;
    }

    private static void peerPath(Map<String, Download> paths, Map<String, String> unavailable, Map<String, String> missing,
            String tool, String name, NamespaceMaker maker) {
        if (missing.containsKey(tool)) {
            unavailable.put(name, missing.get(tool));
            return;
        }
        try {
            String ns = maker.make();
            paths.put(name, a -> onHost(prefixed(List.of("ip", "netns", "exec", ns), a)));
        } catch (Exception e) {
            unavailable.put(name, Host.shorten(String.valueOf(e.getMessage())));
        }
    }

    private static List<String> prefixed(List<String> prefix, List<String> argv) {
        List<String> all = new ArrayList<>(prefix);
        all.addAll(argv);
        return all;
    }

    private static double[] inSandbox(Sandbox sb, List<String> argv) {
        ExecResult r = sb.exec(ExecRequest.builder().argv(argv).timeout(Duration.ofMinutes(2)).build());
        if (!r.success()) {
            throw new IllegalStateException("curl in the sandbox failed (exit " + r.exitCode() + "): " + r.stderrText());
        }
        return parse(r.stdoutText());
    }

    private static double[] onHost(List<String> argv) throws IOException {
        Host.Result r = Host.run(Duration.ofMinutes(2), argv);
        if (!r.ok()) {
            throw new IOException("curl failed (exit " + r.code() + "): " + r.output());
        }
        return parse(r.output());
    }

    private static double[] parse(String curlOut) {
        String[] w = curlOut.strip().split("\\s+");
        return new double[] {Double.parseDouble(w[w.length - 2]), Double.parseDouble(w[w.length - 1])};
    }

    private static double[] check(double[] r, long expected) {
        if (r[0] != expected) {
            throw new IllegalStateException("downloaded " + (long) r[0] + " bytes, expected " + expected);
        }
        return r;
    }

    // ------------------------------------------------------------------ 3. port latency, direct vs proxy

    private void ports(Figure f, Paddock p) throws Exception {
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(2)).build();
        int n = sizes.gets();
        SandboxSpec spec = base.toBuilder().port(PORT)
                .entrypoint("python3", "-c", SERVER, "0.0.0.0", Integer.toString(PORT)).build();
        Process loopback = null;
        try (Sandbox sb = p.create(spec)) {
            URI direct = sb.url(PORT);
            awaitUp(http, HttpRequest.newBuilder(direct).build(), "the sandbox's server at " + direct);
            HttpRequest get = HttpRequest.newBuilder(direct).build();
            for (int i = 0; i < Math.min(200, n); i++) {
                get(http, get);
            }
            // the same server on the host's loopback, the same client: what the sandbox's address costs
            int port;
            try (ServerSocket s = new ServerSocket(0)) {
                port = s.getLocalPort();
            }
            String python = new File("/usr/bin/python3").canExecute() ? "/usr/bin/python3" : "python3";
            loopback = new ProcessBuilder("setpriv", "--pdeathsig", "KILL", python, "-c", SERVER, "127.0.0.1",
                    Integer.toString(port)).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null"))).start();
            HttpRequest local = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/")).build();
            awaitUp(http, local, "the host's loopback server");
            for (int i = 0; i < Math.min(200, n); i++) {
                get(http, local);
            }
            String proxyMissing = proxyMissing();
            if (proxyMissing != null) {
                long[][] both = Sampling.interleave(n, () -> get(http, get), () -> get(http, local));
                Stats d = Stats.of(both[0]);
                Stats l = Stats.of(both[1]);
                f.paddock.put("GET direct to sandbox.url(" + PORT + ") (HTTP/1.1 keep-alive)", d);
                f.paddock.put("GET through the daemon's port proxy", "not measured: " + proxyMissing);
                f.peers.put("GET to the same server on the host's 127.0.0.1", l);
                f.ratio("GET direct to the sandbox / host loopback (p50)", d.p50() / l.p50());
                f.checks.put("port proxy p50 <= direct + 1 ms", "not measured: " + proxyMissing);
            } else {
                proxied(f, p, sb, http, get, local, n);
            }
        } finally {
            if (loopback != null) {
                loopback.destroy();
                if (!loopback.waitFor(5, TimeUnit.SECONDS)) {
                    loopback.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                }
            }
        }
        f.notes.add("GETs: java.net.http.HttpClient in this JVM, one kept-alive connection, a 3-byte answer from a"
                + " python3 http.server handler (the same script in the sandbox and on the host), interleaved");
    }

    /** Why the port proxy cannot be measured here, or null when the daemon has the route. */
    static String proxyMissing() throws IOException {
        try (InputStream in = PaddockServer.class.getResourceAsStream("/io/paddock/server/openapi.json")) {
            String api = in == null ? "" : new String(in.readAllBytes(), StandardCharsets.UTF_8);
            return api.contains("/v1/sandboxes/{id}/ports/") ? null
                    : "this build's PaddockServer has no /v1/sandboxes/{id}/ports/{port}/ route (its openapi.json names"
                    + " none); the proxy is being built on another branch";
        }
    }

    private void proxied(Figure f, Paddock p, Sandbox sb, HttpClient http, HttpRequest get, HttpRequest local, int n)
            throws Exception {
        String token = "bench-" + HexFormat.of().formatHex(new SecureRandom().generateSeed(16));
        try (PaddockServer server = PaddockServer.start(ServerOptions.builder().host("127.0.0.1").port(0).token(token)
                .build(), p)) {
            HttpRequest proxy = HttpRequest.newBuilder(server.url().resolve("/v1/sandboxes/" + sb.id().value()
                    + "/ports/" + PORT + "/")).header("Authorization", "Bearer " + token).build();
            try {
                for (int i = 0; i < Math.min(200, n); i++) {
                    get(http, proxy);
                }
            } catch (RuntimeException e) {
                f.paddock.put("GET through the daemon's port proxy", "unavailable: " + Host.shorten(e.getMessage()));
                f.checks.put("port proxy p50 <= direct + 1 ms", "not measured: the proxy failed: " + Host.shorten(e.getMessage()));
                return;
            }
            long[] d = new long[n];
            long[] x = new long[n];
            long[] l = new long[n];
            for (int i = 0; i < n; i++) { // rotate the order so that drift hits all three alike
                switch (i % 3) {
                    case 0 -> { d[i] = get(http, get); x[i] = get(http, proxy); l[i] = get(http, local); }
                    case 1 -> { x[i] = get(http, proxy); l[i] = get(http, local); d[i] = get(http, get); }
                    default -> { l[i] = get(http, local); d[i] = get(http, get); x[i] = get(http, proxy); }
                }
            }
            Stats sd = Stats.of(d);
            Stats sx = Stats.of(x);
            Stats sl = Stats.of(l);
            f.paddock.put("GET direct to sandbox.url(" + PORT + ") (HTTP/1.1 keep-alive)", sd);
            f.paddock.put("GET through the daemon's port proxy (127.0.0.1, bearer token)", sx);
            f.paddock.put("proxy - direct", sx.minus(sd));
            f.peers.put("GET to the same server on the host's 127.0.0.1", sl);
            f.ratio("GET direct to the sandbox / host loopback (p50)", sd.p50() / sl.p50());
            f.ratio("GET through the proxy / direct (p50)", sx.p50() / sd.p50());
            f.check("port proxy p50 <= direct + 1 ms", sx.p50() - sd.p50() <= 1000,
                    String.format(Locale.ROOT, "%+.3f ms (p99 %+.3f ms)", (sx.p50() - sd.p50()) / 1000,
                            (sx.p99() - sd.p99()) / 1000));
        }
    }

    private static long get(HttpClient http, HttpRequest req) throws IOException, InterruptedException {
        long t0 = System.nanoTime();
        HttpResponse<byte[]> r = http.send(req, HttpResponse.BodyHandlers.ofByteArray());
        long t = System.nanoTime() - t0;
        if (r.statusCode() != 200 || r.body().length != 3) {
            throw new IllegalStateException("GET " + req.uri() + ": HTTP " + r.statusCode() + " "
                    + Host.shorten(new String(r.body(), StandardCharsets.UTF_8)));
        }
        return t;
    }

    private static void awaitUp(HttpClient http, HttpRequest req, String what) throws Exception {
        long until = System.nanoTime() + 20_000_000_000L;
        while (true) {
            try {
                get(http, HttpRequest.newBuilder(req.uri()).timeout(Duration.ofMillis(500)).build());
                return;
            } catch (IOException e) {
                if (System.nanoTime() > until) {
                    throw new IOException(what + " did not answer within 20 s: " + e);
                }
                Thread.sleep(50);
            }
        }
    }

    private static double median(List<Double> v) {
        double[] s = v.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return s[s.length / 2];
    }

    private static double[] round(List<Double> v) {
        return v.stream().mapToDouble(x -> Math.round(x * 100) / 100.0).toArray();
    }
}
