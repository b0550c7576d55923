package io.paddock.bench;

import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.bench.Report.Figure;
import io.paddock.engine.internal.LocalPaddock;
import io.paddock.server.PaddockServer;
import io.paddock.server.ServerOptions;

import java.security.SecureRandom;
import java.util.HexFormat;

import static io.paddock.bench.Sampling.awaitPoolFull;
import static io.paddock.bench.Sampling.execTrue;
import static io.paddock.bench.Sampling.firstByte;
import static io.paddock.bench.Sampling.interleave;
import static io.paddock.bench.Sampling.ms;

/**
 * P10, the warm create (P1) and the exec (P3) through the remote API (REST and WebSocket on loopback, the daemon
 * in this JVM) beside the same embedded, samples interleaved.
 */
final class RemoteFigure {
    private final Report report;
    private final SandboxSpec spec;
    private final Bench.Options o;

    RemoteFigure(Setup setup) {
        this.report = setup.report;
        this.spec = setup.spec;
        this.o = setup.o;
    }

    void run(LocalPaddock pooled) throws Exception {
        Figure f = report.figure("P10", "the same through the remote API (REST/WebSocket on loopback), remote - embedded",
                "P1 and P3 each + <= 1 ms");
        String token = "bench-" + HexFormat.of().formatHex(new SecureRandom().generateSeed(16));
        try (PaddockServer server = PaddockServer.start(ServerOptions.builder().host("127.0.0.1").port(0).token(token).build(), pooled);
             Paddock remote = Paddock.connect(server.url(), token);
             LoopbackFloor floor = LoopbackFloor.start()) {
            String warmUp = warmUp(pooled, remote);
            Sampling.untilJitSettles("the floor's requests", o.secs(20, 10, 1), i -> {
                floor.httpRoundTrip();
                floor.webSocketRoundTrip();
                return 2;
            });
            int creates = n(300, 30, 4);
            int execs = n(1000, 200, 5);
            Rounds rounds = new Rounds(o.rounds());
            Rounds.Series warmL = rounds.series();
            Rounds.Series warmR = rounds.series();
            Rounds.Series startL = rounds.series();
            Rounds.Series startR = rounds.series();
            Rounds.Series trueL = rounds.series();
            Rounds.Series trueR = rounds.series();
            Rounds.Series httpHot = rounds.series();
            Rounds.Series wsHot = rounds.series();
            Rounds.Series httpFloor = rounds.series();
            Rounds.Series wsFloor = rounds.series();
            try (Sandbox l = pooled.create(spec); Sandbox r = remote.create(spec)) {
                for (int i = 0; i < n(200, 50, 3); i++) {
                    firstByte(l, System.nanoTime());
                    firstByte(r, System.nanoTime());
                    execTrue(r);
                }
                for (int round = 0; round < rounds.count(); round++) {
                    rounds.begin(round);
                    long[][] warm = interleave(rounds.share(creates, round), () -> {
                        awaitPoolFull(pooled);
                        return createFirstByte(pooled);
                    }, () -> {
                        awaitPoolFull(pooled);
                        return createFirstByte(remote);
                    });
                    warmL.addAll(round, warm[0]);
                    warmR.addAll(round, warm[1]);
                    awaitPoolFull(pooled); // the execs do not share the cores with the last refill
                    int k = rounds.share(execs, round);
                    long[][] start = interleave(k, () -> firstByte(l, System.nanoTime()), () -> firstByte(r, System.nanoTime()));
                    startL.addAll(round, start[0]);
                    startR.addAll(round, start[1]);
                    long[][] execTrue = interleave(k, () -> execTrue(l), () -> execTrue(r));
                    trueL.addAll(round, execTrue[0]);
                    trueR.addAll(round, execTrue[1]);
                    long[][] hot = interleave(k, floor::httpRoundTrip, floor::webSocketRoundTrip);
                    httpHot.addAll(round, hot[0]);
                    wsHot.addAll(round, hot[1]);
                    // As the remote samples are taken: each after an embedded command, while the stack sat idle.
                    long[][] spaced = interleave(k, () -> {
                        firstByte(l, System.nanoTime());
                        return floor.httpRoundTrip();
                    }, () -> {
                        firstByte(l, System.nanoTime());
                        return floor.webSocketRoundTrip();
                    });
                    httpFloor.addAll(round, spaced[0]);
                    wsFloor.addAll(round, spaced[1]);
                }
            }
            Stats wl = warmL.stats();
            Stats wr = warmR.stats();
            Stats sl = startL.stats();
            Stats sr = startR.stats();
            f.paddock.put("P1 warm create -> first byte, embedded", wl);
            f.paddock.put("P1 warm create -> first byte, remote", wr);
            f.paddock.put("P3 start -> first byte (echo hi), embedded", sl);
            f.paddock.put("P3 start -> first byte (echo hi), remote", sr);
            f.paddock.put("exec(/bin/true) round trip, embedded", trueL.stats());
            f.paddock.put("exec(/bin/true) round trip, remote", trueR.stats());
            f.paddock.put("P1 remote added latency", wr.minus(wl));
            f.paddock.put("P3 remote added latency", sr.minus(sl));
            Stats hf = httpFloor.stats();
            Stats wf = wsFloor.stats();
            f.paddock.put("floor as sampled: HTTP POST round trip, bare handler", hf);
            f.paddock.put("floor as sampled: WebSocket message round trip, echo", wf);
            f.paddock.put("floor back to back: HTTP POST round trip, bare handler", httpHot.stats());
            f.paddock.put("floor back to back: WebSocket message round trip, echo", wsHot.stats());
            // what the remote API adds beyond its transport: a create is one request and one exec, an exec one message
            f.ratio("P1 remote added / its floor as sampled (HTTP + WebSocket, p50)", (wr.p50() - wl.p50()) / (hf.p50() + wf.p50()));
            f.ratio("P3 remote added / its floor as sampled (WebSocket, p50)", (sr.p50() - sl.p50()) / wf.p50());
            f.ratio("P1 remote / embedded (p50)", wr.p50() / wl.p50());
            f.ratio("P3 remote / embedded (p50)", sr.p50() / sl.p50());
            f.check("P1 remote - embedded p50 <= 1 ms", wr.p50() - wl.p50() <= 1000, ms(wr.p50() - wl.p50()));
            f.check("P3 remote - embedded p50 <= 1 ms", sr.p50() - sl.p50() <= 1000, ms(sr.p50() - sl.p50()));
            f.notes.add("samples interleaved (embedded, remote, remote, embedded, ...) so that drift hits both alike;"
                    + " the daemon runs in this JVM on 127.0.0.1; the two sandboxes of the exec rows stay open through all"
                    + " rounds");
            f.notes.add("the floor rows: the same HTTP and WebSocket stack on 127.0.0.1 with an empty handler and an echo, in"
                    + " this JVM; a remote create adds one HTTP request and one exec to the embedded one, a remote exec one"
                    + " message out and the output back, so the added latency cannot go below the floor on this machine;"
                    + " 'as sampled': each round trip after an embedded command, as the remote samples are taken (the"
                    + " stack idle meanwhile), the floor the ratios use; 'back to back': the same round trips hot");
            f.notes.add(warmUp);
            f.notes.add(rounds.note());
        }
    }

    /** The remote calls until the JIT has settled ({@link Sampling#untilJitSettles}); every 20th round a create. */
    private String warmUp(LocalPaddock pooled, Paddock remote) throws Exception {
        try (Sandbox r = remote.create(spec)) {
            return Sampling.untilJitSettles("remote calls", o.secs(60, 30, 2), i -> {
                firstByte(r, System.nanoTime());
                execTrue(r);
                remote.get(r.id());
                if (i % 20 == 19) {
                    awaitPoolFull(pooled);
                    try (Sandbox sb = remote.create(spec)) {
                        firstByte(sb, System.nanoTime());
                    }
                    return 5;
                }
                return 3;
            });
        }
    }

    private long createFirstByte(Paddock p) throws Exception {
        long t0 = System.nanoTime();
        try (Sandbox sb = p.create(spec)) {
            return firstByte(sb, t0);
        }
    }

    private int n(int full, int quick, int min) {
        return o.n(full, quick, min);
    }
}
