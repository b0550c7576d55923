package io.paddock;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * What one build may use: every RUN step's sandbox gets {@code cpus} and {@code memory}, and the whole build at most
 * {@code time} of wall time, after which its running step's sandbox is destroyed, no further step starts, and the
 * build fails DEADLINE_EXCEEDED. A daemon building for a tenant sets the tenant's. A build given none runs each step
 * with every host CPU, 2 GiB of memory and at most an hour ({@link Images#build(Image, java.util.List, ImageListener)}).
 *
 * @param cpus   CPUs of each step's sandbox; empty: as many as the host has
 * @param memory memory of each step's sandbox, at least {@link SandboxSpec#MIN_MEMORY}
 * @param time   the build's longest wall time, positive
 */
public record BuildLimits(Optional<Double> cpus, ByteSize memory, Duration time) {
    public BuildLimits {
        Objects.requireNonNull(cpus, "cpus");
        Objects.requireNonNull(memory, "memory");
        Objects.requireNonNull(time, "time");
        if (cpus.isPresent() && !(cpus.get() >= 0.01 && cpus.get() <= 1024)) {
            throw SandboxException.invalid("cpus", "must be between 0.01 and 1024, got " + cpus.get());
        }
        if (memory.compareTo(SandboxSpec.MIN_MEMORY) < 0) {
            throw SandboxException.invalid("memory", "must be at least " + SandboxSpec.MIN_MEMORY + ", got " + memory);
        }
        if (time.isNegative() || time.isZero()) {
            throw SandboxException.invalid("time", "must be positive, got " + time);
        }
    }
}
