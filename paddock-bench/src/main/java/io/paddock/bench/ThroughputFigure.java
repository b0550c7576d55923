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

import static io.paddock.bench.Sampling.execTrue;
import static io.paddock.bench.Sampling.rate;

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

    private double secs(double full, double quick, double min) {
        return o.secs(full, quick, min);
    }
}
