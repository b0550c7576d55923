package io.paddock.bench;

import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.bench.Report.Figure;
import io.paddock.bench.host.Peers;

import java.util.Locale;
import java.util.Map;

import static io.paddock.bench.Sampling.firstByte;

/**
 * P2, create -> first stdout byte, cold (everything made for this request), beside runc, bwrap and podman
 * one-shots.
 */
final class ColdFigure {
    private final Report report;
    private final SandboxSpec spec;
    private final Bench.Options o;
    private final Peers peers;
    private final String peersMissing;
    private final Map<String, String> missingTools;
    private final String podmanImage;
    private final String podmanMissing;

    ColdFigure(Setup setup) {
        this.report = setup.report;
        this.spec = setup.spec;
        this.o = setup.o;
        this.peers = setup.peers;
        this.peersMissing = setup.peersMissing;
        this.missingTools = setup.missingTools;
        this.podmanImage = setup.podmanImage;
        this.podmanMissing = setup.podmanMissing;
    }

    void run(Paddock p) throws Exception {
        Figure f = report.figure("P2", "create -> first stdout byte, cold (everything made for this request)",
                "p50 <= runc one-shot + 5 ms");
        int samples = n(200, 30, 3);
        Rounds rounds = new Rounds(o.rounds());
        Rounds.Series first = rounds.series();
        Rounds.Series destroy = rounds.series();
        Rounds.Peer runcPeer = rounds.peer(f, "runc run one-shot (same bundle settings)", samples, () -> peers.runcOneShot(),
                peersMissing);
        Rounds.Peer bwrapPeer = rounds.peer(f, "bwrap one-shot", samples, Peers::bwrapOneShot, missingTools.get("bwrap"));
        Rounds.Peer podmanPeer = rounds.peer(f, "podman --runtime runc run --rm --network=none (bookworm minbase)",
                n(100, 10, 2), () -> Peers.podmanOneShot(podmanImage), podmanMissing);
        for (int r = 0; r < rounds.count(); r++) {
            rounds.begin(r);
            for (int i = 0; i < rounds.share(samples, r); i++) {
                long t0 = System.nanoTime();
                Sandbox sb = p.create(spec);
                first.add(r, firstByte(sb, t0));
                long t1 = System.nanoTime();
                sb.destroy();
                destroy.add(r, System.nanoTime() - t1);
            }
            runcPeer.round(r);
            bwrapPeer.round(r);
            podmanPeer.round(r);
        }
        Stats cold = first.stats();
        f.paddock.put("cold create -> first byte", cold);
        f.paddock.put("destroy() (not in the figure)", destroy.stats());
        Stats runc = runcPeer.finish();
        Stats bwrap = bwrapPeer.finish();
        Stats podman = podmanPeer.finish();
        if (runc != null) {
            f.ratio("Paddock cold / runc one-shot (p50)", cold.p50() / runc.p50());
            f.check("p50 <= runc one-shot + 5 ms", cold.p50() <= runc.p50() + 5_000,
                    String.format(Locale.ROOT, "%+.2f ms", (cold.p50() - runc.p50()) / 1000));
        }
        if (bwrap != null) {
            f.ratio("Paddock cold / bwrap one-shot (p50)", cold.p50() / bwrap.p50());
        }
        if (podman != null) {
            f.ratio("podman run / Paddock cold (p50)", podman.p50() / cold.p50());
        }
        f.notes.add(rounds.note());
    }

    private int n(int full, int quick, int min) {
        return o.n(full, quick, min);
    }
}
