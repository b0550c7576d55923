package io.paddock.code.internal;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/** Output kept up to a cap; what goes past it is counted and dropped. Thread-safe. */
final class Capture {
    private final long cap;
    private final ByteArrayOutputStream kept = new ByteArrayOutputStream();
    private boolean truncated;

    Capture(long cap) {
        this.cap = cap;
    }

    synchronized void add(byte[] b, int off, int len) {
        long room = cap - kept.size();
        if (room <= 0) {
            truncated |= len > 0;
            return;
        }
        int n = (int) Math.min(room, len);
        kept.write(b, off, n);
        if (n < len) {
            truncated = true;
        }
    }

    synchronized void add(String text) {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        add(b, 0, b.length);
    }

    synchronized void markTruncated() {
        truncated = true;
    }

    synchronized boolean truncated() {
        return truncated;
    }

    synchronized String text() {
        return kept.toString(StandardCharsets.UTF_8);
    }
}
