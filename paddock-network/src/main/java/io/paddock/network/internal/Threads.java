package io.paddock.network.internal;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The plumbing the network layer's own servers (the resolver, the egress proxy) share: their threads, named
 * and tracked so that close() can join them, and quiet closing of their sockets.
 */
public final class Threads {
    private Threads() {
    }

    /**
     * Daemon threads named {@code prefix + role + "-" + n}, each added to {@code threads} (ended ones are
     * dropped from it as new ones come), for {@link #joinWithin}.
     */
    public static ThreadFactory tracked(Set<Thread> threads, String prefix, String role) {
        AtomicInteger count = new AtomicInteger();
        return task -> {
            threads.removeIf(t -> t.getState() == Thread.State.TERMINATED);
            Thread thread = new Thread(task, prefix + role + "-" + count.incrementAndGet());
            thread.setDaemon(true);
            threads.add(thread);
            return thread;
        };
    }

    /** Closes {@code closeable}; a failure is logged at DEBUG, never thrown. */
    public static void closeQuietly(AutoCloseable closeable, System.Logger log) {
        try {
            closeable.close();
        } catch (Exception e) {
            log.log(System.Logger.Level.DEBUG, "closing " + closeable + " failed", e);
        }
    }

    /** Waits up to {@code wait} in all for {@code threads} to end; the names of those still running. */
    public static List<String> joinWithin(java.util.Collection<Thread> threads, Duration wait) {
        long deadline = System.nanoTime() + wait.toNanos();
        try {
            for (Thread thread : threads) {
                TimeUnit.NANOSECONDS.timedJoin(thread, deadline - System.nanoTime());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return threads.stream().filter(Thread::isAlive).map(Thread::getName).toList();
    }
}
