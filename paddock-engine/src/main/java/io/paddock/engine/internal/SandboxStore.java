package io.paddock.engine.internal;

import io.paddock.ExitStatus;
import io.paddock.SandboxId;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;
import io.paddock.StopReason;

import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * Where a persistent engine (the daemon) records its sandboxes, so that a restarted engine can adopt the
 * running ones, finish half-done creates and destroys, and keep showing recently stopped ones. The
 * embedded engine uses {@link #NONE}: its sandboxes live and die with its process.
 */
interface SandboxStore extends AutoCloseable {

    /**
     * One sandbox as recorded. Secrets are part of the spec: the store must be readable by root only. The
     * lifetime deadline is kept on both clocks ({@link Deadlines}).
     */
    record Row(SandboxId id, SandboxSpec spec, String owner, SandboxState state, Optional<StopReason> stopReason,
               Instant createdAt, Deadlines.Deadline deadline, int entrypointChannel, Optional<ExitStatus> entrypointExit,
               Optional<String> imageId) {
        /** A sandbox of the host image (no image id). */
        Row(SandboxId id, SandboxSpec spec, String owner, SandboxState state, Optional<StopReason> stopReason,
            Instant createdAt, Deadlines.Deadline deadline, int entrypointChannel, Optional<ExitStatus> entrypointExit) {
            this(id, spec, owner, state, stopReason, createdAt, deadline, entrypointChannel, entrypointExit, Optional.empty());
        }

        Instant expiresAt() {
            return deadline.wall();
        }
    }

    void insert(Row row);

    void updateState(SandboxId id, SandboxState state, StopReason reason);

    void updateExpiry(SandboxId id, Deadlines.Deadline deadline);

    void updateEntrypoint(SandboxId id, int channel, ExitStatus exitOrNull);

    /** Replaces the recorded spec (its network policy changed). */
    void updateSpec(SandboxId id, io.paddock.SandboxSpec spec);

    void delete(SandboxId id);

    List<Row> loadAll();

    @Override
    void close();

    /** Records nothing. */
    SandboxStore NONE = new SandboxStore() {
        @Override
        public void insert(Row row) {
        }

        @Override
        public void updateState(SandboxId id, SandboxState state, StopReason reason) {
        }

        @Override
        public void updateExpiry(SandboxId id, Deadlines.Deadline deadline) {
        }

        @Override
        public void updateEntrypoint(SandboxId id, int channel, ExitStatus exitOrNull) {
        }

        @Override
        public void updateSpec(SandboxId id, io.paddock.SandboxSpec spec) {
        }

        @Override
        public void delete(SandboxId id) {
        }

        @Override
        public List<Row> loadAll() {
            return List.of();
        }

        @Override
        public void close() {
        }
    };
}
