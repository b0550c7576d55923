package io.paddock.bench;

import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.bench.Report.Figure;
import io.paddock.bench.Report.Quantity;
import io.paddock.bench.host.Peers;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;

import static io.paddock.bench.Sampling.destroyAll;
import static io.paddock.bench.Sampling.counted;

/**
 * P5, create+destroy churn (cold creates) and a burst of concurrent creates, beside runc run churn.
 */
final class ChurnFigure {
    private final Report report;
    private final SandboxSpec spec;
    private final Bench.Options o;
    private final Peers peers;
    private final String peersMissing;

    ChurnFigure(Setup setup) {
        this.report = setup.report;
        this.spec = setup.spec;
        this.o = setup.o;
        this.peers = setup.peers;
        this.peersMissing = setup.peersMissing;
    }

    void run(Paddock p) throws Exception {
        Figure f = report.figure("P5", "create+destroy churn (cold creates; a pool cannot raise the sustained rate)",
                ">= 1.0x runc run churn sustained (10 min) with p99 drift <= 20 % and nothing left on the host; 100"
                        + " concurrent creates ready in <= 3 s");
        double seconds = secs(600, 15, 3);
        double peerSeconds = Math.min(seconds, secs(60, 15, 1));
        int workers = 4;
        Rounds rounds = new Rounds(o.rounds());
        Rounds.Rate churn = rounds.rate();
        Rounds.Rate peerChurn = rounds.rate();
        List<Path> bundles = new ArrayList<>();
        if (peers != null) {
            for (int w = 0; w < workers; w++) {
                bundles.add(peers.churnBundle(w));
            }
        }
        // {offset in Paddock's own churn time, latency} of every create+destroy: the tenths that drift compares
        // are tenths of the time Paddock churned, the peer's shares left out.
        List<long[]> ops = Collections.synchronizedList(new ArrayList<>());
        AtomicLong failures = new AtomicLong();
        Set<String> ids = java.util.concurrent.ConcurrentHashMap.newKeySet();
        long churned = 0;
        for (int r = 0; r < rounds.count(); r++) {
            rounds.begin(r);
            // Which goes first alternates, so that neither always meets what the other left behind (a destroy's
            // background work, a warm page cache).
            boolean peerFirst = r % 2 == 1;
            if (peerFirst) {
                peerRound(peerChurn, r, rounds.share(peerSeconds), bundles);
            }
            double[] done = churnRound(p, rounds.share(seconds), workers, churned, ops, failures, ids);
            churn.add(r, done);
            churned += (long) (done[1] * 1e9);
            if (!peerFirst) {
                peerRound(peerChurn, r, rounds.share(peerSeconds), bundles);
            }
        }
        List<long[]> sorted = new ArrayList<>(ops);
        sorted.sort((a, b) -> Long.compare(a[0], b[0]));
        long tenth = churned / 10;
        Stats all = Stats.of(sorted.stream().mapToLong(x -> x[1]).toArray());
        Stats first = Stats.of(sorted.stream().filter(x -> x[0] < tenth).mapToLong(x -> x[1]).toArray());
        Stats last = Stats.of(sorted.stream().filter(x -> x[0] >= 9 * tenth).mapToLong(x -> x[1]).toArray());
        double rate = churn.value();
        double drift = (last.p99() - first.p99()) / first.p99();
        f.paddock.put(String.format(Locale.ROOT, "churn, %d workers, %.0f s", workers, seconds),
                churn.quantity("sandboxes/s", Map.of("count", sorted.size(), "failures", failures.get())));
        f.paddock.put("create+destroy latency, whole run", all);
        f.paddock.put("create+destroy latency, first tenth", first);
        f.paddock.put("create+destroy latency, last tenth", last);
        f.paddock.put("p99 drift, last tenth vs first", Quantity.of(drift * 100, "%"));

        int burst = n(100, 100, 4);
        long[] ready = new long[burst];
        List<Sandbox> made = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch go = new CountDownLatch(1);
        ExecutorService burstPool = Executors.newFixedThreadPool(burst);
        long t0;
        try {
            List<Future<?>> fs = new ArrayList<>();
            long[] base = new long[1];
            for (int i = 0; i < burst; i++) {
                int k = i;
                fs.add(burstPool.submit(() -> {
                    go.await();
                    made.add(p.create(spec));
                    ready[k] = System.nanoTime() - base[0];
                    return null;
                }));
            }
            Thread.sleep(200);
            base[0] = System.nanoTime();
            t0 = base[0];
            go.countDown();
            for (Future<?> x : fs) {
                x.get();
            }
        } finally {
            burstPool.shutdown();
            made.forEach(sb -> ids.add(sb.id().value()));
            destroyAll(made, workers);
        }
        // Nothing of any of them may stay on the host: looked for once destroy() has returned for all, and again
        // for up to 10 s, so that what is removed in the background counts only if it never goes.
        List<String> left = io.paddock.bench.host.Leftovers.of(LocalOptions.DEFAULT_STATE_DIR, LocalOptions.DEFAULT_STORAGE_DIR, ids);
        int leftAtOnce = left.size();
        for (long until = System.nanoTime() + 10_000_000_000L; !left.isEmpty() && System.nanoTime() < until; ) {
            Thread.sleep(200);
            left = io.paddock.bench.host.Leftovers.of(LocalOptions.DEFAULT_STATE_DIR, LocalOptions.DEFAULT_STORAGE_DIR, ids);
        }
        f.paddock.put("left on the host after destroying all " + ids.size() + " sandboxes",
                new Quantity(left.size(), "items", Map.of("right after the last destroy", leftAtOnce,
                        "first", left.isEmpty() ? "" : left.get(0))));
        double allReady = Arrays.stream(ready).max().orElse(0) / 1e9;
        f.paddock.put(burst + " concurrent creates: all ready after", Quantity.of(allReady, "s"));
        f.paddock.put(burst + " concurrent creates: each ready after", Stats.of(ready));
        if (peers != null) {
            double peerRate = peerChurn.value();
            f.peers.put(String.format(Locale.ROOT, "runc run of /bin/true (create, start, wait, delete), %d workers, %.0f s",
                    workers, peerSeconds), peerChurn.quantity("containers/s"));
            f.ratio("Paddock churn / runc run churn", rate / peerRate);
            f.check(">= 1.0x runc run churn", rate >= peerRate, String.format(Locale.ROOT, "%.2fx", rate / peerRate));
        } else {
            f.peers.put("runc run churn", "unavailable: " + peersMissing);
        }
        f.check("p99 drift <= 20 %", drift <= 0.20, String.format(Locale.ROOT, "%+.1f %%", drift * 100));
        f.check(burst + " concurrent creates all ready <= 3 s", allReady <= 3, Report.fmt(allReady) + " s");
        f.notes.add(rounds.note() + "; each round churns Paddock for its share of the time and the runc peer for its"
                + " share, which of them first alternating; drift compares tenths of Paddock's own churn time");
        f.check("nothing left on the host at the end", left.isEmpty(), left.isEmpty() ? "nothing of " + ids.size()
                + " sandboxes" : left.size() + " items, e.g. " + left.get(0));
    }

    /**
     * One round of Paddock's churn: `workers` threads create and destroy for `seconds`; each op's start is recorded
     * as an offset in Paddock's churn time (`before` nanoseconds churned in earlier rounds). Returns {operations,
     * elapsed seconds}.
     */
    private double[] churnRound(Paddock p, double seconds, int workers, long before, List<long[]> ops, AtomicLong failures,
                                Set<String> ids) throws Exception {
        AtomicLong count = new AtomicLong();
        long begin = System.nanoTime();
        long end = begin + (long) (seconds * 1e9);
        ExecutorService pool = Executors.newFixedThreadPool(workers);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int w = 0; w < workers; w++) {
                fs.add(pool.submit(() -> {
                    while (System.nanoTime() < end) {
                        long t0 = System.nanoTime();
                        try {
                            Sandbox sb = p.create(spec);
                            ids.add(sb.id().value());
                            sb.destroy();
                            ops.add(new long[] {before + t0 - begin, System.nanoTime() - t0});
                            count.incrementAndGet();
                        } catch (RuntimeException e) {
                            failures.incrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> x : fs) {
                x.get();
            }
        } finally {
            pool.shutdown();
        }
        return new double[] {count.get(), (System.nanoTime() - begin) / 1e9};
    }

    /** One round of the runc peer's churn, one bundle per worker; nothing where the peer is missing. */
    private void peerRound(Rounds.Rate rate, int r, double seconds, List<Path> bundles) throws Exception {
        if (peers == null) {
            return;
        }
        rate.add(r, counted(bundles.size(), seconds, w -> {
            peers.runcChurn(bundles.get((int) (w % bundles.size())));
            return 0;
        }));
    }

    private int n(int full, int quick, int min) {
        return o.n(full, quick, min);
    }

    private double secs(double full, double quick, double min) {
        return o.secs(full, quick, min);
    }
}
