package io.paddock.bench;

import io.paddock.SandboxSpec;
import io.paddock.bench.Report.Figure;
import io.paddock.bench.host.Native;
import io.paddock.bench.host.Peers;

import java.io.PrintStream;
import java.util.Map;

/**
 * What the figures measured on this host share, made once by {@link Bench} before the first figure: the run's
 * options (and so the sample sizes), the report, the sandbox shape, and the peers, each with why it is missing
 * where it is (null when present).
 */
final class Setup {
    final Bench.Options o;
    final Report report;
    final PrintStream out;
    final SandboxSpec spec;
    final Native nativeHelper;
    final String nativeMissing;
    final Peers peers;
    final String peersMissing;
    final Map<String, String> missingTools;
    final String podmanImage;
    final String podmanMissing;

    Setup(Bench.Options o, Report report, PrintStream out, SandboxSpec spec, Native nativeHelper, String nativeMissing,
          Peers peers, String peersMissing, Map<String, String> missingTools, String podmanImage, String podmanMissing) {
        this.o = o;
        this.report = report;
        this.out = out;
        this.spec = spec;
        this.nativeHelper = nativeHelper;
        this.nativeMissing = nativeMissing;
        this.peers = peers;
        this.peersMissing = peersMissing;
        this.missingTools = missingTools;
        this.podmanImage = podmanImage;
        this.podmanMissing = podmanMissing;
    }

    /**
     * The native helper's posix_spawn of echo hi to its first byte, a peer of f over the rounds (its row reads
     * "unavailable" where the helper is missing).
     */
    Rounds.Peer nativeEcho(Figure f, int n, Rounds rounds) {
        return rounds.peer(f, "native posix_spawn of echo hi -> first byte", n, 20,
                k -> nativeHelper.spawn(k, "/bin/echo", "hi")[0], nativeHelper == null ? nativeMissing : null);
    }
}
