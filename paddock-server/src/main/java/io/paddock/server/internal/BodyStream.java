package io.paddock.server.internal;

import io.paddock.ErrorCode;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Request;

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
 *
 * <p>A body refused for its size is left to {@link #dropRest} rather than closed: closed part-way, Jetty fails the
 * request's content, and the connection then closes under a client that is still sending it.
 */
public final class BodyStream extends InputStream {
    /** Request attribute: the stream of a body refused for its size, positioned where the refusal stopped reading. */
    private static final String REST = "io.paddock.bodyRest";

    private final Request request;
    private final InputStream in;
    private final long limit;
    private final String what;
    private final long start = System.nanoTime();
    private final long deadlineNanos;
    private final long minRate;
    private long count;
    private boolean overLimit;

    /**
     * @param deadlineNanos for a whole body ({@code minRate == 0}) or the grace period before the rate
     *                      applies ({@code minRate > 0})
     */
    public BodyStream(InputStream in, long limit, String what, long deadlineNanos, long minRate) {
        this(null, in, limit, what, deadlineNanos, minRate);
    }

    /** {@code request}'s body, which {@link #dropRest} reads to its end if it turns out to be over the limit. */
    public static BodyStream of(Request request, long limit, String what, long deadlineNanos, long minRate) {
        return new BodyStream(request, Content.Source.asInputStream(request), limit, what, deadlineNanos, minRate);
    }

    private BodyStream(Request request, InputStream in, long limit, String what, long deadlineNanos, long minRate) {
        this.request = request;
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
                overLimit = true;
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
        if (overLimit && request != null) {
            request.setAttribute(REST, in); // for dropRest, after the 413 has gone out
        } else {
            in.close();
        }
    }

    /** Whether a body of {@code request} was refused for its size and its stream kept for {@link #dropRest}. */
    static boolean refusedForSize(Request request) {
        return request.getAttribute(REST) != null;
    }

    /**
     * Reads and drops what is left of {@code request}'s body, refused for its size, for at most {@code nanos} (and
     * Jetty's idle timeout while the client is silent); called once the 413 has gone out. A client that reads its
     * answer only once it has sent the whole body (Python's http.client, most simple clients) would otherwise meet a
     * reset connection in place of the answer; one that reads as it sends has the answer already and may hang up.
     * nginx's lingering close does the same.
     */
    static void dropRest(Request request, long nanos) {
        long until = System.nanoTime() + nanos;
        InputStream rest = request.getAttribute(REST) instanceof InputStream kept ? kept : Content.Source.asInputStream(request);
        try (rest) {
            byte[] buf = new byte[64 << 10];
            while (System.nanoTime() - until < 0 && rest.read(buf) >= 0) {
                // dropped
            }
        } catch (IOException | RuntimeException e) {
            // the client hung up or went silent: the connection closes either way
        }
    }
}
