package io.paddock.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The run's results: the environment and one entry per figure, printed as a table and written as JSON. */
final class Report {
    /**
     * A measured quantity that is not a latency distribution: a rate, a size, a percentage. Where it was measured
     * in rounds ({@link Rounds}), spread holds each round's value and the load as it began; otherwise it is null.
     */
    record Quantity(double value, String unit, Map<String, Object> detail, Rounds.Spread spread) {
        Quantity(double value, String unit, Map<String, Object> detail) {
            this(value, unit, detail, null);
        }

        static Quantity of(double value, String unit) {
            return new Quantity(value, unit, Map.of());
        }

        Map<String, Object> toMap() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("value", Math.round(value * 1000) / 1000.0);
            m.put("unit", unit);
            m.putAll(detail);
            if (spread != null) {
                m.put("rounds_value", spread.rounds().stream().map(v -> Math.round(v * 1000) / 1000.0).toList());
                Stats.putSpread(m, spread);
            }
            return m;
        }
    }

    static final class Figure {
        final String id;
        final String title;
        final String target;
        final Map<String, Object> paddock = new LinkedHashMap<>();
        final Map<String, Object> peers = new LinkedHashMap<>();
        final Map<String, Object> ratios = new LinkedHashMap<>();
        final Map<String, Object> checks = new LinkedHashMap<>();
        final List<String> notes = new ArrayList<>();
        String unavailable;
        double seconds;
        /** The 1-minute load average as the figure began and as it ended. */
        final List<Double> load = new ArrayList<>();

        Figure(String id, String title, String target) {
            this.id = id;
            this.title = title;
            this.target = target;
        }

        /** Records a target check: met or missed, with the measured value in words. */
        void check(String name, boolean met, String measured) {
            checks.put(name, (met ? "met: " : "MISSED: ") + measured);
        }

        void ratio(String name, double value) {
            ratios.put(name, Double.isFinite(value) ? Math.round(value * 100) / 100.0 : "n/a");
        }

        Map<String, Object> toMap() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("title", title);
            m.put("target", target);
            if (unavailable != null) {
                m.put("unavailable", unavailable);
            }
            m.put("paddock", convert(paddock));
            m.put("peers", convert(peers));
            m.put("ratios", ratios);
            m.put("checks", checks);
            if (!notes.isEmpty()) {
                m.put("notes", notes);
            }
            m.put("seconds", Math.round(seconds * 10) / 10.0);
            if (load.size() == 2) {
                Map<String, Object> l = new LinkedHashMap<>();
                l.put("start", load.get(0));
                l.put("end", load.get(1));
                m.put("load", l);
            }
            return m;
        }
    }

    final Map<String, Object> environment = new LinkedHashMap<>();
    final Map<String, Figure> figures = new LinkedHashMap<>();

    Figure figure(String id, String title, String target) {
        Figure f = new Figure(id, title, target);
        figures.put(id, f);
        return f;
    }

    private static Map<String, Object> convert(Map<String, Object> in) {
        Map<String, Object> out = new LinkedHashMap<>();
        in.forEach((k, v) -> out.put(k, v instanceof Stats s ? s.toMap() : v instanceof Quantity q ? q.toMap() : v));
        return out;
    }

    Map<String, Object> toMap() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("environment", environment);
        Map<String, Object> f = new LinkedHashMap<>();
        figures.forEach((k, v) -> f.put(k, v.toMap()));
        m.put("figures", f);
        return m;
    }

    void writeJson(Path file) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        Files.writeString(file, new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(toMap()));
    }

    void printTable(PrintStream out) {
        out.println();
        out.println("Environment:");
        environment.forEach((k, v) -> out.printf(Locale.ROOT, "  %-14s %s%n", k, v));
        out.println();
        out.printf(Locale.ROOT, "%-64s %6s %9s %9s %9s %9s %6s%n", "figure (latencies in ms)", "n", "p50", "p90", "p99", "max",
                "rounds");
        for (Figure f : figures.values()) {
            out.println("-".repeat(110));
            out.printf(Locale.ROOT, "%s %s   [target: %s]%n", f.id, f.title, f.target);
            if (f.load.size() == 2) {
                out.printf(Locale.ROOT, "  load average (1 min) as it began and ended: %s -> %s%n", f.load.get(0), f.load.get(1));
            }
            if (f.unavailable != null) {
                out.println("  unavailable: " + f.unavailable);
            }
            f.paddock.forEach((k, v) -> out.println(row("  Paddock: " + k, v)));
            f.peers.forEach((k, v) -> out.println(row("  peer: " + k, v)));
            f.ratios.forEach((k, v) -> out.printf(Locale.ROOT, "  ratio %-58s %s%n", k, v));
            f.checks.forEach((k, v) -> out.printf(Locale.ROOT, "  %-64s %s%n", k, v));
            f.notes.forEach(n -> out.println("  note: " + n));
        }
        out.println("-".repeat(110));
    }

    private static String row(String name, Object v) {
        String label = name.length() > 64 ? name.substring(0, 63) + "…" : name;
        if (v instanceof Stats s) {
            return String.format(Locale.ROOT, "%-64s %6d %9.3f %9.3f %9.3f %9.3f %6s", label, s.n(), s.p50() / 1000,
                    s.p90() / 1000, s.p99() / 1000, s.max() / 1000, s.spread() == null ? "" : s.spread().plusMinus()).stripTrailing();
        }
        if (v instanceof Quantity q) {
            return String.format(Locale.ROOT, "%-64s %s %s%s%s", label, fmt(q.value()), q.unit(),
                    q.spread() == null || q.spread().plusMinus().isEmpty() ? "" : " " + q.spread().plusMinus() + " over rounds",
                    q.detail().isEmpty() ? "" : "  " + q.detail());
        }
        return String.format(Locale.ROOT, "%-64s %s", label, v);
    }

    static String fmt(double v) {
        return Math.abs(v) >= 100 ? String.format(Locale.ROOT, "%.0f", v) : String.format(Locale.ROOT, "%.3g", v);
    }
}
