package io.paddock.envd.internal;

import com.google.protobuf.Message;
import io.paddock.envd.Envd;

import java.io.IOException;
import java.util.Map;

/**
 * The response of a streaming call: status 200 and {@code application/connect+…} at the first frame, then one
 * envelope per message, then the end-of-stream envelope (with the error, if any). Thread-safe; ends once.
 */
public final class StreamOut {
    private final Envd.Response response;
    private final Codec codec;
    // @GuardedBy("this")
    private boolean started;
    // @GuardedBy("this")
    private boolean ended;

    public StreamOut(Envd.Response response, Codec codec) {
        this.response = response;
        this.codec = codec;
    }

    public synchronized void send(Message m) throws IOException {
        if (ended) {
            throw new IllegalStateException("the stream has ended");
        }
        start();
        Wire.writeEnvelope(response.body(), 0, codec.write(m));
    }

    /** Ends the stream, with {@code error} or cleanly when it is {@code null}; later calls do nothing. */
    public synchronized void end(ConnectException error) throws IOException {
        if (ended) {
            return;
        }
        ended = true;
        start();
        Wire.writeEnvelope(response.body(), Wire.FLAG_END_STREAM, Wire.endStreamJson(error));
    }

    public synchronized boolean ended() {
        return ended;
    }

    private void start() throws IOException {
        if (!started) {
            started = true;
            response.start(200, Map.of("content-type", codec.streamContentType()));
        }
    }
}
