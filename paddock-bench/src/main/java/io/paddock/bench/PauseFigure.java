package io.paddock.bench;

import io.paddock.ByteSize;
import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.Paddock;
import io.paddock.PauseMode;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.bench.Report.Figure;
import io.paddock.bench.host.Host;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * P13, pause and resume with memory (docs/WORKSPACES.md, "Pause and resume"): {@code pause()} and {@code resume()}
 * of a gVisor sandbox holding a process that has touched M MiB of memory, for M = 0 (an idle sandbox) and larger
 * sizes, beside runc's freeze and thaw of the same process; after each resume the process must still hold its
 * memory (it answers with the checksum it computed before the pause). E2B's published figures (pause about 4 s
 * per GiB, resume about 1 s) are printed beside them: published, not measured here.
 */
final class PauseFigure {
    /** A process that touches {@code argv[1]} MiB, prints a checksum, and prints it again for every line read. */
    private static final String HOLDER = """
            import sys
            n = int(sys.argv[1]) << 20
            b = bytearray(n)
            for i in range(0, n, 4096):
                b[i] = (i >> 12) & 0xff
            s = sum(b[::4096]) if n else 0
            print(s, flush=True)
            for line in sys.stdin:
                print(sum(b[::4096]) if n else 0, flush=True)
            """;

    private final Report report;
    private final PrintStream out;
    private final SandboxSpec base;
    private final List<Integer> mibs;
    private final int repeats;

    PauseFigure(Report report, PrintStream out, SandboxSpec base, List<Integer> mibs, int repeats) {
        this.report = report;
        this.out = out;
        this.base = base;
        this.mibs = mibs;
        this.repeats = repeats;
    }

    void run(Paddock p) throws Exception {
        Figure f = report.figure("P13", "pause and resume: gVisor memory checkpoint to disk, runc freeze",
                "runsc pause <= 4 s per GiB touched, resume <= 1 s + 1 s per GiB (E2B's published figures)");
        for (int mib : mibs) {
            measure(f, p, "runsc", mib);
        }
        measure(f, p, "runc", mibs.get(mibs.size() - 1));
        f.notes.add("E2B (published, not measured here): pause about 4 s per GiB of memory, resume about 1 s;"
                + " https://e2b.dev/docs/sandbox/persistence");
        f.notes.add("runsc: the checkpoint goes to <storage>/checkpoints/<id> on disk and its SHA-256 is verified"
                + " before restore (both included); runc: cgroup freeze, memory stays resident");
    }

    private void measure(Figure f, Paddock p, String tier, int mib) throws Exception {
        SandboxSpec spec = base.toBuilder().runtime(tier).memory(ByteSize.mib(Math.max(256, mib * 2L + 256)))
                .timeout(Duration.ofMinutes(30)).build();
        String label = tier + ", " + mib + " MiB touched";
        List<Long> pauses = new ArrayList<>();
        List<Long> resumes = new ArrayList<>();
        try (Sandbox sb = p.create(spec)) {
            ExecProcess holder = sb.start(ExecRequest.builder().argv("python3", "-c", HOLDER, Integer.toString(mib))
                    .timeout(Duration.ofMinutes(30)).build());
            java.io.BufferedReader r = new java.io.BufferedReader(new java.io.InputStreamReader(holder.stdout(),
                    StandardCharsets.UTF_8));
            String sum = r.readLine();
            for (int i = 0; i < repeats; i++) {
                long t0 = System.nanoTime();
                PauseMode mode = sb.pause();
                long t1 = System.nanoTime();
                sb.resume();
                long t2 = System.nanoTime();
                pauses.add(t1 - t0);
                resumes.add(t2 - t1);
                holder.stdin().write('\n');
                holder.stdin().flush();
                String again = r.readLine();
                if (sum == null || !sum.equals(again)) {
                    f.check(label + ": the process kept its memory", false, "checksum " + sum + " then " + again);
                    return;
                }
                if (i == 0) {
                    out.printf(Locale.ROOT, "  P13 %s: %s%n", label, mode);
                }
            }
            holder.close();
        } catch (RuntimeException e) {
            f.paddock.put("pause, " + label, "unavailable: " + Host.shorten(String.valueOf(e.getMessage())));
            return;
        }
        Stats sp = Stats.of(pauses);
        Stats sr = Stats.of(resumes);
        f.paddock.put("pause(), " + label, sp);
        f.paddock.put("resume(), " + label, sr);
        if (tier.equals("runsc") && mib >= 256) {
            double gib = mib / 1024.0;
            f.ratio("pause s per GiB, " + label, sp.p50() / 1e6 / gib);
            f.ratio("resume s per GiB, " + label, sr.p50() / 1e6 / gib);
            f.check("pause <= 4 s per GiB, " + label, sp.p50() / 1e6 <= 4 * gib,
                    String.format(Locale.ROOT, "%.2f s per GiB", sp.p50() / 1e6 / gib));
            f.check("resume <= 1 s + 1 s per GiB, " + label, sr.p50() / 1e6 <= 1 + gib,
                    String.format(Locale.ROOT, "%.2f s", sr.p50() / 1e6));
        }
    }
}
