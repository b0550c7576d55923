package io.paddock.bench;

import io.paddock.bench.Report.Figure;
import io.paddock.bench.host.Host;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A figure's samples split into rounds, interleaved in time: round r of every series of the figure (Paddock's
 * and its peers') is taken before round r + 1 of any, and the 1-minute load average is read as each round
 * begins. The figure's rows still pool all samples; each row also carries the p50 of every round and their
 * spread, so that a number is judged with the drift of this shared machine beside it. The rounds divide the
 * samples a figure takes; they do not add any.
 *
 * <p>Use: {@code for (int r = 0; r < rounds.count(); r++) { rounds.begin(r); ... series.add(r, nanos) ... }}.
 * Not thread-safe: the figure's own thread adds every sample and count (a rate's workers count on their own).
 */
final class Rounds {
    private final int count;
    private final double[] load;

    Rounds(int count) {
        if (count < 1) {
            throw new IllegalArgumentException("rounds must be >= 1, got " + count);
        }
        this.count = count;
        this.load = new double[count];
        Arrays.fill(load, Double.NaN);
    }

    int count() {
        return count;
    }

    /** The figure's note on how its samples were taken. */
    String note() {
        return "samples taken in " + count + " rounds interleaved in time (round r of every row before round r + 1 of"
                + " any); the \"rounds\" column is half the spread of the rounds' p50s (or rates), in % of their median";
    }

    /** Marks round r's start: reads the load average. */
    void begin(int r) {
        load[r] = Host.load1();
    }

    /** Round r's share of n samples: n split as evenly as it goes, the first rounds taking the remainder. */
    int share(int n, int r) {
        return n / count + (r < n % count ? 1 : 0);
    }

    /** A round's share of a duration. */
    double share(double seconds) {
        return seconds / count;
    }

    Series series() {
        return new Series();
    }

    Rate rate() {
        return new Rate();
    }

    /** A peer sampled one run at a time, after min(3, n) unmeasured ones. */
    Peer peer(Figure f, String name, int n, Sampling.Sample s, String missing) {
        return new Peer(f, name, n, Math.min(3, n), k -> Sampling.sample(k, s), missing);
    }

    /** A peer sampled in batches (the native helper spawns k at a time), after warmUp unmeasured runs. */
    Peer peer(Figure f, String name, int n, int warmUp, Peer.Batch batch, String missing) {
        return new Peer(f, name, n, warmUp, batch, missing);
    }

    /** The spread of per-round values (p50s, rates; NaN for a round without one) with the load at each round's start. */
    Spread spread(double[] perRound) {
        return new Spread(perRound.clone(), load.clone());
    }

    /**
     * A row's values round by round (p50s in microseconds, or rates), NaN where a round had no sample, and the
     * load average as each round began.
     */
    record Spread(double[] values, double[] load) {
        /** The values of the rounds that have one. */
        List<Double> rounds() {
            return present(values);
        }

        /** The load average as each round that has a value began. */
        List<Double> loads() {
            return present(load);
        }

        private List<Double> present(double[] v) {
            List<Double> out = new ArrayList<>();
            for (int r = 0; r < values.length; r++) {
                if (!Double.isNaN(values[r])) {
                    out.add(v[r]);
                }
            }
            return out;
        }

        /** (max - min) / |median| of the rounds' values, in percent; NaN with fewer than two rounds or a zero median. */
        double pct() {
            double[] s = rounds().stream().mapToDouble(Double::doubleValue).sorted().toArray();
            if (s.length < 2) {
                return Double.NaN;
            }
            double median = s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
            return median == 0 ? Double.NaN : (s[s.length - 1] - s[0]) / Math.abs(median) * 100;
        }

        /** Round by round this minus another (an overhead measured in the same rounds); null where they do not align. */
        Spread minus(Spread o) {
            if (o == null || o.values.length != values.length) {
                return null;
            }
            double[] d = new double[values.length];
            for (int r = 0; r < d.length; r++) {
                d[r] = values[r] - o.values[r];
            }
            return new Spread(d, load);
        }

        /** "±7%" (half the spread), or "" where there is none. */
        String plusMinus() {
            double p = pct();
            return Double.isNaN(p) ? "" : String.format(Locale.ROOT, "±%.0f%%", p / 2);
        }
    }

    /** One row's latency samples, kept by round. */
    final class Series {
        private final List<List<Long>> byRound = new ArrayList<>();

        private Series() {
            for (int r = 0; r < count; r++) {
                byRound.add(new ArrayList<>());
            }
        }

        void add(int r, long nanos) {
            byRound.get(r).add(nanos);
        }

        void addAll(int r, long[] nanos) {
            for (long t : nanos) {
                add(r, t);
            }
        }

        /** All samples pooled, with the p50 of each round. */
        Stats stats() {
            List<Long> all = new ArrayList<>();
            double[] p50 = new double[count];
            for (int r = 0; r < count; r++) {
                List<Long> one = byRound.get(r);
                all.addAll(one);
                p50[r] = one.isEmpty() ? Double.NaN : Stats.of(one).p50();
            }
            return Stats.of(all).withSpread(spread(p50));
        }
    }

    /** One row's rate, counted by round. */
    final class Rate {
        private final double[] count = new double[Rounds.this.count];
        private final double[] seconds = new double[Rounds.this.count];

        /** Adds round r's operations over its seconds. */
        void add(int r, double operations, double elapsed) {
            count[r] += operations;
            seconds[r] += elapsed;
        }

        /** Adds round r's {operations, elapsed seconds} (as {@link Sampling#counted} returns them); returns the rate. */
        double add(int r, double[] counted) {
            add(r, counted[0], counted[1]);
            return counted[0] / counted[1];
        }

        /** The operations counted in all rounds. */
        double operations() {
            return Arrays.stream(count).sum();
        }

        /** Operations over seconds, all rounds pooled. */
        double value() {
            return Arrays.stream(count).sum() / Arrays.stream(seconds).sum();
        }

        /** The pooled rate with each round's rate. */
        Report.Quantity quantity(String unit) {
            return quantity(unit, Map.of());
        }

        /** As {@link #quantity(String)}, with these details beside it. */
        Report.Quantity quantity(String unit, Map<String, Object> detail) {
            return new Report.Quantity(value(), unit, detail, spread(perRound()));
        }

        /** Each round's rate (NaN for a round that ran none of this row). */
        double[] perRound() {
            double[] perRound = new double[count.length];
            for (int r = 0; r < perRound.length; r++) {
                perRound[r] = seconds[r] > 0 ? count[r] / seconds[r] : Double.NaN;
            }
            return perRound;
        }
    }

    /**
     * A peer measured over the rounds (a few unmeasured runs first), or recorded as "unavailable: reason": where
     * it is missing, or where a sample fails (then it is not tried again).
     */
    final class Peer {
        interface Batch {
            long[] take(int n) throws Exception;
        }

        private final Figure f;
        private final String name;
        private final int n;
        private final int warmUp;
        private final Batch batch;
        private String missing;
        private final Series series = new Series();
        private boolean warm;

        private Peer(Figure f, String name, int n, int warmUp, Batch batch, String missing) {
            this.f = f;
            this.name = name;
            this.n = n;
            this.warmUp = warmUp;
            this.batch = batch;
            this.missing = missing;
        }

        /** Takes round r's share of this peer's samples. */
        void round(int r) {
            if (missing != null) {
                return;
            }
            try {
                if (!warm) {
                    if (warmUp > 0) {
                        batch.take(warmUp);
                    }
                    warm = true;
                }
                int k = share(n, r);
                if (k > 0) {
                    series.addAll(r, batch.take(k));
                }
            } catch (Exception e) {
                missing = Host.shorten(String.valueOf(e.getMessage()));
            }
        }

        /** Records the peer in the figure; returns its stats, or null where it is unavailable. */
        Stats finish() {
            if (missing != null) {
                f.peers.put(name, "unavailable: " + missing);
                return null;
            }
            Stats st = series.stats();
            f.peers.put(name, st);
            return st;
        }
    }
}
