package io.paddock.init.internal;

import io.paddock.ErrorCode;
import io.paddock.ExecResult;
import io.paddock.ExitStatus;
import io.paddock.SandboxException;
import io.paddock.SandboxFiles;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The engine's end of one sandbox's init channel.
 *
 * <p>One platform reader thread per client reads init→engine frames and dispatches them to the exec or
 * file request owning the channel id; it never blocks on a consumer (windows bound what it can receive)
 * and never writes. Writers share one lock: a message's frames are written together while holding it,
 * and no lock is held while waiting for a reply.
 */
public final class InitClient implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(InitClient.class.getName());
    private static final int READ_BUFFER = 64 * 1024;
    /**
     * What the reader holds while nothing streams: an idle sandbox costs its reader this much (twice: the read
     * buffer and the frame buffer) instead of the 64 KiB + 128 KiB a stream uses (P6: 1000 idle sandboxes).
     * The read buffer grows to {@link #READ_BUFFER} when a read fills it, and both go back to this size once
     * no request is in flight.
     */
    static final int IDLE_BUFFER = 8 * 1024;
    private static final long READER_STACK = 256 * 1024;

    private final ReadableByteChannel in;
    private final WritableByteChannel out;
    private final byte[] nonce;
    private final String name;
    private final Object writeLock = new Object();
    // Each connection numbers its channels from a random point, so that after an engine restart new execs
    // cannot collide with ones the init still runs from the previous connection.
    private final AtomicInteger nextChannel =
            new AtomicInteger(java.util.concurrent.ThreadLocalRandom.current().nextInt(1, 1 << 30));
    private final AtomicLong nextPing = new AtomicLong();
    private final Map<Integer, Handler> handlers = new ConcurrentHashMap<>();
    private final Map<Long, CompletableFuture<Long>> pings = new ConcurrentHashMap<>();
    private final CompletableFuture<Frames.HelloAck> helloAck = new CompletableFuture<>();
    private final CompletableFuture<Void> closed = new CompletableFuture<>();
    private final AtomicReference<SandboxException> failure = new AtomicReference<>();
    private final InitFiles files;
    /** Bytes of buffer the reader holds now (read buffer + frame buffer), for tests and diagnostics. */
    private volatile int readerBuffers;
    private volatile java.util.function.UnaryOperator<SandboxException> lossExplainer = java.util.function.UnaryOperator.identity();

    /** Receives the frames of one channel id; called on the reader thread, must not block. */
    interface Handler {
        void onFrame(int type, ByteBuffer payload);

        void onFailure(SandboxException e);
    }

    private InitClient(ReadableByteChannel in, WritableByteChannel out, byte[] nonce, String name) {
        this.in = in;
        this.out = out;
        this.nonce = nonce.clone();
        this.name = name;
        this.files = new InitFiles(this);
    }

    /**
     * What an end of the channel is reported as, to everything waiting on it: given "closed its channel", the
     * sandbox's owner says why where the runtime knows (an OOM kill, a process limit), which the channel cannot.
     * Called once, on the reader thread, when the channel ends.
     */
    public void explainLossWith(java.util.function.UnaryOperator<SandboxException> explainer) {
        this.lossExplainer = explainer;
    }

    /** Writes HELLO; the engine may do this into the FIFO before the init has even started. */
    public static void writeHello(WritableByteChannel ch, byte[] nonce16, boolean orphanDie) {
        try {
            writeFully(ch, Frames.hello(nonce16, orphanDie));
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot write HELLO to the sandbox init: " + e, e);
        }
    }

    /**
     * Starts reading from the init, skipping everything up to the HELLO_ACK that carries {@code nonce16}
     * (the HELLO must have been written with {@link #writeHello}), and returns once it arrived.
     *
     * @throws SandboxException UNAVAILABLE when no HELLO_ACK arrives within {@code timeout} or the channel ends
     */
    public static InitClient attach(ReadableByteChannel fromInit, WritableByteChannel toInit, byte[] nonce16,
                                    Duration timeout, String name) {
        if (nonce16.length != 16) {
            throw new IllegalArgumentException("nonce must be 16 bytes");
        }
        InitClient c = new InitClient(fromInit, toInit, nonce16, name);
        Thread t = new Thread(null, c::readLoop, "paddock-init-" + name, READER_STACK);
        t.setDaemon(true);
        t.start();
        try {
            c.helloAck.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
            return c;
        } catch (TimeoutException e) {
            SandboxException ex = new SandboxException(ErrorCode.UNAVAILABLE,
                    "sandbox init " + name + " did not answer HELLO within " + timeout.toMillis() + " ms");
            c.fail(ex);
            throw ex;
        } catch (ExecutionException e) {
            SandboxException ex = e.getCause() instanceof SandboxException se ? se
                    : new SandboxException(ErrorCode.UNAVAILABLE, "sandbox init " + name + ": " + e.getCause(),
                    e.getCause());
            c.fail(ex);
            throw new SandboxException(ErrorCode.UNAVAILABLE,
                    "sandbox init " + name + " did not answer HELLO: " + ex.getMessage(), ex);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            SandboxException ex = new SandboxException(ErrorCode.UNAVAILABLE, "interrupted");
            c.fail(ex);
            throw ex;
        }
    }

    public String name() {
        return name;
    }

    /** The build id the init reported in its HELLO_ACK. */
    public String initBuildId() {
        return helloAck.join().buildId();
    }

    /** Completes (normally) when the channel ends: end of file, an error, {@link #close} or {@link #fail}. */
    public CompletableFuture<Void> closed() {
        return closed.thenApply(v -> v);
    }

    public boolean isOpen() {
        return failure.get() == null;
    }

    /** Closes the client; every pending and future operation fails with {@code reason}. */
    public void fail(SandboxException reason) {
        if (!failure.compareAndSet(null, reason)) {
            return;
        }
        helloAck.completeExceptionally(reason);
        try {
            in.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        try {
            out.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        for (Handler h : handlers.values()) {
            try {
                h.onFailure(reason);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "init " + name + ": handler failed on close", e);
            }
        }
        handlers.clear();
        for (CompletableFuture<Long> p : pings.values()) {
            p.completeExceptionally(reason);
        }
        pings.clear();
        closed.complete(null);
    }

    @Override
    public void close() {
        fail(new SandboxException(ErrorCode.UNAVAILABLE, "the connection to sandbox init " + name + " was closed"));
    }

    // ------------------------------------------------------------------ requests

    /** Starts a command; its output streams must be read (or closed). */
    public InitExec spawn(SpawnRequest r) {
        int id = newChannel();
        InitExec e = new InitExec(this, id, r, false);
        register(id, e);
        try {
            send(Frames.spawn(id, r));
        } catch (RuntimeException ex) {
            handlers.remove(id);
            throw ex;
        }
        return e;
    }

    /**
     * Re-attaches to an exec the init kept running across a reconnect (an engine restart): output that
     * arrives on {@code channel} from now on, and its exit, go to the returned handle. {@code request}
     * must describe the exec as it was spawned (its windows and classifier are used). Output the init
     * sent to the previous connection is lost.
     */
    public InitExec adopt(int channel, SpawnRequest request) {
        if (channel == 0) {
            throw new IllegalArgumentException("channel 0 is the control channel");
        }
        InitExec e = new InitExec(this, channel, request, false);
        register(channel, e);
        // The previous engine may have died holding unreturned window: grant the new buffers' worth again.
        send(Frames.window(channel, Frames.STREAM_STDOUT, request.stdoutWindow()));
        send(Frames.window(channel, Frames.STREAM_STDERR, request.stderrWindow()));
        return e;
    }

    /**
     * Runs a command to its end: writes {@code stdinOrNull} (then closes stdin), collects both streams and
     * releases the exec.
     */
    public ExecResult run(SpawnRequest r, byte[] stdinOrNull) {
        int id = newChannel();
        SpawnRequest req = r.withStdinPipe(stdinOrNull != null);
        InitExec e = new InitExec(this, id, req, true);
        register(id, e);
        try {
            send(Frames.spawn(id, req));
            if (stdinOrNull != null) {
                try {
                    e.stdin().write(stdinOrNull);
                } catch (SandboxException ex) {
                    if (ex.code() != ErrorCode.FAILED_PRECONDITION) {
                        throw ex; // the command exiting without reading its input is fine
                    }
                } catch (IOException ex) {
                    throw new SandboxException(ErrorCode.INTERNAL, "writing stdin: " + ex, ex);
                }
                e.closeStdin();
            }
            ExitStatus status = e.awaitExit();
            return new ExecResult(status, e.collected(1), e.collected(2));
        } finally {
            e.release();
        }
    }

    /**
     * Arms the init's own backstop: this long from now it kills everything and exits. Relative, because the
     * init's monotonic clock need not be the engine's (under gVisor it is the Sentry's, which starts near
     * zero); the transit time only makes the backstop later.
     */
    public void setDeadline(Duration fromNow) {
        send(Frames.deadlineIn(Math.max(0, fromNow.toNanos())));
    }

    /** Asks the init to kill everything and exit. */
    public void shutdown() {
        send(Frames.shutdown());
    }

    /** Round trip time of a PING. */
    public Duration ping() {
        long seq = nextPing.incrementAndGet();
        CompletableFuture<Long> f = new CompletableFuture<>();
        pings.put(seq, f);
        long start = System.nanoTime();
        try {
            send(Frames.ping(ByteBuffer.allocate(8).putLong(seq).array()));
            f.get(10, TimeUnit.SECONDS);
            return Duration.ofNanos(System.nanoTime() - start);
        } catch (TimeoutException e) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "sandbox init " + name + " did not answer PING");
        } catch (ExecutionException e) {
            throw e.getCause() instanceof SandboxException se ? se
                    : new SandboxException(ErrorCode.INTERNAL, String.valueOf(e.getCause()), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SandboxException(ErrorCode.UNAVAILABLE, "interrupted");
        } finally {
            pings.remove(seq);
        }
    }

    public SandboxFiles files() {
        return files;
    }

    // ------------------------------------------------------------------ plumbing for InitExec / InitFiles

    int newChannel() {
        int id;
        do {
            id = nextChannel.incrementAndGet();
        } while (id == 0 || handlers.containsKey(id));
        return id;
    }

    void register(int id, Handler h) {
        SandboxException f = failure.get();
        if (f != null) {
            throw f;
        }
        handlers.put(id, h);
        // fail() may have run between the check and the put: make sure h hears about it
        f = failure.get();
        if (f != null && handlers.remove(id) != null) {
            throw f;
        }
    }

    void unregister(int id) {
        handlers.remove(id);
    }

    SandboxException failure() {
        return failure.get();
    }

    /** Writes one message (all its frames) atomically with respect to other writers. */
    void send(byte[] frames) {
        SandboxException f = failure.get();
        if (f != null) {
            throw f;
        }
        synchronized (writeLock) {
            try {
                writeFully(out, frames);
            } catch (IOException e) {
                SandboxException ex = failure.get() != null ? failure.get()
                        : new SandboxException(ErrorCode.UNAVAILABLE,
                        "writing to sandbox init " + name + " failed: " + e, e);
                fail(ex);
                throw failure.get();
            }
        }
    }

    private static void writeFully(WritableByteChannel ch, byte[] b) throws IOException {
        ByteBuffer bb = ByteBuffer.wrap(b);
        while (bb.hasRemaining()) {
            ch.write(bb);
        }
    }

    /** Bytes of buffer the reader thread holds now: 2 x {@link #IDLE_BUFFER} while nothing is in flight. */
    int readerBufferBytes() {
        return readerBuffers;
    }

    // ------------------------------------------------------------------ the reader thread

    private void readLoop() {
        ByteBuffer rbuf = ByteBuffer.allocateDirect(IDLE_BUFFER);
        byte[] acc = new byte[IDLE_BUFFER];
        readerBuffers = rbuf.capacity() + acc.length;
        int len = 0;
        boolean synced = false;
        byte[] pattern = ByteBuffer.allocate(20).putInt(Frames.MAGIC).put(nonce).array();
        try {
            while (true) {
                rbuf.clear();
                int n = in.read(rbuf);
                if (n < 0) {
                    SandboxException lost = new SandboxException(ErrorCode.UNAVAILABLE, "sandbox init " + name
                            + " closed its channel");
                    SandboxException reason;
                    try {
                        reason = lossExplainer.apply(lost);
                    } catch (RuntimeException e) {
                        LOG.log(System.Logger.Level.WARNING, "init " + name + ": explaining its end failed", e);
                        reason = lost;
                    }
                    fail(reason);
                    return;
                }
                if (n == 0) {
                    continue;
                }
                if (len + n > acc.length) {
                    acc = Arrays.copyOf(acc, Math.max(acc.length * 2, len + n));
                }
                rbuf.flip();
                rbuf.get(acc, len, n);
                len += n;
                int pos = 0;
                if (!synced) {
                    int at = findSync(acc, len, pattern);
                    if (at < 0) {
                        // keep a tail long enough to hold the header and a pattern split across reads
                        int keep = Math.min(len, Frames.HEADER + pattern.length - 1);
                        System.arraycopy(acc, len - keep, acc, 0, keep);
                        len = keep;
                        continue;
                    }
                    pos = at;
                    synced = true;
                }
                while (len - pos >= 4) {
                    int l = ByteBuffer.wrap(acc, pos, 4).getInt();
                    if (l < 5 || l > Frames.MAX_OUT_FRAME - 4) {
                        fail(new SandboxException(ErrorCode.UNAVAILABLE,
                                "protocol error from sandbox init " + name + ": frame length " + l));
                        return;
                    }
                    if (len - pos < l + 4) {
                        if (acc.length < l + 4) {
                            acc = Arrays.copyOf(acc, l + 4 + READ_BUFFER);
                        }
                        break;
                    }
                    int type = acc[pos + 4] & 0xFF;
                    int channel = ByteBuffer.wrap(acc, pos + 5, 4).getInt();
                    dispatch(type & ~Frames.MORE, channel, ByteBuffer.wrap(acc, pos + Frames.HEADER, l - 5).slice());
                    pos += l + 4;
                }
                System.arraycopy(acc, pos, acc, 0, len - pos);
                len -= pos;
                if (acc.length > 4 * 1024 * 1024 && len < 128 * 1024) {
                    acc = Arrays.copyOf(acc, 128 * 1024); // shrink after one huge frame
                }
                if (n == rbuf.capacity() && n < READ_BUFFER) {
                    rbuf = ByteBuffer.allocateDirect(READ_BUFFER); // a stream: read in large steps
                } else if (len == 0 && handlers.isEmpty()) {
                    // nothing in flight, so nothing streams: give the stream's buffers back (P6)
                    if (rbuf.capacity() > IDLE_BUFFER) {
                        rbuf = ByteBuffer.allocateDirect(IDLE_BUFFER);
                    }
                    if (acc.length > IDLE_BUFFER) {
                        acc = new byte[IDLE_BUFFER];
                    }
                }
                readerBuffers = rbuf.capacity() + acc.length;
            }
        } catch (ClosedChannelException e) {
            fail(new SandboxException(ErrorCode.UNAVAILABLE, "the connection to sandbox init " + name + " was closed"));
        } catch (IOException | RuntimeException e) {
            fail(new SandboxException(ErrorCode.UNAVAILABLE, "reading from sandbox init " + name + " failed: " + e, e));
        } catch (Error e) {
            fail(new SandboxException(ErrorCode.INTERNAL, "reader of sandbox init " + name + " died: " + e, e));
            throw e;
        }
    }

    /** Start of the HELLO_ACK frame carrying our magic+nonce (9 bytes before the magic), or -1. */
    private static int findSync(byte[] acc, int len, byte[] pattern) {
        outer:
        for (int i = Frames.HEADER; i + pattern.length <= len; i++) {
            for (int j = 0; j < pattern.length; j++) {
                if (acc[i + j] != pattern[j]) {
                    continue outer;
                }
            }
            if ((acc[i - Frames.HEADER + 4] & 0xFF) == Frames.HELLO_ACK) {
                return i - Frames.HEADER;
            }
        }
        return -1;
    }

    private void dispatch(int type, int channel, ByteBuffer payload) {
        try {
            switch (type) {
                case Frames.HELLO_ACK -> {
                    if (!helloAck.isDone()) {
                        Frames.HelloAck ack = Frames.decodeHelloAck(payload);
                        if (ack.version() != Frames.VERSION) {
                            LOG.log(System.Logger.Level.WARNING, "init {0} speaks protocol version {1}", name,
                                    ack.version());
                        }
                        helloAck.complete(ack);
                    }
                }
                case Frames.PONG -> {
                    if (payload.remaining() == 8) {
                        CompletableFuture<Long> f = pings.get(payload.getLong(payload.position()));
                        if (f != null) {
                            f.complete(System.nanoTime());
                        }
                    }
                }
                case Frames.LOG -> {
                    Frames.Log l = Frames.decodeLog(payload);
                    LOG.log(l.level() <= 1 ? System.Logger.Level.ERROR
                            : l.level() == 2 ? System.Logger.Level.WARNING : System.Logger.Level.INFO,
                            "init {0}: {1}", name, l.message());
                }
                default -> {
                    Handler h = handlers.get(channel);
                    if (h != null) {
                        h.onFrame(type, payload);
                    } else if (type != Frames.WINDOW_ACK && type != Frames.F_ERROR) {
                        LOG.log(System.Logger.Level.DEBUG, "init {0}: frame 0x{1} for unknown channel {2}", name,
                                Integer.toHexString(type), Integer.toUnsignedString(channel));
                    }
                }
            }
        } catch (Frames.MalformedException e) {
            // One bad message must not take the whole sandbox down: fail only the request it was for.
            LOG.log(System.Logger.Level.WARNING, "init {0}: malformed frame 0x{1}: {2}", name,
                    Integer.toHexString(type), e.getMessage());
            Handler h = channel == 0 ? null : handlers.remove(channel);
            if (h != null) {
                h.onFailure(new SandboxException(ErrorCode.INTERNAL, "malformed message 0x"
                        + Integer.toHexString(type) + " from sandbox init " + name + ": " + e.getMessage()));
            }
        }
    }
}
