package io.paddock.server.internal;

import org.eclipse.jetty.websocket.api.Callback;
import org.eclipse.jetty.websocket.api.Session;

import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One proxied WebSocket: the client's side is this Jetty listener, the sandbox's side a java.net.http
 * {@link WebSocket}. Text and binary frames are relayed as they come (partial messages stay partial, so no
 * message is gathered in memory), one at a time each way: the next frame is asked of one side only once the
 * other has taken the previous one, so a slow reader slows the writer down. Pings are answered by each side's
 * own stack; the daemon pings the client so a quiet socket outlives the idle timeout. A close on either side
 * closes the other with the same status where it may be sent; an error on either side, or the watch
 * ({@link #abort}), ends both. Thread-safety: each direction runs one frame at a time; the rest is volatile
 * or atomic.
 */
public final class ProxySocket implements Session.Listener {
    /** Messages have no size limit here: they are relayed a frame at a time. */
    private static final long NO_MESSAGE_LIMIT = 1L << 40;

    private final String sandbox;
    private final int port;
    private final ScheduledExecutorService pinger;
    private final long pingMillis;
    private final AtomicBoolean ended = new AtomicBoolean();
    private volatile Session session;
    private volatile WebSocket backend;
    private volatile ScheduledFuture<?> pings;
    private volatile Runnable onEnd = () -> { };

    ProxySocket(String sandbox, int port, ScheduledExecutorService pinger, long pingMillis) {
        this.sandbox = sandbox;
        this.port = port;
        this.pinger = pinger;
        this.pingMillis = pingMillis;
    }

    void backend(WebSocket ws) {
        this.backend = ws;
    }

    void onEnd(Runnable r) {
        this.onEnd = r;
        if (ended.get()) {
            r.run();
        }
    }

    // ---- the client's side (Jetty) ----

    @Override
    public void onWebSocketOpen(Session s) {
        this.session = s;
        s.setAutoFragment(true); // a large frame arrives in pieces instead of being gathered (or refused)
        s.setMaxTextMessageSize(NO_MESSAGE_LIMIT);
        s.setMaxBinaryMessageSize(NO_MESSAGE_LIMIT);
        if (ended.get()) {
            s.close(1001, "the sandbox's socket ended", Callback.NOOP);
            return;
        }
        pings = pinger.scheduleAtFixedRate(() -> {
            Session cur = session;
            if (cur != null && cur.isOpen()) {
                cur.sendPing(ByteBuffer.allocate(0), Callback.NOOP);
            }
        }, pingMillis, pingMillis, TimeUnit.MILLISECONDS);
        backend.request(1);
        s.demand();
    }

    @Override
    public void onWebSocketPartialText(String text, boolean last) {
        backend.sendText(text, last).whenComplete((w, failure) -> {
            if (failure != null) {
                abort("sending to the sandbox failed");
            } else if (!ended.get()) {
                session.demand();
            }
        });
    }

    @Override
    public void onWebSocketPartialBinary(ByteBuffer payload, boolean last, Callback callback) {
        // the payload is Jetty's until the callback completes: java.net.http reads it until its send completes
        backend.sendBinary(payload, last).whenComplete((w, failure) -> {
            if (failure != null) {
                callback.fail(failure);
                abort("sending to the sandbox failed");
            } else {
                callback.succeed();
                if (!ended.get()) {
                    session.demand();
                }
            }
        });
    }

    @Override
    public void onWebSocketClose(int statusCode, String reason, Callback callback) {
        callback.succeed();
        if (ended.compareAndSet(false, true)) {
            WebSocket b = backend;
            try {
                b.sendClose(sendableToSandbox(statusCode), trim(reason));
            } catch (IllegalArgumentException e) {
                b.sendClose(WebSocket.NORMAL_CLOSURE, "");
            }
            cleanup();
        }
    }

    @Override
    public void onWebSocketError(Throwable cause) {
        if (ended.compareAndSet(false, true)) {
            backend.abort();
            cleanup();
        }
    }

    // ---- the sandbox's side (java.net.http) ----

    WebSocket.Listener backendListener() {
        return new WebSocket.Listener() {
            @Override
            public void onOpen(WebSocket ws) {
                // nothing is asked of the sandbox until the client's side is open
            }

            @Override
            public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
                CompletableFuture<Void> taken = new CompletableFuture<>();
                session.sendPartialText(data.toString(), last, relayed(ws, taken));
                return taken;
            }

            @Override
            public CompletionStage<?> onBinary(WebSocket ws, ByteBuffer data, boolean last) {
                CompletableFuture<Void> taken = new CompletableFuture<>();
                session.sendPartialBinary(data, last, relayed(ws, taken));
                return taken;
            }

            @Override
            public CompletionStage<?> onClose(WebSocket ws, int statusCode, String reason) {
                if (ended.compareAndSet(false, true)) {
                    Session s = session;
                    if (s != null) {
                        s.close(sendableToClient(statusCode), trim(reason), Callback.NOOP);
                    }
                    cleanup();
                }
                return null;
            }

            @Override
            public void onError(WebSocket ws, Throwable error) {
                abort("the sandbox's socket failed");
            }
        };
    }

    private Callback relayed(WebSocket ws, CompletableFuture<Void> taken) {
        return Callback.from(() -> {
            taken.complete(null);
            if (!ended.get()) {
                ws.request(1);
            }
        }, failure -> {
            taken.complete(null);
            abort("sending to the client failed");
        });
    }

    // ---- ending ----

    /** Ends both sides (1001 to the client: the sandbox's end went away); idempotent. */
    void abort(String why) {
        if (!ended.compareAndSet(false, true)) {
            return;
        }
        WebSocket b = backend;
        if (b != null) {
            b.abort();
        }
        Session s = session;
        if (s != null && s.isOpen()) {
            s.close(1001, trim("port " + port + " of sandbox " + sandbox + ": " + why), Callback.NOOP);
        }
        cleanup();
    }

    private void cleanup() {
        ScheduledFuture<?> p = pings;
        if (p != null) {
            p.cancel(false);
        }
        onEnd.run();
    }

    /** Statuses a peer may not send (1005, 1006, 1015, out of range) become 1000, or 1011 for a failure. */
    private static int sendableToClient(int code) {
        if (code == 1006) {
            return 1011;
        }
        return code == 1005 || code == 1015 || code < 1000 || code > 4999 || code >= 1016 && code < 3000 ? 1000 : code;
    }

    /** java.net.http sends 1000 and 3000-4999, and a few of 1001-1011; the rest become 1000. */
    private static int sendableToSandbox(int code) {
        return code == 1000 || code == 1001 || code == 1008 || code == 1011 || code >= 3000 && code <= 4999
                ? code : WebSocket.NORMAL_CLOSURE;
    }

    /** A close reason fits in 123 bytes of UTF-8. */
    private static String trim(String reason) {
        if (reason == null) {
            return "";
        }
        String r = reason;
        while (r.getBytes(StandardCharsets.UTF_8).length > 123) {
            r = r.substring(0, r.length() - 1);
        }
        return r;
    }
}
