package io.paddock.engine.internal;

import java.util.Arrays;

/**
 * The most recent {@code capacity} bytes of a stream, for entrypoint logs: memory stays bounded however
 * much the entrypoint prints, and {@link #truncated()} says whether older output was dropped.
 *
 * <p>The buffer grows with what is written (doubling, up to the capacity) instead of being allocated up
 * front: most sandboxes have no entrypoint and never log a byte, and two eagerly allocated 1 MiB rings per
 * sandbox were most of the engine's memory per idle sandbox (PERFORMANCE.md P6) and a 2 MiB allocation on
 * every create (P1).
 */
final class LogBuffer {
    private static final int INITIAL = 4096;
    private final int capacity;
    // @GuardedBy("this"); holds bytes [0, written) until it is full, then a ring of the last `capacity` bytes
    private byte[] ring = new byte[0];
    private long written;

    LogBuffer(int capacity) {
        this.capacity = capacity;
    }

    synchronized void append(byte[] b, int off, int len) {
        if (ring.length < capacity && written + len > ring.length) {
            long need = Math.min(capacity, written + len);
            int size = Math.min(capacity, Math.max(INITIAL, ring.length));
            while (size < need) {
                size = (int) Math.min(capacity, size * 2L);
            }
            ring = Arrays.copyOf(ring, size); // only while not yet wrapped: written <= old length here
        }
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
        return written > capacity;
    }
}
