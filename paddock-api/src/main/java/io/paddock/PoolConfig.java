package io.paddock;

import java.time.Duration;
import java.util.Objects;

/**
 * A warm pool of the embedded engine ({@link LocalOptions.Builder#warmPool(PoolConfig)}): sandboxes of one
 * <em>shape</em> created ahead of time, so that {@link Paddock#create} of a spec with that shape takes one
 * from the pool instead of starting a container (a pool hit: milliseconds instead of tens of them).
 *
 * <p>The shape is everything in a spec that the container is made of: image, runtime, memory, cpus,
 * pids, disk, open files, network and workdir. A created spec with the same shape and no entrypoint is
 * served from the pool; its name, labels, timeout, environment and secrets are applied when it is taken,
 * so a pooled sandbox is indistinguishable from a fresh one. Pooled sandboxes are never handed out twice,
 * count against {@link LocalOptions#maxSandboxes()}, are replaced after {@link #maxIdle()} unused, and are
 * destroyed when the engine closes (a restarted daemon removes leftovers instead of adopting them).
 *
 * <pre>{@code
 * LocalOptions.builder().warmPool(PoolConfig.builder()
 *         .shape(SandboxSpec.builder().memory(ByteSize.mib(256)).build())
 *         .size(8).build())
 * }</pre>
 */
public final class PoolConfig {
    public static final int DEFAULT_SIZE = 4;
    public static final int DEFAULT_REFILL_CONCURRENCY = 2;
    public static final Duration DEFAULT_MAX_IDLE = Duration.ofMinutes(10);
    public static final int MAX_SIZE = 100_000;

    private final SandboxSpec shape;
    private final int size;
    private final int refillConcurrency;
    private final Duration maxIdle;

    private PoolConfig(Builder b) {
        this.shape = b.shape;
        this.size = b.size;
        this.refillConcurrency = b.refillConcurrency;
        this.maxIdle = b.maxIdle;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The spec whose shape the pool serves (only its shape fields matter). */
    public SandboxSpec shape() {
        return shape;
    }

    /** How many idle sandboxes the pool keeps ready. */
    public int size() {
        return size;
    }

    /** How many sandboxes the pool creates at once while refilling. */
    public int refillConcurrency() {
        return refillConcurrency;
    }

    /** How long a pooled sandbox may stay unused before it is replaced by a fresh one. */
    public Duration maxIdle() {
        return maxIdle;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PoolConfig p && shape.equals(p.shape) && size == p.size
                && refillConcurrency == p.refillConcurrency && maxIdle.equals(p.maxIdle);
    }

    @Override
    public int hashCode() {
        return Objects.hash(shape, size, refillConcurrency, maxIdle);
    }

    @Override
    public String toString() {
        return "PoolConfig{size=" + size + ", refillConcurrency=" + refillConcurrency + ", maxIdle=" + maxIdle
                + ", shape=" + shape + "}";
    }

    public static final class Builder {
        private SandboxSpec shape = SandboxSpec.builder().build();
        private int size = DEFAULT_SIZE;
        private int refillConcurrency = DEFAULT_REFILL_CONCURRENCY;
        private Duration maxIdle = DEFAULT_MAX_IDLE;

        private Builder() {
        }

        /**
         * The shape to keep ready. It must not have an entrypoint, a name, labels, environment or secrets:
         * those belong to the tenant and are applied when a pooled sandbox is taken.
         */
        public Builder shape(SandboxSpec spec) {
            Objects.requireNonNull(spec, "shape");
            if (!spec.entrypoint().isEmpty()) {
                throw SandboxException.invalid("shape", "a pooled sandbox has no entrypoint (specs with one bypass the pool)");
            }
            if (spec.name().isPresent() || !spec.labels().isEmpty() || !spec.env().isEmpty() || !spec.secrets().isEmpty()) {
                throw SandboxException.invalid("shape", "name, labels, env and secrets are the tenant's, applied when a"
                        + " pooled sandbox is taken; leave them out of the pool's shape");
            }
            this.shape = spec;
            return this;
        }

        public Builder size(int size) {
            if (size < 1 || size > MAX_SIZE) {
                throw SandboxException.invalid("size", "must be between 1 and " + MAX_SIZE + ", got " + size);
            }
            this.size = size;
            return this;
        }

        public Builder refillConcurrency(int n) {
            if (n < 1 || n > 64) {
                throw SandboxException.invalid("refillConcurrency", "must be between 1 and 64, got " + n);
            }
            this.refillConcurrency = n;
            return this;
        }

        public Builder maxIdle(Duration maxIdle) {
            if (maxIdle == null || maxIdle.compareTo(Duration.ofSeconds(1)) < 0
                    || maxIdle.compareTo(SandboxSpec.MAX_TIMEOUT) > 0) {
                throw SandboxException.invalid("maxIdle", "must be between 1s and " + SandboxSpec.MAX_TIMEOUT.toDays()
                        + " days, got " + maxIdle);
            }
            this.maxIdle = maxIdle;
            return this;
        }

        public PoolConfig build() {
            return new PoolConfig(this);
        }
    }
}
