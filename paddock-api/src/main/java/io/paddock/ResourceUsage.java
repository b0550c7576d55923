package io.paddock;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * What a sandbox uses, as the host counts it: its cgroup's counters at the moment of the call. On the gVisor tier
 * ({@code runsc}) the cgroup also holds the Sentry and the gofer, so these include gVisor's own cost.
 *
 * @param memory      memory charged to the sandbox now: its processes' and the page cache of the files it wrote
 * @param memoryLimit the memory limit the host enforces; empty when the cgroup has none
 * @param cpuTime     CPU time its processes have used since it started on this host (a resumed checkpoint counts
 *                    from its restore)
 * @param processes   tasks (processes and threads) in it now
 */
public record ResourceUsage(ByteSize memory, Optional<ByteSize> memoryLimit, Duration cpuTime, long processes) {
    public ResourceUsage {
        Objects.requireNonNull(memory, "memory");
        Objects.requireNonNull(memoryLimit, "memoryLimit");
        Objects.requireNonNull(cpuTime, "cpuTime");
        if (cpuTime.isNegative() || processes < 0) {
            throw new IllegalArgumentException("cpuTime and processes must not be negative");
        }
    }
}
