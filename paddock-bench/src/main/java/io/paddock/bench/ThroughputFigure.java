package io.paddock.bench;

import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.bench.Report.Figure;
import io.paddock.bench.Report.Quantity;
import io.paddock.bench.host.Host;
import io.paddock.bench.host.Native;
import io.paddock.bench.host.Peers;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static io.paddock.bench.Sampling.counted;
import static io.paddock.bench.Sampling.execTrue;

/**
 * P4, exec throughput of trivial commands: one serial client and eight clients over eight sandboxes, with
 * the machine's CPU per exec, beside a native spawn and runc exec.
 */
final class ThroughputFigure {
    private final Report report;
    private final SandboxSpec spec;
    private final Bench.Options o;
    private final Peers peers;
    private final String peersMissing;
    private final Native nativeHelper;
    private final String nativeMissing;

    ThroughputFigure(Setup setup) {
        this.report = setup.report;
        this.spec = setup.spec;
        this.o = setup.o;
        this.peers = setup.peers;
        this.peersMissing = setup.peersMissing;
        this.nativeHelper = setup.nativeHelper;
        this.nativeMissing = setup.nativeMissing;
    }

    void run(Paddock p) throws Exception {
        Figure f = report.figure("P4", "exec throughput, trivial commands (exec(\"/bin/true\") to its exit)",
                ">= 1000 execs/s over many sandboxes; >= 400/s one serial client");
        double seconds = secs(20, 3, 1);
        int sandboxes = 8;
        int threads = 8;
        double serial;
        double concurrent;
        Rounds rounds = new Rounds(o.rounds());
        Rounds.Rate serialR = rounds.rate();
        Rounds.Rate concurrentR = rounds.rate();
        Rounds.Rate natR = rounds.rate();
        Rounds.Rate runcR = rounds.rate();
        String running = peers == null ? null : peers.startRunning();
        List<Sandbox> all = new ArrayList<>();
        try {
            for (int i = 0; i < sandboxes; i++) {
                all.add(p.create(spec));
            }
            Sandbox one = all.get(0);
            for (int i = 0; i < 200 * o.scale(); i++) {
                execTrue(one);
            }
            long busyTicks = 0;
            long allTicks = 0;
            long jvmNanos = 0;
            for (int r = 0; r < rounds.count(); r++) {
                rounds.begin(r);
                serialR.add(r, counted(1, rounds.share(seconds), i -> execTrue(one)));
                long[] c0 = Host.machineCpuTicks();
                long j0 = Host.processCpuNanos();
                concurrentR.add(r, counted(threads, rounds.share(seconds), i -> execTrue(all.get((int) (i % sandboxes)))));
                long[] c1 = Host.machineCpuTicks();
                jvmNanos += Host.processCpuNanos() - j0;
                busyTicks += c1[0] - c0[0];
                allTicks += c1[1] - c0[1];
                if (nativeHelper != null) {
                    double s = rounds.share(Math.min(seconds, secs(10, 2, 1)));
                    natR.add(r, nativeHelper.rate(s, "/bin/true") * s, s);
                }
                if (peers != null) {
                    runcR.add(r, counted(1, rounds.share(Math.min(seconds, secs(5, 2, 1))), i -> peers.runcExec(running)));
                }
            }
            serial = serialR.value();
            concurrent = concurrentR.value();
            double busy = (double) busyTicks / Math.max(1, allTicks);
            int cpus = Runtime.getRuntime().availableProcessors();
            double cpuPerExecUs = busy * cpus * 1e6 / concurrent;
            double jvmPerExecUs = jvmNanos / 1e3 / concurrentR.operations();
            f.paddock.put("machine CPU per exec at that rate (all processes)", new Quantity(cpuPerExecUs, "us",
                    Map.of("machine_busy_percent", Math.round(busy * 1000) / 10.0,
                            "engine_jvm_us_per_exec", Math.round(jvmPerExecUs),
                            "outside_jvm_us_per_exec", Math.round(cpuPerExecUs - jvmPerExecUs))));
        } finally {
            all.forEach(Sandbox::destroy);
        }
        f.paddock.put("one serial client, one sandbox", serialR.quantity("execs/s"));
        f.paddock.put(threads + " clients over " + sandboxes + " sandboxes", concurrentR.quantity("execs/s"));
        if (nativeHelper != null) {
            double nat = natR.value();
            f.peers.put("native posix_spawn of /bin/true, serial", natR.quantity("spawns/s"));
            f.ratio("Paddock serial / native serial", serial / nat);
        } else {
            f.peers.put("native posix_spawn of /bin/true, serial", "unavailable: " + nativeMissing);
        }
        if (peers != null) {
            double runcRate = runcR.value();
            f.peers.put("runc exec, serial", runcR.quantity("execs/s"));
            f.ratio("Paddock serial / runc exec serial", serial / runcRate);
        } else {
            f.peers.put("runc exec, serial", "unavailable: " + peersMissing);
        }
        f.check(">= 1000 execs/s over many sandboxes", concurrent >= 1000, Report.fmt(concurrent) + "/s");
        f.check(">= 400 execs/s one serial client", serial >= 400, Report.fmt(serial) + "/s");
        f.notes.add(rounds.note() + "; each round runs every row for its share of the time; the sandboxes and the runc"
                + " container stay up through all rounds");
    }

    private double secs(double full, double quick, double min) {
        return o.secs(full, quick, min);
    }
}
