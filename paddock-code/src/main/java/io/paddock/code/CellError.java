package io.paddock.code;

import java.util.Objects;

/**
 * The exception that ended a cell or run, as the language reported it.
 *
 * @param name      the exception's type, for example {@code ZeroDivisionError}, {@code KeyboardInterrupt}
 * @param message   its message
 * @param traceback the formatted traceback (frames of Paddock's helpers removed)
 */
public record CellError(String name, String message, String traceback) {
    public CellError {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(message, "message");
        Objects.requireNonNull(traceback, "traceback");
    }
}
