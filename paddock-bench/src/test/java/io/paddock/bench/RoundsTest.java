package io.paddock.bench;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** How samples split into rounds are pooled, spread and reported (no sandbox needed). */
class RoundsTest {
    @Test
    void samplesAreSharedOutWithoutAddingAny() {
        Rounds rounds = new Rounds(3);
        assertThat(List.of(rounds.share(10, 0), rounds.share(10, 1), rounds.share(10, 2))).containsExactly(4, 3, 3);
        assertThat(List.of(rounds.share(2, 0), rounds.share(2, 1), rounds.share(2, 2))).containsExactly(1, 1, 0);
    }

    @Test
    void aRowPoolsItsSamplesAndKeepsEachRoundsMedian() {
        Rounds rounds = new Rounds(3);
        Rounds.Series s = rounds.series();
        for (int r = 0; r < 3; r++) {
            rounds.begin(r);
            for (long us : new long[] {1000, 1000 + 100 * r, 5000}) {
                s.add(r, us * 1000);
            }
        }
        Stats st = s.stats();
        assertThat(st.n()).isEqualTo(9);
        assertThat(st.p50()).isEqualTo(1100);
        assertThat(st.spread().rounds()).containsExactly(1000.0, 1100.0, 1200.0);
        assertThat(st.spread().pct()).isCloseTo(200.0 / 1100 * 100, org.assertj.core.data.Offset.offset(1e-9));
        assertThat(st.spread().loads()).hasSize(3);
        Map<String, Object> json = st.toMap();
        assertThat(json).containsKeys("p50_us", "rounds_p50_us", "spread_pct", "load");
        assertThat(json.get("rounds_p50_us")).isEqualTo(List.of(1000.0, 1100.0, 1200.0));
        assertThat(json.get("spread_pct")).isEqualTo(18.2);
    }

    @Test
    void anOverheadIsTakenRoundByRound() {
        Rounds rounds = new Rounds(2);
        Rounds.Series a = rounds.series();
        Rounds.Series b = rounds.series();
        a.add(0, 3_000_000);
        a.add(1, 4_000_000);
        b.add(0, 1_000_000);
        b.add(1, 1_500_000);
        Stats d = a.stats().minus(b.stats());
        assertThat(d.spread().rounds()).containsExactly(2000.0, 2500.0);
        assertThat(Stats.of(new long[] {1}).minus(b.stats()).spread()).isNull();
    }

    @Test
    void aRoundWithoutSamplesIsLeftOutAndOneRoundHasNoSpread() {
        Rounds rounds = new Rounds(3);
        Rounds.Series s = rounds.series();
        s.add(1, 2_000_000);
        Stats st = s.stats();
        assertThat(st.spread().rounds()).containsExactly(2000.0);
        assertThat(st.spread().pct()).isNaN();
        assertThat(st.toMap()).doesNotContainKey("spread_pct").containsKey("rounds_p50_us");
    }

    @Test
    void aRateIsPooledOverTimeAndEachRoundKept() {
        Rounds rounds = new Rounds(2);
        Rounds.Rate rate = rounds.rate();
        rate.add(0, 1000, 1.0);
        rate.add(1, 3000, 1.0);
        Report.Quantity q = rate.quantity("execs/s");
        assertThat(q.value()).isEqualTo(2000);
        assertThat(q.toMap()).containsEntry("rounds_value", List.of(1000.0, 3000.0)).containsEntry("spread_pct", 100.0);
    }

    @Test
    void theTableShowsHalfTheSpread() {
        Rounds rounds = new Rounds(2);
        Rounds.Series s = rounds.series();
        s.add(0, 900_000);
        s.add(1, 1_100_000);
        Report report = new Report();
        report.figure("P1", "t", "x").paddock.put("warm create -> first byte (pool hit)", s.stats());
        ByteArrayOutputStream text = new ByteArrayOutputStream();
        report.printTable(new PrintStream(text, true, StandardCharsets.UTF_8));
        assertThat(text.toString(StandardCharsets.UTF_8)).contains("±10%");
    }
}
