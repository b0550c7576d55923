package io.paddock.code;

import java.time.Duration;
import java.util.Map;

/**
 * A persistent shell in the sandbox: the working directory, exported variables, shell functions and
 * background processes persist from one command to the next, as in a terminal, while each command returns
 * its own stdout, stderr and exit code. Commands run one at a time; their stdin is {@code /dev/null}.
 * Thread-safe. {@link #close()} ends the shell and its background processes; idempotent.
 */
public interface ShellSession extends AutoCloseable {
    /** Runs one command line (any shell syntax, several lines allowed) with the interpreter's default timeout. */
    ShellResult exec(String command);

    /**
     * Runs one command line. At {@code timeout} the command is interrupted (SIGINT to the session); if the
     * shell does not get back within the grace period it is restarted and the result says so.
     */
    ShellResult exec(String command, Duration timeout);

    /** Variables given when the session was opened. */
    Map<String, String> env();

    boolean isAlive();

    @Override
    void close();
}
