package io.paddock.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The harness's --quick mode end to end on a tiny sample (every figure, every peer), so that it cannot rot.
 * It checks the report's shape, not the numbers: benchmarks are not unit tests. Needs root and runc.
 */
class BenchQuickTest {
    @TempDir
    Path dir;

    @Test
    void quickModeRunsEveryFigureAndWritesTheReport() throws Exception {
        Path json = dir.resolve("bench.json");
        ByteArrayOutputStream text = new ByteArrayOutputStream();
        int code = Bench.run(new Bench.Options(true, json, new LinkedHashSet<>(), 0.03, false, dir.resolve("cache")),
                new PrintStream(text, true, StandardCharsets.UTF_8));
        String table = text.toString(StandardCharsets.UTF_8);
        assertThat(code).as(table).isZero();
        JsonNode root = new ObjectMapper().readTree(json.toFile());
        for (String key : List.of("kernel", "cpus", "jdk", "gc", "runc", "load_average_start")) {
            assertThat(root.path("environment").has(key)).as(key).isTrue();
        }
        JsonNode figures = root.path("figures");
        for (String id : List.of("P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8", "P10", "P11", "P12")) {
            JsonNode f = figures.path(id);
            assertThat(f.isMissingNode()).as(id + " missing: " + table).isFalse();
            assertThat(f.has("unavailable")).as(id + ": " + f.path("unavailable").asText()).isFalse();
            assertThat(f.path("paddock").size()).as(id).isPositive();
            assertThat(f.path("checks").size()).as(id).isPositive();
        }
        assertThat(figures.has("P9")).isTrue();
        // every peer is measured or says why not; podman's image is not built in a test (--no-build)
        assertThat(figures.path("P2").path("peers").toString()).contains("runc run one-shot", "bwrap one-shot", "podman");
        assertThat(figures.path("P3").path("peers").path("native posix_spawn of echo hi -> first byte").path("p50_us").asDouble())
                .isPositive();
        assertThat(figures.path("P7").path("checks").path("zero silent loss").asText()).startsWith("met");
        // the latency figures are taken in rounds: each row has its rounds' p50s, their spread and the load
        JsonNode warm = figures.path("P1").path("paddock").path("warm create -> first byte (pool hit)");
        assertThat(warm.path("rounds_p50_us").size()).as(warm.toString()).isEqualTo(3);
        assertThat(warm.path("load").size()).as(warm.toString()).isEqualTo(3);
        assertThat(warm.has("spread_pct")).as(warm.toString()).isTrue();
        assertThat(figures.path("P4").path("paddock").path("8 clients over 8 sandboxes").path("rounds_value").size()).isEqualTo(3);
        // P5's churn and its runc peer take turns, round by round: each has a rate for every round
        JsonNode churn = figures.path("P5");
        assertThat(rowStartingWith(churn.path("paddock"), "churn, 4 workers").path("rounds_value").size()).as(churn.toString())
                .isEqualTo(3);
        assertThat(rowStartingWith(churn.path("peers"), "runc run of /bin/true").path("rounds_value").size())
                .as(churn.toString()).isEqualTo(3);
        assertThat(churn.path("ratios").path("Paddock churn / runc run churn").asDouble()).isPositive();
        for (String id : List.of("P1", "P2", "P3", "P4", "P10")) {
            assertThat(figures.path(id).path("load").has("start")).as(id).isTrue();
        }
        // P6 destroys every sandbox it made and finds nothing of them left (runc state, cgroups, mounts, leases)
        assertThat(figures.path("P6").path("checks").path("nothing left after destroy").asText()).startsWith("met");
        assertThat(table).contains("P1 ", "P10 ", "ratio", "rounds", "±");
    }

    private static JsonNode rowStartingWith(JsonNode rows, String prefix) {
        for (var it = rows.fields(); it.hasNext(); ) {
            var e = it.next();
            if (e.getKey().startsWith(prefix)) {
                return e.getValue();
            }
        }
        throw new AssertionError("no row starting with \"" + prefix + "\" in " + rows);
    }
}
