package io.paddock;

import java.util.Objects;

/**
 * The one exception type Paddock throws. Its {@link #code()} tells what kind of failure it is; the message
 * says what happened in words a user can act on. Secret values never appear in messages.
 */
public class SandboxException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final ErrorCode code;

    public SandboxException(ErrorCode code, String message) {
        super(message);
        this.code = Objects.requireNonNull(code, "code");
    }

    public SandboxException(ErrorCode code, String message, Throwable cause) {
        super(message, cause);
        this.code = Objects.requireNonNull(code, "code");
    }

    public ErrorCode code() {
        return code;
    }

    /** An {@link ErrorCode#INVALID_ARGUMENT} error naming the offending field. */
    public static SandboxException invalid(String field, String problem) {
        return new SandboxException(ErrorCode.INVALID_ARGUMENT, field + ": " + problem);
    }

    @Override
    public String toString() {
        return "SandboxException[" + code + "]: " + getMessage();
    }
}
