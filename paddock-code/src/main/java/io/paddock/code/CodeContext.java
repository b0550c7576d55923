package io.paddock.code;

import java.time.Duration;
import java.util.Optional;

/**
 * A stateful context: a long-running kernel process in the sandbox that runs code cell by cell, keeping
 * variables, imports and functions between cells (Python, JavaScript). Independent of every other
 * context. Thread-safe: cells run one at a time, in the order callers arrive.
 *
 * <p>A cell that passes its timeout is interrupted (Python: {@code KeyboardInterrupt}; JavaScript: the
 * script is broken off) and reported as {@code TIMED_OUT}; the context keeps its state when the
 * interrupt takes effect within the interpreter's grace period, otherwise its process is restarted and
 * the result says {@link CodeResult#contextRestarted()}.
 *
 * <p>{@link #close()} removes the context (ends its process); idempotent.
 */
public interface CodeContext extends AutoCloseable {
    String id();

    Optional<String> name();

    /** The language's canonical name. */
    String language();

    ContextInfo info();

    /** Runs one cell; its result carries stdout, stderr, the last expression's value, plots and artifacts. */
    CodeResult run(CodeRequest cell, CodeListener listener);

    default CodeResult run(CodeRequest cell) {
        return run(cell, CodeListener.NONE);
    }

    default CodeResult run(String code) {
        return run(CodeRequest.cell(code));
    }

    default CodeResult run(String code, Duration timeout) {
        return run(CodeRequest.builder().code(code).timeout(timeout).build());
    }

    /** Ends the kernel process and starts a fresh one: all state is lost; the id and name stay. */
    void restart();

    /** Removes the context and ends its process; idempotent. Running a cell afterwards is {@code NOT_FOUND}. */
    @Override
    void close();
}
