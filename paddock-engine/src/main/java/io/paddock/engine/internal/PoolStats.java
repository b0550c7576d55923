package io.paddock.engine.internal;

/**
 * A snapshot of one warm pool's counters ({@link LocalPaddock#poolStats()}).
 *
 * @param shape        the pool's shape, in words (runtime, image, memory, cpus, …)
 * @param size         the configured number of idle sandboxes
 * @param idle         idle sandboxes ready now
 * @param creating     sandboxes being created for the pool now
 * @param hits         creates served from the pool
 * @param misses       creates of this shape that found the pool empty (and were created cold)
 * @param created      sandboxes the pool created
 * @param expired      idle sandboxes replaced after the pool's maximum idle age, or found dead
 * @param failures     pool creations that failed
 * @param refillP50Ms  median time to create one pooled sandbox (last 1024), milliseconds
 * @param refillP99Ms  99th percentile of the same
 * @param refillMaxMs  the slowest of the same
 */
public record PoolStats(String shape, int size, int idle, int creating, long hits, long misses, long created,
                        long expired, long failures, double refillP50Ms, double refillP99Ms, double refillMaxMs) {
}
