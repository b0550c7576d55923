package io.paddock.bench;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Percentiles of a sample of latencies; fields in microseconds. Where the sample was taken in rounds
 * ({@link Rounds}), spread holds each round's p50 and the load as it began; otherwise it is null.
 */
record Stats(int n, double p50, double p90, double p99, double max, double mean, Rounds.Spread spread) {
    Stats(int n, double p50, double p90, double p99, double max, double mean) {
        this(n, p50, p90, p99, max, mean, null);
    }

    static Stats of(long[] nanos) {
        if (nanos.length == 0) {
            return new Stats(0, 0, 0, 0, 0, 0);
        }
        long[] s = nanos.clone();
        Arrays.sort(s);
        double mean = Arrays.stream(s).average().orElse(0) / 1000.0;
        return new Stats(s.length, pct(s, 50), pct(s, 90), pct(s, 99), s[s.length - 1] / 1000.0, mean);
    }

    static Stats of(List<Long> nanos) {
        return of(nanos.stream().mapToLong(Long::longValue).toArray());
    }

    Stats withSpread(Rounds.Spread s) {
        return new Stats(n, p50, p90, p99, max, mean, s);
    }

    private static double pct(long[] sorted, double p) {
        int i = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))] / 1000.0;
    }

    Map<String, Object> toMap() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("n", n);
        m.put("p50_us", round(p50));
        m.put("p90_us", round(p90));
        m.put("p99_us", round(p99));
        m.put("max_us", round(max));
        m.put("mean_us", round(mean));
        if (spread != null) {
            m.put("rounds_p50_us", spread.rounds().stream().map(Stats::round).toList());
            putSpread(m, spread);
        }
        return m;
    }

    /** spread_pct (where there is one) and the load at each round's start, into a row's JSON. */
    static void putSpread(Map<String, Object> m, Rounds.Spread spread) {
        double pct = spread.pct();
        if (!Double.isNaN(pct)) {
            m.put("spread_pct", round(pct));
        }
        m.put("load", spread.loads().stream().map(l -> Math.round(l * 100) / 100.0).toList());
    }

    static double round(double v) {
        return Math.round(v * 10) / 10.0;
    }

    /** This minus another, percentile by percentile (an overhead); round by round where both were taken in the same rounds. */
    Stats minus(Stats o) {
        return new Stats(n, p50 - o.p50, p90 - o.p90, p99 - o.p99, max - o.max, mean - o.mean,
                spread == null ? null : spread.minus(o.spread));
    }
}
