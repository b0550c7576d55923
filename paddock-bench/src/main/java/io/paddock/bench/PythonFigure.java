package io.paddock.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.bench.Report.Figure;
import io.paddock.bench.host.Host;
import io.paddock.server.PaddockServer;
import io.paddock.server.ServerOptions;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;

/**
 * P16, the Python SDK (docs/PYTHON.md): create → first output of {@code echo hi}, an exec round trip of
 * {@code /bin/true} and streaming throughput, by the Python client (python/bench/bench.py, run against the same
 * daemon) beside Paddock's Java remote client, in the same run. Targets: within +1 ms p50 of the Java remote
 * client, and streaming at 500 MiB/s or more.
 */
final class PythonFigure {
    /** Debian's Python, as in the README's install: the one that sees python3-httpx and python3-websockets. */
    static final String PYTHON = "/usr/bin/python3";
    private final Report report;
    private final PrintStream out;
    private final SandboxSpec spec;
    private final int creates;
    private final int execs;
    private final long streamBytes;

    PythonFigure(Report report, PrintStream out, SandboxSpec spec, int creates, int execs, long streamBytes) {
        this.report = report;
        this.out = out;
        this.spec = spec.toBuilder().memory(io.paddock.ByteSize.mib(256)).build();
        this.creates = creates;
        this.execs = execs;
        this.streamBytes = streamBytes;
    }

    void run(Paddock engine, Path repo) throws Exception {
        Figure f = report.figure("P16", "the Python SDK beside the Java remote client (same daemon, same run)",
                "create -> first output and exec round trip within +1 ms p50 of Java remote; streaming >= 500 MiB/s");
        Path script = repo.resolve("python/bench/bench.py");
        Path src = repo.resolve("python/src");
        if (!Files.isRegularFile(script) || !Files.isRegularFile(Path.of(PYTHON))) {
            f.paddock.put("python", "unavailable: needs " + PYTHON + " and " + script);
            return;
        }
        // The README's interpreter (Debian's, whatever python3 comes first on the PATH) with the SDK's Debian
        // dependencies, installed here as root so that a fresh machine measures P16 too.
        java.util.Optional<String> missing = Host.ensurePythonModules(PYTHON,
                java.util.Map.of("httpx", "python3-httpx", "websockets", "python3-websockets"), out);
        if (missing.isPresent()) {
            f.paddock.put("python", "unavailable: " + missing.get());
            return;
        }
        String token = "bench-" + HexFormat.of().formatHex(new SecureRandom().generateSeed(16));
        try (PaddockServer server = PaddockServer.start(ServerOptions.builder().host("127.0.0.1").port(0).token(token)
                .build(), engine); Paddock remote = Paddock.connect(server.url(), token)) {
            List<Long> javaCreate = new ArrayList<>();
            for (int i = 0; i < Math.min(5, creates); i++) {
                createFirstOutput(remote);
            }
            for (int i = 0; i < creates; i++) {
                javaCreate.add(createFirstOutput(remote));
            }
            List<Long> javaExec = new ArrayList<>();
            double javaStream;
            try (Sandbox sb = remote.create(spec)) {
                for (int i = 0; i < Math.min(50, execs); i++) {
                    sb.exec("/bin/true");
                }
                for (int i = 0; i < execs; i++) {
                    long t0 = System.nanoTime();
                    sb.exec("/bin/true");
                    javaExec.add(System.nanoTime() - t0);
                }
                long t0 = System.nanoTime();
                try (ExecProcess p = sb.start(ExecRequest.builder().argv("head", "-c", Long.toString(streamBytes), "/dev/zero")
                        .outputLimit(io.paddock.ByteSize.bytes(streamBytes + 1)).build())) {
                    p.closeStdin();
                    long n = p.stdout().transferTo(java.io.OutputStream.nullOutputStream());
                    p.awaitExit();
                    if (n != streamBytes) {
                        throw new IllegalStateException("streamed " + n + " of " + streamBytes);
                    }
                }
                javaStream = streamBytes / 1048576.0 / ((System.nanoTime() - t0) / 1e9);
            }
            Host.Result r = Host.run(Duration.ofMinutes(20), List.of("env", "PYTHONPATH=" + src, PYTHON,
                    script.toString(), server.url().toString(), token, Integer.toString(creates), Integer.toString(execs),
                    Long.toString(streamBytes)));
            if (!r.ok()) {
                f.paddock.put("python", "unavailable: " + Host.shorten(r.output()));
                return;
            }
            String json = r.output().lines().filter(l -> l.startsWith("{")).reduce((a, b) -> b).orElse("{}");
            JsonNode o = new ObjectMapper().readTree(json);
            Stats pc = Stats.of(longs(o.get("create_first_output_ns")));
            Stats pe = Stats.of(longs(o.get("exec_round_trip_ns")));
            Stats jc = Stats.of(javaCreate);
            Stats je = Stats.of(javaExec);
            double ps = o.get("stream_mib_per_s").asDouble();
            f.paddock.put("create -> first output, Python client", pc);
            f.paddock.put("create -> first output, Java remote client", jc);
            f.paddock.put("exec(/bin/true) round trip, Python client", pe);
            f.paddock.put("exec(/bin/true) round trip, Java remote client", je);
            f.ratio("streaming MiB/s, Python client", ps);
            f.ratio("streaming MiB/s, Java remote client", javaStream);
            f.check("create: Python - Java remote p50 <= 1 ms", pc.p50() - jc.p50() <= 1000, ms(pc.p50() - jc.p50()));
            f.check("exec: Python - Java remote p50 <= 1 ms", pe.p50() - je.p50() <= 1000, ms(pe.p50() - je.p50()));
            f.check("streaming >= 500 MiB/s", ps >= 500, String.format(Locale.ROOT, "%.0f MiB/s", ps));
            out.printf(Locale.ROOT, "  P16 python create %.1f ms (java %.1f), exec %.2f ms (java %.2f), stream %.0f MiB/s%n",
                    pc.p50() / 1000, jc.p50() / 1000, pe.p50() / 1000, je.p50() / 1000, ps);
        }
    }

    private long createFirstOutput(Paddock p) throws Exception {
        long t0 = System.nanoTime();
        try (Sandbox sb = p.create(spec)) {
            return Sampling.firstByte(sb, t0);
        }
    }

    private static long[] longs(JsonNode a) {
        long[] out = new long[a.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = a.get(i).asLong();
        }
        return out;
    }

    private static String ms(double micros) {
        return String.format(Locale.ROOT, "%+.2f ms", micros / 1000);
    }
}
