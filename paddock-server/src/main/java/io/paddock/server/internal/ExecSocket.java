package io.paddock.server.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.ErrorCode;
import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.ExitStatus;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxState;
import io.paddock.Signal;
import io.paddock.internal.Workers;
import io.paddock.wire.Wire;
import org.eclipse.jetty.websocket.api.Callback;
import org.eclipse.jetty.websocket.api.Session;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * One exec stream WebSocket: the protocol that openapi.json describes. Two kinds:
 * <ul>
 *   <li>{@code /v1/sandboxes/{id}/exec/stream}, bound to its sandbox: one command, then the server closes it;</li>
 *   <li>{@code /v1/exec/stream}, reusable: each request names its sandbox ({@code sandbox_id}, resolved and
 *       authorised for the socket's caller then), and after a command's {@code exit} the socket stays open for
 *       the caller's next request, as an HTTP/1.1 connection stays open for the next request. This is what the
 *       Java client keeps a few of: opening a WebSocket costs about as much as the rest of a short exec.
 *       Between commands, stdin and control messages still in flight for the last one are dropped.</li>
 * </ul>
 *
 * <p>Backpressure, both ways, with bounded memory (ATTACKS.md A60):
 * <ul>
 *   <li>output: one pooled thread per stream reads the command's stdout or stderr and sends each chunk
 *       with a send whose completion it waits for, so at most one chunk per stream is in flight; a client
 *       that stops reading stops the pump, then the engine's credit window stops the command;</li>
 *   <li>input: demand is explicit; the next frame is demanded only after the previous stdin chunk has
 *       been written to {@link ExecProcess#stdin()}, which blocks while the command does not read.</li>
 * </ul>
 * A socket that closes (or idles out) before the command ends kills the command's process tree.
 * Thread-safety: Jetty delivers frames one at a time (we demand one at a time); the pumps and the stdin
 * writer are the only other threads and share only volatile or atomic state.
 */
public final class ExecSocket implements Session.Listener {
    private static final System.Logger LOG = System.getLogger(ExecSocket.class.getName());
    private static final int CHUNK = 64 * 1024;
    private static final byte STDIN = 0;
    private static final byte STDOUT = 1;
    private static final byte STDERR = 2;

    /** The bound socket's sandbox; null for a reusable one. */
    private final Sandbox bound;
    /** A reusable socket's resolver: a request's sandbox_id to its sandbox, if the caller may use it. */
    private final Function<String, Sandbox> resolve;
    /** A reusable socket's record of each command it started (or failed to start). */
    private final ExecAudit audit;
    private final ScheduledExecutorService pinger;
    private final long pingMillis;
    private final AtomicBoolean ended = new AtomicBoolean();
    private volatile Session session;
    private volatile ExecProcess process;
    private volatile Future<?> stdinWrite;
    private volatile ScheduledFuture<?> pings;
    private volatile boolean stdinClosed;
    /** Commands started on this socket (touched only by Jetty's serial frame calls). */
    private int started;
    private final Metrics.Bytes bytes;
    /** Run once when the socket ends: gives back its place in the tenant's share. */
    private volatile Runnable onEnd = () -> { };

    /** What a reusable socket records for each request: the sandbox it named, and the failure, if any. */
    @FunctionalInterface
    public interface ExecAudit {
        void exec(String sandboxId, SandboxException failure, long startNanos);
    }

    /** A socket bound to {@code sandbox}: one command. @param bytes counts stdin in, stdout and stderr out */
    public static ExecSocket bound(Sandbox sandbox, ScheduledExecutorService pinger, long pingMillis, Metrics.Bytes bytes) {
        return new ExecSocket(sandbox, null, null, pinger, pingMillis, bytes);
    }

    /** A reusable socket: each request names its sandbox, which {@code resolve} finds for the caller. */
    public static ExecSocket reusable(Function<String, Sandbox> resolve, ExecAudit audit, ScheduledExecutorService pinger,
                                      long pingMillis, Metrics.Bytes bytes) {
        return new ExecSocket(null, resolve, audit, pinger, pingMillis, bytes);
    }

    private ExecSocket(Sandbox bound, Function<String, Sandbox> resolve, ExecAudit audit,
                       ScheduledExecutorService pinger, long pingMillis, Metrics.Bytes bytes) {
        this.bound = bound;
        this.resolve = resolve;
        this.audit = audit;
        this.bytes = bytes;
        this.pinger = pinger;
        this.pingMillis = pingMillis;
    }

    /** Has {@code action} run when this socket ends (closed, failed or cut); it may run more than once. Returns this. */
    public ExecSocket whenEnded(Runnable action) {
        this.onEnd = action;
        return this;
    }

    @Override
    public void onWebSocketOpen(Session s) {
        this.session = s;
        // Pings keep a healthy but quiet connection (a command that prints nothing for a while) from idling
        // out; a client that stops reading stops their delivery too, and then the idle timeout closes it.
        pings = pinger.scheduleAtFixedRate(() -> {
            Session cur = session;
            if (cur != null && cur.isOpen()) {
                cur.sendPing(ByteBuffer.allocate(0), Callback.NOOP);
            }
        }, pingMillis, pingMillis, TimeUnit.MILLISECONDS);
        s.demand();
    }

    @Override
    public void onWebSocketText(String text) {
        try {
            ExecProcess p = process;
            if (p != null) {
                control(p, text);
            } else if (started == 0 || resolve != null) {
                JsonNode msg = Wire.parse(text.getBytes(StandardCharsets.UTF_8));
                if (started > 0 && msg.has("type")) {
                    // a control message for the last command, sent before its exit arrived: dropped
                } else {
                    start(msg);
                }
            }
            if (!ended.get()) {
                session.demand();
            }
        } catch (SandboxException e) {
            fail(e);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "exec stream failed", e);
            fail(new SandboxException(ErrorCode.INTERNAL, "internal error (" + e.getClass().getSimpleName() + ")"));
        }
    }

    private void start(JsonNode msg) {
        long began = System.nanoTime();
        Sandbox sandbox = bound;
        String sandboxId = null;
        try {
            if (resolve != null) {
                JsonNode id = msg instanceof ObjectNode o ? o.remove("sandbox_id") : null;
                if (id == null || !id.isTextual()) {
                    throw SandboxException.invalid("sandbox_id", "this socket serves any sandbox: each request names"
                            + " its sandbox_id");
                }
                sandboxId = id.asText();
                sandbox = resolve.apply(sandboxId);
                SandboxState state = sandbox.info().state();
                if (state != SandboxState.RUNNING) {
                    throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "sandbox " + sandbox.id() + " is "
                            + state.name().toLowerCase(Locale.ROOT) + "; exec needs a running sandbox");
                }
            }
            ExecRequest request = Wire.execRequest(msg);
            // Its stdin field is ignored: stdin is streamed.
            ExecProcess p = sandbox.start(request.toBuilder().stdin((byte[]) null).build());
            started++;
            stdinClosed = false;
            process = p;
            if (audit != null) {
                audit.exec(sandboxId, null, began);
            }
        } catch (SandboxException e) {
            if (audit != null) {
                audit.exec(sandboxId, e, began);
            }
            throw e;
        }
        ExecProcess p = process;
        if (ended.get()) { // the socket closed while the command started
            cleanup();
            return;
        }
        ObjectNode reply = Wire.object();
        reply.put("type", "started");
        reply.put("exec_id", p.id());
        session.sendText(Json.text(reply), Callback.NOOP);
        // Pooled threads: starting two threads per exec cost more CPU than the rest of the stream.
        Future<?> err = Workers.pool().submit(() -> pump(p.stderr(), STDERR));
        Workers.pool().execute(() -> {
            pump(p.stdout(), STDOUT);
            try {
                err.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (ExecutionException e) {
                LOG.log(System.Logger.Level.DEBUG, "stderr pump failed", e.getCause());
            }
            finish(p);
        });
    }

    private void control(ExecProcess p, String text) {
        JsonNode msg = Wire.parse(text.getBytes(StandardCharsets.UTF_8));
        String type = msg.path("type").asText("");
        switch (type) {
            case "stdin_close" -> {
                stdinClosed = true;
                p.closeStdin();
            }
            case "signal" -> {
                JsonNode n = msg.get("signal");
                if (n == null || !n.isIntegralNumber()) {
                    throw SandboxException.invalid("signal", "a signal number is expected");
                }
                p.signal(Signal.of(n.asInt()));
            }
            case "kill" -> p.kill();
            case "resize" -> p.resize(Wire.terminalSize(((ObjectNode) msg).deepCopy().without("type"), "resize"));
            default -> throw SandboxException.invalid("type", "unknown control message type '" + type
                    + "' (known: stdin_close, signal, kill, resize)");
        }
    }

    @Override
    public void onWebSocketBinary(ByteBuffer payload, Callback callback) {
        ExecProcess p = process;
        if (p == null && started > 0 && resolve != null) {
            callback.succeed(); // stdin for the last command, sent before its exit arrived: dropped
            session.demand();
            return;
        }
        if (p == null || !payload.hasRemaining() || payload.get(payload.position()) != STDIN) {
            callback.succeed();
            fail(SandboxException.invalid("message", p == null
                    ? "the first message must be a text message holding an ExecRequest"
                    : "binary messages from the client must start with byte 0 (stdin)"));
            return;
        }
        byte[] data = new byte[payload.remaining() - 1];
        payload.position(payload.position() + 1).get(data);
        callback.succeed();
        // One write at a time: the next frame is asked for (demand) only once this one is written.
        stdinWrite = Workers.pool().submit(() -> {
            if (!stdinClosed && data.length > 0) {
                try {
                    p.stdin().write(data); // blocks while the command's stdin window is full
                    p.stdin().flush();
                    bytes.in(data.length);
                } catch (IOException | SandboxException e) {
                    // The command closed its stdin or ended: drop the data, as a pipe would with EPIPE.
                }
            }
            if (!ended.get()) {
                session.demand();
            }
        });
    }

    private void pump(InputStream in, byte stream) {
        byte[] buf = new byte[CHUNK + 1];
        buf[0] = stream;
        try {
            while (!ended.get()) {
                int n = in.read(buf, 1, CHUNK);
                if (n < 0) {
                    return;
                }
                if (n > 0) {
                    CompletableFuture<Void> sent = new CompletableFuture<>();
                    session.sendBinary(ByteBuffer.wrap(buf, 0, n + 1),
                            Callback.from(() -> sent.complete(null), sent::completeExceptionally));
                    sent.get(); // one chunk in flight per stream: the client's pace is the command's pace
                    bytes.out(n);
                }
            }
        } catch (IOException | SandboxException e) {
            // the command's streams failed (the sandbox stopped); finish() reports it
        } catch (ExecutionException e) {
            close(); // the socket failed: the client is gone
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void finish(ExecProcess p) {
        if (ended.get()) {
            return;
        }
        ObjectNode msg = Wire.object();
        try {
            ExitStatus status = p.onExit().get();
            msg.put("type", "exit");
            msg.set("status", Wire.json(status));
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            SandboxException se = c instanceof SandboxException s ? s
                    : new SandboxException(ErrorCode.INTERNAL, "the command failed: " + c.getClass().getSimpleName());
            msg.put("type", "error");
            msg.set("error", Wire.error(se));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        if (resolve == null || !"exit".equals(msg.path("type").asText())) {
            sendAndClose(msg);
            return;
        }
        // Reusable: idle before the exit goes out, so that the next request (sent once the client has the exit)
        // finds the socket ready for it.
        process = null;
        Session s = session;
        s.sendText(Json.text(msg), Callback.from(() -> { }, t -> close()));
    }

    private void fail(SandboxException e) {
        ObjectNode msg = Wire.object();
        msg.put("type", "error");
        msg.set("error", Wire.error(e));
        sendAndClose(msg);
    }

    private void sendAndClose(ObjectNode msg) {
        Session s = session;
        if (s == null || !ended.compareAndSet(false, true)) {
            return;
        }
        s.sendText(Json.text(msg), Callback.from(() -> s.close(1000, "done", Callback.NOOP), t -> s.disconnect()));
        cleanup();
    }

    private void close() {
        Session s = session;
        if (s != null && s.isOpen()) {
            s.close(1011, "send failed", Callback.NOOP);
        }
        ended.set(true);
        cleanup();
    }

    @Override
    public void onWebSocketClose(int statusCode, String reason, Callback callback) {
        ended.set(true);
        cleanup();
        callback.succeed();
    }

    @Override
    public void onWebSocketError(Throwable cause) {
        ended.set(true);
        cleanup();
    }

    /** Kills the command if it still runs (the client left early) and releases everything; idempotent. */
    private void cleanup() {
        onEnd.run();
        ScheduledFuture<?> pg = pings;
        if (pg != null) {
            pg.cancel(false);
        }
        ExecProcess p = process;
        if (p != null) {
            try {
                p.close(); // kills the tree if alive; unblocks the pumps
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.DEBUG, "closing exec failed", e);
            }
        }
        Future<?> w = stdinWrite;
        if (w != null) {
            w.cancel(true); // a write blocked on a full stdin window
        }
    }
}
