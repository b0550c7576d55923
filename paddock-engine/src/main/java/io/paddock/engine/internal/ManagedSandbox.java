package io.paddock.engine.internal;

import io.paddock.ErrorCode;
import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.ExecResult;
import io.paddock.ExitStatus;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxFiles;
import io.paddock.SandboxId;
import io.paddock.SandboxInfo;
import io.paddock.SandboxLogs;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;
import io.paddock.StopReason;
import io.paddock.init.internal.InitClient;
import io.paddock.init.internal.InitExec;
import io.paddock.runtime.RuntimeSandbox;

import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One sandbox of the embedded engine: its lifecycle state machine and the operations on a running
 * sandbox, which go to its init over the channel. Thread-safe; the state changes under this object's
 * lock, and no I/O happens while holding it.
 */
final class ManagedSandbox implements Sandbox {
    static final int LOG_CAPACITY = 1 << 20;

    private final SandboxManager manager;
    private final SandboxId id;
    /** Replaced only when its network policy changes. */
    private volatile SandboxSpec spec;
    private final Instant createdAt;
    private final CompletableFuture<SandboxInfo> stopped = new CompletableFuture<>();
    private final LogBuffer stdoutLog = new LogBuffer(LOG_CAPACITY);
    private final LogBuffer stderrLog = new LogBuffer(LOG_CAPACITY);
    private final SandboxFiles files;
    /** For the idle timeout: when a command, file operation or code run last began or ended, and how many run. */
    private volatile long lastActivityNanos = System.nanoTime();
    private final java.util.concurrent.atomic.AtomicInteger activeCommands = new java.util.concurrent.atomic.AtomicInteger();

    // @GuardedBy("this")
    private SandboxState state = SandboxState.CREATING;
    // @GuardedBy("this")
    private StopReason stopReason;
    // @GuardedBy("this")
    private Instant expiresAt;
    // @GuardedBy("this")
    private ExitStatus entrypointExit;
    /** Whether the manager counts this sandbox as live (guarded by this). */
    private boolean counted;
    private volatile RuntimeSandbox runtimeSandbox;
    private volatile InitClient client;
    /** What its image decided; set before it runs (the host image's until then). */
    private volatile SandboxRoot root;

    ManagedSandbox(SandboxManager manager, SandboxId id, SandboxSpec spec, Instant createdAt) {
        this.manager = manager;
        this.id = id;
        this.spec = spec;
        this.createdAt = createdAt;
        this.expiresAt = createdAt.plus(spec.timeout());
        this.files = new CheckedFiles(this);
        this.root = SandboxRoot.host(spec);
    }

    SandboxRoot root() {
        return root;
    }

    void root(SandboxRoot r) {
        this.root = r;
    }

    /** A sandbox a restarted engine found stopped in its store: shown until its retention ends. */
    static ManagedSandbox restoredStopped(SandboxManager manager, SandboxStore.Row row) {
        ManagedSandbox sb = new ManagedSandbox(manager, row.id(), row.spec(), row.createdAt());
        synchronized (sb) {
            sb.expiresAt = row.expiresAt();
            sb.state = SandboxState.STOPPED;
            sb.stopReason = row.stopReason().orElse(StopReason.FAILED);
            sb.entrypointExit = row.entrypointExit().orElse(null);
            sb.stopped.complete(sb.infoLocked());
        }
        return sb;
    }

    // ---- lifecycle, driven by SandboxManager ----

    synchronized void running(RuntimeSandbox rt, InitClient initClient) {
        this.runtimeSandbox = rt;
        this.client = initClient;
        initClient.explainLossWith(this::explainLoss);
        moveTo(SandboxState.RUNNING);
    }

    /** A paused sandbox a restarted engine found in its store: no channel until it is resumed. */
    static ManagedSandbox restoredPaused(SandboxManager manager, SandboxStore.Row row) {
        ManagedSandbox sb = new ManagedSandbox(manager, row.id(), row.spec(), row.createdAt());
        synchronized (sb) {
            sb.expiresAt = row.expiresAt();
            sb.state = SandboxState.PAUSED;
        }
        return sb;
    }

    /** Held by pause and resume, one at a time per sandbox (never while holding this object's lock). */
    final Object pauseLock = new Object();

    /** Running to paused; false if it is not running (a destroy came first). */
    synchronized boolean beginPause() {
        if (state != SandboxState.RUNNING) {
            return false;
        }
        moveTo(SandboxState.PAUSED);
        return true;
    }

    /** Paused to running, with a new channel when the engine had none (a restart); false if it was stopped meanwhile. */
    synchronized boolean resumed(RuntimeSandbox rt, InitClient initClient) {
        if (state != SandboxState.PAUSED) {
            return false;
        }
        if (rt != null) {
            this.runtimeSandbox = rt;
            this.client = initClient;
            initClient.explainLossWith(this::explainLoss);
        }
        moveTo(SandboxState.RUNNING);
        return true;
    }

    /** Marks the sandbox as stopping; returns false if it already was (someone else is destroying it). */
    synchronized boolean beginStop(StopReason reason) {
        if (state == SandboxState.STOPPING || state == SandboxState.STOPPED) {
            return false;
        }
        stopReason = reason;
        moveTo(SandboxState.STOPPING);
        return true;
    }

    void finishStop() {
        SandboxInfo info;
        synchronized (this) {
            moveTo(SandboxState.STOPPED);
            info = infoLocked();
        }
        stopped.complete(info);
    }

    synchronized void entrypointExited(ExitStatus status) {
        this.entrypointExit = status;
    }

    synchronized Instant expiresAt() {
        return expiresAt;
    }

    synchronized void setExpiresAt(Instant at) {
        this.expiresAt = at;
    }

    private void moveTo(SandboxState next) {
        if (!state.canMoveTo(next)) {
            throw new IllegalStateException("sandbox " + id + " cannot go from " + state + " to " + next);
        }
        state = next;
        if (counted && !next.isLive()) {
            counted = false;
            manager.liveChanged(-1);
        }
    }

    /**
     * Called once the sandbox is in the manager's registry: while it is live it counts among the manager's live
     * sandboxes (SandboxManager#liveCount), until it begins to stop.
     */
    synchronized void registered() {
        if (!counted && state.isLive()) {
            counted = true;
            manager.liveChanged(1);
        }
    }

    InitClient client() {
        InitClient c = client;
        SandboxState s = currentState();
        if (s != SandboxState.RUNNING || c == null) {
            throw notRunning(s);
        }
        return c;
    }

    InitClient clientOrNull() {
        return client;
    }

    RuntimeSandbox runtimeSandbox() {
        return runtimeSandbox;
    }

    synchronized SandboxState currentState() {
        return state;
    }

    synchronized StopReason stopReason() {
        return stopReason;
    }

    SandboxException notRunning(SandboxState s) {
        if (s == SandboxState.CREATING) {
            return new SandboxException(ErrorCode.FAILED_PRECONDITION, "sandbox " + id + " is still being created");
        }
        if (s == SandboxState.PAUSED) {
            return new SandboxException(ErrorCode.FAILED_PRECONDITION, "sandbox " + id + " is paused; resume it first");
        }
        return new SandboxException(ErrorCode.FAILED_PRECONDITION, "sandbox " + id + " is " + s.name().toLowerCase()
                + " (" + describe(stopReason()) + ")");
    }

    static String describe(StopReason reason) {
        if (reason == null) {
            return "no reason recorded";
        }
        return switch (reason) {
            case DESTROYED -> "destroyed";
            case TIMEOUT -> "its lifetime timeout passed";
            case ENTRYPOINT_EXITED -> "its entrypoint exited";
            case OOM -> "it ran out of memory";
            case FAILED -> "its init failed";
        };
    }

    SandboxSpec spec() {
        return spec;
    }

    void spec(SandboxSpec updated) {
        this.spec = updated;
    }

    Instant createdAt() {
        return createdAt;
    }

    LogBuffer stdoutLog() {
        return stdoutLog;
    }

    LogBuffer stderrLog() {
        return stderrLog;
    }

    // ---- Sandbox ----

    @Override
    public SandboxId id() {
        return id;
    }

    @Override
    public Optional<String> name() {
        return spec.name();
    }

    @Override
    public Map<String, String> labels() {
        return spec.labels();
    }

    @Override
    public synchronized SandboxInfo info() {
        return infoLocked();
    }

    private SandboxInfo infoLocked() {
        Optional<io.paddock.NetworkTraffic> traffic = state.isLive() ? manager.networkCounters(id)
                .map(c -> new io.paddock.NetworkTraffic(c.txBytes(), c.rxBytes())) : Optional.empty();
        return new SandboxInfo(id, spec.name(), spec.labels(), state, Optional.ofNullable(stopReason), createdAt,
                expiresAt, spec.image(), manager.runtimeName(spec), Optional.ofNullable(entrypointExit), spec.network(),
                spec.ports(), traffic);
    }

    @Override
    public ExecResult exec(ExecRequest request) {
        long began = System.nanoTime();
        InitClient c;
        try {
            c = client();
        } catch (SandboxException e) {
            execFailed(e, began);
            throw e;
        }
        activeCommands.incrementAndGet();
        touch();
        try {
            ExecResult result = c.run(manager.spawnRequest(this, request, false), request.stdin().orElse(null));
            manager.events().execFinished(manager.runtimeName(spec), result.status(), Duration.ofNanos(System.nanoTime() - began));
            return result;
        } catch (SandboxException e) {
            SandboxException reported = lostToOom(c, e);
            execFailed(reported, began);
            throw reported;
        } catch (RuntimeException e) {
            execFailed(e, began);
            throw e;
        } finally {
            activeCommands.decrementAndGet();
            touch();
        }
    }

    private void execFailed(Throwable e, long began) {
        manager.events().execFailed(manager.runtimeName(spec), GuardedEvents.codeOf(e), Duration.ofNanos(System.nanoTime() - began));
    }

    /** Something used the sandbox now (the idle timeout counts from the last such moment). */
    void touch() {
        lastActivityNanos = System.nanoTime();
    }

    /** How long nothing has used the sandbox, or zero while a command runs. */
    Duration idleFor() {
        return activeCommands.get() > 0 ? Duration.ZERO : Duration.ofNanos(System.nanoTime() - lastActivityNanos);
    }

    /**
     * The end of the init's channel as the runtime explains it ({@link InitClient#explainLossWith}): the whole
     * sandbox died of a limit, which the channel cannot tell. The runsc tier: the host's OOM killer kills the
     * Sentry, and the Sentry dies when the host process limit (its own threads and stub processes count against
     * it) refuses it one. Read from the cgroup, which destroy removes only after this.
     */
    private SandboxException explainLoss(SandboxException closed) {
        RuntimeSandbox rt = runtimeSandbox;
        if (rt == null || currentState() != SandboxState.RUNNING) {
            return closed; // the engine is stopping it (or pausing it): nothing died of a limit
        }
        if (rt.oomKills() > 0) {
            return outOfMemory(closed);
        }
        // Only where the host limit is not the tenant's own (runc: a bomb meets pids.max, and the sandbox lives on).
        if (manager.hostPidsCountTheRuntime(spec) && rt.processLimitHits() > 0) {
            return new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "sandbox " + id + " reached its host process"
                    + " limit and was stopped: on the " + manager.runtimeName(spec) + " tier the runtime's own"
                    + " threads count against it beside the sandbox's " + spec.pids() + " processes", closed);
        }
        // The runtime's last lines stay in the engine's log (SandboxManager#onInitGone): they are the host's.
        return new SandboxException(closed.code(), closed.getMessage() + ": the sandbox stopped unexpectedly, and"
                + " neither an out-of-memory kill nor its host process limit explains it (the engine's log has its"
                + " runtime's last lines)", closed);
    }

    private SandboxException outOfMemory(SandboxException cause) {
        return new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "sandbox " + id + " ran out of memory (limit "
                + spec.memory() + ") and was stopped: on the " + manager.runtimeName(spec)
                + " tier an out-of-memory kill stops the whole sandbox", cause);
    }

    /**
     * An exec that failed because the channel ended, where the OOM killer's count came only after the end (it
     * counts once its SIGKILL is sent): the engine's classification of the stop says so.
     */
    private SandboxException lostToOom(InitClient c, SandboxException e) {
        if (c.isOpen() || runtimeSandbox == null || e.code() == ErrorCode.RESOURCE_EXHAUSTED) {
            return e;
        }
        awaitStop(Duration.ofSeconds(5));
        return stopReason() == StopReason.OOM ? outOfMemory(e) : e;
    }

    @Override
    public ExecProcess start(ExecRequest request) {
        long began = System.nanoTime();
        InitExec exec;
        try {
            exec = client().spawn(manager.spawnRequest(this, request, true));
        } catch (RuntimeException e) {
            execFailed(e, began);
            throw e;
        }
        activeCommands.incrementAndGet();
        touch();
        exec.onExit().whenComplete((status, error) -> {
            activeCommands.decrementAndGet();
            touch();
            if (status != null) {
                manager.events().execFinished(manager.runtimeName(spec), status, Duration.ofNanos(System.nanoTime() - began));
            } else {
                execFailed(error instanceof java.util.concurrent.CompletionException ce && ce.getCause() != null
                        ? ce.getCause() : error, began);
            }
        });
        request.stdin().ifPresent(bytes -> {
            try {
                exec.stdin().write(bytes);
                exec.closeStdin();
            } catch (IOException e) {
                throw new SandboxException(ErrorCode.UNAVAILABLE, "writing stdin failed: " + e.getMessage(), e);
            }
        });
        return exec;
    }

    @Override
    public SandboxFiles files() {
        touch();
        return files;
    }

    @Override
    public SandboxLogs logs() {
        return new SandboxLogs(stdoutLog.snapshot(), stderrLog.snapshot(), stdoutLog.truncated(), stderrLog.truncated());
    }

    @Override
    public io.paddock.ResourceUsage usage() {
        SandboxState s = currentState();
        if (s != SandboxState.RUNNING && s != SandboxState.PAUSED) {
            throw notRunning(s);
        }
        Optional<io.paddock.ResourceUsage> u = manager.runtimeFor(this).usage(id);
        if (u.isPresent()) {
            return u.get();
        }
        if (currentState() == SandboxState.PAUSED) { // checkpointed to disk (gVisor): nothing of it runs
            return new io.paddock.ResourceUsage(io.paddock.ByteSize.bytes(0), Optional.of(spec.memory()), Duration.ZERO, 0);
        }
        SandboxState now = currentState();
        throw now != SandboxState.RUNNING ? notRunning(now) : new SandboxException(ErrorCode.FAILED_PRECONDITION,
                "the " + manager.runtimeName(spec) + " tier does not count sandbox " + id + "'s usage");
    }

    @Override
    public Optional<SandboxInfo> awaitStop(Duration timeout) {
        try {
            return Optional.of(stopped.get(timeout.toNanos(), TimeUnit.NANOSECONDS));
        } catch (TimeoutException e) {
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SandboxException(ErrorCode.UNAVAILABLE, "interrupted while waiting for sandbox " + id);
        } catch (ExecutionException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "waiting for sandbox " + id + " failed: " + e.getCause(), e);
        }
    }

    CompletableFuture<SandboxInfo> stoppedFuture() {
        return stopped;
    }

    @Override
    public void setTimeout(Duration fromNow) {
        if (fromNow == null || fromNow.isNegative() || fromNow.isZero() || fromNow.compareTo(SandboxSpec.MAX_TIMEOUT) > 0) {
            throw SandboxException.invalid("timeout", "must be between 1ms and " + SandboxSpec.MAX_TIMEOUT.toDays()
                    + " days, got " + fromNow);
        }
        if (currentState() != SandboxState.PAUSED) {
            client();
        }
        manager.reschedule(this, fromNow);
    }

    @Override
    public void updateLabels(Map<String, String> labels) {
        java.util.Objects.requireNonNull(labels, "labels");
        if (!currentState().isLive()) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "sandbox " + id + " has stopped");
        }
        manager.updateLabels(this, labels);
    }

    @Override
    public void updateNetwork(io.paddock.NetworkPolicy policy) {
        java.util.Objects.requireNonNull(policy, "policy");
        client();
        manager.updateNetwork(this, policy);
    }

    @Override
    public java.net.URI url(int port) {
        if (!spec.ports().contains(port)) {
            throw SandboxException.invalid("port", "port " + port + " was not exposed when sandbox " + id
                    + " was created (exposed: " + (spec.ports().isEmpty() ? "none" : spec.ports()) + ")");
        }
        client();
        return manager.portUrl(this, port);
    }

    @Override
    public io.paddock.PauseMode pause() {
        return manager.pause(this);
    }

    @Override
    public void resume() {
        manager.resume(this);
        touch();
    }

    @Override
    public io.paddock.ImageInfo snapshot(String tag) {
        return Snapshots.take(manager, this, tag);
    }

    @Override
    public java.util.List<io.paddock.Sandbox> fork(int count) {
        return java.util.List.copyOf(manager.fork(this, count));
    }

    @Override
    public void destroy() {
        manager.destroy(this, StopReason.DESTROYED);
    }

    @Override
    public String toString() {
        return "Sandbox[" + id + (spec.name().map(n -> " " + n).orElse("")) + ", " + currentState() + "]";
    }

    /** Drains an entrypoint stream into a log buffer. */
    static void pump(InputStream in, LogBuffer log) {
        byte[] buf = new byte[16384];
        try (in) {
            int n;
            while ((n = in.read(buf)) > 0) {
                log.append(buf, 0, n);
            }
        } catch (IOException | SandboxException e) {
            // the sandbox stopped; what was read is kept
        }
    }

}
