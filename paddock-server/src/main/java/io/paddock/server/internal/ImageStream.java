package io.paddock.server.internal;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.ImageInfo;
import io.paddock.ImageListener;
import io.paddock.wire.ImageWire;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One streamed pull, push or build ({@code Accept: application/x-ndjson}): the {@link ImageListener} the
 * daemon hands the engine, writing each call as one JSON line ({@link ImageWire#logEvent} and the others) the
 * moment it happens, then {@code done} with the image or {@code error}. Heartbeats, backpressure (a client that
 * stops reading blocks the step's output, and so the step) and the rules for a failure before or after the
 * first event are {@link NdjsonStream}'s.
 *
 * <p>Layer progress that is not a layer's last word ({@code complete == false}) is sent at most every
 * {@value #PROGRESS_MILLIS} ms per stream, so a fast pull does not become thousands of lines; every other
 * call is sent. Thread-safe.
 */
final class ImageStream extends NdjsonStream implements ImageListener {
    static final long PROGRESS_MILLIS = 200;

    private final AtomicLong lastProgress = new AtomicLong(System.nanoTime() - TimeUnit.MILLISECONDS.toNanos(PROGRESS_MILLIS));

    /** A stream that sends a heartbeat after {@code heartbeat} of silence, from {@code timers}. */
    ImageStream(Response response, ScheduledExecutorService timers, Duration heartbeat) {
        super(response, timers, heartbeat);
    }

    @Override
    public void log(String line) {
        send(ImageWire.logEvent(line));
    }

    @Override
    public void step(int index, int count, String description, boolean cached) {
        send(ImageWire.stepEvent(index, count, description, cached));
    }

    @Override
    public void layer(String digest, long done, long total, boolean complete, boolean cached) {
        if (!complete) {
            long now = System.nanoTime();
            long last = lastProgress.get();
            if (now - last < TimeUnit.MILLISECONDS.toNanos(PROGRESS_MILLIS) || !lastProgress.compareAndSet(last, now)) {
                return;
            }
        }
        send(ImageWire.layerEvent(digest, done, total, complete, cached));
    }

    /** Sends the {@code done} event with the resulting image and completes the response. */
    void done(ImageInfo image, Callback callback) {
        finish(ImageWire.doneEvent(image), callback);
    }

    /** Sends the {@code error} event ({@code errorBody} is the usual {@code Error} body) and completes the response. */
    void failed(ObjectNode errorBody, Callback callback) {
        finish(ImageWire.errorEvent(errorBody), callback);
    }
}
