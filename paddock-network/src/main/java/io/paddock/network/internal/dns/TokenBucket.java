package io.paddock.network.internal.dns;

/**
 * One client's query allowance: {@code rate} tokens a second, at most {@code burst} saved up; a query takes one.
 * A full bucket lets a sandbox resolve its start-up burst at once while a tunnel pushing data through DNS is held
 * to the steady rate.
 */
final class TokenBucket {
    private final double tokensPerNano;
    private final double burst;
    private double tokens;
    private long lastNanos;

    TokenBucket(int rate, int burst, long nowNanos) {
        this.tokensPerNano = rate / 1e9;
        this.burst = burst;
        this.tokens = burst;
        this.lastNanos = nowNanos;
    }

    /** Takes a token if one is there; {@code nowNanos} is {@link System#nanoTime()}. */
    synchronized boolean tryTake(long nowNanos) {
        tokens = Math.min(burst, tokens + (nowNanos - lastNanos) * tokensPerNano);
        lastNanos = nowNanos;
        if (tokens < 1) {
            return false;
        }
        tokens -= 1;
        return true;
    }
}
