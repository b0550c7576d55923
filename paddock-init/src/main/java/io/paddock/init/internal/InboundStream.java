package io.paddock.init.internal;

import io.paddock.SandboxException;

import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * An output stream of an exec (or a file read) as an {@link InputStream}: the reader thread offers chunks,
 * the consumer reads them and hands window back to the init as it goes. What is buffered never exceeds
 * the window granted, so memory stays bounded however fast the command writes.
 *
 * <p>In <em>collect</em> mode (one-shot {@code run}) the chunks are kept until the end and the window is
 * handed back by whichever thread waits on the exec ({@link #takeCollectCredit}).
 *
 * <p>Closing the stream before its end discards what arrives and opens the window for good, so a command
 * whose output nobody wants is never stalled.
 */
final class InboundStream extends InputStream {
    /** Sends window to the init; {@code unlimited} opens it for good. */
    interface Credit {
        void give(long bytes);

        void unlimited();
    }

    private final ReentrantLock lock;
    private final Condition changed;
    private final Credit credit;
    private final long initialWindow;
    private final boolean collect;
    private final ArrayDeque<byte[]> chunks = new ArrayDeque<>();
    private int headOffset;
    private long buffered;
    private long consumedSinceCredit;
    private long collectCredit;
    private boolean eof;
    private boolean closed;
    private SandboxException failure;

    InboundStream(ReentrantLock lock, Condition changed, Credit credit, long initialWindow, boolean collect) {
        this.lock = lock;
        this.changed = changed;
        this.credit = credit;
        this.initialWindow = initialWindow;
        this.collect = collect;
    }

    // ------------------------------------------------------------------ reader thread side (under lock)

    /** Adds the remaining bytes of {@code data}; called with the lock held. */
    void offerLocked(ByteBuffer data) {
        int n = data.remaining();
        if (n == 0 || eof) {
            return;
        }
        if (closed) {
            return; // discarded: the window was opened for good when the consumer closed
        }
        byte[] b = new byte[n];
        data.get(b);
        chunks.add(b);
        buffered += n;
        if (collect) {
            collectCredit += n;
        }
        changed.signalAll();
    }

    void appendLocked(byte[] b) {
        offerLocked(ByteBuffer.wrap(b));
    }

    void endLocked() {
        eof = true;
        changed.signalAll();
    }

    void failLocked(SandboxException e) {
        if (failure == null && !eof) {
            failure = e;
        }
        eof = true;
        changed.signalAll();
    }

    /** Collect mode: window to hand back now (the bytes are kept, so it is given as they arrive). */
    long takeCollectCredit() {
        long c = collectCredit;
        collectCredit = 0;
        return c;
    }

    /** Collect mode: everything received, in order. */
    byte[] collectedLocked() {
        if (buffered > Integer.MAX_VALUE - 16) {
            throw new SandboxException(io.paddock.ErrorCode.RESOURCE_EXHAUSTED, "output too large to collect");
        }
        byte[] out = new byte[(int) buffered];
        int o = 0;
        boolean first = true;
        for (byte[] c : chunks) {
            int off = first ? headOffset : 0;
            System.arraycopy(c, off, out, o, c.length - off);
            o += c.length - off;
            first = false;
        }
        return out;
    }

    // ------------------------------------------------------------------ consumer side

    @Override
    public int read() {
        byte[] one = new byte[1];
        int n = read(one, 0, 1);
        return n < 0 ? -1 : one[0] & 0xFF;
    }

    @Override
    public int read(byte[] b, int off, int len) {
        java.util.Objects.checkFromIndexSize(off, len, b.length);
        if (len == 0) {
            return 0;
        }
        long give;
        int n;
        lock.lock();
        try {
            while (buffered == 0 && !eof && !closed) {
                try {
                    changed.await(1, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new SandboxException(io.paddock.ErrorCode.UNAVAILABLE, "interrupted");
                }
            }
            if (closed) {
                return -1;
            }
            if (buffered == 0) {
                if (failure != null) {
                    throw failure;
                }
                return -1;
            }
            n = 0;
            while (n < len && !chunks.isEmpty()) {
                byte[] c = chunks.peek();
                int take = Math.min(len - n, c.length - headOffset);
                System.arraycopy(c, headOffset, b, off + n, take);
                n += take;
                headOffset += take;
                if (headOffset == c.length) {
                    chunks.poll();
                    headOffset = 0;
                }
            }
            buffered -= n;
            consumedSinceCredit += n;
            give = 0;
            // Hand window back in batches: at half the initial window, or when we have caught up.
            if (!eof && (consumedSinceCredit >= initialWindow / 2 || buffered == 0)) {
                give = consumedSinceCredit;
                consumedSinceCredit = 0;
            }
        } finally {
            lock.unlock();
        }
        if (give > 0) {
            try {
                credit.give(give);
            } catch (SandboxException ignored) {
                // the channel failed: the data we have is still good, the next read reports it
            }
        }
        return n;
    }

    @Override
    public int available() {
        lock.lock();
        try {
            return (int) Math.min(Integer.MAX_VALUE, buffered);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void close() {
        boolean open;
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            open = !eof;
            chunks.clear();
            buffered = 0;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        if (open) {
            try {
                credit.unlimited();
            } catch (SandboxException ignored) {
                // channel gone: nothing to unblock
            }
        }
    }

    boolean isClosedLocked() {
        return closed;
    }
}
