package io.paddock.envd;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;
import io.paddock.Sandbox;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A Connect-RPC client for tests that calls {@link Envd#serve} directly: it encodes requests built with the
 * generated classes in either codec, frames streaming ones, and decodes answers independently of the
 * module's own codec code (protobuf's JsonFormat and binary parser, envelopes read here).
 */
final class ConnectClient {
    enum Codec { JSON, PROTO }

    private final Envd envd;
    private final Sandbox sb;
    final Codec codec;

    ConnectClient(Envd envd, Sandbox sb, Codec codec) {
        this.envd = envd;
        this.sb = sb;
        this.codec = codec;
    }

    /** A failed call as the client sees it. */
    static final class CallFailed extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final String code;
        final int httpStatus;

        CallFailed(String code, String message, int httpStatus) {
            super(code + ": " + message);
            this.code = code;
            this.httpStatus = httpStatus;
        }
    }

    static Map<String, String> user(String name) {
        return Map.of("authorization", "Basic " + Base64.getEncoder().encodeToString((name + ":").getBytes(StandardCharsets.UTF_8)));
    }

    byte[] encode(Message m) {
        if (codec == Codec.PROTO) {
            return m.toByteArray();
        }
        try {
            return JsonFormat.printer().print(m).getBytes(StandardCharsets.UTF_8);
        } catch (InvalidProtocolBufferException e) {
            throw new AssertionError(e);
        }
    }

    @SuppressWarnings("unchecked")
    <T extends Message> T decode(byte[] data, T prototype) {
        Message.Builder b = prototype.newBuilderForType();
        try {
            if (codec == Codec.PROTO) {
                b.mergeFrom(data);
            } else {
                JsonFormat.parser().merge(new String(data, StandardCharsets.UTF_8), b);
            }
        } catch (InvalidProtocolBufferException e) {
            throw new AssertionError("undecodable answer " + new String(data, StandardCharsets.UTF_8), e);
        }
        return (T) b.build();
    }

    String unaryType() {
        return codec == Codec.PROTO ? "application/proto" : "application/json";
    }

    String streamType() {
        return codec == Codec.PROTO ? "application/connect+proto" : "application/connect+json";
    }

    /** A raw answer. */
    record Raw(int status, Map<String, String> headers, byte[] body) {
        String text() {
            return new String(body, StandardCharsets.UTF_8);
        }
    }

    Raw raw(String path, Map<String, String> headers, byte[] body) throws IOException {
        Captured out = new Captured();
        envd.serve(sb, path, headers, new ByteArrayInputStream(body), out);
        return new Raw(out.status, out.headers, out.body.toByteArray());
    }

    <T extends Message> T unary(String path, Message request, T responsePrototype) {
        return unary(path, request, responsePrototype, Map.of());
    }

    <T extends Message> T unary(String path, Message request, T responsePrototype, Map<String, String> extra) {
        Map<String, String> h = new HashMap<>(extra);
        h.put("content-type", unaryType());
        h.put("connect-protocol-version", "1");
        Raw r;
        try {
            r = raw(path, h, encode(request));
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        if (r.status() != 200) {
            if (!"application/json".equals(r.headers().get("content-type"))) {
                throw new AssertionError("error answer is not JSON: " + r.headers() + " " + r.text());
            }
            throw failure(r.text(), r.status());
        }
        if (!unaryType().equals(r.headers().get("content-type"))) {
            throw new AssertionError("content-type " + r.headers());
        }
        return decode(r.body(), responsePrototype);
    }

    private static CallFailed failure(String json, int status) {
        com.google.protobuf.Struct.Builder s = com.google.protobuf.Struct.newBuilder();
        try {
            JsonFormat.parser().merge(json, s);
        } catch (InvalidProtocolBufferException e) {
            throw new AssertionError("error body is not JSON: " + json, e);
        }
        var f = s.getFieldsMap();
        return new CallFailed(f.get("code").getStringValue(), f.containsKey("message") ? f.get("message").getStringValue() : "",
                status);
    }

    static byte[] envelope(int flags, byte[] data) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.write(flags);
        b.write(data.length >>> 24);
        b.write(data.length >>> 16);
        b.write(data.length >>> 8);
        b.write(data.length);
        b.writeBytes(data);
        return b.toByteArray();
    }

    /** Starts a server-streaming call on its own thread; its frames are read as they come. */
    Stream stream(String path, Message request, Map<String, String> extra) {
        return streamRaw(path, envelope(0, encode(request)), extra);
    }

    Stream streamRaw(String path, byte[] body, Map<String, String> extra) {
        Map<String, String> h = new HashMap<>(extra);
        h.putIfAbsent("content-type", streamType());
        Stream s = new Stream();
        Thread t = new Thread(() -> {
            try {
                envd.serve(sb, path, h, new ByteArrayInputStream(body), s.out);
                s.done.complete(null);
            } catch (Throwable e) {
                s.done.completeExceptionally(e);
            } finally {
                s.out.live.close();
            }
        }, "test-stream " + path);
        t.setDaemon(true);
        t.start();
        return s;
    }

    /** One frame of a streaming answer: a message, or the end with its JSON. */
    record Frame(int flags, byte[] data) {
        boolean end() {
            return (flags & 2) != 0;
        }

        String text() {
            return new String(data, StandardCharsets.UTF_8);
        }
    }

    final class Stream {
        final Captured out = new Captured();
        final CompletableFuture<Void> done = new CompletableFuture<>();

        /** The next frame, waiting up to {@code seconds}. */
        Frame frame(long seconds) {
            byte[] head = out.live.take(5, seconds);
            int n = ((head[1] & 0xFF) << 24) | ((head[2] & 0xFF) << 16) | ((head[3] & 0xFF) << 8) | (head[4] & 0xFF);
            return new Frame(head[0] & 0xFF, out.live.take(n, seconds));
        }

        <T extends Message> T next(T prototype, long seconds) {
            Frame f = frame(seconds);
            if (f.end()) {
                throw new AssertionError("stream ended: " + f.text());
            }
            return decode(f.data(), prototype);
        }

        <T extends Message> T next0(Frame f, T prototype) {
            return decode(f.data(), prototype);
        }

        /** The end-of-stream JSON; fails if a message comes first. */
        String end(long seconds) {
            Frame f = frame(seconds);
            if (!f.end()) {
                throw new AssertionError("expected the end of the stream, got a message of " + f.data().length + " bytes");
            }
            return f.text();
        }

        void awaitDone(long seconds) throws Exception {
            done.get(seconds, TimeUnit.SECONDS);
        }

        int status() {
            return out.status;
        }

        String contentType() {
            return out.headers.get("content-type");
        }
    }

    /** Captures status and headers; the body both whole and readable live. */
    static final class Captured implements Envd.Response {
        volatile int status;
        volatile Map<String, String> headers = Map.of();
        final ByteArrayOutputStream body = new ByteArrayOutputStream();
        final LiveBytes live = new LiveBytes();
        private boolean started;

        @Override
        public synchronized void start(int status, Map<String, String> headers) {
            if (started) {
                throw new AssertionError("Response.start called twice");
            }
            started = true;
            this.status = status;
            this.headers = Map.copyOf(headers);
        }

        @Override
        public OutputStream body() {
            if (!started) {
                throw new AssertionError("body before start");
            }
            return new OutputStream() {
                @Override
                public void write(int b) {
                    write(new byte[]{(byte) b}, 0, 1);
                }

                @Override
                public void write(byte[] b, int off, int len) {
                    synchronized (Captured.this) {
                        body.write(b, off, len);
                    }
                    live.write(b, off, len);
                }
            };
        }
    }

    /** Bytes written by one thread and taken by another, with a timeout. */
    static final class LiveBytes {
        private final ByteArrayOutputStream buf = new ByteArrayOutputStream();
        private int pos;
        private boolean closed;

        synchronized void write(byte[] b, int off, int len) {
            buf.write(b, off, len);
            notifyAll();
        }

        synchronized void close() {
            closed = true;
            notifyAll();
        }

        synchronized byte[] take(int n, long seconds) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            while (buf.size() - pos < n) {
                if (closed) {
                    throw new AssertionError("the answer ended with " + (buf.size() - pos) + " of " + n + " bytes wanted");
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new AssertionError("no frame within " + seconds + " s");
                }
                try {
                    TimeUnit.NANOSECONDS.timedWait(this, left);
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
            }
            byte[] all = buf.toByteArray();
            byte[] out = java.util.Arrays.copyOfRange(all, pos, pos + n);
            pos += n;
            return out;
        }
    }

    static InputStream empty() {
        return new ByteArrayInputStream(new byte[0]);
    }
}
