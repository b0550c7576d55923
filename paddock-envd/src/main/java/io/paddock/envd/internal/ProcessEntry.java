package io.paddock.envd.internal;

import io.paddock.ExecProcess;
import io.paddock.envd.internal.proto.ProcessProto.ProcessConfig;
import io.paddock.envd.internal.proto.ProcessProto.ProcessEvent;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A process started through envd: its Paddock exec, what it was started with, and the streams (a Start's and any
 * Connects') its events go to. Two pump threads read its stdout (a terminal's output, for a pty) and stderr from
 * start to end of file whether or not anyone listens (output nobody listens to is dropped, as envd does, so a
 * detached process never stalls), and hand each chunk to every subscriber: a subscriber that does not read holds
 * the pumps back, which is the command's backpressure, until its stream goes.
 */
final class ProcessEntry {
    final long pid;
    final ExecProcess exec;
    final ProcessConfig config;
    final Optional<String> tag;
    final boolean stdinOpen;
    /** Whether it runs on a pseudo-terminal: its input is {@code pty} input, its output {@code pty} data. */
    final boolean pty;
    /** Whether the exec's timeout is the Start call's deadline, so that timing out reads as deadline_exceeded. */
    final boolean timeoutIsDeadline;
    final Object stdinLock = new Object();

    private final Object lock = new Object();
    // @GuardedBy("lock")
    private final List<Subscriber> subscribers = new ArrayList<>();
    // @GuardedBy("lock")
    private Item last;

    ProcessEntry(long pid, ExecProcess exec, ProcessConfig config, Optional<String> tag, boolean stdinOpen, boolean pty,
                 boolean timeoutIsDeadline) {
        this.pid = pid;
        this.exec = exec;
        this.config = config;
        this.tag = tag;
        this.stdinOpen = stdinOpen;
        this.pty = pty;
        this.timeoutIsDeadline = timeoutIsDeadline;
    }

    /** One thing a subscriber receives: an event, or the end (an end event, or an error ending the stream). */
    record Item(ProcessEvent event, ConnectException error, boolean last) {
        static Item of(ProcessEvent e) {
            return new Item(e, null, false);
        }
    }

    /** One stream's bounded queue; its serve thread writes what it takes. */
    static final class Subscriber {
        final ArrayBlockingQueue<Item> queue = new ArrayBlockingQueue<>(64);
        volatile boolean closed;

        /** Queues {@code item}, waiting for room while the stream is open; false once it has gone. */
        boolean offer(Item item) {
            try {
                while (!closed) {
                    if (queue.offer(item, 100, TimeUnit.MILLISECONDS)) {
                        return true;
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return false;
        }
    }

    /** A new subscriber; if the process has already ended it finds the end waiting. */
    Subscriber subscribe() {
        Subscriber s = new Subscriber();
        synchronized (lock) {
            if (last != null) {
                s.queue.add(last);
            } else {
                subscribers.add(s);
            }
        }
        return s;
    }

    void unsubscribe(Subscriber s) {
        s.closed = true;
        synchronized (lock) {
            subscribers.remove(s);
        }
    }

    boolean ended() {
        synchronized (lock) {
            return last != null;
        }
    }

    /** Hands an event to every subscriber (outside the lock: offering may wait for a slow reader). */
    void broadcast(Item item) {
        List<Subscriber> now;
        synchronized (lock) {
            if (last != null) {
                return;
            }
            if (item.last()) {
                last = item;
            }
            now = new ArrayList<>(subscribers);
            if (item.last()) {
                subscribers.clear();
            }
        }
        for (Subscriber s : now) {
            s.offer(item);
        }
    }
}
