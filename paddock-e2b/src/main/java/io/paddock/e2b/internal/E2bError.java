package io.paddock.e2b.internal;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;

/**
 * A refusal with the status E2B's SDKs map to the right exception: 400 {@code InvalidArgumentError}, 401
 * {@code AuthenticationError}, 404 {@code NotFoundError}, 429 {@code RateLimitError}, 502 {@code TimeoutError}
 * (E2B's proxy answers 502 for a sandbox that is gone), 501 for E2B calls Paddock does not serve.
 */
final class E2bError extends RuntimeException {
    private final int status;

    E2bError(int status, String message) {
        super(message, null, false, false);
        this.status = status;
    }

    int status() {
        return status;
    }

    static E2bError unsupported(String method, String path) {
        return new E2bError(501, "the E2B call '" + method + " " + path + "' is not supported by Paddock"
                + " (see docs/COMPAT.md)");
    }

    static E2bError sandboxGone(String id) {
        return new E2bError(502, "sandbox " + id + " is not running (it was killed, timed out, or never existed)");
    }

    /** The status for a Paddock error, as E2B's API would answer it. */
    static int status(SandboxException e) {
        return switch (e.code()) {
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

    static boolean is(SandboxException e, ErrorCode code) {
        return e.code() == code;
    }
}
