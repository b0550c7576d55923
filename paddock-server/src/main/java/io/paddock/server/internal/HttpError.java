package io.paddock.server.internal;

import io.paddock.ErrorCode;

/**
 * A failure whose HTTP status is decided by the transport rather than by {@link io.paddock.wire.HttpStatus}
 * (401, 405, 408, 413, 429 for failed authentication). Its body is still the one {@code Error} shape.
 */
public final class HttpError extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int status;
    private final ErrorCode code;
    private final String headerName;
    private final String headerValue;

    public HttpError(int status, ErrorCode code, String message) {
        this(status, code, message, null, null);
    }

    public HttpError(int status, ErrorCode code, String message, String headerName, String headerValue) {
        super(message, null, false, false);
        this.status = status;
        this.code = code;
        this.headerName = headerName;
        this.headerValue = headerValue;
    }

    static HttpError tooLarge(String what, long limit) {
        return new HttpError(413, ErrorCode.RESOURCE_EXHAUSTED, what + " is larger than the limit of " + limit + " bytes");
    }

    public int status() {
        return status;
    }

    public ErrorCode code() {
        return code;
    }

    /** An extra response header (WWW-Authenticate, Retry-After, Allow), or null. */
    public String headerName() {
        return headerName;
    }

    public String headerValue() {
        return headerValue;
    }
}
