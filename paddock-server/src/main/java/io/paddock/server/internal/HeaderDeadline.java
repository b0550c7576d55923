package io.paddock.server.internal;

import org.eclipse.jetty.http.HttpParser;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.server.internal.HttpConnection;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * A deadline for receiving a request's line and headers (slowloris, ATTACKS.md A59). Jetty's idle timeout
 * restarts with every byte, so a client that sends one header byte a second would hold a connection
 * forever; this closes any connection whose current request has been in its header phase longer than
 * the deadline. A sweeper checks the parser state of every open HTTP/1 connection a few times per
 * deadline. Thread-safe.
 */
public final class HeaderDeadline implements Connection.Listener {
    private final long deadlineNanos;
    private final Map<HttpConnection, Phase> open = new ConcurrentHashMap<>();
    private final ScheduledFuture<?> sweeper;

    /** When a connection's current header phase began, keyed by how many requests it had started then. */
    private record Phase(long messagesIn, long since) {
    }

    public HeaderDeadline(long deadlineMillis, ScheduledExecutorService scheduler) {
        this.deadlineNanos = TimeUnit.MILLISECONDS.toNanos(deadlineMillis);
        long period = Math.max(50, Math.min(1000, deadlineMillis / 4));
        this.sweeper = scheduler.scheduleAtFixedRate(this::sweep, period, period, TimeUnit.MILLISECONDS);
    }

    @Override
    public void onOpened(Connection connection) {
        if (connection instanceof HttpConnection h) {
            open.put(h, new Phase(-1, 0));
        }
    }

    @Override
    public void onClosed(Connection connection) {
        if (connection instanceof HttpConnection h) {
            open.remove(h);
        }
    }

    private static boolean inHeaders(HttpParser.State s) {
        return s.ordinal() > HttpParser.State.START.ordinal() && s.ordinal() <= HttpParser.State.HEADER.ordinal();
    }

    void sweep() {
        long now = System.nanoTime();
        open.replaceAll((h, phase) -> {
            HttpParser parser = h.getParser();
            if (parser == null || !inHeaders(parser.getState())) {
                return new Phase(-1, 0);
            }
            long messages = h.getMessagesIn();
            if (phase.messagesIn() != messages) {
                return new Phase(messages, now);
            }
            if (now - phase.since() > deadlineNanos) {
                h.getEndPoint().close();
            }
            return phase;
        });
    }

    public void stop() {
        sweeper.cancel(false);
        open.clear();
    }
}
