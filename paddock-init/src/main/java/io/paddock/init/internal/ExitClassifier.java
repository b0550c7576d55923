package io.paddock.init.internal;

import io.paddock.ExitStatus;

/**
 * Turns the init's exit report into the public {@link ExitStatus}. The engine supplies its own to report
 * a SIGKILL as {@link ExitStatus.Outcome#OOM_KILLED} when the sandbox's memory cgroup recorded an OOM kill.
 * It runs on the client's reader thread: it must be quick and must not block.
 */
@FunctionalInterface
public interface ExitClassifier {
    ExitStatus classify(ExitReport report);

    /**
     * EXITED → its code; SIGNALED → 128 + signal; timed out → TIMED_OUT with 124; failed to start →
     * EXITED with 127 (not found) or 126 (any other reason), like a shell.
     */
    ExitClassifier DEFAULT = r -> {
        int signal = r.kind() == ExitReport.Kind.SIGNALED ? r.code() : 0;
        if (r.timedOut()) {
            return new ExitStatus(ExitStatus.Outcome.TIMED_OUT, 124, signal, r.stdoutTruncated(),
                    r.stderrTruncated(), r.duration());
        }
        return switch (r.kind()) {
            case EXITED -> new ExitStatus(ExitStatus.Outcome.EXITED, r.code(), 0, r.stdoutTruncated(),
                    r.stderrTruncated(), r.duration());
            case SIGNALED -> new ExitStatus(ExitStatus.Outcome.SIGNALED, 128 + r.code(), r.code(),
                    r.stdoutTruncated(), r.stderrTruncated(), r.duration());
            case FAILED_TO_START -> new ExitStatus(ExitStatus.Outcome.EXITED,
                    r.code() == ExitReport.ENOENT ? 127 : 126, 0, false, false, r.duration());
        };
    };
}
