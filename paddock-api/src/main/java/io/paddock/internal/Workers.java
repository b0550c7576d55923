package io.paddock.internal;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Daemon threads for short jobs that run once per exec (an exit's dependent actions, the pumps of an exec
 * stream), kept for a minute after use so that the next exec finds one instead of starting a thread.
 *
 * <p>Not {@code CompletableFuture}'s default: with fewer than three cores the common pool has parallelism 1,
 * and {@code *Async} without an executor then starts a new thread for every task, several per exec (a
 * profile of the remote exec stream on two cores showed four thread starts per exec, most of its CPU).
 */
public final class Workers {
    private static final AtomicInteger COUNT = new AtomicInteger();
    private static final ExecutorService POOL = new ThreadPoolExecutor(0, Integer.MAX_VALUE, 60, TimeUnit.SECONDS,
            new SynchronousQueue<>(), r -> {
                Thread t = new Thread(r, "paddock-worker-" + COUNT.incrementAndGet());
                t.setDaemon(true);
                return t;
            });

    private Workers() {
    }

    /** The shared pool: unbounded (a job may block, e.g. reading a stream), idle threads end after 60 s. */
    public static ExecutorService pool() {
        return POOL;
    }
}
