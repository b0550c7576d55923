package io.paddock.bench;

import io.paddock.ExecProcess;
import io.paddock.ByteSize;
import io.paddock.ExecRequest;
import io.paddock.ExecResult;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.bench.Report.Figure;
import io.paddock.bench.Report.Quantity;
import io.paddock.bench.host.Peers;
import io.paddock.server.PaddockServer;
import io.paddock.server.ServerOptions;

import java.io.InputStream;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import static io.paddock.bench.Sampling.median;
import static io.paddock.bench.Sampling.round;

/**
 * P7, output streaming: {@code head -c SIZE /dev/zero} into the engine and through the daemon, every byte
 * counted, beside a host pipe.
 */
final class StreamingFigure {
    private final Report report;
    private static final String FILE = "/workspace/p7.bin";
    private final SandboxSpec spec;
    private final Bench.Options o;

    StreamingFigure(Setup setup) {
        this.report = setup.report;
        this.spec = setup.spec;
        this.o = setup.o;
    }

    void run(Paddock p) throws Exception {
        Figure f = report.figure("P7", "output streaming: head -c SIZE /dev/zero, every byte counted; file reads",
                ">= 500 MiB/s into the engine, >= 100 MiB/s to a local client, zero loss");
        long size = (long) Math.max(8 << 20, (o.quick() ? 256L << 20 : 1L << 30) * o.scale());
        int runs = n(5, 2, 1);
        String token = "bench-" + HexFormat.of().formatHex(new SecureRandom().generateSeed(16));
        double[] local = new double[runs];
        double[] remote = new double[runs];
        double[] relayed = new double[runs];
        // File reads: the init's read path and the engine's, through the same channel as output, then the daemon's
        // HTTP download. The host image's /workspace is memory: the file counts against the sandbox's memory.
        long fileSize = Math.min(size, 128L << 20);
        SandboxSpec roomy = spec.toBuilder().memory(ByteSize.mib(512)).build();
        double[] fileLocal = new double[runs];
        double[] fileRemote = new double[runs];
        long lost = 0;
        try (PaddockServer server = PaddockServer.start(ServerOptions.builder().host("127.0.0.1").port(0).token(token).build(), p);
             Paddock client = Paddock.connect(server.url(), token);
             Sandbox l = p.create(roomy);
             Sandbox r = client.create(roomy);
             LoopbackFloor floor = LoopbackFloor.start()) {
            // Steady state, as P1 and P10 are measured: the first remote streams of a fresh JVM ran at 400-600 MiB/s
            // while the JIT compiled the WebSocket path, the same streams after it at 750-800 (BENCHMARKS.md, P7).
            f.notes.add(Sampling.untilJitSettles("streams of 32 MiB into the engine and through the daemon",
                    o.secs(20, 10, 2), i -> {
                        stream(l, 32 << 20);
                        stream(r, 32 << 20);
                        floor.relayedHostPipe(32 << 20);
                        return 1;
                    }));
            for (Sandbox sb : List.of(l, r)) {
                ExecResult made = sb.exec(ExecRequest.builder().argv("sh", "-c", "head -c " + fileSize + " /dev/zero > " + FILE)
                        .build());
                if (!made.success()) {
                    throw new IllegalStateException("P7: writing the file to read failed: " + made.stderrText());
                }
            }
            for (int i = 0; i < runs; i++) {
                long t0 = System.nanoTime();
                lost += size - stream(l, size);
                local[i] = size / 1048576.0 / ((System.nanoTime() - t0) / 1e9);
                t0 = System.nanoTime();
                lost += size - stream(r, size);
                remote[i] = size / 1048576.0 / ((System.nanoTime() - t0) / 1e9);
                t0 = System.nanoTime();
                long got = floor.relayedHostPipe(size);
                relayed[i] = got / 1048576.0 / ((System.nanoTime() - t0) / 1e9);
                t0 = System.nanoTime();
                lost += fileSize - readFile(l);
                fileLocal[i] = fileSize / 1048576.0 / ((System.nanoTime() - t0) / 1e9);
                t0 = System.nanoTime();
                lost += fileSize - readFile(r);
                fileRemote[i] = fileSize / 1048576.0 / ((System.nanoTime() - t0) / 1e9);
            }
        }
        double lm = median(local);
        double rm = median(remote);
        f.paddock.put("into the engine (embedded SDK), " + (size >> 20) + " MiB", new Quantity(lm, "MiB/s",
                Map.of("runs", Arrays.toString(round(local)))));
        f.paddock.put("to a local client through the daemon (remote SDK, WebSocket)", new Quantity(rm, "MiB/s",
                Map.of("runs", Arrays.toString(round(remote)))));
        f.paddock.put("file read into the engine (embedded SDK, files().openRead), " + (fileSize >> 20) + " MiB",
                new Quantity(median(fileLocal), "MiB/s", Map.of("runs", Arrays.toString(round(fileLocal)))));
        f.paddock.put("file read through the daemon (remote SDK, HTTP download)", new Quantity(median(fileRemote),
                "MiB/s", Map.of("runs", Arrays.toString(round(fileRemote)))));
        f.paddock.put("bytes lost (expected - counted, all runs)", Quantity.of(lost, "bytes"));
        double[] pipe = new double[runs];
        for (int i = 0; i < runs; i++) {
            long t0 = System.nanoTime();
            long got = Peers.hostPipe(size);
            pipe[i] = got / 1048576.0 / ((System.nanoTime() - t0) / 1e9);
        }
        double pm = median(pipe);
        f.peers.put("host pipe into this JVM (ProcessBuilder, head -c SIZE /dev/zero)", Quantity.of(pm, "MiB/s"));
        f.ratio("Paddock into engine / host pipe", lm / pm);
        double fm = median(relayed);
        f.peers.put("the daemon's floor: host pipe relayed over the same WebSocket stack (Jetty -> JDK client, 64 KiB "
                + "messages, one in flight)", new Quantity(fm, "MiB/s", Map.of("runs", Arrays.toString(round(relayed)))));
        f.ratio("Paddock through the daemon / its floor", rm / fm);
        f.check(">= 500 MiB/s into the engine", lm >= 500, Report.fmt(lm) + " MiB/s");
        f.check(">= 100 MiB/s to a local client", rm >= 100, Report.fmt(rm) + " MiB/s");
        f.check("zero silent loss", lost == 0, lost + " bytes lost");
    }

    private static long readFile(Sandbox sb) throws Exception {
        try (InputStream in = sb.files().openRead(FILE)) {
            return count(in);
        }
    }

    /** Reads to the end, 64 KiB at a time; the bytes read. */
    private static long count(InputStream in) throws java.io.IOException {
        byte[] buf = new byte[1 << 16];
        long total = 0;
        int k;
        while ((k = in.read(buf)) > 0) {
            total += k;
        }
        return total;
    }

    private static long stream(Sandbox sb, long size) throws Exception {
        try (ExecProcess proc = sb.start(ExecRequest.builder().argv("head", "-c", Long.toString(size), "/dev/zero")
                .outputLimit(ExecRequest.UNLIMITED).build())) {
            proc.closeStdin();
            long total = count(proc.stdout());
            if (!proc.awaitExit().success()) {
                throw new IllegalStateException("head failed");
            }
            return total;
        }
    }

    private int n(int full, int quick, int min) {
        return o.n(full, quick, min);
    }
}
