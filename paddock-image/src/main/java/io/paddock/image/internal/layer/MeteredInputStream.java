package io.paddock.image.internal.layer;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.security.MessageDigest;

/**
 * The uncompressed tar stream as the extractor's tar reader sees it: every byte is hashed (the diffID) and
 * counted, and the stream fails as soon as the count passes the layer's limit, so a decompression bomb
 * stops after at most one buffer beyond it. {@link #skip} reads, so skipped bytes are hashed and counted too.
 *
 * <p>A second, temporary budget bounds the bytes read while the tar reader parses one entry's headers
 * (PAX records, GNU long names, sparse maps), which it keeps in memory.
 *
 * <p>A failure is recorded in {@link #failure()} before it is thrown, so that the extractor can tell it
 * apart from a corrupt stream even when a library wraps the exception.
 */
final class MeteredInputStream extends FilterInputStream {
    private final MessageDigest digest;
    private final long limit;
    private long count;
    private long headerLimit = Long.MAX_VALUE;
    private long headerBudget;
    private SandboxException failure;

    MeteredInputStream(InputStream in, MessageDigest digest, long limit) {
        super(in);
        this.digest = digest;
        this.limit = limit;
    }

    long count() {
        return count;
    }

    SandboxException failure() {
        return failure;
    }

    /** From now on at most {@code maxBytes} more may be read, until {@link #endHeaders()}. */
    void startHeaders(long maxBytes) {
        headerBudget = maxBytes;
        headerLimit = count + maxBytes;
    }

    void endHeaders() {
        headerLimit = Long.MAX_VALUE;
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        int n = read(one, 0, 1);
        return n < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        if (failure != null) {
            throw new IOException(failure.getMessage(), failure);
        }
        int n = in.read(b, off, len);
        if (n > 0) {
            digest.update(b, off, n);
            count += n;
            if (count > limit) {
                throw fail(new SandboxException(ErrorCode.RESOURCE_EXHAUSTED,
                        "layer is larger than " + limit + " bytes uncompressed"));
            }
            if (count > headerLimit) {
                throw fail(new SandboxException(ErrorCode.INVALID_ARGUMENT, "layer entry headers (PAX records, "
                        + "GNU long names, sparse maps) are longer than " + headerBudget + " bytes"));
            }
        }
        return n;
    }

    @Override
    public long skip(long n) throws IOException {
        byte[] buffer = new byte[(int) Math.min(Math.max(n, 0), 8192)];
        long skipped = 0;
        while (skipped < n) {
            int r = read(buffer, 0, (int) Math.min(buffer.length, n - skipped));
            if (r < 0) {
                break;
            }
            skipped += r;
        }
        return skipped;
    }

    @Override
    public boolean markSupported() {
        return false;
    }

    @Override
    public synchronized void mark(int readlimit) {
    }

    @Override
    public synchronized void reset() throws IOException {
        throw new IOException("mark/reset not supported");
    }

    private IOException fail(SandboxException e) {
        failure = e;
        return new IOException(e.getMessage(), e);
    }
}
