package io.paddock.cli;

import java.time.Duration;

/** Human forms of values in messages. */
final class SpecOptionsFormat {
    private SpecOptionsFormat() {
    }

    static String duration(Duration d) {
        long ms = d.toMillis();
        if (ms % 3_600_000 == 0) {
            return (ms / 3_600_000) + "h";
        }
        if (ms % 60_000 == 0) {
            return (ms / 60_000) + "m";
        }
        if (ms % 1000 == 0) {
            return (ms / 1000) + "s";
        }
        return ms + "ms";
    }
}
