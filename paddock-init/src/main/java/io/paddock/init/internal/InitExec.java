package io.paddock.init.internal;

import io.paddock.ErrorCode;
import io.paddock.ExecProcess;
import io.paddock.ExitStatus;
import io.paddock.SandboxException;
import io.paddock.Signal;
import io.paddock.TerminalSize;
import io.paddock.internal.Workers;

import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One command running under a sandbox's init. stdout and stderr are windowed streams (a consumer that
 * stops reading stops the command); stdin honours the init's window. All waits share one lock and
 * condition; the reader thread only ever takes the lock briefly.
 */
public final class InitExec implements ExecProcess, InitClient.Handler {
    private static final int STDIN_CHUNK = 64 * 1024;

    private final InitClient client;
    private final int id;
    private final SpawnRequest request;
    private final boolean collect;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final InboundStream out;
    private final InboundStream err;
    private final OutputStream stdin = new Stdin();
    private final CompletableFuture<ExitStatus> exit = new CompletableFuture<>();
    /** What callers get: dependent actions run off the reader thread. */
    private final CompletableFuture<ExitStatus> publicExit = exit.thenApplyAsync(s -> s, Workers.pool());
    private final AtomicBoolean released = new AtomicBoolean();
    private final AtomicBoolean stdinCloseSent = new AtomicBoolean();

    private long stdinWindow;
    private int pid;
    private boolean stdinClosed;
    private ExitReport report;
    private ExitStatus status;
    private SandboxException failure;

    InitExec(InitClient client, int id, SpawnRequest request, boolean collect) {
        this.client = client;
        this.id = id;
        this.request = request;
        this.collect = collect;
        this.out = new InboundStream(lock, changed, credit(Frames.STREAM_STDOUT), request.stdoutWindow(), collect);
        this.err = new InboundStream(lock, changed, credit(Frames.STREAM_STDERR), request.stderrWindow(), collect);
    }

    private InboundStream.Credit credit(int stream) {
        return new InboundStream.Credit() {
            @Override
            public void give(long bytes) {
                sendWindow(stream, bytes);
            }

            @Override
            public void unlimited() {
                if (!ended()) {
                    // 256 x (2^32-1): more than the init ever counts (it saturates at 2^40)
                    byte[] one = Frames.window(id, stream, 0xFFFFFFFFL);
                    byte[] all = new byte[one.length * 256];
                    for (int i = 0; i < 256; i++) {
                        System.arraycopy(one, 0, all, i * one.length, one.length);
                    }
                    client.send(all);
                }
            }
        };
    }

    private void sendWindow(int stream, long bytes) {
        if (ended()) {
            return;
        }
        while (bytes > 0) {
            long inc = Math.min(bytes, 0xFFFFFFFFL);
            client.send(Frames.window(id, stream, inc));
            bytes -= inc;
        }
    }

    private boolean ended() {
        lock.lock();
        try {
            return status != null || failure != null;
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------ frames from the reader thread

    @Override
    public void onFrame(int type, ByteBuffer payload) {
        switch (type) {
            case Frames.SPAWNED -> {
                Frames.Spawned s = Frames.decodeSpawned(payload);
                lock.lock();
                try {
                    pid = s.pid();
                    stdinWindow += s.stdinWindow();
                    changed.signalAll();
                } finally {
                    lock.unlock();
                }
            }
            case Frames.DATA -> {
                int stream = Frames.stream(payload);
                ByteBuffer data = payload.duplicate();
                data.position(data.position() + 1);
                lock.lock();
                try {
                    if (stream == Frames.STREAM_STDOUT) {
                        out.offerLocked(data);
                    } else if (stream == Frames.STREAM_STDERR) {
                        err.offerLocked(data);
                    }
                } finally {
                    lock.unlock();
                }
            }
            case Frames.WINDOW_ACK -> {
                Frames.Window w = Frames.decodeWindow(payload);
                if (w.stream() == Frames.STREAM_STDIN) {
                    lock.lock();
                    try {
                        stdinWindow += w.increment();
                        changed.signalAll();
                    } finally {
                        lock.unlock();
                    }
                }
            }
            case Frames.EXIT -> onExit(Frames.decodeExit(payload));
            default -> {
                // unknown to this version: ignored
            }
        }
    }

    private void onExit(ExitReport r) {
        ExitStatus s;
        try {
            s = Objects.requireNonNull(request.classifier().classify(r), "classifier returned null");
        } catch (RuntimeException e) {
            s = ExitClassifier.DEFAULT.classify(r);
        }
        lock.lock();
        try {
            if (status != null || failure != null) {
                return;
            }
            if (r.kind() == ExitReport.Kind.FAILED_TO_START) {
                // CLI users see why nothing ran, as a shell would tell them.
                err.appendLocked(("paddock: " + request.argv().get(0) + ": " + r.message() + "\n")
                        .getBytes(StandardCharsets.UTF_8));
            }
            out.endLocked();
            err.endLocked();
            report = r;
            status = s;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        client.unregister(id); // nothing follows EXIT on this channel
        exit.complete(s);
    }

    @Override
    public void onFailure(SandboxException e) {
        lock.lock();
        try {
            if (status != null) {
                return;
            }
            if (failure == null) {
                failure = e;
            }
            out.failLocked(e);
            err.failLocked(e);
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        exit.completeExceptionally(e);
    }

    // ------------------------------------------------------------------ waiting

    /**
     * Waits for a change with the lock held. In collect mode a waiter also hands window back for what
     * was collected (the one-shot caller is the only thread around to do it).
     */
    private void awaitChange(long nanos) throws InterruptedException {
        if (collect) {
            long c1 = out.takeCollectCredit();
            long c2 = err.takeCollectCredit();
            if (c1 > 0 || c2 > 0) {
                lock.unlock();
                try {
                    sendWindow(Frames.STREAM_STDOUT, c1);
                    sendWindow(Frames.STREAM_STDERR, c2);
                } catch (SandboxException ignored) {
                    // the failure reaches us through onFailure
                } finally {
                    lock.lock();
                }
                return;
            }
        }
        changed.awaitNanos(nanos);
    }

    private static SandboxException interrupted() {
        Thread.currentThread().interrupt();
        return new SandboxException(ErrorCode.UNAVAILABLE, "interrupted");
    }

    @Override
    public Optional<ExitStatus> awaitExit(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        lock.lock();
        try {
            while (status == null && failure == null) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return Optional.empty();
                }
                awaitChange(Math.min(left, TimeUnit.MILLISECONDS.toNanos(200)));
            }
            if (status == null) {
                throw failure;
            }
            return Optional.of(status);
        } catch (InterruptedException e) {
            throw interrupted();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public ExitStatus awaitExit() {
        lock.lock();
        try {
            while (status == null && failure == null) {
                awaitChange(TimeUnit.MILLISECONDS.toNanos(200));
            }
            if (status == null) {
                throw failure;
            }
            return status;
        } catch (InterruptedException e) {
            throw interrupted();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public CompletableFuture<ExitStatus> onExit() {
        return publicExit;
    }

    // ------------------------------------------------------------------ ExecProcess

    @Override
    public long id() {
        return Integer.toUnsignedLong(id);
    }

    /** The command's pid in the sandbox's pid namespace; 0 until the init reported it. */
    public int pid() {
        lock.lock();
        try {
            return pid;
        } finally {
            lock.unlock();
        }
    }

    /** The raw exit report; empty while running. */
    public Optional<ExitReport> exitReport() {
        lock.lock();
        try {
            return Optional.ofNullable(report);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public OutputStream stdin() {
        return stdin;
    }

    @Override
    public void closeStdin() {
        lock.lock();
        try {
            stdinClosed = true;
            changed.signalAll();
            if (status != null || failure != null || !request.stdinPipe()) {
                return;
            }
        } finally {
            lock.unlock();
        }
        if (stdinCloseSent.compareAndSet(false, true)) {
            try {
                client.send(Frames.stdinClose(id));
            } catch (SandboxException ignored) {
                // the channel failed; the exec fails with it
            }
        }
    }

    @Override
    public InputStream stdout() {
        return out;
    }

    @Override
    public InputStream stderr() {
        return err;
    }

    @Override
    public boolean isAlive() {
        return !ended();
    }

    @Override
    public void signal(Signal signal) {
        if (isAlive()) {
            client.send(Frames.signal(id, signal.number(), 0));
        }
    }

    @Override
    public void kill() {
        if (isAlive()) {
            client.send(Frames.signal(id, Signal.SIGKILL.number(), 1));
        }
    }

    @Override
    public void resize(TerminalSize size) {
        Objects.requireNonNull(size, "size");
        if (request.terminal() == null) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "resize: the command was started without a terminal");
        }
        if (isAlive()) {
            client.send(Frames.resize(id, size));
        }
    }

    /** Kills the command's tree if it still runs, discards unread output, and lets the init forget it. */
    @Override
    public void close() {
        boolean alive = isAlive();
        if (alive) {
            try {
                kill();
            } catch (SandboxException ignored) {
                // channel gone
            }
        }
        out.close();
        err.close();
        if (alive && !released.get()) {
            try {
                awaitExit(Duration.ofSeconds(2));
            } catch (SandboxException ignored) {
                // failed or interrupted: release anyway
            }
        }
        release();
    }

    /** Tells the init it may forget this exec (once). */
    void release() {
        if (!released.compareAndSet(false, true)) {
            return;
        }
        client.unregister(id);
        if (client.isOpen()) {
            try {
                client.send(Frames.release(id));
            } catch (SandboxException ignored) {
                // the channel failed: nothing to release
            }
        }
        onFailure(new SandboxException(ErrorCode.FAILED_PRECONDITION, "the command was closed before it ended"));
    }

    /** Collect mode: all of stdout (1) or stderr (2). */
    byte[] collected(int stream) {
        lock.lock();
        try {
            return (stream == 1 ? out : err).collectedLocked();
        } finally {
            lock.unlock();
        }
    }

    private final class Stdin extends OutputStream {
        @Override
        public void write(int b) {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) {
            Objects.checkFromIndexSize(off, len, b.length);
            while (len > 0) {
                int n;
                lock.lock();
                try {
                    while (true) {
                        if (failure != null) {
                            throw failure;
                        }
                        if (!request.stdinPipe()) {
                            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "the command has no stdin pipe");
                        }
                        if (stdinClosed) {
                            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "stdin is closed");
                        }
                        if (status != null) {
                            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "the command has exited");
                        }
                        if (stdinWindow > 0) {
                            break;
                        }
                        awaitChange(TimeUnit.MILLISECONDS.toNanos(200));
                    }
                    n = (int) Math.min(Math.min(len, stdinWindow), STDIN_CHUNK);
                    stdinWindow -= n;
                } catch (InterruptedException e) {
                    throw interrupted();
                } finally {
                    lock.unlock();
                }
                client.send(Frames.stdin(id, b, off, n));
                off += n;
                len -= n;
            }
        }

        @Override
        public void close() {
            closeStdin();
        }
    }

    @Override
    public String toString() {
        return "InitExec{" + client.name() + "#" + Integer.toUnsignedString(id) + " " + request.argv().get(0) + "}";
    }
}
