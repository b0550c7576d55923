package io.paddock;

import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * A command running in a sandbox, with live streams. stdout and stderr are separate streams with
 * backpressure: a consumer that stops reading one stops the command once its buffer is full, as a pipe
 * would. Read both (or close the one you do not need) to avoid stalling the command.
 *
 * <p>{@link #close()} kills the command's process tree if it is still running and releases its streams.
 */
public interface ExecProcess extends AutoCloseable {
    /** The sandbox-local id of this command. */
    long id();

    /** The command's stdin; {@link OutputStream#close()} closes it (the command sees end of file). */
    OutputStream stdin();

    /** Closes stdin; idempotent. */
    void closeStdin();

    InputStream stdout();

    InputStream stderr();

    /** Waits for the command to end; empty if it is still running after {@code timeout}. */
    Optional<ExitStatus> awaitExit(Duration timeout);

    /** Waits for the command to end. */
    ExitStatus awaitExit();

    /** Completes when the command ends (exceptionally if the sandbox stops first). */
    CompletableFuture<ExitStatus> onExit();

    boolean isAlive();

    /** Sends a signal to the command's process group. */
    void signal(Signal signal);

    /** Kills the command's whole process tree, including processes that left its process group. */
    void kill();

    /**
     * Resizes the command's pseudo-terminal; the command's foreground process group gets {@code SIGWINCH}.
     *
     * @throws SandboxException {@link ErrorCode#FAILED_PRECONDITION} if the command was not started with
     *                          {@link ExecRequest.Builder#terminal}
     */
    void resize(TerminalSize size);

    @Override
    void close();
}
