package io.paddock.client.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.ErrorCode;
import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.ExitStatus;
import io.paddock.SandboxException;
import io.paddock.Signal;
import io.paddock.TerminalSize;
import io.paddock.internal.ChunkedInput;
import io.paddock.internal.Workers;
import io.paddock.wire.Wire;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;

/**
 * A command started over the daemon's exec stream: a WebSocket ({@code GET …/exec/stream}) whose first text
 * message is the {@link ExecRequest}; binary messages carry stdin (stream byte 0), stdout (1) and stderr (2);
 * text messages carry control ({@code stdin_close}, {@code signal}, {@code kill}, {@code resize}) and the outcome
 * ({@code started}, then {@code exit} or {@code error}).
 *
 * <p><b>Backpressure.</b> WebSocket demand is requested one message at a time, and only while both output
 * buffers hold less than {@link #BUFFER_CAP}. A consumer that stops reading thus stops the demand; the
 * client stops reading the socket, TCP's window fills, the daemon stops reading the command's output and
 * the command blocks, as with a pipe. At most {@code BUFFER_CAP} plus one message is buffered per stream.
 * Closing {@link #stdout()} or {@link #stderr()} discards its output from then on, so it never stalls the
 * command. stdin is sent in binary messages of at most 64 KiB, each waited for, so a command that does
 * not read its stdin blocks the writer.
 *
 * <p><b>Concurrency.</b> The JDK calls the listener methods one at a time; they take {@link #lock} only
 * briefly and never send. Consumers wait on {@link #changed}. Sends are serialised by {@link #slot}
 * (the JDK allows one outstanding send), which is never held together with {@link #lock}.
 */
final class RemoteExecProcess implements ExecProcess, WebSocket.Listener {
    /** Output buffered per stream before demand stops. */
    static final int BUFFER_CAP = 256 * 1024;
    /** Largest stdin message (data bytes, not counting the stream byte). */
    static final int STDIN_CHUNK = 64 * 1024;
    /** How long {@link #kill()} or {@link #close()} waits for a send that is stuck behind a full stdin. */
    private static final long SEND_SLOT_WAIT_MS = 5_000;

    private static final byte STDIN = 0;
    private static final byte STDOUT = 1;
    private static final byte STDERR = 2;

    private final Http http;
    private final String what;
    private final boolean terminal;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final Inbound out = new Inbound();
    private final Inbound err = new Inbound();
    private final Stdin stdin = new Stdin();
    private final CompletableFuture<ExitStatus> exit = new CompletableFuture<>();
    /** What callers get: dependent actions run off the WebSocket's threads. */
    private final CompletableFuture<ExitStatus> publicExit = exit.thenApplyAsync(s -> s, Workers.pool());

    /** The reusable socket this command runs on; null on a socket of its own. */
    private final ExecChannel channel;
    /** Serialises sends: the channel's when on one, else this command's own. */
    private final ExecChannel.SendSlot slot;

    // ---- guarded by lock ----
    private WebSocket ws;
    private boolean started;
    private long execId;
    private ExitStatus status;
    private SandboxException failure;
    /** Whether demand was withheld because a buffer is full; the consumer requests when it drains. */
    private boolean paused;
    private boolean stdinClosed;
    private boolean stdinCloseSent;
    /** Whether the command let go of its channel (its exit arrived): it no longer reads or sends on it. */
    private boolean detached;

    // ---- listener state: touched only by the JDK's serial listener calls ----
    private int messageStream = -1;
    private boolean inBinaryMessage;
    private final StringBuilder text = new StringBuilder();

    private RemoteExecProcess(Http http, String what, boolean terminal, ExecChannel channel) {
        this.http = http;
        this.what = what;
        this.terminal = terminal;
        this.channel = channel;
        this.slot = channel != null ? channel.slot : new ExecChannel.SendSlot();
    }

    /**
     * Starts {@code request} in the sandbox {@code sandboxId} and returns once the daemon reports the command
     * started: on one of {@link Http}'s reusable sockets ({@code /v1/exec/stream}), or on a socket of its own at
     * {@code streamPath} ({@code …/exec/stream}) with a daemon that has none.
     */
    static RemoteExecProcess start(Http http, String sandboxId, String streamPath, ExecRequest request) {
        ExecChannel c = http.execChannel();
        boolean terminal = request.terminal().isPresent();
        RemoteExecProcess p;
        ObjectNode first = Wire.json(request, false);
        if (c != null) {
            p = new RemoteExecProcess(http, "exec " + request.argv().get(0) + " in " + sandboxId + " at " + http.base(),
                    terminal, c);
            c.attach(p);
            p.setSocket(c.socket());
            first.put("sandbox_id", sandboxId);
        } else {
            p = new RemoteExecProcess(http, "exec " + request.argv().get(0) + " at " + http.base() + streamPath, terminal, null);
            p.setSocket(http.openWebSocket(streamPath, p));
        }
        http.track(p);
        try {
            String text = new String(Wire.bytes(first), StandardCharsets.UTF_8);
            p.send(w -> w.sendText(text, true), "the request");
            p.awaitStarted();
            Optional<byte[]> data = request.stdin();
            if (data.isPresent()) {
                p.stdin.write(data.get(), 0, data.get().length);
                p.closeStdin();
            }
        } catch (RuntimeException e) {
            p.abort(e.getMessage());
            http.untrack(p);
            throw e;
        }
        return p;
    }

    private void setSocket(WebSocket w) {
        lock.lock();
        try {
            ws = w;
        } finally {
            lock.unlock();
        }
    }

    private void awaitStarted() {
        lock.lock();
        try {
            long left = Http.CONTROL_TIMEOUT.toNanos();
            while (!started && status == null && failure == null) {
                if (left <= 0) {
                    throw new SandboxException(ErrorCode.UNAVAILABLE, "the daemon at " + http.base()
                            + " did not report the command started within " + Http.CONTROL_TIMEOUT.toSeconds() + "s");
                }
                left = changed.awaitNanos(left);
            }
            if (!started && status == null) {
                throw copy(failure);
            }
        } catch (InterruptedException e) {
            throw Http.interrupted();
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------ WebSocket.Listener (serial calls)

    @Override
    public void onOpen(WebSocket webSocket) {
        setSocket(webSocket);
        webSocket.request(1);
    }

    @Override
    public CompletionStage<?> onText(WebSocket webSocket, CharSequence data, boolean last) {
        text.append(data);
        if (last) {
            String message = text.toString();
            text.setLength(0);
            onControl(message);
        }
        demand(webSocket);
        return null;
    }

    @Override
    public CompletionStage<?> onBinary(WebSocket webSocket, ByteBuffer data, boolean last) {
        if (!inBinaryMessage) {
            messageStream = -1;
            inBinaryMessage = true;
        }
        if (messageStream < 0 && data.hasRemaining()) {
            messageStream = data.get();
        }
        if (data.hasRemaining()) {
            lock.lock();
            try {
                if (messageStream == STDOUT) {
                    out.offerLocked(data);
                } else if (messageStream == STDERR) {
                    err.offerLocked(data);
                }
                // any other stream byte is unknown to this version: ignored
            } finally {
                lock.unlock();
            }
        }
        if (last) {
            inBinaryMessage = false;
        }
        demand(webSocket);
        return null;
    }

    @Override
    public CompletionStage<?> onPing(WebSocket webSocket, ByteBuffer message) {
        demand(webSocket); // the JDK answers with a pong itself
        return null;
    }

    @Override
    public CompletionStage<?> onPong(WebSocket webSocket, ByteBuffer message) {
        demand(webSocket);
        return null;
    }

    @Override
    public CompletionStage<?> onClose(WebSocket webSocket, int statusCode, String reason) {
        fail(new SandboxException(ErrorCode.UNAVAILABLE, "the exec stream (" + what + ") closed before the command's exit"
                + " was reported (WebSocket close " + statusCode + (reason == null || reason.isEmpty() ? "" : ": " + reason) + ")"));
        return null;
    }

    @Override
    public void onError(WebSocket webSocket, Throwable error) {
        fail(new SandboxException(ErrorCode.UNAVAILABLE, "the exec stream (" + what + ") failed before the command's exit"
                + " was reported: " + error, error));
    }

    /** Asks for the next message unless a buffer is full; then the consumer asks when it drains. */
    private void demand(WebSocket webSocket) {
        lock.lock();
        try {
            if (detached) {
                return; // the channel asks for its next message itself
            }
            if (!belowCapLocked()) {
                paused = true;
                return;
            }
        } finally {
            lock.unlock();
        }
        webSocket.request(1);
    }

    private boolean belowCapLocked() {
        return out.bufferedLocked() < BUFFER_CAP && err.bufferedLocked() < BUFFER_CAP;
    }

    /** Called by a consumer after it took data: resumes demand if it was withheld and there is room now. */
    private void resumeIfRoom() {
        WebSocket w;
        lock.lock();
        try {
            if (!paused || !belowCapLocked()) {
                return;
            }
            paused = false;
            w = ws;
        } finally {
            lock.unlock();
        }
        if (w != null) {
            w.request(1);
        }
    }

    private void onControl(String message) {
        JsonNode m;
        try {
            m = Wire.JSON.readTree(message);
        } catch (IOException e) {
            fail(new SandboxException(ErrorCode.INTERNAL, "the daemon sent a malformed exec stream message: " + e.getMessage()));
            return;
        }
        switch (m.path("type").asText()) {
            case "started" -> {
                lock.lock();
                try {
                    started = true;
                    execId = m.path("exec_id").asLong();
                    changed.signalAll();
                } finally {
                    lock.unlock();
                }
            }
            case "exit" -> {
                ExitStatus s;
                try {
                    s = Wire.exitStatus(m.get("status"));
                } catch (RuntimeException e) {
                    fail(new SandboxException(ErrorCode.INTERNAL, "the daemon sent a malformed exit status: " + e.getMessage(), e));
                    return;
                }
                lock.lock();
                try {
                    if (status != null || failure != null) {
                        return;
                    }
                    status = s;
                    out.endLocked();
                    err.endLocked();
                    if (channel != null) { // everything of this command has arrived: the channel is free
                        detached = true;
                        ws = null;
                    }
                    changed.signalAll();
                } finally {
                    lock.unlock();
                }
                if (channel != null) {
                    channel.detach(this);
                    http.offerChannel(channel);
                }
                exit.complete(s);
            }
            case "error" -> {
                // {"type":"error","error":Error}, Error being {"error":{"code":…,"message":…}}
                JsonNode error = m.path("error");
                byte[] body = error.has("error") ? Wire.bytes(error) : message.getBytes(StandardCharsets.UTF_8);
                fail(Wire.exception(500, body));
            }
            default -> {
                // a message type unknown to this version: ignored
            }
        }
    }

    /** Ends the command with a failure, unless it already ended. */
    private void fail(SandboxException e) {
        lock.lock();
        try {
            if (status != null || failure != null) {
                return;
            }
            failure = e;
            out.failLocked(e);
            err.failLocked(e);
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        exit.completeExceptionally(e);
    }

    /** Drops the socket at once (the daemon kills the command) and fails the command if it had not ended. */
    void abort(String why) {
        fail(new SandboxException(ErrorCode.UNAVAILABLE, "the exec stream (" + what + ") was dropped: " + why));
        WebSocket w = socket();
        if (w != null) {
            w.abort();
        }
        http.untrack(this);
    }

    private WebSocket socket() {
        lock.lock();
        try {
            return ws;
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------ sending

    /**
     * Sends one message, waiting for it to be written. Sends are serialised: the JDK allows one outstanding
     * text or binary send.
     */
    private void send(Function<WebSocket, CompletableFuture<WebSocket>> op, String message) {
        try {
            slot.lock.lockInterruptibly();
        } catch (InterruptedException e) {
            throw Http.interrupted();
        }
        try {
            sendLocked(op, message);
        } finally {
            slot.lock.unlock();
        }
    }

    /** Like {@link #send} but gives up (returning false) if the send slot stays busy for a while. */
    private boolean trySend(Function<WebSocket, CompletableFuture<WebSocket>> op, String message) {
        try {
            if (!slot.lock.tryLock(SEND_SLOT_WAIT_MS, TimeUnit.MILLISECONDS)) {
                return false;
            }
        } catch (InterruptedException e) {
            throw Http.interrupted();
        }
        try {
            sendLocked(op, message);
            return true;
        } finally {
            slot.lock.unlock();
        }
    }

    private void sendLocked(Function<WebSocket, CompletableFuture<WebSocket>> op, String message) {
        WebSocket w = socket();
        if (w == null) { // the command ended and let go of its channel
            SandboxException ended = endedFailure();
            throw ended != null ? ended : new SandboxException(ErrorCode.FAILED_PRECONDITION, "the command has exited");
        }
        try {
            slot.last.get();
        } catch (ExecutionException e) {
            // that send's failure was reported to its sender
        } catch (InterruptedException e) {
            throw Http.interrupted();
        }
        CompletableFuture<WebSocket> f;
        try {
            f = op.apply(w);
        } catch (IllegalStateException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "sending " + message + " on the exec stream failed: " + e.getMessage(), e);
        }
        slot.last = f;
        try {
            f.get();
        } catch (InterruptedException e) {
            throw Http.interrupted();
        } catch (ExecutionException e) {
            SandboxException ended = endedFailure();
            if (ended != null) {
                throw ended;
            }
            throw new SandboxException(ErrorCode.UNAVAILABLE, "sending " + message + " on the exec stream (" + what
                    + ") failed: " + e.getCause(), e.getCause());
        }
    }

    /** Why nothing more can be sent once the command ended; null while it runs. */
    private SandboxException endedFailure() {
        lock.lock();
        try {
            if (failure != null) {
                return copy(failure);
            }
            if (status != null) {
                return new SandboxException(ErrorCode.FAILED_PRECONDITION, "the command has exited");
            }
            return null;
        } finally {
            lock.unlock();
        }
    }

    private void control(String json, String message) {
        try {
            send(w -> w.sendText(json, true), message);
        } catch (SandboxException e) {
            if (isAlive()) {
                throw e;
            }
            // it ended meanwhile: nothing left to control
        }
    }

    // ------------------------------------------------------------------ ExecProcess

    @Override
    public long id() {
        lock.lock();
        try {
            return execId;
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
            if (stdinCloseSent || status != null || failure != null) {
                return;
            }
            stdinCloseSent = true;
        } finally {
            lock.unlock();
        }
        control("{\"type\":\"stdin_close\"}", "stdin_close");
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
    public Optional<ExitStatus> awaitExit(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        lock.lock();
        try {
            while (status == null && failure == null) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return Optional.empty();
                }
                changed.awaitNanos(left);
            }
            if (status == null) {
                throw copy(failure);
            }
            return Optional.of(status);
        } catch (InterruptedException e) {
            throw Http.interrupted();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public ExitStatus awaitExit() {
        lock.lock();
        try {
            while (status == null && failure == null) {
                changed.await();
            }
            if (status == null) {
                throw copy(failure);
            }
            return status;
        } catch (InterruptedException e) {
            throw Http.interrupted();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public CompletableFuture<ExitStatus> onExit() {
        return publicExit;
    }

    @Override
    public boolean isAlive() {
        lock.lock();
        try {
            return status == null && failure == null;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void signal(Signal signal) {
        Objects.requireNonNull(signal, "signal");
        if (isAlive()) {
            control("{\"type\":\"signal\",\"signal\":" + signal.number() + "}", "signal " + signal);
        }
    }

    @Override
    public void resize(TerminalSize size) {
        Objects.requireNonNull(size, "size");
        if (!terminal) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "resize: the command was started without a terminal");
        }
        if (isAlive()) {
            control(Wire.json(size).put("type", "resize").toString(), "resize to " + size);
        }
    }

    /**
     * Kills the command's process tree. If a stdin write holds the stream for more than a few seconds (the
     * command does not read its stdin), the socket is dropped instead, which makes the daemon kill the tree;
     * the exit status is then unknown and the command fails with {@code UNAVAILABLE}.
     */
    @Override
    public void kill() {
        if (!isAlive()) {
            return;
        }
        boolean sent;
        try {
            sent = trySend(w -> w.sendText("{\"type\":\"kill\"}", true), "kill");
        } catch (SandboxException e) {
            if (!isAlive()) {
                return;
            }
            throw e;
        }
        if (!sent) {
            abort("kill could not be sent while stdin was blocked; the socket was closed, which kills the command");
        }
    }

    /** Kills the command's tree if it still runs, discards unread output and closes the socket. */
    @Override
    public void close() {
        boolean alive = isAlive();
        if (alive) {
            try {
                kill();
            } catch (SandboxException ignored) {
                // stream gone: the daemon kills the command when the socket closes
            }
        }
        out.close();
        err.close();
        if (alive) {
            try {
                awaitExit(Duration.ofSeconds(2));
            } catch (SandboxException ignored) {
                // failed or interrupted: close anyway
            }
        }
        fail(new SandboxException(ErrorCode.FAILED_PRECONDITION, "the command was closed before it ended"));
        WebSocket w = socket();
        if (w != null && !w.isInputClosed()) {
            // The daemon closes the socket after exit; if it has not yet, close our side and drop it soon.
            if (!w.isOutputClosed()) {
                w.sendClose(WebSocket.NORMAL_CLOSURE, "").exceptionally(t -> null);
            }
            CompletableFuture.delayedExecutor(2, TimeUnit.SECONDS).execute(() -> {
                if (!w.isInputClosed()) {
                    w.abort();
                }
            });
        }
        http.untrack(this);
    }

    private static SandboxException copy(SandboxException e) {
        return new SandboxException(e.code(), e.getMessage(), e);
    }

    @Override
    public String toString() {
        return "RemoteExecProcess[" + what + "]";
    }

    // ------------------------------------------------------------------ streams

    /**
     * stdout or stderr: chunks offered by the listener, taken by the consumer (all under {@link #lock}); a
     * consumer that took data, or closed the stream, resumes demand if it was withheld.
     */
    private final class Inbound extends ChunkedInput {
        Inbound() {
            super(lock, changed);
        }

        @Override
        protected void afterRead(long took) {
            resumeIfRoom();
        }

        /** Closing discards what is buffered and what arrives from now on, so this stream never stalls the command. */
        @Override
        protected void afterClose(boolean beforeEnd) {
            resumeIfRoom();
        }

        @Override
        protected SandboxException toThrow(SandboxException failure) {
            return copy(failure);
        }
    }

    /** stdin: binary messages of at most {@link #STDIN_CHUNK} data bytes, each waited for. */
    private final class Stdin extends OutputStream {
        @Override
        public void write(int b) {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) {
            Objects.checkFromIndexSize(off, len, b.length);
            while (len > 0) {
                lock.lock();
                try {
                    if (failure != null) {
                        throw copy(failure);
                    }
                    if (stdinClosed) {
                        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "stdin is closed");
                    }
                    if (status != null) {
                        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "the command has exited");
                    }
                } finally {
                    lock.unlock();
                }
                int n = Math.min(len, STDIN_CHUNK);
                ByteBuffer frame = ByteBuffer.allocate(n + 1);
                frame.put(STDIN).put(b, off, n).flip();
                send(w -> w.sendBinary(frame, true), "stdin");
                off += n;
                len -= n;
            }
        }

        @Override
        public void close() {
            closeStdin();
        }
    }
}
