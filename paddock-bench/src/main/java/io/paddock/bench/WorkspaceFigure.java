package io.paddock.bench;

import io.paddock.CodebaseInfo;
import io.paddock.CodebaseMount;
import io.paddock.ExecResult;
import io.paddock.Paddock;
import io.paddock.PermissionPreset;
import io.paddock.PermissionRule;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.bench.Report.Figure;
import io.paddock.bench.host.Host;

import java.io.InputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * P14, codebases (docs/WORKSPACES.md): creating a sandbox on a codebase of 10,000 files under rules, against the
 * same create without one (the view is made once per revision and rules, so a warm create mounts it only),
 * and reading a large file through the permission view (an overlay of the id-mapped revision) against reading
 * the same bytes in the same sandbox through a plain id-mapped bind (a volume), with the page cache warm.
 */
final class WorkspaceFigure {
    private static final List<PermissionRule> RULES = List.of(PermissionRule.parse("secrets/**:none"),
            PermissionRule.parse("docs/**:view"), PermissionRule.parse("out/**:write"));

    private final Report report;
    private final PrintStream out;
    private final SandboxSpec base;
    private final int creates;
    private final long readBytes;

    WorkspaceFigure(Report report, PrintStream out, SandboxSpec base, int creates, long readBytes) {
        this.report = report;
        this.out = out;
        this.base = base;
        this.creates = creates;
        this.readBytes = readBytes;
    }

    void run(Paddock p, Path work) throws Exception {
        Figure f = report.figure("P14", "codebases: create with a 10k-file codebase and rules; reads through the view",
                "create <= +20 ms over no codebase (warm view); read throughput >= 80 % of direct");
        Path src = work.resolve("codebase");
        for (int d = 0; d < 100; d++) {
            Path dir = Files.createDirectories(src.resolve("src/pkg" + d));
            for (int i = 0; i < 100; i++) {
                Files.writeString(dir.resolve("m" + i + ".py"), "x = " + i + "\n".repeat(1 + i % 20));
            }
        }
        Files.createDirectories(src.resolve("secrets"));
        Files.writeString(src.resolve("secrets/key.txt"), "secret");
        Files.createDirectories(src.resolve("docs"));
        Files.writeString(src.resolve("docs/a.md"), "doc");
        Files.createDirectories(src.resolve("out"));
        try (var f1 = Files.newOutputStream(src.resolve("big.bin"))) {
            byte[] chunk = new byte[1 << 20];
            for (long n = 0; n < readBytes; n += chunk.length) {
                f1.write(chunk);
            }
        }
        String name = "bench-p14-" + ProcessHandle.current().pid();
        long t0 = System.nanoTime();
        CodebaseInfo info = p.codebases().create(name, src, new io.paddock.CodebaseOptions(List.of(),
                io.paddock.ByteSize.bytes(readBytes + 1)));
        f.paddock.put("upload of " + info.files() + " files, " + (info.bytes() >> 20) + " MiB (once)",
                Stats.of(new long[] {System.nanoTime() - t0}));
        try {
            for (String tier : List.of("runc", "runsc")) {
                measure(f, p, tier, name);
            }
        } finally {
            p.codebases().remove(name);
        }
    }

    private void measure(Figure f, Paddock p, String tier, String name) {
        SandboxSpec plain = base.toBuilder().runtime(tier).build();
        SandboxSpec withCodebase = plain.toBuilder().codebase(new CodebaseMount(name, CodebaseMount.DEFAULT_PATH,
                PermissionPreset.READ_ONLY, RULES)).build();
        try {
            long t0 = System.nanoTime();
            try (Sandbox first = p.create(withCodebase)) {
                f.paddock.put(tier + ": first create on the codebase (makes the view)", Stats.of(new long[] {System.nanoTime() - t0}));
                read(first, "/workspace/big.bin"); // the page cache holds the file for what follows
            }
            List<Long> none = new ArrayList<>();
            List<Long> with = new ArrayList<>();
            for (int i = 0; i < creates; i++) {
                none.add(create(p, plain));
                with.add(create(p, withCodebase));
            }
            Stats sn = Stats.of(none);
            Stats sw = Stats.of(with);
            f.paddock.put(tier + ": cold create, no codebase", sn);
            f.paddock.put(tier + ": cold create, 10k-file codebase and 3 rules (view made)", sw);
            double added = (sw.p50() - sn.p50()) / 1000.0;
            f.ratio(tier + ": codebase's added p50 ms", added);
            f.check(tier + ": codebase adds <= 20 ms", added <= 20, String.format(Locale.ROOT, "+%.1f ms", added));

            double host = hostRead(p, name);
            double viewed;
            double direct;
            String volume = name + "-" + tier;
            p.volumes().create(volume, io.paddock.ByteSize.bytes(readBytes * 2 + (64 << 20)));
            try (Sandbox sb = p.create(withCodebase.toBuilder().volume(new io.paddock.VolumeMount(volume, "/data", false)).build())) {
                ExecResult cp = sb.exec("cp", "/workspace/big.bin", "/data/big.bin");
                if (cp.exitCode() != 0) {
                    throw new IllegalStateException("cp failed: " + cp.stderrText());
                }
                read(sb, "/workspace/big.bin");
                read(sb, "/data/big.bin");
                viewed = Math.max(read(sb, "/workspace/big.bin"), read(sb, "/workspace/big.bin"));
                direct = Math.max(read(sb, "/data/big.bin"), read(sb, "/data/big.bin"));
            } finally {
                p.volumes().remove(volume);
            }
            f.ratio(tier + ": read MiB/s through the view (overlay of the id-mapped revision)", viewed);
            f.ratio(tier + ": read MiB/s of the same file on a plain id-mapped bind (a volume)", direct);
            f.ratio(tier + ": read MiB/s on the host (Java, 1 MiB reads; not in the check)", host);
            f.check(tier + ": view read >= 80 % of direct", viewed >= 0.8 * direct,
                    String.format(Locale.ROOT, "%.0f %%", 100 * viewed / direct));
            out.printf(Locale.ROOT, "  P14 %s: +%.1f ms per create; reads %.0f MiB/s through the view, %.0f directly%n",
                    tier, added, viewed, direct);
        } catch (Exception e) {
            f.paddock.put(tier + ": codebase", "unavailable: " + Host.shorten(String.valueOf(e.getMessage())));
        }
    }

    private static long create(Paddock p, SandboxSpec spec) {
        long t0 = System.nanoTime();
        Sandbox sb = p.create(spec);
        ExecResult r = sb.exec("true");
        long t = System.nanoTime() - t0;
        sb.destroy();
        if (r.exitCode() != 0) {
            throw new IllegalStateException("true failed: " + r.stderrText());
        }
        return t;
    }

    /** MiB/s of one read of a file of {@link #readBytes} inside the sandbox, timed by the sandbox's own clock. */
    private double read(Sandbox sb, String file) {
        ExecResult r = sb.exec("sh", "-c", "s=$(date +%s%N); cat " + file + " > /dev/null; e=$(date +%s%N); echo $((e - s))");
        if (r.exitCode() != 0) {
            throw new IllegalStateException("read failed: " + r.stderrText());
        }
        long nanos = Long.parseLong(r.stdoutText().trim());
        return readBytes / 1048576.0 / (nanos / 1e9);
    }

    /** MiB/s reading the same file from the codebase's stored revision on the host (warm cache, best of three). */
    private double hostRead(Paddock p, String name) throws Exception {
        Path file = io.paddock.LocalOptions.DEFAULT_STORAGE_DIR.resolve("writable/codebases").resolve(name)
                .resolve("r" + p.codebases().get(name).revision()).resolve("big.bin");
        double best = 0;
        byte[] buf = new byte[1 << 20];
        for (int i = 0; i < 3; i++) {
            long t0 = System.nanoTime();
            try (InputStream in = Files.newInputStream(file)) {
                while (in.read(buf) > 0) {
                    // reading is the point
                }
            }
            best = Math.max(best, readBytes / 1048576.0 / ((System.nanoTime() - t0) / 1e9));
        }
        return best;
    }
}
