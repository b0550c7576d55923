package io.paddock.network.internal;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Shutting down the network layer's own server threads (the resolver's, the egress proxy's). */
public final class Threads {
    private Threads() {
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
