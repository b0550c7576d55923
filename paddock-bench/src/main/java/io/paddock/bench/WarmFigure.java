package io.paddock.bench;

import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.bench.Report.Figure;
import io.paddock.bench.Report.Quantity;
import io.paddock.bench.host.Peers;
import io.paddock.engine.internal.LocalPaddock;
import io.paddock.engine.internal.PoolStats;

import java.util.Map;

import static io.paddock.bench.Sampling.awaitPoolFull;
import static io.paddock.bench.Sampling.firstByte;
import static io.paddock.bench.Sampling.ms;

/**
 * P1, create -> first stdout byte from a warm pool: a pooled engine's create() and the first byte of
 * {@code echo hi}, beside a bwrap one-shot and a native spawn.
 */
final class WarmFigure {
    private final Setup setup;
    private final Report report;
    private final SandboxSpec spec;
    private final Bench.Options o;
    private final Map<String, String> missingTools;

    WarmFigure(Setup setup) {
        this.setup = setup;
        this.report = setup.report;
        this.spec = setup.spec;
        this.o = setup.o;
        this.missingTools = setup.missingTools;
    }

    void run(LocalPaddock pooled) throws Exception {
        Figure f = report.figure("P1", "create -> first stdout byte, warm (sandbox from the pool)",
                "p50 <= 3 ms, p99 <= 15 ms; faster than a bwrap one-shot");
        int samples = n(1000, 100, 5);
        Rounds rounds = new Rounds(o.rounds());
        PoolStats before = pooled.poolStats().get(0);
        Rounds.Series first = rounds.series();
        Rounds.Series create = rounds.series();
        Rounds.Series destroy = rounds.series();
        Rounds.Peer bwrapPeer = rounds.peer(f, "bwrap one-shot", n(300, 40, 3), Peers::bwrapOneShot, missingTools.get("bwrap"));
        Rounds.Peer natPeer = nativeEcho(f, n(1000, 300, 5), rounds);
        for (int r = 0; r < rounds.count(); r++) {
            rounds.begin(r);
            for (int i = 0; i < rounds.share(samples, r); i++) {
                awaitPoolFull(pooled);
                long t0 = System.nanoTime();
                Sandbox sb = pooled.create(spec);
                create.add(r, System.nanoTime() - t0);
                first.add(r, firstByte(sb, t0));
                long t1 = System.nanoTime();
                sb.destroy();
                destroy.add(r, System.nanoTime() - t1);
            }
            awaitPoolFull(pooled); // the peers do not share the cores with the last refill
            bwrapPeer.round(r);
            natPeer.round(r);
        }
        PoolStats after = pooled.poolStats().get(0);
        Stats warm = first.stats();
        f.paddock.put("warm create -> first byte (pool hit)", warm);
        f.paddock.put("create() returns (pool hit)", create.stats());
        f.paddock.put("destroy() (not in the figure)", destroy.stats());
        f.paddock.put("pool", new Quantity(after.hits() - before.hits(), "hits", Map.of("misses", after.misses() - before.misses(),
                "refill_p50_ms", after.refillP50Ms(), "refill_p99_ms", after.refillP99Ms())));
        Stats bwrap = bwrapPeer.finish();
        Stats nat = natPeer.finish();
        if (bwrap != null) {
            f.ratio("Paddock warm / bwrap one-shot (p50)", warm.p50() / bwrap.p50());
            f.check("faster than a bwrap one-shot (p50)", warm.p50() < bwrap.p50(), ms(warm.p50()) + " vs " + ms(bwrap.p50()));
        }
        if (nat != null) {
            f.ratio("Paddock warm / native spawn of echo (p50)", warm.p50() / nat.p50());
        }
        f.check("p50 <= 3 ms", warm.p50() <= 3000, ms(warm.p50()));
        f.check("p99 <= 15 ms", warm.p99() <= 15000, ms(warm.p99()));
        f.notes.add("each sample waits for the pool to be full first, so that the refill (a cold create in the"
                + " background) does not share the two cores with the measured request");
        f.notes.add(rounds.note());
    }

    private int n(int full, int quick, int min) {
        return o.n(full, quick, min);
    }

    private Rounds.Peer nativeEcho(Figure f, int n, Rounds rounds) {
        return setup.nativeEcho(f, n, rounds);
    }
}
