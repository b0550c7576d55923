package io.paddock.init.internal;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.internal.ChunkedInput;

import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * An output stream of an exec (or a file read) as an {@link InputStream}: the reader thread offers chunks,
 * the consumer reads them and hands window back to the init as it goes. What is buffered never exceeds
 * the window granted, so memory stays bounded however fast the command writes. The queue itself is
 * {@link ChunkedInput}'s; this class adds the window.
 *
 * <p>In <em>collect</em> mode (one-shot {@code run}) the chunks are kept until the end and the window is
 * handed back by whichever thread waits on the exec ({@link #takeCollectCredit}).
 *
 * <p>Closing the stream before its end discards what arrives and opens the window for good, so a command
 * whose output nobody wants is never stalled.
 */
final class InboundStream extends ChunkedInput {
    /** Sends window to the init; {@code unlimited} opens it for good. */
    interface Credit {
        void give(long bytes);

        void unlimited();
    }

    private final Credit credit;
    private final long initialWindow;
    private final boolean collect;
    // ---- guarded by the lock ----
    private long consumedSinceCredit;
    private long collectCredit;

    InboundStream(ReentrantLock lock, Condition changed, Credit credit, long initialWindow, boolean collect) {
        super(lock, changed);
        this.credit = credit;
        this.initialWindow = initialWindow;
        this.collect = collect;
    }

    // ------------------------------------------------------------------ reader thread side (under lock)

    void appendLocked(byte[] b) {
        offerLocked(ByteBuffer.wrap(b));
    }

    @Override
    protected void keptLocked(int n) {
        if (collect) {
            collectCredit += n;
        }
    }

    /** Collect mode: window to hand back now (the bytes are kept, so it is given as they arrive). */
    long takeCollectCredit() {
        long c = collectCredit;
        collectCredit = 0;
        return c;
    }

    /** Collect mode: everything received, in order. */
    byte[] collectedLocked() {
        if (bufferedLocked() > Integer.MAX_VALUE - 16) {
            throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "output too large to collect");
        }
        return copyBufferedLocked();
    }

    // ------------------------------------------------------------------ consumer side

    /** Hands window back in batches: at half the initial window, or when the consumer has caught up. */
    @Override
    protected long tookLocked(int n) {
        consumedSinceCredit += n;
        if (!endedLocked() && (consumedSinceCredit >= initialWindow / 2 || bufferedLocked() == 0)) {
            long give = consumedSinceCredit;
            consumedSinceCredit = 0;
            return give;
        }
        return 0;
    }

    @Override
    protected void afterRead(long give) {
        if (give > 0) {
            try {
                credit.give(give);
            } catch (SandboxException ignored) {
                // the channel failed: the data we have is still good, the next read reports it
            }
        }
    }

    @Override
    protected void afterClose(boolean beforeEnd) {
        if (beforeEnd) {
            try {
                credit.unlimited();
            } catch (SandboxException ignored) {
                // channel gone: nothing to unblock
            }
        }
    }
}
