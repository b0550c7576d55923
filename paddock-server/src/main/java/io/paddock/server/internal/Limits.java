package io.paddock.server.internal;

import java.time.Duration;

/**
 * The request limits the handler enforces.
 *
 * @param maxJsonBytes    largest JSON body
 * @param maxUploadBytes  largest file upload
 * @param idleTimeout     header deadline, JSON body deadline, and the grace before uploads must keep up
 *                        {@code minUploadRate}
 * @param minUploadRate   bytes per second an upload must average after {@code idleTimeout}
 */
public record Limits(long maxJsonBytes, long maxUploadBytes, Duration idleTimeout, long minUploadRate) {
    /** The most output a buffered (JSON) exec may collect per stream; streaming has no such cap. */
    public static final long MAX_EXEC_OUTPUT_BYTES = 16L << 20;
    /** Longest path accepted in a query parameter (as openapi.json says). */
    public static final int MAX_PATH_CHARS = 4096;

    static String shorten(String s) {
        if (s == null) {
            return "null";
        }
        return s.length() > 80 ? s.substring(0, 80) + "…" : s;
    }
}
