package io.paddock.internal;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ChunkedInputTest {
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();

    /** Records the hooks' calls. */
    private final class Recording extends ChunkedInput {
        final List<String> calls = new ArrayList<>();

        Recording() {
            super(lock, changed);
        }

        @Override
        protected void keptLocked(int n) {
            assertThat(lock.isHeldByCurrentThread()).isTrue();
            calls.add("kept " + n);
        }

        @Override
        protected long tookLocked(int n) {
            assertThat(lock.isHeldByCurrentThread()).isTrue();
            calls.add("took " + n);
            return 100 + n;
        }

        @Override
        protected void afterRead(long took) {
            assertThat(lock.isHeldByCurrentThread()).isFalse();
            calls.add("after read " + took);
        }

        @Override
        protected void afterClose(boolean beforeEnd) {
            assertThat(lock.isHeldByCurrentThread()).isFalse();
            calls.add("after close " + beforeEnd);
        }

        @Override
        protected SandboxException toThrow(SandboxException failure) {
            return new SandboxException(failure.code(), "copy of " + failure.getMessage(), failure);
        }
    }

    private void offer(ChunkedInput in, String s) {
        lock.lock();
        try {
            in.offerLocked(ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8)));
        } finally {
            lock.unlock();
        }
    }

    private void locked(Runnable r) {
        lock.lock();
        try {
            r.run();
        } finally {
            lock.unlock();
        }
    }

    private static String read(ChunkedInput in, int len) {
        byte[] b = new byte[len];
        int n = in.read(b, 0, len);
        return n < 0 ? "EOF" : new String(b, 0, n, StandardCharsets.UTF_8);
    }

    @Test
    void readsAcrossChunksInOrderAndCallsTheHooks() {
        Recording in = new Recording();
        offer(in, "abc");
        offer(in, "");
        offer(in, "defg");
        assertThat(in.available()).isEqualTo(7);
        assertThat(read(in, 2)).isEqualTo("ab");
        assertThat(read(in, 4)).isEqualTo("cdef");
        assertThat(in.read()).isEqualTo('g');
        assertThat(in.available()).isZero();
        assertThat(in.calls).containsExactly("kept 3", "kept 4", "took 2", "after read 102", "took 4",
                "after read 104", "took 1", "after read 101");
    }

    @Test
    void theEndComesAfterTheBufferedDataAndLaterDataIsDropped() {
        Recording in = new Recording();
        offer(in, "abc");
        locked(in::endLocked);
        offer(in, "late");
        assertThat(read(in, 10)).isEqualTo("abc");
        assertThat(read(in, 10)).isEqualTo("EOF");
        assertThat(in.read()).isEqualTo(-1);
    }

    @Test
    void aFailureIsThrownOnceTheBufferedDataIsRead() {
        Recording in = new Recording();
        offer(in, "abc");
        locked(() -> in.failLocked(new SandboxException(ErrorCode.UNAVAILABLE, "gone")));
        locked(() -> in.failLocked(new SandboxException(ErrorCode.INTERNAL, "second")));
        offer(in, "late");
        assertThat(read(in, 2)).isEqualTo("ab");
        assertThat(read(in, 2)).isEqualTo("c");
        assertThatThrownBy(() -> read(in, 2)).isInstanceOf(SandboxException.class)
                .hasMessage("copy of gone");
    }

    @Test
    void aFailureAfterTheEndIsNotReported() {
        Recording in = new Recording();
        locked(in::endLocked);
        locked(() -> in.failLocked(new SandboxException(ErrorCode.UNAVAILABLE, "gone")));
        assertThat(read(in, 2)).isEqualTo("EOF");
    }

    @Test
    void closingDiscardsWhatIsBufferedAndWhatArrivesLater() {
        Recording in = new Recording();
        offer(in, "abc");
        in.close();
        offer(in, "late");
        in.close();
        assertThat(in.available()).isZero();
        assertThat(read(in, 10)).isEqualTo("EOF");
        locked(() -> assertThat(in.bufferedLocked()).isZero());
        assertThat(in.calls).containsExactly("kept 3", "after close true");
    }

    @Test
    void closingAfterTheEndSaysSo() {
        Recording in = new Recording();
        locked(in::endLocked);
        in.close();
        assertThat(in.calls).containsExactly("after close false");
    }

    @Test
    void copyBufferedLeavesTheDataInPlace() {
        Recording in = new Recording();
        offer(in, "abc");
        offer(in, "def");
        assertThat(read(in, 1)).isEqualTo("a");
        byte[][] copy = new byte[1][];
        locked(() -> copy[0] = in.copyBufferedLocked());
        assertThat(new String(copy[0], StandardCharsets.UTF_8)).isEqualTo("bcdef");
        assertThat(read(in, 10)).isEqualTo("bcdef");
    }

    @Test
    void aReaderWaitsForDataTheEndOrAClose() throws Exception {
        Recording in = new Recording();
        CompletableFuture<String> data = CompletableFuture.supplyAsync(() -> read(in, 10));
        Thread.sleep(100);
        assertThat(data).isNotDone();
        offer(in, "x");
        assertThat(data.get(5, TimeUnit.SECONDS)).isEqualTo("x");

        CompletableFuture<String> end = CompletableFuture.supplyAsync(() -> read(in, 10));
        Thread.sleep(100);
        assertThat(end).isNotDone();
        in.close();
        assertThat(end.get(5, TimeUnit.SECONDS)).isEqualTo("EOF");
    }

    @Test
    void anInterruptedReadIsUnavailableAndKeepsTheFlag() throws Exception {
        Recording in = new Recording();
        CompletableFuture<Object> result = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                result.complete(read(in, 10));
            } catch (SandboxException e) {
                result.complete(e.code() + " " + e.getMessage() + " " + Thread.currentThread().isInterrupted());
            }
        });
        t.start();
        Thread.sleep(100);
        t.interrupt();
        assertThat(result.get(5, TimeUnit.SECONDS)).isEqualTo("UNAVAILABLE interrupted true");
        t.join();
    }

    @Test
    void emptyReadsAndBadRangesBehaveAsInputStream() {
        Recording in = new Recording();
        assertThat(in.read(new byte[4], 0, 0)).isZero();
        assertThatThrownBy(() -> in.read(new byte[4], 3, 2)).isInstanceOf(IndexOutOfBoundsException.class);
    }
}
