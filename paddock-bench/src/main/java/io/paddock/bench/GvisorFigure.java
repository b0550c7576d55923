package io.paddock.bench;

import io.paddock.ByteSize;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.PoolConfig;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.bench.Report.Figure;
import io.paddock.bench.host.Peers;
import io.paddock.engine.internal.LocalPaddock;

import java.util.Locale;
import java.util.Map;

import static io.paddock.bench.Sampling.awaitPoolFull;
import static io.paddock.bench.Sampling.firstByte;
import static io.paddock.bench.Sampling.sample;

/**
 * P9, the gVisor tier (runsc): warm and cold create -> first byte and exec, beside a runsc one-shot.
 */
final class GvisorFigure {
    private final Report report;
    private final SandboxSpec spec;
    private final Bench.Options o;
    private final Peers peers;
    private final String peersMissing;
    private final Map<String, String> missingTools;

    GvisorFigure(Setup setup) {
        this.report = setup.report;
        this.spec = setup.spec;
        this.o = setup.o;
        this.peers = setup.peers;
        this.peersMissing = setup.peersMissing;
        this.missingTools = setup.missingTools;
    }

    void run() throws Exception {
        Figure f = report.figure("P9", "gVisor tier (runsc): warm and cold create -> first byte",
                "warm p50 <= 10 ms; exec p50 <= 5 ms; cold p50 <= runsc one-shot (#15)");
        SandboxSpec gspec = spec.toBuilder().runtime("runsc").build();
        LocalOptions options = LocalOptions.builder().maxSandboxes(100).warmPool(PoolConfig.builder()
                .shape(gspec.toBuilder().timeout(SandboxSpec.DEFAULT_TIMEOUT).build()).size(2).refillConcurrency(1)
                .build()).build();
        LocalPaddock engine;
        try {
            engine = (LocalPaddock) Paddock.local(options);
        } catch (RuntimeException e) {
            f.unavailable = "the engine has no runsc tier here: " + e.getMessage();
            return;
        }
        try (engine) {
            try (Sandbox probe = engine.create(spec.toBuilder().runtime("runsc").memory(ByteSize.mib(255)).build())) {
                firstByte(probe, System.nanoTime());
            } catch (RuntimeException e) {
                f.unavailable = "runsc sandboxes cannot be created here: " + e.getMessage();
                return;
            }
            int warmN = n(200, 10, 2);
            int coldN = n(100, 10, 2);
            int runningN = n(200, 60, 2);
            SandboxSpec cold = gspec.toBuilder().memory(ByteSize.mib(255)).build(); // another shape: no pool
            Rounds rounds = new Rounds(o.rounds());
            Rounds.Series warm = rounds.series();
            Rounds.Series c = rounds.series();
            Rounds.Series runningS = rounds.series();
            Rounds.Series freshS = rounds.series();
            // The floor beside the exec row: the same command through runsc itself, into the very same sandbox.
            Rounds.Series execPeer = rounds.series();
            String execPeerMissing = peers == null ? peersMissing : missingTools.get("runsc");
            Rounds.Peer onePeer = rounds.peer(f, "runsc run one-shot (same bundle, default platform)", coldN,
                    () -> peers.runscOneShot(), peers == null ? peersMissing : missingTools.get("runsc"));
            for (int r = 0; r < rounds.count(); r++) {
                rounds.begin(r);
                for (int i = 0; i < rounds.share(warmN, r); i++) {
                    awaitPoolFull(engine);
                    long t0 = System.nanoTime();
                    try (Sandbox sb = engine.create(gspec)) {
                        warm.add(r, firstByte(sb, t0));
                    }
                }
                awaitPoolFull(engine); // the cold creates do not share the cores with the last refill
                for (int i = 0; i < rounds.share(coldN, r); i++) {
                    long t0 = System.nanoTime();
                    try (Sandbox sb = engine.create(cold)) {
                        c.add(r, firstByte(sb, t0));
                    }
                }
                try (Sandbox sb = engine.create(cold)) {
                    // A fresh Sentry's first few dozen execs are slow and uneven (8-18 ms beside 5-6 ms; a static
                    // probe inside the sandbox sees the same, so it is gVisor warming up, not Paddock's path): they
                    // get a row of their own, and the exec rows are the steady state after them.
                    freshS.addAll(r, sample(FRESH_EXECS, () -> firstByte(sb, System.nanoTime())));
                    runningS.addAll(r, sample(rounds.share(runningN, r), () -> firstByte(sb, System.nanoTime())));
                    if (execPeerMissing == null) {
                        execPeer.addAll(r, sample(rounds.share(runningN, r), () -> peers.runscExec(
                                LocalOptions.DEFAULT_STATE_DIR.resolve("runsc"), sb.id().value())));
                    }
                }
                onePeer.round(r);
            }
            Stats w = warm.stats();
            Stats cs = c.stats();
            Stats running = runningS.stats();
            f.paddock.put("runsc exec on a running sandbox, start -> first byte (where warm time goes)", running);
            f.paddock.put("runsc exec, the first " + FRESH_EXECS + " into a fresh sandbox (the Sentry warming up)",
                    freshS.stats());
            f.paddock.put("runsc warm create -> first byte (pool hit)", w);
            f.paddock.put("runsc cold create -> first byte", cs);
            Stats one = onePeer.finish();
            f.peers.put("runsc exec into the same running sandbox (echo hi, sandbox user)", execPeerMissing == null
                    ? execPeer.stats() : "unavailable: " + execPeerMissing);
            f.check("warm p50 <= 10 ms", w.p50() <= 10_000, String.format(Locale.ROOT, "%.2f ms", w.p50() / 1000));
            f.check("exec p50 <= 5 ms", running.p50() <= 5_000, String.format(Locale.ROOT, "%.2f ms", running.p50() / 1000));
            if (one != null) {
                f.ratio("Paddock runsc cold / runsc one-shot (p50)", cs.p50() / one.p50());
                f.ratio("runsc one-shot / Paddock runsc warm (p50)", one.p50() / w.p50());
                f.check("cold p50 <= runsc one-shot", cs.p50() <= one.p50(),
                        String.format(Locale.ROOT, "%+.2f ms", (cs.p50() - one.p50()) / 1000));
            }
            f.notes.add(rounds.note() + "; each round's exec rows use a sandbox of their own, measured after its first "
                    + FRESH_EXECS + " execs (their own row)");
        }
    }

    /** The execs a fresh runsc sandbox needs before its exec time settles (see the fresh row). */
    private static final int FRESH_EXECS = 40;

    private int n(int full, int quick, int min) {
        return o.n(full, quick, min);
    }
}
