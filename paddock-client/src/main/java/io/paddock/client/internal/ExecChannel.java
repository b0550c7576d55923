package io.paddock.client.internal;

import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One reusable exec socket ({@code GET /v1/exec/stream}): it carries one command at a time, each request naming
 * its sandbox, and goes back to {@link Http}'s idle set when a command's {@code exit} arrives, as an HTTP/1.1
 * connection goes back to its pool. Opening a WebSocket (a TCP connection, the upgrade, the daemon's session)
 * costs about as much as the rest of a short command, so reusing one is most of what the remote API adds to an
 * exec.
 *
 * <p>The JDK gives a socket one listener for life; this is it, and it hands each event to the command it carries.
 * Demand stays the command's (its backpressure); once a command has let go of the channel (its exit arrived),
 * the channel asks for the next message itself, so an idle socket still reads the daemon's pings. Sends of all
 * the commands a channel carries go through its one {@link #slot}: the JDK allows one outstanding send, and a
 * late stdin write of the last command may still be going when the next request is sent.
 */
final class ExecChannel implements WebSocket.Listener {
    /** Serialises sends on the socket; shared by every command it carries. */
    static final class SendSlot {
        final ReentrantLock lock = new ReentrantLock();
        /** The last send started; the next waits for it (guarded by lock). */
        CompletableFuture<WebSocket> last = CompletableFuture.completedFuture(null);
    }

    final SendSlot slot = new SendSlot();
    private volatile WebSocket ws;
    private volatile RemoteExecProcess current;
    private volatile boolean broken;
    /** When it went idle (System.nanoTime), for {@link Http}'s eviction. */
    volatile long idleSince = System.nanoTime();

    WebSocket socket() {
        return ws;
    }

    /** The socket, once opened (the JDK may complete the open before or after calling {@link #onOpen}). */
    void opened(WebSocket w) {
        ws = w;
    }

    /** Whether another command may use it: open both ways and never failed. */
    boolean usable() {
        WebSocket w = ws;
        return !broken && w != null && !w.isInputClosed() && !w.isOutputClosed();
    }

    void attach(RemoteExecProcess p) {
        current = p;
    }

    /** The command {@code p} is done with the channel (its exit arrived): nothing of it touches the socket again. */
    void detach(RemoteExecProcess p) {
        if (current == p) {
            current = null;
        }
    }

    /** Closes the socket; a command it still carries sees the close. */
    void close() {
        broken = true;
        WebSocket w = ws;
        if (w != null) {
            w.abort();
        }
    }

    // ------------------------------------------------------------------ WebSocket.Listener

    @Override
    public void onOpen(WebSocket webSocket) {
        ws = webSocket;
        webSocket.request(1);
    }

    @Override
    public CompletionStage<?> onText(WebSocket webSocket, CharSequence data, boolean last) {
        RemoteExecProcess p = current;
        if (p == null) {
            webSocket.request(1); // nothing is expected between commands; read on
            return null;
        }
        p.onText(webSocket, data, last);
        if (current != p) { // p's exit arrived in this message: p no longer asks for messages
            webSocket.request(1);
        }
        return null;
    }

    @Override
    public CompletionStage<?> onBinary(WebSocket webSocket, ByteBuffer data, boolean last) {
        RemoteExecProcess p = current;
        if (p == null) {
            webSocket.request(1);
            return null;
        }
        return p.onBinary(webSocket, data, last);
    }

    @Override
    public CompletionStage<?> onPing(WebSocket webSocket, ByteBuffer message) {
        RemoteExecProcess p = current;
        if (p == null) {
            webSocket.request(1); // the JDK answers with a pong itself
            return null;
        }
        return p.onPing(webSocket, message);
    }

    @Override
    public CompletionStage<?> onPong(WebSocket webSocket, ByteBuffer message) {
        RemoteExecProcess p = current;
        if (p == null) {
            webSocket.request(1);
            return null;
        }
        return p.onPong(webSocket, message);
    }

    @Override
    public CompletionStage<?> onClose(WebSocket webSocket, int statusCode, String reason) {
        broken = true;
        RemoteExecProcess p = current;
        return p == null ? null : p.onClose(webSocket, statusCode, reason);
    }

    @Override
    public void onError(WebSocket webSocket, Throwable error) {
        broken = true;
        RemoteExecProcess p = current;
        if (p != null) {
            p.onError(webSocket, error);
        }
    }
}
