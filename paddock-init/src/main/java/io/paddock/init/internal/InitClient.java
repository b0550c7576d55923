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
    /**
     * The reader's buffer while a stream fills it: output and file reads arrive in frames of up to 256 KiB,
     * written or spliced by the init into a pipe of 1 MiB, so each read takes several whole frames.
     */
    private static final int STREAM_BUFFER = 1024 * 1024;
    /**
     * What the reader holds while nothing streams: an idle sandbox costs its reader this much instead of the
     * 1 MiB a stream uses (P6: 1000 idle sandboxes). The buffer grows to {@link #STREAM_BUFFER} when a read
     * fills it, and goes back to this size once no request is in flight.
     */
    static final int IDLE_BUFFER = 16 * 1024;
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
    /** Bytes of buffer the reader holds now, for tests and diagnostics. */
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

    /** Bytes of buffer the reader thread holds now: {@link #IDLE_BUFFER} while nothing is in flight. */
    int readerBufferBytes() {
        return readerBuffers;
    }

    // ------------------------------------------------------------------ the reader thread

    private void readLoop() {
        // One direct buffer: the channel reads into it and frames are parsed and dispatched in place, so a
        // byte of output is copied once in the engine (into the consumer's queue), not three times.
        ByteBuffer buf = ByteBuffer.allocateDirect(IDLE_BUFFER);
        readerBuffers = buf.capacity();
        boolean synced = false;
        byte[] pattern = ByteBuffer.allocate(20).putInt(Frames.MAGIC).put(nonce).array();
        try {
            while (true) {
                int room = buf.remaining();
                int n = in.read(buf);
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
                buf.flip();
                if (!synced) {
                    int at = findSync(buf, pattern);
                    if (at < 0) {
                        // keep a tail long enough to hold the header and a pattern split across reads
                        buf.position(buf.limit() - Math.min(buf.limit(), Frames.HEADER + pattern.length - 1));
                        buf.compact();
                        continue;
                    }
                    buf.position(at);
                    synced = true;
                }
                int need = 0; // the whole of a frame that has not fully arrived
                while (buf.remaining() >= 4) {
                    int pos = buf.position();
                    int l = buf.getInt(pos);
                    if (l < 5 || l > Frames.MAX_OUT_FRAME - 4) {
                        fail(new SandboxException(ErrorCode.UNAVAILABLE,
                                "protocol error from sandbox init " + name + ": frame length " + l));
                        return;
                    }
                    if (buf.remaining() < l + 4) {
                        need = l + 4;
                        break;
                    }
                    int type = buf.get(pos + 4) & 0xFF;
                    int channel = buf.getInt(pos + 5);
                    buf.position(pos + l + 4);
                    dispatch(type & ~Frames.MORE, channel, buf.slice(pos + Frames.HEADER, l - 5));
                }
                buf.compact();
                int want = buf.capacity();
                if (need > buf.capacity()) {
                    want = Math.max(need, STREAM_BUFFER);
                } else if (n == room && buf.capacity() < STREAM_BUFFER) {
                    want = STREAM_BUFFER; // a stream: read in large steps
                } else if (buf.position() == 0 && handlers.isEmpty() && buf.capacity() > IDLE_BUFFER) {
                    want = IDLE_BUFFER; // nothing in flight, so nothing streams: give the stream's buffer back (P6)
                }
                if (want != buf.capacity()) {
                    ByteBuffer next = ByteBuffer.allocateDirect(want);
                    buf.flip();
                    next.put(buf);
                    buf = next;
                    readerBuffers = buf.capacity();
                }
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

    /** Start of the HELLO_ACK frame carrying our magic+nonce (9 bytes before the magic) in what is unread, or -1. */
    private static int findSync(ByteBuffer buf, byte[] pattern) {
        outer:
        for (int i = buf.position() + Frames.HEADER; i + pattern.length <= buf.limit(); i++) {
            for (int j = 0; j < pattern.length; j++) {
                if (buf.get(i + j) != pattern[j]) {
                    continue outer;
                }
            }
            if ((buf.get(i - Frames.HEADER + 4) & 0xFF) == Frames.HELLO_ACK) {
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
