package io.paddock.runtime;

import io.paddock.SandboxSpec;

import java.time.Instant;
import java.util.Objects;

/**
 * What a tier itself records of a sandbox it runs, for an engine that has no record of it (see
 * {@link SandboxRuntime#handOver}).
 *
 * @param spec      its spec, without secrets (a tier never holds them)
 * @param createdAt when it was created; its lifetime runs from here
 */
public record RecordedSandbox(SandboxSpec spec, Instant createdAt) {
    public RecordedSandbox {
        Objects.requireNonNull(spec, "spec");
        Objects.requireNonNull(createdAt, "createdAt");
    }
}
