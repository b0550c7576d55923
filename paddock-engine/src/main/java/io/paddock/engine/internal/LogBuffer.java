package io.paddock.engine.internal;

import java.util.Arrays;

/**
 * The most recent {@code capacity} bytes of a stream, for entrypoint logs: memory stays bounded however
 * much the entrypoint prints, and {@link #truncated()} says whether older output was dropped.
 */
final class LogBuffer {
    private final byte[] ring;
    private long written;

    LogBuffer(int capacity) {
        this.ring = new byte[capacity];
    }

    synchronized void append(byte[] b, int off, int len) {
        for (int i = 0; i < len; i++) {
            ring[(int) ((written + i) % ring.length)] = b[off + i];
        }
        written += len;
    }

    synchronized byte[] snapshot() {
        if (written <= ring.length) {
            return Arrays.copyOf(ring, (int) written);
        }
        byte[] out = new byte[ring.length];
        int start = (int) (written % ring.length);
        System.arraycopy(ring, start, out, 0, ring.length - start);
        System.arraycopy(ring, 0, out, ring.length - start, start);
        return out;
    }

    synchronized boolean truncated() {
        return written > ring.length;
    }
}
