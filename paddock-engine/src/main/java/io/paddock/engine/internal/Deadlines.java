package io.paddock.engine.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;

/**
 * Lifetime deadlines that survive an engine restart without trusting the wall clock (ATTACKS.md R10).
 *
 * <p>The engine times everything on the monotonic clock: {@link System#nanoTime()}, which on Linux is
 * {@code CLOCK_MONOTONIC}, one clock shared by every process since boot and never stepped. A persisted
 * deadline keeps that clock's value and the boot it belongs to beside the wall-clock instant users see. A
 * restarted engine on the same boot re-derives the time left from the monotonic value, so stepping the
 * wall clock (NTP, an operator) while the engine was down changes nothing. Only across a reboot, which no
 * sandbox survives, or for rows written before monotonic deadlines were recorded, is the wall clock used.
 */
final class Deadlines {
    /** This boot's id ({@code /proc/sys/kernel/random/boot_id}), or "" if unknown (then the wall clock is used). */
    static final String BOOT = readBootId();

    /** A deadline as persisted: the wall-clock instant, the monotonic clock's value, and that clock's boot. */
    record Deadline(Instant wall, long monotonic, String boot) {
    }

    private Deadlines() {
    }

    /** The deadline {@code fromNow} ahead of the monotonic clock's {@code nowNanos}, on this boot. */
    static Deadline after(long nowNanos, Duration fromNow) {
        return new Deadline(Instant.now().plus(fromNow), nowNanos + fromNow.toNanos(), BOOT);
    }

    /**
     * The time left until a persisted deadline, never negative: from the monotonic clock when the deadline
     * was recorded on this boot, else from the wall clock.
     */
    static Duration remaining(Deadline d, Instant nowWall, long nowNanos, String currentBoot) {
        Duration left = !currentBoot.isEmpty() && currentBoot.equals(d.boot())
                ? Duration.ofNanos(d.monotonic() - nowNanos)
                : Duration.between(nowWall, d.wall());
        return left.isNegative() ? Duration.ZERO : left;
    }

    private static String readBootId() {
        try {
            return Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim();
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }
}
