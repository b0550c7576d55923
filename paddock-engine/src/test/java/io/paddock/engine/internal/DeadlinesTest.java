package io.paddock.engine.internal;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;

import static org.assertj.core.api.Assertions.assertThat;

/** How a restarted engine re-derives a persisted deadline (ATTACKS.md R10). */
class DeadlinesTest {
    private static final Instant RECORDED_WALL = Instant.parse("2026-01-01T12:00:00Z");
    private static final long RECORDED_NANOS = 5_000_000_000_000L;
    /** Recorded with 10 minutes to go. */
    private static final Deadlines.Deadline TEN_MINUTES =
            new Deadlines.Deadline(RECORDED_WALL.plus(Duration.ofMinutes(10)), RECORDED_NANOS + Duration.ofMinutes(10).toNanos(), "boot-a");

    @Test
    void onTheSameBootTheMonotonicClockDecidesWhateverTheWallClockSays() {
        long twoMinutesLater = RECORDED_NANOS + Duration.ofMinutes(2).toNanos();
        for (Duration step : new Duration[] {Duration.ZERO, Duration.ofHours(1), Duration.ofHours(-1), Duration.ofDays(-400)}) {
            Instant wallNow = RECORDED_WALL.plus(Duration.ofMinutes(2)).plus(step);
            assertThat(Deadlines.remaining(TEN_MINUTES, wallNow, twoMinutesLater, "boot-a")).as("wall clock stepped by " + step)
                    .isEqualTo(Duration.ofMinutes(8));
        }
    }

    @Test
    void aPassedDeadlineLeavesZeroNeverANegativeDelay() {
        long anHourLater = RECORDED_NANOS + Duration.ofHours(1).toNanos();
        assertThat(Deadlines.remaining(TEN_MINUTES, RECORDED_WALL.minus(Duration.ofHours(5)), anHourLater, "boot-a"))
                .isEqualTo(Duration.ZERO);
        assertThat(Deadlines.remaining(TEN_MINUTES, RECORDED_WALL.plus(Duration.ofHours(1)), 0, "boot-b")).isEqualTo(Duration.ZERO);
    }

    @Test
    void afterARebootOrForOldRowsTheWallClockIsAllThereIs() {
        Instant wallNow = RECORDED_WALL.plus(Duration.ofMinutes(3));
        // another boot: the monotonic value means nothing (and is far off here)
        assertThat(Deadlines.remaining(TEN_MINUTES, wallNow, 42, "boot-b")).isEqualTo(Duration.ofMinutes(7));
        // a row written before monotonic deadlines were recorded
        Deadlines.Deadline old = new Deadlines.Deadline(TEN_MINUTES.wall(), 0, "");
        assertThat(Deadlines.remaining(old, wallNow, RECORDED_NANOS, "")).isEqualTo(Duration.ofMinutes(7));
        assertThat(Deadlines.remaining(old, wallNow, RECORDED_NANOS, "boot-a")).isEqualTo(Duration.ofMinutes(7));
    }

    @Test
    void afterRecordsThisBootAndTheMonotonicValue() {
        long now = System.nanoTime();
        Deadlines.Deadline d = Deadlines.after(now, Duration.ofSeconds(30));
        assertThat(d.monotonic()).isEqualTo(now + 30_000_000_000L);
        assertThat(d.boot()).isEqualTo(Deadlines.BOOT).isNotEmpty();
        assertThat(Deadlines.remaining(d, Instant.now().plus(Duration.ofHours(1)), now, Deadlines.BOOT))
                .isEqualTo(Duration.ofSeconds(30));
    }
}
