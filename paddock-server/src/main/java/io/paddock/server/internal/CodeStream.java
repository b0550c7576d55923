package io.paddock.server.internal;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.code.CodeListener;
import io.paddock.code.CodeResult;
import io.paddock.code.Plot;
import io.paddock.code.RichOutput;
import io.paddock.code.internal.CodeWire;
import io.paddock.wire.Wire;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One streamed run or cell ({@code Accept: application/x-ndjson}): the {@link CodeListener} the daemon's
 * interpreter calls, writing each event as one JSON line ({@link CodeWire#textEvent} and the others) the
 * moment it happens. Nothing is sent before the first event, so a run that fails before any output still
 * answers with its own status and {@code Error} body; once the first event is out the answer is 200, and it
 * ends with a {@code done} event, or an {@code error} event when the run fails later.
 *
 * <p>Heartbeats: after a third of the daemon's idle timeout with nothing written, a blank line goes out (NDJSON
 * readers skip blank lines). A cell that is quiet for longer than the idle timeout therefore keeps its
 * connection, here and through proxies, and the connection's idle timeout is left to catch only a client that
 * stops reading. The first heartbeat commits the 200 like a first event would: a run that fails after a third
 * of the idle timeout of silence reports it as an {@code error} event.
 *
 * <p>Backpressure, with bounded memory: every event is written with Jetty's blocking write and nothing is
 * queued here, so at most one event is in flight. A client that stops reading blocks the writer, and with
 * it the code's output: a one-shot run's output pumps stop reading (the engine's credit window then stops
 * the process), a cell's kernel loop stops polling (the kernel's message queue is bounded, so its reader
 * stops too). A write that cannot go on for the daemon's idle timeout fails; the stream is then broken:
 * later events are dropped, the run goes on to its own end (its timeout still applies once nothing blocks),
 * its result is discarded and the connection is aborted. A heartbeat is written without blocking, from the
 * shared timer thread, and only when no write is in flight; the next event waits for it.
 *
 * <p>Thread-safe: a one-shot run reports stdout and stderr from two threads. The lock is held across the
 * write on purpose (it is what keeps each line whole and each stream in order); the heartbeat only tries it.
 */
final class CodeStream implements CodeListener {
    private static final System.Logger LOG = System.getLogger(CodeStream.class.getName());
    private static final byte[] HEARTBEAT = {'\n'};

    private final Response response;
    private final long heartbeatNanos;
    private final ReentrantLock lock = new ReentrantLock();
    private final ScheduledFuture<?> heartbeats;
    // @GuardedBy("lock")
    private OutputStream out;
    // @GuardedBy("lock")
    private boolean ended;
    // @GuardedBy("lock")
    private Throwable broken;
    // @GuardedBy("lock")
    private long lastWrite = System.nanoTime();
    /** The heartbeat write still in flight, if any; the next write waits for it. */
    // @GuardedBy("lock")
    private CompletableFuture<Void> beat;

    /** A stream that sends a heartbeat after {@code heartbeat} of silence, from {@code timers}. */
    CodeStream(Response response, ScheduledExecutorService timers, Duration heartbeat) {
        this.response = response;
        this.heartbeatNanos = heartbeat.toNanos();
        long period = Math.max(1, heartbeat.toMillis() / 4);
        this.heartbeats = timers.scheduleWithFixedDelay(this::heartbeat, period, period, TimeUnit.MILLISECONDS);
    }

    /** Whether the request's {@code Accept} names {@code application/x-ndjson} (parameters and q-values aside). */
    static boolean asked(Request request) {
        for (String accept : request.getHeaders().getValuesList(HttpHeader.ACCEPT)) {
            boolean named = Arrays.stream(accept.split(","))
                    .map(range -> range.split(";", 2)[0].trim())
                    .anyMatch(CodeWire.STREAM_TYPE::equalsIgnoreCase);
            if (named) {
                return true;
            }
        }
        return false;
    }

    @Override
    public void onStdout(String text) {
        write(CodeWire.textEvent(false, text));
    }

    @Override
    public void onStderr(String text) {
        write(CodeWire.textEvent(true, text));
    }

    @Override
    public void onResult(RichOutput output) {
        write(CodeWire.resultEvent(output));
    }

    @Override
    public void onPlot(Plot plot) {
        write(CodeWire.plotEvent(plot));
    }

    /**
     * Ends the stream before it began, if it has not: true when nothing was sent (the caller then answers
     * with an ordinary error, and any late event, from a pump still running, is dropped); false when events
     * were already sent, so the failure must travel as an {@code error} event.
     */
    boolean abandonIfUnstarted() {
        lock.lock();
        try {
            if (out == null && broken == null) {
                end();
                return true;
            }
            return false;
        } finally {
            lock.unlock();
        }
    }

    /** Sends the {@code done} event and completes the response (the run's result is the last line). */
    void done(CodeResult result, Callback callback) {
        finish(CodeWire.doneEvent(result), callback);
    }

    /** Sends the {@code error} event ({@code errorBody} is the usual {@code Error} body) and completes the response. */
    void failed(ObjectNode errorBody, Callback callback) {
        finish(CodeWire.errorEvent(errorBody), callback);
    }

    private void finish(ObjectNode last, Callback callback) {
        Throwable failure;
        lock.lock();
        try {
            writeLocked(last);
            end();
            failure = broken;
            if (failure == null) {
                try {
                    out.close(); // the last chunk
                } catch (IOException | RuntimeException e) {
                    failure = e;
                }
            }
        } finally {
            lock.unlock();
        }
        if (failure == null) {
            callback.succeeded();
        } else {
            LOG.log(System.Logger.Level.DEBUG, "a streamed code run lost its client", failure);
            callback.failed(failure); // aborts the connection
        }
    }

    private void write(ObjectNode event) {
        lock.lock();
        try {
            if (!ended) {
                writeLocked(event);
            }
        } finally {
            lock.unlock();
        }
    }

    // @GuardedBy("lock")
    private void writeLocked(ObjectNode event) {
        if (broken != null) {
            return;
        }
        try {
            if (beat != null) {
                beat.join(); // a heartbeat in flight; fails, like this write would, if the client stopped reading
                beat = null;
            }
            begin();
            byte[] json = Wire.bytes(event);
            byte[] line = Arrays.copyOf(json, json.length + 1);
            line[json.length] = '\n';
            out.write(line); // one chunk per event, sent now; blocks while the client does not read
            lastWrite = System.nanoTime();
        } catch (IOException | RuntimeException e) {
            broken = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
        }
    }

    /** Ends the heartbeats; events that come later are dropped. Idempotent. */
    void close() {
        lock.lock();
        try {
            end();
        } finally {
            lock.unlock();
        }
    }

    // @GuardedBy("lock")
    private void begin() {
        if (out == null) {
            response.setStatus(200);
            response.getHeaders().put(HttpHeader.CONTENT_TYPE, CodeWire.STREAM_TYPE);
            out = Content.Sink.asOutputStream(response);
        }
    }

    // @GuardedBy("lock")
    private void end() {
        ended = true;
        heartbeats.cancel(false);
    }

    /** On the timer thread: a blank line after {@link #heartbeatNanos} of silence, never blocking. */
    private void heartbeat() {
        if (!lock.tryLock()) {
            return; // a write is in flight: that is activity
        }
        try {
            if (ended || broken != null || beat != null && !beat.isDone()
                    || System.nanoTime() - lastWrite < heartbeatNanos) {
                return;
            }
            begin();
            CompletableFuture<Void> sent = new CompletableFuture<>();
            beat = sent;
            lastWrite = System.nanoTime();
            response.write(false, ByteBuffer.wrap(HEARTBEAT), Callback.from(() -> sent.complete(null),
                    sent::completeExceptionally));
        } catch (RuntimeException e) {
            broken = e;
        } finally {
            lock.unlock();
        }
    }
}
