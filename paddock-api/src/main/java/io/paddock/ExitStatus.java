package io.paddock;

import java.time.Duration;
import java.util.Objects;

/**
 * How a command ended. Always explicit: there is no "unknown" exit code.
 *
 * @param outcome         what ended it
 * @param exitCode        the conventional shell code: the process's own code when {@link Outcome#EXITED},
 *                        124 when timed out, 137 when OOM-killed, 128 + signal when killed by a signal
 * @param signal          the terminating signal's number, or 0 when the process exited by itself
 * @param stdoutTruncated whether stdout passed the output limit and the rest was discarded
 * @param stderrTruncated whether stderr passed the output limit and the rest was discarded
 * @param duration        wall time from start to exit, measured inside the sandbox on the monotonic clock
 */
public record ExitStatus(Outcome outcome, int exitCode, int signal, boolean stdoutTruncated,
                         boolean stderrTruncated, Duration duration) {

    public enum Outcome {
        /** The process exited by itself; {@code exitCode} is its code. */
        EXITED,
        /** A signal killed it (sent by the caller or by another process). */
        SIGNALED,
        /** Its timeout passed and its whole process tree was killed. */
        TIMED_OUT,
        /** The kernel killed it because the sandbox ran out of memory. */
        OOM_KILLED
    }

    public ExitStatus {
        Objects.requireNonNull(outcome, "outcome");
        Objects.requireNonNull(duration, "duration");
    }

    public static ExitStatus exited(int code, Duration duration) {
        return new ExitStatus(Outcome.EXITED, code, 0, false, false, duration);
    }

    public boolean success() {
        return outcome == Outcome.EXITED && exitCode == 0;
    }

    public boolean truncated() {
        return stdoutTruncated || stderrTruncated;
    }

    /** One line for humans: {@code exited with code 3}, {@code timed out after 2.0s}, … */
    public String describe() {
        return switch (outcome) {
            case EXITED -> "exited with code " + exitCode;
            case SIGNALED -> "killed by signal " + signal;
            case TIMED_OUT -> "timed out after " + (duration.toMillis() / 1000.0) + "s; its process tree was killed";
            case OOM_KILLED -> "killed: out of memory (the sandbox's memory limit was reached)";
        };
    }
}
