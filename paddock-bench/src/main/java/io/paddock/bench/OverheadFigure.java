package io.paddock.bench;

import io.paddock.ExecRequest;
import io.paddock.ExecResult;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.bench.Report.Figure;
import io.paddock.bench.Report.Quantity;
import io.paddock.bench.host.Native;

import java.util.Arrays;
import java.util.Locale;
import java.util.Map;

import static io.paddock.bench.Sampling.div;
import static io.paddock.bench.Sampling.median;
import static io.paddock.bench.Sampling.round;

/**
 * P8, in-sandbox overhead: the same static binary (a CPU loop, getppid) inside a sandbox and on the host.
 */
final class OverheadFigure {
    private final Report report;
    private final SandboxSpec spec;
    private final Bench.Options o;
    private final Native nativeHelper;
    private final String nativeMissing;

    OverheadFigure(Setup setup) {
        this.report = setup.report;
        this.spec = setup.spec;
        this.o = setup.o;
        this.nativeHelper = setup.nativeHelper;
        this.nativeMissing = setup.nativeMissing;
    }

    void run(Paddock p) throws Exception {
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

    private int n(int full, int quick, int min) {
        return o.n(full, quick, min);
    }
}
