package io.paddock.engine.internal;

import io.paddock.ErrorCode;
import io.paddock.ExecRequest;
import io.paddock.ExitStatus;
import io.paddock.LocalOptions;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.SandboxInfo;
import io.paddock.SandboxQuery;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;
import io.paddock.StopReason;
import io.paddock.init.internal.ExitClassifier;
import io.paddock.image.internal.ImageService;
import io.paddock.init.internal.InitBinary;
import io.paddock.init.internal.InitClient;
import io.paddock.init.internal.InitExec;
import io.paddock.init.internal.SpawnRequest;
import io.paddock.runtime.RuntimeRecord;
import io.paddock.runtime.RuntimeSandbox;
import io.paddock.runtime.SandboxRuntime;
import io.paddock.runtime.StartRequest;
import io.paddock.runtime.internal.host.HostFacts;
import io.paddock.runtime.internal.oci.OciSpecBuilder;

import java.io.ByteArrayOutputStream;
import java.nio.channels.Channels;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The embedded engine's core: creates sandboxes on a runtime, keeps the registry of live ones (by id and
 * by name), enforces lifetime deadlines on the monotonic clock, and destroys sandboxes so that nothing is
 * left behind. At start it reconciles: sandboxes on the host whose owning engine is gone are removed.
 */
final class SandboxManager implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("io.paddock.engine");
    static final Duration ATTACH_TIMEOUT = Duration.ofSeconds(20);
    /** How long a cold create at the maximum waits for a pooled creation in flight to give way (WarmPool#admit). */
    private static final Duration ADMISSION_WAIT = Duration.ofSeconds(30);
    /**
     * The init's own deadline trails the engine's, as a backstop should the engine die (and no engine come
     * back). Tests shorten it with {@code -Dpaddock.test.initDeadlineGrace=PT1S}.
     */
    static final Duration INIT_DEADLINE_GRACE = Duration.parse(System.getProperty("paddock.test.initDeadlineGrace", "PT30S"));
    static final Duration STOPPED_RETENTION = Duration.ofMinutes(10);
    static final int RLIMIT_CORE = 4;
    static final int RLIMIT_NOFILE = 7;
    static final int RLIMIT_NPROC = 6;

    private final LocalOptions options;
    /** The isolation tiers of this host; each sandbox goes to the one that started it (its spec's runtime). */
    private final Runtimes runtimes;
    private final EngineIdentity identity;
    /** Whether sandboxes outlive this engine (the daemon) or die with it (embedded). */
    private final boolean persistent;
    private final SandboxStore store;
    private final long hostNofileLimit;
    private final ConcurrentHashMap<SandboxId, ManagedSandbox> sandboxes = new ConcurrentHashMap<>();
    private final java.util.concurrent.atomic.AtomicLong live = new java.util.concurrent.atomic.AtomicLong();
    // @GuardedBy("names")
    private final Map<String, SandboxId> names = new HashMap<>();
    private final ConcurrentHashMap<SandboxId, ScheduledFuture<?>> deadlines = new ConcurrentHashMap<>();
    private final ScheduledExecutorService timers;
    private final ExecutorService stopper;
    private final Thread shutdownHook;
    private final WarmPool pool;
    private final ImageService images;
    private final io.paddock.network.SandboxNetworks networks;
    private final Workspaces workspaces;
    private volatile boolean closed;
    /** Who hears what the engine does ({@link #listen}); never throws. */
    private final GuardedEvents events = new GuardedEvents();

    SandboxManager(LocalOptions options) {
        this.options = options;
        Path initBinary = InitBinary.load().extractTo(options.stateDir().resolve("bin"));
        this.networks = io.paddock.network.SandboxNetworks.open(options.stateDir(), options.dnsUpstream(),
                options.allowPrivate(), options.dataDir(), options.egressTrust())
                .perTenant(options.egressConnectionsPerTenant(), options.dnsTcpPerTenant());
        this.runtimes = Runtimes.detect(options, initBinary, networks);
        this.images = new ImageService(options.storageDir().resolve("images"));
        this.workspaces = new Workspaces(runtimes.host());
        this.persistent = options.dataDir().isPresent();
        this.store = persistent ? SqliteSandboxStore.open(options.dataDir().get()) : SandboxStore.NONE;
        this.identity = persistent ? EngineIdentity.persistent(options.dataDir().get(), options.stateDir()) : EngineIdentity.create();
        this.hostNofileLimit = HostFacts.nofileHardLimit();
        this.timers = Executors.newSingleThreadScheduledExecutor(daemonThreads("paddock-timers"));
        this.stopper = Executors.newCachedThreadPool(daemonThreads("paddock-stopper"));
        reconcile();
        if (persistent) {
            restore();
        }
        this.pool = new WarmPool(options.warmPools(), runtimes.defaultName(), new WarmStarter(runtimes, this::rootOf, identity.token(),
                !persistent), this::liveCount, options.maxSandboxes());
        // An embedded engine takes its sandboxes with it when its JVM exits; a daemon leaves them running
        // for the next daemon to adopt.
        this.shutdownHook = new Thread(persistent ? this::detachOnExit : this::destroyAllQuietly, "paddock-shutdown");
        Runtime.getRuntime().addShutdownHook(shutdownHook);
    }

    /** The tier a sandbox with this spec runs on (created specs always name it; rows from before tiers are runc's). */
    String runtimeName(SandboxSpec spec) {
        return spec.runtime().orElse("runc");
    }

    /** From now on, the engine's events also go to {@code listener}. */
    void listen(EngineEvents listener) {
        events.add(listener);
    }

    /** The engine's events no longer go to {@code listener}. */
    void stopListening(EngineEvents listener) {
        events.remove(listener);
    }

    /** Where the engine's events go. */
    EngineEvents events() {
        return events;
    }

    /** The warm pools' counters (hits, misses, refill latency). */
    List<PoolStats> poolStats() {
        return pool.stats();
    }

    String describeRuntime() {
        return runtimes.summary();
    }

    /**
     * Whether the sandbox's host {@code pids.max} counts its runtime's own tasks beside the tenant's (runsc: the
     * Sentry's threads and stubs), which is where the tier enforces the tenant's limit inside instead.
     */
    boolean hostPidsCountTheRuntime(SandboxSpec spec) {
        return runtimeOf(spec).tenantProcessLimit(spec) > 0;
    }

    private SandboxRuntime runtimeOf(SandboxSpec spec) {
        return runtimes.require(runtimeName(spec));
    }

    // ---- create ----

    ManagedSandbox create(SandboxSpec requested) {
        return create(requested, false);
    }

    /**
     * Creates the sandbox of an image build's RUN step: never from a pool, and its root commands keep the
     * capabilities RUN needs (ImageRootfs#buildStep). Only the engine's own image builder calls this.
     */
    ManagedSandbox createBuildStep(SandboxSpec spec) {
        return create(spec, true);
    }

    private ManagedSandbox create(SandboxSpec requested, boolean buildStep) {
        return create(requested, buildStep, null);
    }

    /**
     * Creates a sandbox; with {@code forkOf}, restored from that paused sandbox's checkpoint by its tier instead
     * of started (never from a pool, and its entrypoint is not started again: it runs in the copy).
     */
    private ManagedSandbox create(SandboxSpec requested, boolean buildStep, ManagedSandbox forkOf) {
        long began = System.nanoTime();
        try {
            return create(requested, buildStep, forkOf, began);
        } catch (RuntimeException e) {
            // A tier the host has, never what the spec asked for: an unknown name is a caller's word, not a label.
            String tier = requested.runtime().orElseGet(runtimes::defaultName);
            events.sandboxCreateFailed(runtimes.find(tier).isPresent() ? tier : "unknown", GuardedEvents.codeOf(e),
                    Duration.ofNanos(System.nanoTime() - began));
            throw e;
        }
    }

    private ManagedSandbox create(SandboxSpec requested, boolean buildStep, ManagedSandbox forkOf, long began) {
        checkOpen();
        // The spec is recorded with its tier resolved, so that destroy, restart and records go to that tier.
        SandboxSpec spec = requested.runtime().isPresent() ? requested
                : requested.toBuilder().runtime(runtimes.defaultName()).build();
        SandboxRuntime runtime = runtimes.require(spec.runtime().get());
        validateForHost(spec);
        // A pooled sandbox already counts against the maximum; a cold create is admitted under it (WarmPool#admit).
        WarmPool.Warm warm = buildStep || forkOf != null ? null : pool.claim(spec);
        if (warm == null && !pool.admit(ADMISSION_WAIT)) {
            throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "this engine already runs " + liveCount()
                    + " sandboxes, its maximum (" + options.maxSandboxes() + "); destroy some first");
        }
        SandboxId id = warm != null ? warm.id() : Ids.newSandboxId();
        SandboxRoot root;
        ManagedSandbox sb;
        try {
            // A pooled sandbox was made with its image already; otherwise resolve (or build) the image now.
            root = warm != null ? warm.root() : rootOf(spec, buildStep);
            sb = new ManagedSandbox(this, id, spec, Instant.now());
            sb.root(root);
            pool.unclaimOnFailure(warm, () -> reserveName(spec, id));
            sandboxes.put(id, sb);
            sb.registered();
        } finally {
            // from here the sandbox counts among the live ones (or the create failed): the admission ends
            pool.admitted();
        }
        RuntimeSandbox rt = null;
        boolean recorded = false;
        try {
            // Recorded before anything exists on the host: a crash from here on leaves a CREATING row that
            // the next engine turns into a cleanup (ATTACKS.md R2).
            // The lifetime runs from here, on the monotonic clock; it is persisted with that clock's value.
            long deadline = System.nanoTime() + spec.timeout().toNanos();
            store.insert(new SandboxStore.Row(id, spec, identity.token(), SandboxState.CREATING, Optional.empty(),
                    sb.createdAt(), new Deadlines.Deadline(sb.expiresAt(), deadline, Deadlines.BOOT), 0,
                    Optional.empty(), root.imageId()));
            recorded = true;
            byte[] nonce = warm != null ? null : Ids.nonce(); // a pooled sandbox's init was greeted when it was made
            Failpoints.hit("create.before-runtime-start");
            if (forkOf != null) {
                workspaces.forked(forkOf.id(), id, spec);
            }
            rt = warm != null ? warm.runtime() : forkOf != null
                    ? runtime.fork(forkOf.id(), new StartRequest(id, spec, identity.token(), hello(nonce), root.rootfs(),
                            Optional.empty(), List.of()))
                    : runtime.start(new StartRequest(id, spec, identity.token(), hello(nonce),
                    root.rootfs(), Optional.empty(), workspaces.mounts(id, spec, root)));
            Failpoints.hit("create.after-runtime-start");
            InitClient client = warm != null ? warm.client() : InitClient.attach(rt.fromInit(), rt.toInit(), nonce, ATTACH_TIMEOUT, id.value());
            client.setDeadline(Duration.ofNanos(deadline - System.nanoTime()).plus(INIT_DEADLINE_GRACE));
            store.updateState(id, SandboxState.RUNNING, null);
            if (warm != null) {
                respecified(runtime, sb);
            }
            sb.running(rt, client);
            deadlines.put(id, timers.schedule(() -> expire(sb), deadline - System.nanoTime(), TimeUnit.NANOSECONDS));
            scheduleIdleCheck(sb, spec.idleTimeout().orElse(null));
            client.closed().whenComplete((v, e) -> onInitGone(sb));
            if (!spec.entrypoint().isEmpty() && forkOf == null) {
                startEntrypoint(sb);
            }
            LOG.log(System.Logger.Level.DEBUG, "created " + id);
            events.sandboxCreated(runtimeName(spec), forkOf != null ? EngineEvents.Origin.FORK : warm != null
                    ? EngineEvents.Origin.POOL : EngineEvents.Origin.COLD, Duration.ofNanos(System.nanoTime() - began));
            return sb;
        } catch (RuntimeException e) {
            sb.beginStop(StopReason.FAILED);
            if (rt != null) {
                rt.closeChannel();
            }
            try {
                runtime.destroy(id);
                workspaces.released(id, spec);
            } catch (RuntimeException cleanup) {
                e.addSuppressed(cleanup);
            }
            cancelDeadline(id);
            releaseName(spec, id);
            sandboxes.remove(id);
            if (recorded) {
                try {
                    store.delete(id);
                } catch (RuntimeException cleanup) {
                    e.addSuppressed(cleanup);
                }
            }
            sb.finishStop();
            throw e;
        }
    }

    /** The live sandboxes in the registry, counted as they come and go: stopped ones stay listed for a while. */
    private long liveCount() {
        return live.get();
    }

    void liveChanged(int delta) {
        live.addAndGet(delta);
    }

    private byte[] hello(byte[] nonce) {
        ByteArrayOutputStream hello = new ByteArrayOutputStream();
        InitClient.writeHello(Channels.newChannel(hello), nonce, !persistent);
        return hello.toByteArray();
    }

    /** The engine's codebases and volumes. */
    Workspaces workspaces() {
        return workspaces;
    }

    /** Every sandbox the engine knows, stopped ones too: a STOPPING one still holds its mounts. */
    List<ManagedSandbox> allSandboxes() {
        return List.copyOf(sandboxes.values());
    }

    /** The options the engine was started with. */
    LocalOptions options() {
        return options;
    }

    /** The engine's images: pulls, builds, names. */
    ImageService images() {
        return images;
    }

    /** What the spec's image decides: the host image's root, or a stored image's layers (a Debian base is built). */
    SandboxRoot rootOf(SandboxSpec spec) {
        return rootOf(spec, false);
    }

    private SandboxRoot rootOf(SandboxSpec spec, boolean buildStep) {
        // A tier whose nodes pull the image (Kubernetes) gets it by reference: commands start as the sandbox user
        // from Paddock's base environment, as on the host image.
        if (spec.image().equals(SandboxSpec.DEFAULT_IMAGE)
                || runtimes.require(spec.runtime().orElse(runtimes.defaultName())).pullsImages()) {
            return SandboxRoot.host(spec);
        }
        try {
            return SandboxRoot.of(spec, images.forSandbox(spec.image(), io.paddock.ImageListener.NONE), buildStep);
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.NOT_FOUND) {
                // A spec naming an image this host has not got is a bad spec, named by its field.
                throw SandboxException.invalid("image", e.getMessage());
            }
            throw e;
        }
    }

    /** The tier a sandbox runs on. */
    SandboxRuntime runtimeFor(ManagedSandbox sb) {
        return runtimeOf(sb.spec());
    }

    /** The ids of the images live sandboxes run. */
    List<String> imagesInUse() {
        return sandboxes.values().stream().filter(s -> s.currentState().isLive())
                .flatMap(s -> s.root().imageId().stream()).distinct().toList();
    }

    /** Whether a live sandbox (or a pooled one) runs the image with this id. */
    boolean imageInUse(String imageId) {
        return sandboxes.values().stream().anyMatch(s -> s.currentState().isLive()
                && s.root().imageId().map(imageId::equals).orElse(false)) || pool.usesImage(imageId);
    }

    private void validateForHost(SandboxSpec spec) {
        if (spec.openFiles() > hostNofileLimit) {
            throw SandboxException.invalid("openFiles", spec.openFiles() + " is above this host's hard limit of "
                    + hostNofileLimit + " open files");
        }
        String w = spec.workdir();
        // The host image's root is writable into the sandbox's own layer, but the host's /usr, /bin and /lib*
        // (and the kernel's and Paddock's own directories) are read-only binds: a working directory there would
        // be one the sandbox cannot write, and could not be made.
        if (spec.image().equals(SandboxSpec.DEFAULT_IMAGE)) {
            for (String ro : List.of("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/sys",
                    "/dev", "/.paddock")) {
                if (w.equals(ro) || w.startsWith(ro + "/")) {
                    throw SandboxException.invalid("workdir", "'" + w + "' is under " + ro + ", which is read-only in"
                            + " the host image; use /workspace, /tmp or another directory");
                }
            }
        }
    }

    private void reserveName(SandboxSpec spec, SandboxId id) {
        spec.name().ifPresent(name -> {
            synchronized (names) {
                SandboxId holder = names.get(name);
                if (holder != null) {
                    throw new SandboxException(ErrorCode.ALREADY_EXISTS,
                            "a live sandbox is already named '" + name + "' (" + holder + ")");
                }
                names.put(name, id);
            }
        });
    }

    private void releaseName(SandboxSpec spec, SandboxId id) {
        spec.name().ifPresent(name -> {
            synchronized (names) {
                names.remove(name, id);
            }
        });
    }

    private void startEntrypoint(ManagedSandbox sb) {
        InitExec exec = sb.client().spawn(entrypointRequest(sb));
        store.updateEntrypoint(sb.id(), (int) exec.id(), null);
        followEntrypoint(sb, exec);
    }

    private SpawnRequest entrypointRequest(ManagedSandbox sb) {
        ExecRequest request = ExecRequest.builder().argv(sb.spec().entrypoint()).outputLimit(ExecRequest.UNLIMITED).build();
        return spawnRequest(sb, request, false, true);
    }

    /** Keeps the entrypoint's output in the sandbox's logs and stops the sandbox when it exits. */
    private void followEntrypoint(ManagedSandbox sb, InitExec exec) {
        Thread out = daemonThreads("paddock-logs-" + sb.id()).newThread(() -> ManagedSandbox.pump(exec.stdout(), sb.stdoutLog()));
        Thread err = daemonThreads("paddock-logs-" + sb.id()).newThread(() -> ManagedSandbox.pump(exec.stderr(), sb.stderrLog()));
        out.start();
        err.start();
        exec.onExit().whenComplete((status, failure) -> stopper.execute(() -> {
            join(out);
            join(err);
            if (status != null) {
                sb.entrypointExited(status);
                try {
                    store.updateEntrypoint(sb.id(), (int) exec.id(), status);
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "cannot record the entrypoint's exit of " + sb.id() + ": " + e.getMessage());
                }
                destroyQuietly(sb, StopReason.ENTRYPOINT_EXITED);
            }
        }));
    }

    SpawnRequest spawnRequest(ManagedSandbox sb, ExecRequest request, boolean stdinPipe) {
        // A terminal is always the command's stdin: with nothing to type, the init types end of file at once.
        return spawnRequest(sb, request, stdinPipe || request.stdin().isPresent(), false);
    }

    private SpawnRequest spawnRequest(ManagedSandbox sb, ExecRequest request, boolean stdinPipe, boolean entrypoint) {
        SandboxSpec spec = sb.spec();
        RuntimeSandbox rt = sb.runtimeSandbox();
        long oomBefore = rt.oomKills();
        ExitClassifier classifier = report -> {
            ExitStatus status = ExitClassifier.DEFAULT.classify(report);
            if (status.outcome() == ExitStatus.Outcome.SIGNALED && status.signal() == 9 && !report.killed()
                    && rt.oomKills() > oomBefore) {
                return new ExitStatus(ExitStatus.Outcome.OOM_KILLED, 137, 9, status.stdoutTruncated(),
                        status.stderrTruncated(), status.duration());
            }
            return status;
        };
        long nproc = runtimeOf(spec).tenantProcessLimit(spec);
        SpawnRequest.Builder b = SpawnRequest.builder(request.argv())
                .env(ExecEnvironment.build(sb.root().env(), spec, request))
                .cwd(request.cwd().orElse(sb.root().workdir()))
                .user(sb.root().uid(), sb.root().gid())
                .timeout(request.timeout().orElse(null))
                .stdoutCap(request.outputLimit().bytes())
                .stderrCap(request.outputLimit().bytes())
                .stdinPipe(stdinPipe)
                .terminal(request.terminal().orElse(null))
                .entrypoint(entrypoint)
                .rlimit(RLIMIT_NOFILE, spec.openFiles(), spec.openFiles())
                .rlimit(RLIMIT_CORE, 0, 0)
                .classifier(classifier);
        if (nproc > 0) {
            b.rlimit(RLIMIT_NPROC, nproc, nproc);
        }
        return b.build();
    }

    // ---- lookup ----

    ManagedSandbox get(SandboxId id) {
        ManagedSandbox sb = sandboxes.get(id);
        if (sb == null) {
            throw new SandboxException(ErrorCode.NOT_FOUND, "no sandbox " + id);
        }
        return sb;
    }

    ManagedSandbox getByName(String name) {
        SandboxId id;
        synchronized (names) {
            id = names.get(name);
        }
        ManagedSandbox sb = id == null ? null : sandboxes.get(id);
        if (sb == null || !sb.currentState().isLive()) {
            throw new SandboxException(ErrorCode.NOT_FOUND, "no live sandbox named '" + name + "'");
        }
        return sb;
    }

    List<SandboxInfo> list(SandboxQuery query) {
        List<SandboxInfo> out = new ArrayList<>();
        Set<SandboxState> states = query.states();
        for (ManagedSandbox sb : sandboxes.values()) {
            // Stopped sandboxes stay listed for their retention: a query for live ones (each tenant's create
            // counts its own) skips them before building their info.
            if (!states.isEmpty() && !states.contains(sb.currentState())) {
                continue;
            }
            SandboxInfo info = sb.info();
            if (query.matches(info)) {
                out.add(info);
            }
        }
        out.sort(Comparator.comparing(SandboxInfo::createdAt).thenComparing(i -> i.id().value()));
        return out;
    }

    // ---- deadlines ----

    /**
     * The deadline passed: destroyed, or, for a running sandbox whose spec says {@link io.paddock.TimeoutAction#PAUSE},
     * paused and kept for {@link SandboxSpec#PAUSED_RETENTION}. The retention is set first, so that the init's own
     * backstop (which a frozen runc init keeps counting) cannot end it while paused. A sandbox already paused at its
     * deadline, or one whose pause fails, is destroyed.
     */
    /**
     * The idle timeout: checked when the sandbox could first have been idle that long, and again from its last
     * use; a running sandbox idle for the whole of it meets its deadline's fate early ({@link #expire}).
     */
    private void scheduleIdleCheck(ManagedSandbox sb, Duration idle) {
        if (idle == null || closed) {
            return;
        }
        Duration wait = idle.minus(sb.idleFor());
        timers.schedule(() -> {
            if (sb.currentState() != SandboxState.RUNNING) {
                if (sb.currentState().isLive()) {
                    scheduleIdleCheck(sb, idle); // paused: counted again once it runs
                }
                return;
            }
            if (sb.idleFor().compareTo(idle) >= 0) {
                LOG.log(System.Logger.Level.INFO, "sandbox " + sb.id() + " was idle for " + idle + ": its timeout applies");
                cancelDeadline(sb.id());
                expire(sb);
            } else {
                scheduleIdleCheck(sb, idle);
            }
        }, Math.max(wait.toMillis(), idle.toMillis() / 10 + 50), TimeUnit.MILLISECONDS);
    }

    private void expire(ManagedSandbox sb) {
        deadlines.remove(sb.id());
        if (sb.spec().onTimeout() == io.paddock.TimeoutAction.PAUSE && sb.currentState() == SandboxState.RUNNING) {
            // Off the timer thread: a checkpoint takes a second per GiB.
            stopper.execute(() -> {
                try {
                    reschedule(sb, SandboxSpec.PAUSED_RETENTION);
                    io.paddock.PauseMode mode = pause(sb);
                    LOG.log(System.Logger.Level.INFO, "sandbox " + sb.id() + " reached its timeout and was paused ("
                            + mode + "); destroyed in " + SandboxSpec.PAUSED_RETENTION.toHours() + " h unless resumed");
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "sandbox " + sb.id() + " reached its timeout and could not be"
                            + " paused, destroying it: " + e.getMessage());
                    cancelDeadline(sb.id());
                    destroyQuietly(sb, StopReason.TIMEOUT);
                }
            });
            return;
        }
        destroyQuietly(sb, StopReason.TIMEOUT);
    }

    void updateNetwork(ManagedSandbox sb, io.paddock.NetworkPolicy policy) {
        synchronized (sb) {
            // Built first: a policy that no longer allows an egress secret's host is refused before anything changes.
            SandboxSpec updated = sb.spec().toBuilder().network(policy).build();
            SandboxRuntime runtime = runtimeFor(sb);
            if (runtime.ownsNetwork()) {
                runtime.updateNetwork(sb.id(), policy);
            } else {
                networks.update(sb.id(), policy);
            }
            sb.spec(updated);
            try {
                store.updateSpec(sb.id(), updated);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "cannot record the new policy of " + sb.id()
                        + " (it applies until a restart): " + e.getMessage());
            }
        }
    }

    void updateLabels(ManagedSandbox sb, Map<String, String> labels) {
        synchronized (sb) {
            SandboxSpec updated = sb.spec().toBuilder().labels(labels).build();
            sb.spec(updated);
            try {
                store.updateSpec(sb.id(), updated);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "cannot record the new labels of " + sb.id()
                        + " (they hold until a restart): " + e.getMessage());
            }
            respecified(runtimeFor(sb), sb);
        }
    }

    /** Tells a tier that records sandboxes itself what the engine now records of {@code sb}; a failure is logged. */
    private static void respecified(SandboxRuntime runtime, ManagedSandbox sb) {
        try {
            runtime.respecified(sb.id(), sb.spec(), sb.createdAt());
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "the " + runtime.name() + " tier could not record the new spec of "
                    + sb.id() + " (a daemon that lost its store would take it over as it was): " + e.getMessage());
        }
    }

    /** The sandbox's own address and {@code port}: reachable from this host only. */
    java.net.URI portUrl(ManagedSandbox sb, int port) {
        java.net.Inet4Address a = networks.address(sb.id()).orElseThrow(() -> new SandboxException(
                ErrorCode.FAILED_PRECONDITION, "sandbox " + sb.id() + " has no network on this host"));
        return java.net.URI.create("http://" + a.getHostAddress() + ":" + port + "/");
    }

    /** Bytes the sandbox sent and received, when it has a network. */
    Optional<io.paddock.network.SandboxNetworks.Counters> networkCounters(SandboxId id) {
        return networks.counters(id);
    }

    void reschedule(ManagedSandbox sb, Duration fromNow) {
        ScheduledFuture<?> next = timers.schedule(() -> expire(sb), fromNow.toNanos(), TimeUnit.NANOSECONDS);
        ScheduledFuture<?> previous = deadlines.put(sb.id(), next);
        if (previous != null) {
            previous.cancel(false);
        }
        Deadlines.Deadline deadline = Deadlines.after(System.nanoTime(), fromNow);
        store.updateExpiry(sb.id(), deadline);
        sb.setExpiresAt(deadline.wall());
        // Paused: the message waits in the channel (held open across the pause) and reaches the init on resume.
        InitClient client = sb.clientOrNull();
        if (client != null) {
            client.setDeadline(fromNow.plus(INIT_DEADLINE_GRACE));
        }
    }

    private void cancelDeadline(SandboxId id) {
        ScheduledFuture<?> f = deadlines.remove(id);
        if (f != null) {
            f.cancel(false);
        }
    }

    // ---- pause and resume ----

    /**
     * {@code n} new sandboxes restored from one memory checkpoint of {@code source} (docs/WORKSPACES.md, "Fork"):
     * each has the source's spec (without its name) and a fresh lifetime, its own id, bundle, uid range, cgroup
     * and channel (a fresh HELLO), and every process of the source where it was. A running source is paused
     * for the checkpoint and resumed after, a paused one stays paused. All or nothing: if one fork fails, the
     * ones made are destroyed. The tier is asked first, so a sandbox it cannot fork is never paused.
     */
    List<ManagedSandbox> fork(ManagedSandbox source, int n) {
        if (n < 1 || n > MAX_FORKS) {
            throw SandboxException.invalid("count", "must be between 1 and " + MAX_FORKS + ", got " + n);
        }
        SandboxRuntime runtime = runtimeFor(source);
        List<ManagedSandbox> forks = new ArrayList<>();
        synchronized (source.pauseLock) {
            SandboxState state = source.currentState();
            if (state != SandboxState.RUNNING && state != SandboxState.PAUSED) {
                throw source.notRunning(state);
            }
            runtime.checkForkable(source.id());
            boolean wasRunning = state == SandboxState.RUNNING;
            if (wasRunning) {
                pause(source);
            }
            SandboxSpec spec = source.spec().toBuilder().name(null).build();
            try {
                for (int i = 0; i < n; i++) {
                    ManagedSandbox fork = create(spec, false, source);
                    forks.add(fork);
                }
            } catch (RuntimeException e) {
                for (ManagedSandbox f : forks) {
                    try {
                        destroy(f, StopReason.FAILED);
                    } catch (RuntimeException cleanup) {
                        e.addSuppressed(cleanup);
                    }
                }
                throw e;
            } finally {
                if (wasRunning) {
                    resume(source);
                }
            }
        }
        LOG.log(System.Logger.Level.DEBUG, "forked " + source.id() + " into " + forks.size());
        return forks;
    }

    /** The most forks one call makes. */
    static final int MAX_FORKS = 64;

    /**
     * Pauses a running sandbox on its tier (docs/WORKSPACES.md, "Pause and resume"). It is PAUSED before the
     * tier is asked, so that no new operation starts meanwhile; the channel and every exec on it keep their
     * place. Its lifetime deadline keeps running. If the tier fails, the sandbox is running again, or, when its
     * init did not survive the attempt, destroyed.
     */
    io.paddock.PauseMode pause(ManagedSandbox sb) {
        synchronized (sb.pauseLock) {
            sb.client();
            if (!sb.beginPause()) {
                throw sb.notRunning(sb.currentState());
            }
            try {
                io.paddock.PauseMode mode = runtimeFor(sb).pause(sb.id());
                recordState(sb, SandboxState.PAUSED, null);
                LOG.log(System.Logger.Level.DEBUG, "paused " + sb.id() + " (" + mode + ")");
                return mode;
            } catch (RuntimeException e) {
                InitClient client = sb.clientOrNull();
                if (sb.resumed(null, null) && client != null && !client.isOpen()) {
                    stopper.execute(() -> destroyQuietly(sb, StopReason.FAILED));
                }
                throw e;
            }
        }
    }

    /**
     * Resumes a paused sandbox; a running one is left as it is. A paused sandbox adopted after a restart has
     * no channel: the tier resumes it behind a fresh HELLO and a new client attaches. A checkpoint the tier
     * refuses (FAILED_PRECONDITION: missing, or not the bytes written at pause) can never be resumed, so the
     * sandbox is destroyed; other failures leave it paused, to be resumed again or destroyed.
     */
    void resume(ManagedSandbox sb) {
        synchronized (sb.pauseLock) {
            SandboxState state = sb.currentState();
            if (state == SandboxState.RUNNING) {
                return;
            }
            if (state != SandboxState.PAUSED) {
                throw sb.notRunning(state);
            }
            InitClient client = sb.clientOrNull();
            byte[] nonce = Ids.nonce();
            Optional<RuntimeSandbox> fresh;
            try {
                fresh = runtimeFor(sb).resume(sb.id(), client == null ? Optional.of(hello(nonce)) : Optional.empty());
            } catch (SandboxException e) {
                if (e.code() == ErrorCode.FAILED_PRECONDITION) {
                    LOG.log(System.Logger.Level.WARNING, "sandbox " + sb.id() + " cannot be resumed, destroying it: "
                            + e.getMessage());
                    destroyQuietly(sb, StopReason.FAILED);
                }
                throw e;
            }
            RuntimeSandbox rt = fresh.orElse(null);
            if (rt != null) {
                try {
                    client = InitClient.attach(rt.fromInit(), rt.toInit(), nonce, ATTACH_TIMEOUT, sb.id().value());
                } catch (RuntimeException e) {
                    rt.closeChannel();
                    destroyQuietly(sb, StopReason.FAILED);
                    throw e;
                }
            }
            if (sb.spec().onTimeout() == io.paddock.TimeoutAction.PAUSE) {
                // Paused at (or before) its deadline to be resumed later: it gets a whole lifetime again.
                reschedule(sb, sb.spec().timeout());
            }
            // The init's backstop follows the engine's deadline again (the Sentry's clock stood still meanwhile).
            Duration left = Duration.between(Instant.now(), sb.info().expiresAt());
            client.setDeadline((left.isNegative() ? Duration.ZERO : left).plus(INIT_DEADLINE_GRACE));
            if (!sb.resumed(rt, client)) {
                if (rt != null) {
                    rt.closeChannel();
                }
                throw sb.notRunning(sb.currentState());
            }
            if (rt != null) {
                client.closed().whenComplete((v, e) -> onInitGone(sb));
            }
            recordState(sb, SandboxState.RUNNING, null);
            LOG.log(System.Logger.Level.DEBUG, "resumed " + sb.id());
        }
    }

    // ---- destroy ----

    private void onInitGone(ManagedSandbox sb) {
        if (sb.currentState() == SandboxState.RUNNING && !closed) {
            RuntimeSandbox rt = sb.runtimeSandbox();
            long oomKills = rt != null ? rt.oomKills() : 0;
            StopReason reason = oomKills > 0 ? StopReason.OOM : StopReason.FAILED;
            if (rt != null) {
                // What the sandbox's cgroup and log say, read before destroy removes them: an init that dies
                // unexpectedly is otherwise only "closed its channel".
                LOG.log(System.Logger.Level.WARNING, "sandbox " + sb.id() + " stopped (" + reason + "): its init died;"
                        + " OOM kills " + oomKills + ", forks refused at the host process limit "
                        + rt.processLimitHits() + "; the end of its log: " + rt.logTail());
            }
            stopper.execute(() -> destroyQuietly(sb, reason));
        }
    }

    void destroy(ManagedSandbox sb, StopReason reason) {
        if (!sb.beginStop(reason)) {
            // Someone else is destroying it: wait for them, so that destroy() returning means it is gone.
            sb.awaitStop(Duration.ofMinutes(2));
            return;
        }
        cancelDeadline(sb.id());
        // No longer live, so no longer counted as such; its network's counters are read while it still has one.
        events.sandboxStopped(runtimeName(sb.spec()), reason, networks.counters(sb.id())
                .map(c -> new io.paddock.NetworkTraffic(c.txBytes(), c.rxBytes())));
        recordState(sb, SandboxState.STOPPING, reason);
        Failpoints.hit("destroy.after-stopping-recorded");
        InitClient client = sb.clientOrNull();
        if (client != null) {
            client.fail(new SandboxException(ErrorCode.FAILED_PRECONDITION, "sandbox " + sb.id() + " stopped: "
                    + ManagedSandbox.describe(reason)));
        }
        RuntimeSandbox rt = sb.runtimeSandbox();
        if (rt != null) {
            rt.closeChannel();
        }
        destroyRuntime(sb, 0);
    }

    private void destroyRuntime(ManagedSandbox sb, int attempt) {
        try {
            runtimeOf(sb.spec()).destroy(sb.id());
        } catch (RuntimeException e) {
            // Never drop the only handle on a sandbox that may still hold host resources: keep it STOPPING
            // and retry with backoff; the reconciler is the last resort after a crash.
            LOG.log(System.Logger.Level.WARNING, "destroying " + sb.id() + " failed (attempt " + (attempt + 1)
                    + "), will retry: " + e.getMessage());
            if (!closed) {
                timers.schedule(() -> destroyRuntime(sb, attempt + 1), Math.min(30, 1L << Math.min(attempt, 5)),
                        TimeUnit.SECONDS);
            }
            if (attempt == 0) {
                throw new SandboxException(ErrorCode.INTERNAL, "destroying sandbox " + sb.id()
                        + " did not complete; cleanup is retried in the background: " + e.getMessage(), e);
            }
            return;
        }
        releaseName(sb.spec(), sb.id());
        workspaces.released(sb.id(), sb.spec());
        recordState(sb, SandboxState.STOPPED, sb.stopReason());
        sb.finishStop();
        if (!closed) {
            timers.schedule(() -> forget(sb), STOPPED_RETENTION.toNanos(), TimeUnit.NANOSECONDS);
        } else {
            sandboxes.remove(sb.id(), sb);
        }
        LOG.log(System.Logger.Level.DEBUG, "destroyed " + sb.id());
    }

    /** Records a state change; a store failure is logged, never allowed to stop a cleanup. */
    private void recordState(ManagedSandbox sb, SandboxState state, StopReason reason) {
        try {
            store.updateState(sb.id(), state, reason);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot record " + sb.id() + " as " + state + ": " + e.getMessage());
        }
    }

    private void forget(ManagedSandbox sb) {
        if (sandboxes.remove(sb.id(), sb)) {
            try {
                store.delete(sb.id());
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "cannot forget " + sb.id() + ": " + e.getMessage());
            }
        }
    }

    private void destroyQuietly(ManagedSandbox sb, StopReason reason) {
        try {
            destroy(sb, reason);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "destroying " + sb.id() + " failed: " + e.getMessage());
        }
    }

    // ---- start-up and shutdown ----

    /**
     * Removes sandboxes on the host whose owning engine is gone ({@link EngineIdentity#isAlive}): an embedded
     * engine's once its process is (after a crash or kill -9); a daemon's once it is gone for good (its process
     * gone and its data directory removed) and the sandbox's processes have ended (its init at its own deadline),
     * or it is paused (frozen, it would never end): one still running is left to its deadline and reclaimed by the
     * next engine to start after it.
     */
    private void reconcile() {
        java.util.Set<String> owners = new java.util.HashSet<>();
        for (SandboxRuntime runtime : runtimes.all()) {
            reconcile(runtime);
        }
        // Networks whose sandbox has no bundle left on this host (a crash between the two) are nobody's.
        java.util.Set<SandboxId> onHost = new java.util.HashSet<>();
        for (SandboxRuntime runtime : runtimes.all()) {
            runtime.records().forEach(r -> {
                onHost.add(r.id());
                owners.add(r.owner());
            });
        }
        for (SandboxId id : networks.sweep(onHost::contains)) {
            LOG.log(System.Logger.Level.INFO, "removed the orphaned network of " + id);
        }
        EngineIdentity.collectOwnerRecords(options.stateDir(), owners);
    }

    private void reconcile(SandboxRuntime runtime) {
        for (RuntimeRecord rec : runtime.records()) {
            if (rec.owner().equals(identity.token()) || EngineIdentity.isAlive(rec.owner(), options.stateDir())) {
                continue;
            }
            if (EngineIdentity.isDaemon(rec.owner()) && runtime.running(rec.id())) {
                LOG.log(System.Logger.Level.INFO, "sandbox " + rec.id() + " of the gone daemon " + rec.owner()
                        + " still runs; it ends at its deadline and is reclaimed by the next engine to start");
                continue;
            }
            try {
                runtime.destroy(rec.id());
                LOG.log(System.Logger.Level.INFO, "removed orphaned sandbox " + rec.id() + " of " + rec.owner());
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "could not remove orphaned sandbox " + rec.id() + ": " + e.getMessage());
            }
        }
    }

    /**
     * A restarted persistent engine takes over what the previous one left (ATTACKS.md R1-R3): running
     * sandboxes are re-attached with their deadlines re-armed; half-created and half-destroyed ones are
     * finished off; runtime leftovers with no record are removed; stopped ones stay visible until their
     * retention ends.
     */
    private void restore() {
        java.util.Set<SandboxId> known = new java.util.HashSet<>();
        for (SandboxStore.Row row : store.loadAll()) {
            known.add(row.id());
            switch (row.state()) {
                case RUNNING -> adopt(row);
                case PAUSED -> adoptPaused(row);
                case CREATING, STOPPING -> {
                    ManagedSandbox sb = ManagedSandbox.restoredStopped(this, new SandboxStore.Row(row.id(), row.spec(),
                            row.owner(), SandboxState.STOPPED, Optional.of(row.stopReason().orElse(StopReason.FAILED)),
                            row.createdAt(), row.deadline(), row.entrypointChannel(), row.entrypointExit()));
                    try {
                        runtimeOf(row.spec()).destroy(row.id());
                        store.updateState(row.id(), SandboxState.STOPPED, sb.stopReason());
                        LOG.log(System.Logger.Level.INFO, "finished cleaning up " + row.id() + " (was " + row.state() + ")");
                    } catch (RuntimeException e) {
                        LOG.log(System.Logger.Level.WARNING, "cleaning up " + row.id() + " failed: " + e.getMessage());
                    }
                    keepStopped(sb);
                }
                case STOPPED -> keepStopped(ManagedSandbox.restoredStopped(this, row));
            }
        }
        for (SandboxRuntime runtime : runtimes.all()) {
            adoptHandedOver(runtime, known);
            removeUnrecorded(runtime, known);
        }
    }

    /**
     * Sandboxes a tier records by itself (a pod's annotations) and this engine has no row for, started by another
     * daemon, which the tier is set to hand over: they become this engine's, recorded from what the tier holds (their
     * spec without secrets, which never leave the store; their lifetime from their creation), then re-attached as
     * any running sandbox is.
     */
    private void adoptHandedOver(SandboxRuntime runtime, java.util.Set<SandboxId> known) {
        for (RuntimeRecord rec : runtime.records()) {
            if (known.contains(rec.id()) || rec.owner().equals(identity.token())) {
                continue;
            }
            Optional<io.paddock.runtime.RecordedSandbox> handed;
            try {
                handed = runtime.handOver(rec.id(), identity.token());
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "could not take over " + rec.id() + ": " + e.getMessage());
                continue;
            }
            if (handed.isEmpty()) {
                continue;
            }
            SandboxSpec spec = handed.get().spec();
            Instant wall = handed.get().createdAt().plus(spec.timeout());
            // No monotonic reading survives another engine: the wall clock tells the time left.
            SandboxStore.Row row = new SandboxStore.Row(rec.id(), spec, identity.token(), SandboxState.RUNNING,
                    Optional.empty(), handed.get().createdAt(), new Deadlines.Deadline(wall, 0, ""), 0, Optional.empty());
            store.insert(row);
            known.add(rec.id());
            LOG.log(System.Logger.Level.INFO, "taking over " + rec.id() + " from " + rec.owner() + " (no record of it here)");
            adopt(row);
        }
    }

    private void removeUnrecorded(SandboxRuntime runtime, java.util.Set<SandboxId> known) {
        for (RuntimeRecord rec : runtime.records()) {
            if (rec.owner().equals(identity.token()) && !known.contains(rec.id())) {
                try {
                    runtime.destroy(rec.id());
                    LOG.log(System.Logger.Level.INFO, "removed unrecorded sandbox " + rec.id());
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "could not remove unrecorded sandbox " + rec.id() + ": " + e.getMessage());
                }
            }
        }
    }

    private void keepStopped(ManagedSandbox sb) {
        sandboxes.put(sb.id(), sb);
        sb.registered();
        timers.schedule(() -> forget(sb), STOPPED_RETENTION.toNanos(), TimeUnit.NANOSECONDS);
    }

    /** What every adopted sandbox gets back first: its root (by its image's recorded id), its name, its entry. */
    private void readopt(SandboxStore.Row row, ManagedSandbox sb) {
        try {
            // The image the sandbox was made from, by its recorded id: a name re-tagged meanwhile changes nothing.
            Optional<io.paddock.image.internal.SandboxImage> image = row.imageId()
                    .flatMap(i -> images.forSandbox(io.paddock.image.internal.oci.Digest.parse(i)));
            sb.root(image.isPresent() ? SandboxRoot.of(row.spec(), image.get()) : rootOf(row.spec()));
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "image of " + row.id() + " is gone (" + e.getMessage()
                    + "); its commands start as the host image's would");
        }
        try {
            reserveName(row.spec(), row.id());
        } catch (SandboxException e) {
            LOG.log(System.Logger.Level.WARNING, "name of " + row.id() + " is taken: " + e.getMessage());
        }
        sandboxes.put(row.id(), sb);
        sb.registered();
    }

    private void adopt(SandboxStore.Row row) {
        ManagedSandbox sb = new ManagedSandbox(this, row.id(), row.spec(), row.createdAt());
        sb.setExpiresAt(row.expiresAt());
        readopt(row, sb);
        try {
            byte[] nonce = Ids.nonce();
            RuntimeSandbox rt = runtimeOf(row.spec()).reattach(row.id(), hello(nonce));
            InitClient client;
            try {
                client = InitClient.attach(rt.fromInit(), rt.toInit(), nonce, ATTACH_TIMEOUT, row.id().value());
            } catch (RuntimeException e) {
                rt.closeChannel();
                throw e;
            }
            // From the monotonic clock on this boot: a wall-clock step while no engine ran changes nothing (R10).
            Duration left = Deadlines.remaining(row.deadline(), Instant.now(), System.nanoTime(), Deadlines.BOOT);
            sb.setExpiresAt(Instant.now().plus(left));
            client.setDeadline(left.plus(INIT_DEADLINE_GRACE));
            if (row.spec().hasNetwork() && !runtimeOf(row.spec()).ownsNetwork() && !networks.adopt(row.id(), row.spec().network(), row.spec().egressSecrets(),
                java.util.Optional.ofNullable(row.spec().labels().get(io.paddock.network.SandboxNetworks.TENANT_LABEL)))) {
                LOG.log(System.Logger.Level.WARNING, "the network of " + row.id() + " is gone; it runs without one");
            }
            sb.running(rt, client);
            deadlines.put(row.id(), timers.schedule(() -> expire(sb), left.toNanos(), TimeUnit.NANOSECONDS));
            scheduleIdleCheck(sb, row.spec().idleTimeout().orElse(null));
            client.closed().whenComplete((v, e) -> onInitGone(sb));
            if (row.entrypointChannel() != 0 && row.entrypointExit().isEmpty()) {
                followEntrypoint(sb, client.adopt(row.entrypointChannel(), entrypointRequest(sb)));
            }
            LOG.log(System.Logger.Level.INFO, "adopted " + row.id());
        } catch (RuntimeException e) {
            // Gone while no engine ran: at its deadline (the init's own backstop) that is a timeout, else a failure.
            boolean expired = Deadlines.remaining(row.deadline(), Instant.now(), System.nanoTime(), Deadlines.BOOT).isZero();
            LOG.log(System.Logger.Level.WARNING, "could not re-attach " + row.id() + ", removing it: " + e.getMessage());
            stopper.execute(() -> destroyQuietly(sb, expired ? StopReason.TIMEOUT : StopReason.FAILED));
        }
    }

    /**
     * A paused sandbox stays paused: it has no channel until it is resumed (a frozen init could not answer a
     * HELLO, a checkpointed one has no process). Its deadline is re-armed as a running one's is.
     */
    private void adoptPaused(SandboxStore.Row row) {
        ManagedSandbox sb = ManagedSandbox.restoredPaused(this, row);
        readopt(row, sb);
        Duration left = Deadlines.remaining(row.deadline(), Instant.now(), System.nanoTime(), Deadlines.BOOT);
        sb.setExpiresAt(Instant.now().plus(left));
        if (row.spec().hasNetwork() && !runtimeOf(row.spec()).ownsNetwork() && !networks.adopt(row.id(), row.spec().network(), row.spec().egressSecrets(),
                java.util.Optional.ofNullable(row.spec().labels().get(io.paddock.network.SandboxNetworks.TENANT_LABEL)))) {
            LOG.log(System.Logger.Level.WARNING, "the network of " + row.id() + " is gone; it runs without one");
        }
        deadlines.put(row.id(), timers.schedule(() -> expire(sb), left.toNanos(), TimeUnit.NANOSECONDS));
        LOG.log(System.Logger.Level.INFO, "adopted " + row.id() + " (paused)");
    }

    private void detachOnExit() {
        closed = true;
        timers.shutdownNow();
        detachAll();
    }

    /** Lets go of every sandbox without destroying it: they keep running for the next engine to adopt. */
    private void detachAll() {
        pool.close();
        for (ManagedSandbox sb : List.copyOf(sandboxes.values())) {
            InitClient client = sb.clientOrNull();
            if (client != null) {
                client.close();
            }
            RuntimeSandbox rt = sb.runtimeSandbox();
            if (rt != null) {
                rt.closeChannel();
            }
            try {
                runtimeOf(sb.spec()).detach(sb.id());
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "detaching " + sb.id() + ": " + e.getMessage());
            }
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "this Paddock engine is closed");
        }
    }

    private void destroyAllQuietly() {
        pool.close();
        List<CompletableFuture<Void>> all = new ArrayList<>();
        for (ManagedSandbox sb : List.copyOf(sandboxes.values())) {
            if (sb.currentState() != SandboxState.STOPPED) {
                all.add(CompletableFuture.runAsync(() -> destroyQuietly(sb, StopReason.DESTROYED), stopper));
            }
        }
        try {
            CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "not every sandbox was destroyed at shutdown: " + e);
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        if (persistent) {
            closed = true;
            detachAll();
        } else {
            destroyAllQuietly();
            closed = true;
        }
        try {
            Runtime.getRuntime().removeShutdownHook(shutdownHook);
        } catch (IllegalStateException e) {
            // the JVM is already shutting down
        }
        timers.shutdownNow();
        stopper.shutdown();
        networks.close();
        identity.retire();
        store.close();
    }

    private static void join(Thread t) {
        try {
            t.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static ThreadFactory daemonThreads(String name) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(null, r, name + "-" + n.incrementAndGet(), 256 * 1024);
            t.setDaemon(true);
            return t;
        };
    }
}
