package io.paddock.code;

import io.paddock.ExitStatus;

import java.util.Objects;

/**
 * One command's outcome in a {@link ShellSession}.
 *
 * @param status          its exit status ({@code TIMED_OUT}, 124, when it passed its timeout)
 * @param stdout          its standard output (capped)
 * @param stderr          its standard error (capped)
 * @param sessionRestarted true when the shell had to be restarted (after a timeout it did not survive, or
 *                        because the command ended the shell): cwd, variables and background jobs are gone
 */
public record ShellResult(ExitStatus status, String stdout, String stderr, boolean sessionRestarted) {
    public ShellResult {
        Objects.requireNonNull(status, "status");
        Objects.requireNonNull(stdout, "stdout");
        Objects.requireNonNull(stderr, "stderr");
    }

    public int exitCode() {
        return status.exitCode();
    }

    public boolean success() {
        return status.success();
    }
}
