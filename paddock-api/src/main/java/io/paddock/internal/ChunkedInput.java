package io.paddock.internal;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.Objects;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Internal, not part of Paddock's API: an output stream of a command as an {@link InputStream}, fed in chunks
 * by a thread that receives them (the init client's reader, the remote exec stream's WebSocket listener) and
 * read by the consumer. Shared by {@code paddock-init}'s {@code InboundStream} and {@code paddock-client}'s
 * {@code RemoteExecProcess}; what differs between them (handing window back to the init, resuming WebSocket
 * demand, collect mode, how a failure is thrown) is in the hooks below.
 *
 * <p><b>Ending.</b> {@link #endLocked()} marks the end; {@link #failLocked} marks it with a failure, which a read
 * throws once the data buffered before it has been read. Data offered after either is dropped.
 *
 * <p><b>Closing</b> before the end discards what is buffered and whatever is offered later, so output nobody
 * wants never holds memory; a read of a closed stream returns -1.
 *
 * <p><b>Concurrency.</b> The lock and condition are the owner's: the {@code …Locked} methods are called with
 * the lock held; {@code read}, {@code available} and {@code close} take it. Every change of what a reader waits
 * on (buffered bytes, end, close) signals the condition. The hooks that run without the lock
 * ({@link #afterRead}, {@link #afterClose}) may do I/O.
 */
public abstract class ChunkedInput extends InputStream {
    private final ReentrantLock lock;
    private final Condition changed;

    // ---- guarded by lock ----
    private final ArrayDeque<byte[]> chunks = new ArrayDeque<>();
    private int headOffset;
    private long buffered;
    private boolean eof;
    private boolean closed;
    private SandboxException failure;

    /** {@code changed} is a condition of {@code lock}, signalled whenever the stream changes. */
    protected ChunkedInput(ReentrantLock lock, Condition changed) {
        this.lock = Objects.requireNonNull(lock, "lock");
        this.changed = Objects.requireNonNull(changed, "changed");
    }

    // ------------------------------------------------------------------ hooks

    /** Called with the lock held when {@code n} (more than 0) offered bytes were kept. */
    protected void keptLocked(int n) {
    }

    /**
     * Called with the lock held after a read took {@code n} (more than 0) bytes; what it returns is handed to
     * {@link #afterRead} once the lock is released.
     */
    protected long tookLocked(int n) {
        return 0;
    }

    /** Called without the lock after a read that took bytes, with what {@link #tookLocked} returned. */
    protected void afterRead(long took) {
    }

    /**
     * Called without the lock after the first {@link #close()}; {@code beforeEnd} says whether the end (or a
     * failure) had not arrived yet, so that more may come and will be discarded.
     */
    protected void afterClose(boolean beforeEnd) {
    }

    /** What a read throws, once the buffered data is read, for the failure given to {@link #failLocked}. */
    protected SandboxException toThrow(SandboxException failure) {
        return failure;
    }

    // ------------------------------------------------------------------ receiving side (lock held)

    /** Keeps the remaining bytes of {@code data}, unless the stream ended or was closed (then they are dropped). */
    public final void offerLocked(ByteBuffer data) {
        int n = data.remaining();
        if (n == 0 || eof || closed) {
            return;
        }
        byte[] b = new byte[n];
        data.get(b);
        chunks.add(b);
        buffered += n;
        keptLocked(n);
        changed.signalAll();
    }

    /** Marks the end: a read returns -1 once what is buffered is read. */
    public final void endLocked() {
        eof = true;
        changed.signalAll();
    }

    /**
     * Marks the end with a failure, which a read throws once what is buffered is read; a stream that had already
     * ended keeps its clean end.
     */
    public final void failLocked(SandboxException e) {
        if (failure == null && !eof) {
            failure = e;
        }
        eof = true;
        changed.signalAll();
    }

    /** Bytes buffered and not yet read. */
    public final long bufferedLocked() {
        return buffered;
    }

    /** Whether the end (or a failure) arrived. */
    public final boolean endedLocked() {
        return eof;
    }

    /** A copy of all buffered bytes, in order, leaving them buffered; the caller checks they fit an array. */
    protected final byte[] copyBufferedLocked() {
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
    public final int read() {
        byte[] one = new byte[1];
        int n = read(one, 0, 1);
        return n < 0 ? -1 : one[0] & 0xFF;
    }

    /**
     * Blocks until data, the end or a close; an interrupt ends the wait with {@code UNAVAILABLE "interrupted"},
     * the thread's interrupt flag set again.
     */
    @Override
    public final int read(byte[] b, int off, int len) {
        Objects.checkFromIndexSize(off, len, b.length);
        if (len == 0) {
            return 0;
        }
        int n = 0;
        long took;
        lock.lock();
        try {
            while (buffered == 0 && !eof && !closed) {
                try {
                    changed.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new SandboxException(ErrorCode.UNAVAILABLE, "interrupted");
                }
            }
            if (closed) {
                return -1;
            }
            if (buffered == 0) {
                if (failure != null) {
                    throw toThrow(failure);
                }
                return -1;
            }
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
            took = tookLocked(n);
        } finally {
            lock.unlock();
        }
        afterRead(took);
        return n;
    }

    @Override
    public final int available() {
        lock.lock();
        try {
            return (int) Math.min(Integer.MAX_VALUE, buffered);
        } finally {
            lock.unlock();
        }
    }

    /** Discards what is buffered and whatever is offered from now on. */
    @Override
    public final void close() {
        boolean beforeEnd;
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            beforeEnd = !eof;
            chunks.clear();
            headOffset = 0;
            buffered = 0;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        afterClose(beforeEnd);
    }
}
