package io.paddock.code.spi;

import io.paddock.Sandbox;
import io.paddock.code.CodeInterpreter;
import io.paddock.code.CodeOptions;

import java.util.Optional;

/**
 * Supplies a {@link CodeInterpreter} for sandboxes it knows how to serve better than the built-in one,
 * found with {@link java.util.ServiceLoader}. The seam for a remote client whose daemon runs the code layer
 * server-side (contexts that outlive the client's connection); the built-in implementation is used when
 * every provider declines.
 */
public interface CodeInterpreterProvider {
    /** An interpreter for {@code sandbox}, or empty to decline (for example, a sandbox of another kind). */
    Optional<CodeInterpreter> open(Sandbox sandbox, CodeOptions options);
}
