package io.paddock.image.internal.layer;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;

/**
 * The caller's blob as the decompressor reads it: remembers the first read failure, so that a blob that
 * cannot be read is reported as such and not as a corrupt layer, and does not close the caller's stream.
 */
final class SourceInputStream extends FilterInputStream {
    private IOException failure;

    SourceInputStream(InputStream in) {
        super(in);
    }

    IOException failure() {
        return failure;
    }

    @Override
    public int read() throws IOException {
        try {
            return in.read();
        } catch (IOException e) {
            failure = e;
            throw e;
        }
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        try {
            return in.read(b, off, len);
        } catch (IOException e) {
            failure = e;
            throw e;
        }
    }

    @Override
    public long skip(long n) throws IOException {
        try {
            return in.skip(n);
        } catch (IOException e) {
            failure = e;
            throw e;
        }
    }

    /** The blob belongs to the caller, who closes it. */
    @Override
    public void close() {
    }
}
