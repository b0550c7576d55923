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
        Rounds rounds = new Rounds(o.rounds());
        Rounds.Series echoS = rounds.series();
        Rounds.Series truS = rounds.series();
        Rounds.Peer natEchoPeer = nativeEcho(f, n(2000, 300, 5), rounds);
        Rounds.Peer natTruePeer = nativeHelper == null ? null : rounds.peer(f, "native posix_spawn of /bin/true -> exit",
                n(2000, 300, 5), 0, k -> nativeHelper.spawn(k, "/bin/true")[1], null);
        Rounds.Peer jvmPeer = rounds.peer(f, "JVM ProcessBuilder spawn of echo hi", n(500, 100, 3), Peers::jvmSpawn, null);
        String running = peers == null ? null : peers.startRunning();
        Rounds.Peer runcPeer = rounds.peer(f, "runc exec into a running container", n(200, 30, 3),
                () -> peers.runcExec(running), peers == null ? peersMissing : null);
        try (Sandbox sb = p.create(spec)) {
            for (int i = 0; i < n(300, 100, 3); i++) {
                firstByte(sb, System.nanoTime());
                execTrue(sb);
            }
            for (int r = 0; r < rounds.count(); r++) {
                rounds.begin(r);
                echoS.addAll(r, sample(rounds.share(samples, r), () -> firstByte(sb, System.nanoTime())));
                truS.addAll(r, sample(rounds.share(samples, r), () -> execTrue(sb)));
                natEchoPeer.round(r);
                if (natTruePeer != null) {
                    natTruePeer.round(r);
                }
                jvmPeer.round(r);
                runcPeer.round(r);
            }
        }
        Stats echo = echoS.stats();
        Stats tru = truS.stats();
        f.paddock.put("start(echo hi) -> first byte", echo);
        f.paddock.put("exec(/bin/true) round trip", tru);
        Stats natEcho = natEchoPeer.finish();
        Stats natTrue = natTruePeer == null ? null : natTruePeer.finish();
        jvmPeer.finish();
        Stats runcExec = runcPeer.finish();
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
        f.notes.add(rounds.note() + "; the sandbox and the runc container stay up through all rounds");
    }

    private int n(int full, int quick, int min) {
        return o.n(full, quick, min);
    }

    private Rounds.Peer nativeEcho(Figure f, int n, Rounds rounds) {
        return setup.nativeEcho(f, n, rounds);
    }
}
