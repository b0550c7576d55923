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
import java.util.Arrays;

/**
 * One streamed run or cell ({@code Accept: application/x-ndjson}): the {@link CodeListener} the daemon's
 * interpreter calls, writing each event as one JSON line ({@link CodeWire#textEvent} and the others) the
 * moment it happens. Nothing is sent before the first event, so a run that fails before any output still
 * answers with its own status and {@code Error} body; once the first event is out the answer is 200, and it
 * ends with a {@code done} event, or an {@code error} event when the run fails later.
 *
 * <p>Backpressure, with bounded memory: every event is written with Jetty's blocking write and nothing is
 * queued here, so at most one event is in flight. A client that stops reading blocks the writer, and with
 * it the code's output: a one-shot run's output pumps stop reading (the engine's credit window then stops
 * the process), a cell's kernel loop stops polling (the kernel's message queue is bounded, so its reader
 * stops too). A write that cannot go on for the daemon's idle timeout fails; the stream is then broken:
 * later events are dropped, the run goes on to its own end (its timeout still applies once nothing blocks),
 * its result is discarded and the connection is aborted.
 *
 * <p>Thread-safe: a one-shot run reports stdout and stderr from two threads. The monitor is held across the
 * write on purpose (it is what keeps each line whole and each stream in order); nothing else takes it.
 */
final class CodeStream implements CodeListener {
    private static final System.Logger LOG = System.getLogger(CodeStream.class.getName());

    private final Response response;
    // @GuardedBy("this")
    private OutputStream out;
    // @GuardedBy("this")
    private boolean ended;
    // @GuardedBy("this")
    private Throwable broken;

    CodeStream(Response response) {
        this.response = response;
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
    synchronized boolean abandonIfUnstarted() {
        if (out == null && broken == null) {
            ended = true;
            return true;
        }
        return false;
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
        synchronized (this) {
            writeLocked(last);
            ended = true;
            failure = broken;
            if (failure == null) {
                try {
                    out.close(); // the last chunk
                } catch (IOException | RuntimeException e) {
                    failure = e;
                }
            }
        }
        if (failure == null) {
            callback.succeeded();
        } else {
            LOG.log(System.Logger.Level.DEBUG, "a streamed code run lost its client", failure);
            callback.failed(failure); // aborts the connection
        }
    }

    private synchronized void write(ObjectNode event) {
        if (!ended) {
            writeLocked(event);
        }
    }

    // @GuardedBy("this")
    private void writeLocked(ObjectNode event) {
        if (broken != null) {
            return;
        }
        try {
            if (out == null) {
                response.setStatus(200);
                response.getHeaders().put(HttpHeader.CONTENT_TYPE, CodeWire.STREAM_TYPE);
                out = Content.Sink.asOutputStream(response);
            }
            byte[] json = Wire.bytes(event);
            byte[] line = Arrays.copyOf(json, json.length + 1);
            line[json.length] = '\n';
            out.write(line); // one chunk per event, sent now; blocks while the client does not read
        } catch (IOException | RuntimeException e) {
            broken = e;
        }
    }
}
