package io.paddock;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * A live handle on one sandbox. Thread-safe: many commands and file operations may run at once.
 *
 * <p>{@link #close()} destroys the sandbox, so that try-with-resources leaves nothing behind.
 */
public interface Sandbox extends AutoCloseable {
    SandboxId id();

    Optional<String> name();

    Map<String, String> labels();

    /** A fresh snapshot of the sandbox's state. */
    SandboxInfo info();

    default SandboxState state() {
        return info().state();
    }

    /** Runs a command to its end and returns its exit status and captured output. */
    default ExecResult exec(String... argv) {
        return exec(ExecRequest.of(argv));
    }

    /** Runs a command to its end and returns its exit status and captured output (each capped). */
    ExecResult exec(ExecRequest request);

    /** Starts a command and returns at once with its live streams. */
    ExecProcess start(ExecRequest request);

    SandboxFiles files();

    /** The entrypoint's output so far (empty when the sandbox has no entrypoint). */
    SandboxLogs logs();

    /**
     * What the sandbox uses now (memory, CPU time, tasks), read from its cgroup. A paused gVisor sandbox, whose
     * memory is checkpointed to disk, uses none.
     *
     * @throws SandboxException FAILED_PRECONDITION when it has stopped, or its tier does not count usage
     */
    default ResourceUsage usage() {
        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "this Sandbox implementation cannot report its usage");
    }

    /** Waits until the sandbox has stopped (for example, its entrypoint exited); returns its final info. */
    Optional<SandboxInfo> awaitStop(Duration timeout);

    /**
     * Replaces the sandbox's network policy. It applies to new connections at once (established ones go on);
     * a sandbox created without a network ({@link NetworkPolicy#none()} and no ports) cannot gain one:
     * {@code FAILED_PRECONDITION}.
     */
    void updateNetwork(NetworkPolicy policy);

    /**
     * Adds {@code labels} to the sandbox's, replacing the values of keys it has; its other labels stay. Lists
     * filter on them at once, and they outlive a daemon restart.
     *
     * @throws SandboxException INVALID_ARGUMENT for a bad label (or more than 64 in all); FAILED_PRECONDITION when
     *                          the sandbox stopped
     */
    default void updateLabels(java.util.Map<String, String> labels) {
        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "this Sandbox implementation cannot change labels");
    }

    /**
     * Where {@code port} (one of {@link SandboxSpec#ports()}) is served. Embedded: the sandbox's own address,
     * reachable from this host only. Remote: a daemon URL carrying a signed token bound to this sandbox and
     * port, which works without headers (for a browser) and dies with the sandbox.
     *
     * @throws SandboxException INVALID_ARGUMENT when the port was not exposed at create
     */
    java.net.URI url(int port);

    /**
     * Pauses the sandbox: none of its processes runs until {@link #resume()}, and exec and file operations fail
     * with {@code FAILED_PRECONDITION} meanwhile. What happens to its memory depends on its tier and is what this
     * returns: on gVisor ({@code runsc}) the whole sandbox is checkpointed to the host's disk and its memory is
     * freed ({@link PauseMode#CHECKPOINTED}); on runc its processes are frozen and their memory stays resident
     * ({@link PauseMode#FROZEN}). Either way every process, with its memory, open files and the sandbox's code
     * contexts, is where it was after the resume. The lifetime deadline keeps running while paused
     * ({@link #setTimeout} works while paused); a paused sandbox is destroyed at its deadline like a running one.
     *
     * @throws SandboxException FAILED_PRECONDITION when the sandbox is not running, or its tier cannot pause it
     *                          (the message says why)
     */
    PauseMode pause();

    /**
     * Resumes a paused sandbox; it continues where it was. Resuming a running sandbox does nothing.
     *
     * @throws SandboxException FAILED_PRECONDITION when it is stopped, or when its checkpoint is not the one
     *                          written at pause (corrupted or replaced on disk: nothing of it is run, and the
     *                          sandbox is stopped)
     */
    void resume();

    /**
     * Turns the sandbox's filesystem into an image named {@code tag} ({@code NAME[:TAG]}, {@code :latest} when
     * none), which {@code SandboxSpec.builder().image(tag)} then creates sandboxes of: what the sandbox wrote
     * (deletions included) becomes a layer on top of its image's layers, with its image's environment, user and
     * working directory. Of a {@code host} sandbox, the image is based on the host image: its sandboxes get the
     * host's {@code /usr} read-only, as the same user; files under {@code /tmp} and {@code /workspace}, which are
     * memory there, are not part of it. The sandbox is frozen while its layer is copied and goes on afterwards.
     *
     * @throws SandboxException INVALID_ARGUMENT for a bad tag; FAILED_PRECONDITION when the sandbox is not running
     */
    default ImageInfo snapshot(String tag) {
        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "this Sandbox implementation cannot snapshot");
    }

    /**
     * Starts {@code count} new sandboxes from one memory checkpoint of this one: each has every process of this
     * sandbox, with its memory and its files (in memory, and a copy of those on disk), where it was at the
     * checkpoint, and from then on its own state: its own id, host uid range, cgroup and channel, this sandbox's
     * spec without its name, and a fresh lifetime ({@code timeout} from now). A running sandbox is paused for the
     * checkpoint and resumed after; a paused one stays paused. All or nothing.
     *
     * @return the new sandboxes, running
     * @throws SandboxException FAILED_PRECONDITION when the sandbox is not running or paused, or its tier cannot
     *                          fork it (runc: memory checkpoints need the gVisor tier; on gVisor, a sandbox with a
     *                          network), the message says why;
     *                          INVALID_ARGUMENT for a count outside 1..64; RESOURCE_EXHAUSTED past the engine's
     *                          maximum of sandboxes
     */
    default java.util.List<Sandbox> fork(int count) {
        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "this sandbox cannot be forked");
    }

    /** Moves the lifetime deadline to {@code fromNow} from now. */
    void setTimeout(Duration fromNow);

    /**
     * Destroys the sandbox: kills every process and removes every host resource. Idempotent: destroying a
     * stopped sandbox succeeds.
     */
    void destroy();

    @Override
    default void close() {
        destroy();
    }
}
