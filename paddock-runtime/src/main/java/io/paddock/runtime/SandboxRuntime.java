package io.paddock.runtime;

import io.paddock.SandboxId;
import io.paddock.SandboxSpec;

import java.util.List;

/**
 * An isolation tier (runc, runsc, Kubernetes, …). It starts a sandbox running Paddock's init and hands
 * back the channel to it; everything else (exec, files, limits per command) goes through that channel,
 * so the engine is the same for every tier.
 *
 * <p>Implementations own the host resources they create and must be able to destroy a sandbox from its
 * id alone (after a crash, the id on disk is all that is left).
 */
public interface SandboxRuntime {
    /** A short name: {@code runc}, {@code runsc}, … */
    String name();

    /** Creates and starts a sandbox; on failure nothing it made is left behind. */
    RuntimeSandbox start(StartRequest request);

    /**
     * Re-opens the channel to a sandbox this runtime started earlier, possibly from another process (an
     * engine restart). Writes {@code preamble} (the protocol's HELLO) into it first.
     *
     * @throws io.paddock.SandboxException NOT_FOUND if the sandbox is not running on this host
     */
    RuntimeSandbox reattach(SandboxId id, byte[] preamble);

    /** Kills and removes everything of this sandbox. Idempotent; succeeds if nothing is left. */
    void destroy(SandboxId id);

    /** Sandboxes this runtime has resources for on this host, whoever started them. */
    List<RuntimeRecord> records();

    /**
     * Whether the sandbox still runs on this host: a process of it is left (its init, a tier's helper) and it is
     * not frozen (paused). A reconciler reclaims a sandbox of a daemon that is gone for good only once it is not
     * (its init ended at its own deadline; a paused one never would, nobody being left to resume it). True when
     * the tier cannot tell.
     */
    default boolean running(SandboxId id) {
        return true;
    }

    /** A one-line description for logs and {@code --version}: binary, version, cgroup layout. */
    String describe();

    /**
     * Hands a running sandbox that another engine started over to the engine {@code owner}, which has no record
     * of it (a daemon that lost its data directory): marks it as {@code owner}'s and answers what the tier
     * records of it. Empty when the tier records nothing of its own (runc, runsc: the engine's store is the only
     * record), is not set to hand sandboxes over, or the sandbox is not a daemon's or not running.
     */
    default java.util.Optional<RecordedSandbox> handOver(SandboxId id, String owner) {
        return java.util.Optional.empty();
    }

    /**
     * The engine's record of a running sandbox changed after it started (a pooled sandbox was claimed with the
     * caller's labels, name and lifetime; its labels were updated): a tier that records sandboxes itself (for
     * {@link #handOver}) records the new spec, without secrets, and creation time. Best effort: the engine's own
     * store stays the record.
     */
    default void respecified(SandboxId id, SandboxSpec spec, java.time.Instant createdAt) {
    }

    /**
     * What the sandbox uses now, from the host's counters (its cgroup); empty when it has none here (it is not
     * running on this host) or the tier does not count.
     */
    default java.util.Optional<io.paddock.ResourceUsage> usage(SandboxId id) {
        return java.util.Optional.empty();
    }

    /**
     * Where the writable layer of an image sandbox is on the host ({@code upper}, files carrying the sandbox's
     * host ids from {@code uidBase}), for committing it as a layer; empty for a sandbox of the host image.
     */
    default java.util.Optional<WritableLayer> writableLayer(SandboxId id) {
        return java.util.Optional.empty();
    }

    /**
     * Where the writable layer of the sandbox's {@code index}th mount is on the host, when that mount is
     * {@link SandboxMount.Layered}; empty otherwise.
     */
    default java.util.Optional<WritableLayer> mountLayer(SandboxId id, int index) {
        return java.util.Optional.empty();
    }

    /**
     * A sandbox's writable layer on the host.
     *
     * @param paddockFiles what Paddock itself put in {@code upper} (relative paths: its own directory, the
     *                     {@code /etc} files every sandbox gets, a tier's preload list), never part of a layer
     *                     made from it (an image build's step, a snapshot)
     */
    record WritableLayer(java.nio.file.Path upper, long uidBase, java.util.Set<String> paddockFiles) {
        /** What every tier puts in a writable layer. */
        public static final java.util.Set<String> PADDOCK_FILES =
                java.util.Set.of(".paddock", "etc/hosts", "etc/hostname", "etc/resolv.conf");

        public WritableLayer {
            paddockFiles = java.util.Set.copyOf(paddockFiles);
        }

        public WritableLayer(java.nio.file.Path upper, long uidBase) {
            this(upper, uidBase, PADDOCK_FILES);
        }
    }

    /**
     * Freezes every process of a running sandbox until the handle is closed (a snapshot copies its writable
     * layer meanwhile, so that no write lands halfway through the copy). Tiers that cannot say FAILED_PRECONDITION.
     */
    default AutoCloseable freeze(SandboxId id) {
        throw new io.paddock.SandboxException(io.paddock.ErrorCode.FAILED_PRECONDITION, name()
                + " sandboxes cannot be frozen");
    }

    /**
     * Pauses a running sandbox: no process of it runs until {@link #resume}. The channel the engine holds
     * stays open and keeps its place: nothing is read from it while paused, and what the engine writes meanwhile
     * reaches the init after the resume. Tiers that cannot say FAILED_PRECONDITION with the reason.
     *
     * @return what happened to the sandbox's memory
     */
    default io.paddock.PauseMode pause(SandboxId id) {
        throw new io.paddock.SandboxException(io.paddock.ErrorCode.FAILED_PRECONDITION, name()
                + " sandboxes cannot be paused");
    }

    /**
     * Lets go of what this tier holds in the engine's process for a sandbox the engine leaves running when it stops
     * (a daemon detaching): the held channel of a paused one. The sandbox itself is untouched. Default: nothing held.
     */
    default void detach(SandboxId id) {
    }

    /**
     * Resumes a paused sandbox. Without {@code preamble}, the channel the engine held across the pause works
     * again and the answer is empty. With one (the engine lost its channel since the pause: a restart), the
     * preamble (the protocol's HELLO) is written into a fresh channel, which is returned, as {@link #reattach}
     * does. On failure the sandbox stays paused.
     */
    default java.util.Optional<RuntimeSandbox> resume(SandboxId id, java.util.Optional<byte[]> preamble) {
        throw new io.paddock.SandboxException(io.paddock.ErrorCode.FAILED_PRECONDITION, name()
                + " sandboxes cannot be paused or resumed");
    }

    /**
     * Checks, without changing anything, that {@link #fork} can start copies of this sandbox once its memory is
     * checkpointed (the engine pauses a running source first). Tiers without memory checkpoints say
     * FAILED_PRECONDITION with the reason.
     */
    default void checkForkable(SandboxId source) {
        throw new io.paddock.SandboxException(io.paddock.ErrorCode.FAILED_PRECONDITION, name()
                + " sandboxes cannot be forked: a fork is restored from a memory checkpoint, and memory checkpoints"
                + " need the gVisor tier (runtime runsc)");
    }

    /**
     * Starts a new sandbox ({@code request}: its own id, spec, HELLO preamble) restored from the checkpoint of
     * the paused sandbox {@code source}: every process of the source, with its memory, is in the new sandbox
     * where it was, but with its own bundle, host uid range, cgroup and channel; the preamble is written into
     * the new channel, as {@link #reattach} does. The source stays paused, its checkpoint unused up.
     */
    default RuntimeSandbox fork(SandboxId source, StartRequest request) {
        checkForkable(source);
        throw new io.paddock.SandboxException(io.paddock.ErrorCode.FAILED_PRECONDITION, name()
                + " sandboxes cannot be forked");
    }

    /**
     * The RLIMIT_NPROC every tenant process of this sandbox gets, or 0 for none. A tier whose cgroup
     * {@code pids.max} counts only tenant tasks (runc) needs none; one whose host tasks are not the tenant's
     * (runsc) enforces the spec's {@code pids} this way, inside the sandbox.
     */
    default long tenantProcessLimit(SandboxSpec spec) {
        return 0;
    }

    /**
     * Whether the tier's sandboxes get their image by reference from elsewhere (a cluster's nodes pull it), so the
     * engine neither resolves nor builds it: the tier receives no {@link ImageRootfs}, and commands start as
     * Paddock's sandbox user (1000:1000) from Paddock's base environment, not the image's.
     */
    default boolean pullsImages() {
        return false;
    }

    /**
     * Whether the tier enforces the spec's network policy itself (a Kubernetes NetworkPolicy), instead of running
     * the sandbox in a network namespace Paddock's network layer made on this host.
     */
    default boolean ownsNetwork() {
        return false;
    }

    /** Replaces a running sandbox's network policy; only for tiers that {@link #ownsNetwork()}. */
    default void updateNetwork(SandboxId id, io.paddock.NetworkPolicy policy) {
        throw new io.paddock.SandboxException(io.paddock.ErrorCode.FAILED_PRECONDITION, name()
                + " sandboxes' networks are not the tier's own");
    }
}
