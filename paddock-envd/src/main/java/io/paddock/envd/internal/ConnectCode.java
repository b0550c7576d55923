package io.paddock.envd.internal;

import io.paddock.ErrorCode;

/** Connect-RPC's error codes (connectrpc.com/docs/protocol#error-codes), with the HTTP status a unary error carries. */
public enum ConnectCode {
    CANCELED("canceled", 499),
    UNKNOWN("unknown", 500),
    INVALID_ARGUMENT("invalid_argument", 400),
    DEADLINE_EXCEEDED("deadline_exceeded", 504),
    NOT_FOUND("not_found", 404),
    ALREADY_EXISTS("already_exists", 409),
    PERMISSION_DENIED("permission_denied", 403),
    RESOURCE_EXHAUSTED("resource_exhausted", 429),
    FAILED_PRECONDITION("failed_precondition", 400),
    ABORTED("aborted", 409),
    OUT_OF_RANGE("out_of_range", 400),
    UNIMPLEMENTED("unimplemented", 501),
    INTERNAL("internal", 500),
    UNAVAILABLE("unavailable", 503),
    DATA_LOSS("data_loss", 500),
    UNAUTHENTICATED("unauthenticated", 401);

    private final String wire;
    private final int httpStatus;

    ConnectCode(String wire, int httpStatus) {
        this.wire = wire;
        this.httpStatus = httpStatus;
    }

    /** The code as Connect writes it in JSON, for example {@code not_found}. */
    public String wire() {
        return wire;
    }

    public int httpStatus() {
        return httpStatus;
    }

    /** Paddock's closed error set onto Connect's: the one mapping this module makes. */
    public static ConnectCode of(ErrorCode code) {
        return switch (code) {
            case INVALID_ARGUMENT -> INVALID_ARGUMENT;
            case NOT_FOUND -> NOT_FOUND;
            case ALREADY_EXISTS -> ALREADY_EXISTS;
            case FAILED_PRECONDITION -> FAILED_PRECONDITION;
            case RESOURCE_EXHAUSTED -> RESOURCE_EXHAUSTED;
            case DEADLINE_EXCEEDED -> DEADLINE_EXCEEDED;
            case UNAVAILABLE -> UNAVAILABLE;
            case PERMISSION_DENIED -> PERMISSION_DENIED;
            case INTERNAL -> INTERNAL;
        };
    }
}
