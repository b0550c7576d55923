package io.paddock.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.wire.Wire;

import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** A java.net.http WebSocket that queues what it receives: text as JsonNode, binary as byte[], close as Integer. */
final class WsClient implements WebSocket.Listener {
    final BlockingQueue<Object> events = new LinkedBlockingQueue<>();
    final boolean reads;
    WebSocket socket;
    private final StringBuilder text = new StringBuilder();
    private final ByteArrayOutputStream binary = new ByteArrayOutputStream();

    private WsClient(boolean reads) {
        this.reads = reads;
    }

    static WsClient connect(HttpClient http, URI httpUrl, String token, boolean reads) {
        WsClient c = new WsClient(reads);
        URI ws = URI.create(httpUrl.toString().replaceFirst("^http", "ws"));
        WebSocket.Builder b = http.newWebSocketBuilder().connectTimeout(Duration.ofSeconds(10));
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        c.socket = b.buildAsync(ws, c).join();
        return c;
    }

    @Override
    public void onOpen(WebSocket webSocket) {
        if (reads) {
            webSocket.request(1);
        }
    }

    @Override
    public CompletionStage<?> onText(WebSocket webSocket, CharSequence data, boolean last) {
        text.append(data);
        if (last) {
            events.add(Wire.parse(text.toString().getBytes(StandardCharsets.UTF_8)));
            text.setLength(0);
        }
        webSocket.request(1);
        return null;
    }

    @Override
    public CompletionStage<?> onBinary(WebSocket webSocket, ByteBuffer data, boolean last) {
        byte[] b = new byte[data.remaining()];
        data.get(b);
        binary.write(b, 0, b.length);
        if (last) {
            events.add(binary.toByteArray());
            binary.reset();
        }
        webSocket.request(1);
        return null;
    }

    @Override
    public CompletionStage<?> onClose(WebSocket webSocket, int statusCode, String reason) {
        events.add(statusCode);
        return null;
    }

    @Override
    public void onError(WebSocket webSocket, Throwable error) {
        events.add(error);
    }

    void sendText(String s) {
        socket.sendText(s, true).join();
    }

    void sendStdin(byte[] data) {
        ByteBuffer b = ByteBuffer.allocate(data.length + 1);
        b.put((byte) 0).put(data).flip();
        socket.sendBinary(b, true).join();
    }

    Object next(long seconds) throws InterruptedException {
        Object o = events.poll(seconds, TimeUnit.SECONDS);
        if (o == null) {
            throw new AssertionError("nothing received in " + seconds + " s");
        }
        return o;
    }

    /** Collects until the exit or error message and the close: stdout, stderr and the final message. */
    Result drain(long seconds) throws InterruptedException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        JsonNode started = null;
        JsonNode last = null;
        Integer close = null;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (close == null) {
            Object o = events.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (o == null) {
                throw new AssertionError("the stream did not end in " + seconds + " s; last message " + last);
            }
            if (o instanceof byte[] b) {
                (b[0] == 1 ? out : err).write(b, 1, b.length - 1);
                if (b[0] != 1 && b[0] != 2) {
                    throw new AssertionError("unknown stream byte " + b[0]);
                }
            } else if (o instanceof JsonNode j) {
                if ("started".equals(j.path("type").asText())) {
                    started = j;
                } else {
                    last = j;
                }
            } else if (o instanceof Integer code) {
                close = code;
            } else if (o instanceof Throwable t) {
                throw new AssertionError("socket error", t);
            }
        }
        return new Result(started, out.toByteArray(), err.toByteArray(), last, close);
    }

    /**
     * On a reusable socket ({@code /v1/exec/stream}): collects one command's messages until its exit or error
     * message, without waiting for a close ({@link Result#close} is -1 unless the socket closed first).
     */
    Result untilExit(long seconds) throws InterruptedException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        JsonNode started = null;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (true) {
            Object o = events.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (o == null) {
                throw new AssertionError("the command did not end in " + seconds + " s");
            }
            if (o instanceof byte[] b) {
                (b[0] == 1 ? out : err).write(b, 1, b.length - 1);
            } else if (o instanceof JsonNode j) {
                if ("started".equals(j.path("type").asText())) {
                    started = j;
                } else {
                    return new Result(started, out.toByteArray(), err.toByteArray(), j, -1);
                }
            } else if (o instanceof Integer code) {
                return new Result(started, out.toByteArray(), err.toByteArray(), null, code);
            } else if (o instanceof Throwable t) {
                throw new AssertionError("socket error", t);
            }
        }
    }

    record Result(JsonNode started, byte[] stdout, byte[] stderr, JsonNode last, int close) {
        String stdoutText() {
            return new String(stdout, StandardCharsets.UTF_8);
        }

        String stderrText() {
            return new String(stderr, StandardCharsets.UTF_8);
        }
    }

    static CompletableFuture<Void> none() {
        return CompletableFuture.completedFuture(null);
    }
}
