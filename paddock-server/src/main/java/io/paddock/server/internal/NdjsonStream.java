package io.paddock.server.internal;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.wire.ImageWire;
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
 * One streamed answer ({@code Accept: application/x-ndjson}): JSON events written one per line the moment
 * they happen, ending with a last event ({@code done} or {@code error}). The streamed code runs
 * ({@link CodeStream}) and the streamed image operations ({@link ImageStream}) are this with their own events.
 * Nothing is sent before the first event, so an operation that fails before any output still answers with its
 * own status and {@code Error} body; once the first event is out the answer is 200, and a later failure
 * travels as the last event.
 *
 * <p>Heartbeats: after a third of the daemon's idle timeout with nothing written, a blank line goes out (NDJSON
 * readers skip blank lines). An operation that is quiet for longer than the idle timeout therefore keeps its
 * connection, here and through proxies, and the connection's idle timeout is left to catch only a client that
 * stops reading. The first heartbeat commits the 200 like a first event would: an operation that fails after a
 * third of the idle timeout of silence reports it as its last event.
 *
 * <p>Backpressure, with bounded memory: every event is written with Jetty's blocking write and nothing is
 * queued here, so at most one event is in flight. A client that stops reading blocks the writer, and with it
 * whatever produces the events (a code run's output, a build's step output). A write that cannot go on for the
 * daemon's idle timeout fails; the stream is then broken: later events are dropped, the operation goes on to
 * its own end, its result is discarded and the connection is aborted. A heartbeat is written without
 * blocking, from the shared timer thread, and only when no write is in flight; the next event waits for it.
 *
 * <p>Thread-safe: events may come from several threads. The lock is held across the write on purpose (it is
 * what keeps each line whole and the events in order); the heartbeat only tries it.
 */
class NdjsonStream {
    private static final System.Logger LOG = System.getLogger(NdjsonStream.class.getName());
    /** The media type of a streamed answer (the same for code runs and image operations). */
    static final String TYPE = ImageWire.STREAM_TYPE;
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
    NdjsonStream(Response response, ScheduledExecutorService timers, Duration heartbeat) {
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
                    .anyMatch(TYPE::equalsIgnoreCase);
            if (named) {
                return true;
            }
        }
        return false;
    }

    /**
     * Ends the stream before it began, if it has not: true when nothing was sent (the caller then answers
     * with an ordinary error, and any late event, from a producer still running, is dropped); false when events
     * were already sent, so the failure must travel as the last event.
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

    /** Sends {@code last} and completes the response; the callback fails (aborting the connection) if the stream broke. */
    void finish(ObjectNode last, Callback callback) {
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
            LOG.log(System.Logger.Level.DEBUG, "a streamed answer lost its client", failure);
            callback.failed(failure); // aborts the connection
        }
    }

    /** Writes one event now (blocking while the client does not read); dropped once the stream has ended or broke. */
    void send(ObjectNode event) {
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
            response.getHeaders().put(HttpHeader.CONTENT_TYPE, TYPE);
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
