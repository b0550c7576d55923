package io.paddock.bench;

import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.bench.Report.Figure;
import io.paddock.bench.host.Native;
import io.paddock.bench.host.Peers;

import java.util.Locale;

import static io.paddock.bench.Sampling.execTrue;
import static io.paddock.bench.Sampling.firstByte;
import static io.paddock.bench.Sampling.ms;
import static io.paddock.bench.Sampling.peer;
import static io.paddock.bench.Sampling.sample;

/**
 * P3, exec on a running sandbox and its overhead over a native spawn, beside runc exec and a JVM spawn.
 */
final class ExecFigure {
    private final Setup setup;
    private final Report report;
    private final SandboxSpec spec;
    private final Bench.Options o;
    private final Peers peers;
    private final String peersMissing;
    private final Native nativeHelper;

    ExecFigure(Setup setup) {
        this.setup = setup;
        this.report = setup.report;
        this.spec = setup.spec;
        this.o = setup.o;
        this.peers = setup.peers;
        this.peersMissing = setup.peersMissing;
        this.nativeHelper = setup.nativeHelper;
    }

    void run(Paddock p) throws Exception {
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

    private int n(int full, int quick, int min) {
        return o.n(full, quick, min);
    }

    private Stats nativeEcho(Figure f, int n) throws Exception {
        return setup.nativeEcho(f, n);
    }
}
