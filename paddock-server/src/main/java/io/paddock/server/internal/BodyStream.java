package io.paddock.server.internal;

import io.paddock.ErrorCode;

import java.io.IOException;
import java.io.InputStream;
import java.util.concurrent.TimeUnit;

/**
 * A request body as a stream that enforces the daemon's limits while it is read (ATTACKS.md A58, A59):
 * more than {@code limit} bytes fails with 413 (chunked bodies have no length to check up front), and a
 * body that arrives too slowly fails with 408: a JSON body must arrive whole within the deadline, an upload
 * must keep up {@code minRate} bytes per second on average once the deadline has passed.
 *
 * <p>The failures are unchecked {@link HttpError}s so that they pass unchanged through code that wraps
 * {@link IOException}s (the engine's upload loop), which then aborts the upload. Not thread-safe.
 */
public final class BodyStream extends InputStream {
    private final InputStream in;
    private final long limit;
    private final String what;
    private final long start = System.nanoTime();
    private final long deadlineNanos;
    private final long minRate;
    private long count;

    /**
     * @param deadlineNanos for a whole body ({@code minRate == 0}) or the grace period before the rate
     *                      applies ({@code minRate > 0})
     */
    public BodyStream(InputStream in, long limit, String what, long deadlineNanos, long minRate) {
        this.in = in;
        this.limit = limit;
        this.what = what;
        this.deadlineNanos = deadlineNanos;
        this.minRate = minRate;
    }

    public long count() {
        return count;
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        int n = read(one, 0, 1);
        return n < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        if (len == 0) {
            return 0;
        }
        int n;
        try {
            // Ask for at most one byte past the limit: that is enough to know it is exceeded.
            long room = limit - count;
            n = in.read(b, off, room >= len ? len : (int) room + 1);
        } catch (IOException e) {
            throw new HttpError(isTimeout(e) ? 408 : 400, isTimeout(e) ? ErrorCode.DEADLINE_EXCEEDED
                    : ErrorCode.INVALID_ARGUMENT, "body: reading the request failed"
                    + (isTimeout(e) ? ": the client stopped sending" : ""));
        }
        if (n > 0) {
            count += n;
            if (count > limit) {
                throw HttpError.tooLarge(what, limit);
            }
            checkRate();
        }
        return n;
    }

    private void checkRate() {
        long elapsed = System.nanoTime() - start;
        if (elapsed <= deadlineNanos) {
            return;
        }
        if (minRate <= 0 || count * TimeUnit.SECONDS.toNanos(1) / elapsed < minRate) {
            throw new HttpError(408, ErrorCode.DEADLINE_EXCEEDED, "body: " + what + " arrived too slowly"
                    + (minRate > 0 ? " (under " + minRate + " bytes/s)" : " (deadline "
                    + TimeUnit.NANOSECONDS.toMillis(deadlineNanos) + " ms)"));
        }
    }

    private static boolean isTimeout(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof java.util.concurrent.TimeoutException || t instanceof java.net.SocketTimeoutException) {
                return true;
            }
        }
        return false;
    }

    @Override
    public void close() throws IOException {
        in.close();
    }
}
