package io.paddock;

/**
 * The closed set of error codes every Paddock failure carries, embedded or remote.
 *
 * <p>Transport codes (HTTP statuses, CLI exit codes) are derived from these at the edges and never the
 * other way round.
 */
public enum ErrorCode {
    /** A request field is malformed; the message names the field. */
    INVALID_ARGUMENT,
    /** The sandbox, file or context does not exist (or is not visible to the caller). */
    NOT_FOUND,
    /** A live sandbox already has the requested name, or a file already exists. */
    ALREADY_EXISTS,
    /** The operation is valid but the system is not in a state that allows it (for example, the sandbox stopped). */
    FAILED_PRECONDITION,
    /** A quota or limit was hit: too many sandboxes, disk full, output too large. */
    RESOURCE_EXHAUSTED,
    /** A deadline passed before the operation completed. */
    DEADLINE_EXCEEDED,
    /** The runtime or daemon cannot be reached right now; retrying may help. */
    UNAVAILABLE,
    /** The caller may not do this (bad token, file permissions inside the sandbox). */
    PERMISSION_DENIED,
    /** A bug or an unexpected host failure; the message says what failed. */
    INTERNAL
}
