package io.paddock.server.internal;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.code.CodeListener;
import io.paddock.code.CodeResult;
import io.paddock.code.Plot;
import io.paddock.code.RichOutput;
import io.paddock.code.internal.CodeWire;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;

/**
 * One streamed run or cell ({@code Accept: application/x-ndjson}): the {@link CodeListener} the daemon's
 * interpreter calls, writing each event as one JSON line ({@link CodeWire#textEvent} and the others) the
 * moment it happens, then a {@code done} or {@code error} event. Heartbeats, backpressure and the rules for a
 * failure before or after the first event are {@link NdjsonStream}'s: a client that stops reading blocks the
 * writer, and with it the code's output (a one-shot run's output pumps stop reading, so the engine's credit
 * window stops the process; a cell's kernel loop stops polling, so the kernel's bounded queue stops its
 * reader). Thread-safe: a one-shot run reports stdout and stderr from two threads.
 */
final class CodeStream extends NdjsonStream implements CodeListener {
    /** A stream that sends a heartbeat after {@code heartbeat} of silence, from {@code timers}. */
    CodeStream(Response response, ScheduledExecutorService timers, Duration heartbeat) {
        super(response, timers, heartbeat);
    }

    @Override
    public void onStdout(String text) {
        send(CodeWire.textEvent(false, text));
    }

    @Override
    public void onStderr(String text) {
        send(CodeWire.textEvent(true, text));
    }

    @Override
    public void onResult(RichOutput output) {
        send(CodeWire.resultEvent(output));
    }

    @Override
    public void onPlot(Plot plot) {
        send(CodeWire.plotEvent(plot));
    }

    /** Sends the {@code done} event and completes the response (the run's result is the last line). */
    void done(CodeResult result, Callback callback) {
        finish(CodeWire.doneEvent(result), callback);
    }

    /** Sends the {@code error} event ({@code errorBody} is the usual {@code Error} body) and completes the response. */
    void failed(ObjectNode errorBody, Callback callback) {
        finish(CodeWire.errorEvent(errorBody), callback);
    }
}
