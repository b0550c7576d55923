package io.paddock.wire;

import io.paddock.ErrorCode;

/** The one mapping between error codes and HTTP statuses (server side and, reversed, client side). */
public final class HttpStatus {
    private HttpStatus() {
    }

    public static int of(ErrorCode code) {
        return switch (code) {
            case INVALID_ARGUMENT -> 400;
            case NOT_FOUND -> 404;
            case ALREADY_EXISTS, FAILED_PRECONDITION -> 409;
            case RESOURCE_EXHAUSTED -> 429;
            case DEADLINE_EXCEEDED -> 504;
            case UNAVAILABLE -> 503;
            case PERMISSION_DENIED -> 403;
            case INTERNAL -> 500;
        };
    }

    /** For responses without a Paddock error body (a proxy's, say). */
    public static ErrorCode toCode(int status) {
        return switch (status) {
            case 401, 403 -> ErrorCode.PERMISSION_DENIED;
            case 404 -> ErrorCode.NOT_FOUND;
            case 409 -> ErrorCode.FAILED_PRECONDITION;
            case 413, 429, 431 -> ErrorCode.RESOURCE_EXHAUSTED;
            case 408, 504 -> ErrorCode.DEADLINE_EXCEEDED;
            case 502, 503 -> ErrorCode.UNAVAILABLE;
            default -> status >= 400 && status < 500 ? ErrorCode.INVALID_ARGUMENT : ErrorCode.INTERNAL;
        };
    }
}
