package io.paddock.envd.internal;

import io.paddock.SandboxException;

import java.util.Objects;

/** A failed call, as Connect reports it: a code and a message for people. */
public final class ConnectException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final ConnectCode code;

    public ConnectException(ConnectCode code, String message) {
        super(message);
        this.code = Objects.requireNonNull(code, "code");
    }

    public ConnectCode code() {
        return code;
    }

    public static ConnectException invalid(String message) {
        return new ConnectException(ConnectCode.INVALID_ARGUMENT, message);
    }

    /** What any failure of a call reports: Paddock's own code where it has one, {@code internal} otherwise. */
    public static ConnectException of(Throwable t) {
        if (t instanceof ConnectException c) {
            return c;
        }
        if (t instanceof SandboxException s) {
            return new ConnectException(ConnectCode.of(s.code()), s.getMessage());
        }
        return new ConnectException(ConnectCode.INTERNAL, t.getClass().getSimpleName()
                + (t.getMessage() == null ? "" : ": " + t.getMessage()));
    }
}
