package io.paddock.init.internal;

import java.time.Duration;
import java.util.Objects;

/**
 * The init's EXIT report of one exec, before it is classified into an {@link io.paddock.ExitStatus}.
 *
 * @param kind            how the main process ended
 * @param code            exit code (EXITED), signal number (SIGNALED) or errno (FAILED_TO_START)
 * @param timedOut        the exec's timeout passed and its tree was killed
 * @param stdoutTruncated stdout passed its cap
 * @param stderrTruncated stderr passed its cap
 * @param killed          the tree was killed on request (SIGNAL scope 1)
 * @param duration        from fork to the end of the exec, on the sandbox's monotonic clock
 * @param userMicros      CPU time of the main process and its reaped descendants
 * @param sysMicros       system CPU time, likewise
 * @param maxRssKb        peak resident set size
 * @param message         why it failed to start; empty otherwise
 */
public record ExitReport(Kind kind, int code, boolean timedOut, boolean stdoutTruncated, boolean stderrTruncated,
                         boolean killed, Duration duration, long userMicros, long sysMicros, long maxRssKb,
                         String message) {
    public enum Kind { EXITED, SIGNALED, FAILED_TO_START }

    /** errno ENOENT: the command was not found (exit code 127; any other start failure gives 126). */
    public static final int ENOENT = 2;

    public ExitReport {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(duration, "duration");
        Objects.requireNonNull(message, "message");
    }
}
