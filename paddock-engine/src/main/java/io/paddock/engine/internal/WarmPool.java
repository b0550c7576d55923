package io.paddock.engine.internal;

import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.NetworkPolicy;
import io.paddock.PoolConfig;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.SandboxSpec;
import io.paddock.init.internal.InitClient;
import io.paddock.runtime.RuntimeSandbox;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Warm pools: per spec shape, sandboxes created ahead of time so that a create is a pool hit.
 *
 * <p>Rules (PERFORMANCE.md P1, ARCHITECTURE.md "Warm pools"):
 * <ul>
 *   <li>The shape key ({@link Shape}) is everything in a spec that the container is made of; a spec with
 *       an entrypoint or egress secrets never comes from a pool.</li>
 *   <li>A pooled sandbox is taken exactly once ({@link #claim} removes it from the idle queue atomically);
 *       the engine applies the tenant's name, labels, timeout (and the init's deadline) on claim; env and
 *       secrets travel per exec, from the tenant's spec.</li>
 *   <li>Pooled sandboxes count against the engine's maximum: refills stop while tenants' sandboxes plus
 *       pooled ones reach it, and a cold create at the limit evicts an idle pooled sandbox first, or waits for
 *       a pooled creation in flight and evicts that ({@link #admit}). A tenant's create always wins over a
 *       refill: no refill starts while a create waits for room.</li>
 *   <li>Idle sandboxes older than the pool's maximum idle age, or whose init died, are destroyed and
 *       replaced; {@link #close()} destroys every idle one and waits for creations in flight.</li>
 * </ul>
 */
final class WarmPool implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("io.paddock.engine");
    private static final Duration CLOSE_WAIT = Duration.ofSeconds(60);
    static final long CLAIM_REFILL_DELAY_MS = 25;
    private static final long ROOM_POLL_MS = 100;

    /** What makes a container: a pooled sandbox serves every spec with the same shape. */
    record Shape(String image, String runtime, ByteSize memory, double cpus, int pids, ByteSize disk, int openFiles,
                 NetworkPolicy network, List<Integer> ports, String workdir) {
        /** The shape of a spec whose runtime is resolved. */
        static Shape of(SandboxSpec spec) {
            return new Shape(spec.image(), spec.runtime().orElseThrow(), spec.memory(), spec.cpus(), spec.pids(),
                    spec.disk(), spec.openFiles(), spec.network(), spec.ports(), spec.workdir());
        }

        // Written out rather than generated: a record's generated equals and hashCode are method-handle chains that
        // run interpreted for the first thousands of calls, and a claim makes one of each (≈ 80 µs of a warm create).
        @Override
        public boolean equals(Object o) {
            return o instanceof Shape s && image.equals(s.image) && runtime.equals(s.runtime) && memory.bytes() == s.memory.bytes()
                    && Double.compare(cpus, s.cpus) == 0 && pids == s.pids && disk.bytes() == s.disk.bytes()
                    && openFiles == s.openFiles && network.equals(s.network) && ports.equals(s.ports) && workdir.equals(s.workdir);
        }

        @Override
        public int hashCode() {
            int h = image.hashCode();
            h = 31 * h + runtime.hashCode();
            h = 31 * h + Long.hashCode(memory.bytes());
            h = 31 * h + Double.hashCode(cpus);
            h = 31 * h + pids;
            h = 31 * h + Long.hashCode(disk.bytes());
            h = 31 * h + openFiles;
            h = 31 * h + network.hashCode();
            h = 31 * h + ports.hashCode();
            return 31 * h + workdir.hashCode();
        }

        /** The spec a pooled sandbox of this shape is created with: the shape and nothing of any tenant. */
        SandboxSpec spec() {
            return SandboxSpec.builder().image(image).runtime(runtime).memory(memory).cpus(cpus).pids(pids).disk(disk)
                    .openFiles(openFiles).network(network).ports(ports).workdir(workdir).build();
        }

        @Override
        public String toString() {
            return runtime + " " + image + " memory=" + memory + " cpus=" + cpus + " pids=" + pids + " disk=" + disk
                    + " openFiles=" + openFiles + " network=" + network
                    + (ports.isEmpty() ? "" : " ports=" + ports) + " workdir=" + workdir;
        }
    }

    /** One idle pooled sandbox: running, attached, with no tenant yet. */
    record Warm(SandboxId id, SandboxSpec shape, RuntimeSandbox runtime, InitClient client, long createdNanos,
                SandboxRoot root) {
        /** A pooled sandbox of the host image. */
        Warm(SandboxId id, SandboxSpec shape, RuntimeSandbox runtime, InitClient client, long createdNanos) {
            this(id, shape, runtime, client, createdNanos, SandboxRoot.host(shape));
        }
    }

    /** Whether an idle pooled sandbox runs the image with this id (then the image may not be removed). */
    boolean usesImage(String imageId) {
        return pools.values().stream().anyMatch(p -> p.idle.stream()
                .anyMatch(w -> w.root().imageId().map(imageId::equals).orElse(false)));
    }

    /** Creates and destroys pooled sandboxes (the engine's runtimes; a fake in unit tests). */
    interface Starter {
        Warm start(SandboxSpec shape, Duration maxIdle);

        void destroy(Warm warm);
    }

    private final class Pool {
        final PoolConfig config;
        final Shape shape;
        final SandboxSpec spec;
        final ConcurrentLinkedDeque<Warm> idle = new ConcurrentLinkedDeque<>();
        final AtomicInteger idleCount = new AtomicInteger();
        final AtomicInteger creating = new AtomicInteger();
        final AtomicLong hits = new AtomicLong();
        final AtomicLong misses = new AtomicLong();
        final AtomicLong created = new AtomicLong();
        final AtomicLong expired = new AtomicLong();
        final AtomicLong failures = new AtomicLong();
        final AtomicInteger consecutiveFailures = new AtomicInteger();
        volatile long retryAfterNanos;
        // @GuardedBy("refillTimes")
        final long[] refillTimes = new long[1024];
        // @GuardedBy("refillTimes")
        int refillCount;

        Pool(PoolConfig config, Shape shape) {
            this.config = config;
            this.shape = shape;
            this.spec = shape.spec();
        }

        Warm poll() {
            Warm w = idle.pollFirst();
            if (w != null) {
                idleCount.decrementAndGet();
            }
            return w;
        }

        boolean remove(Warm w) {
            if (idle.remove(w)) {
                idleCount.decrementAndGet();
                return true;
            }
            return false;
        }

        void recordRefill(long nanos) {
            synchronized (refillTimes) {
                refillTimes[refillCount++ % refillTimes.length] = nanos;
            }
        }

        PoolStats stats() {
            long[] t;
            synchronized (refillTimes) {
                t = Arrays.copyOf(refillTimes, Math.min(refillCount, refillTimes.length));
            }
            Arrays.sort(t);
            return new PoolStats(shape.toString(), config.size(), idleCount.get(), creating.get(), hits.get(),
                    misses.get(), created.get(), expired.get(), failures.get(), pct(t, 50), pct(t, 99),
                    t.length == 0 ? 0 : t[t.length - 1] / 1e6);
        }
    }

    private final Map<Shape, Pool> pools = new LinkedHashMap<>();
    private final Starter starter;
    private final LongSupplier tenantLive;
    private final int maxSandboxes;
    private final ExecutorService workers;
    private final ScheduledExecutorService timer;
    private final AtomicLong unpooled = new AtomicLong();
    private volatile boolean closed;
    /**
     * The engine's slots: admissions and refills decide under this lock, and every change to a pool's idle or
     * creating count that can free room signals it.
     */
    private final Object slots = new Object();
    // @GuardedBy("slots"): creates admitted (cold, or a pool hit) that are not yet among the tenants' live ones
    private int admitting;
    // @GuardedBy("slots"): cold creates waiting for room; refills wait for them
    private int waiting;

    /**
     * @param configs        the pools, whose shapes' runtimes are resolved with {@code defaultRuntime}
     * @param tenantLive     how many tenants' sandboxes are live now (for the engine's maximum)
     * @param maxSandboxes   the engine's maximum of live sandboxes, pooled ones included
     */
    WarmPool(List<PoolConfig> configs, String defaultRuntime, Starter starter, LongSupplier tenantLive, int maxSandboxes) {
        this.starter = starter;
        this.tenantLive = tenantLive;
        this.maxSandboxes = maxSandboxes;
        for (PoolConfig c : configs) {
            SandboxSpec s = c.shape().runtime().isPresent() ? c.shape() : c.shape().toBuilder().runtime(defaultRuntime).build();
            Shape shape = Shape.of(s);
            if (pools.putIfAbsent(shape, new Pool(c, shape)) != null) {
                throw SandboxException.invalid("warmPool", "two pools have the same shape (" + shape + ")");
            }
        }
        this.workers = Executors.newCachedThreadPool(SandboxManager.daemonThreads("paddock-pool"));
        this.timer = Executors.newSingleThreadScheduledExecutor(SandboxManager.daemonThreads("paddock-pool-timer"));
        for (Pool p : pools.values()) {
            long period = Math.max(100, Math.min(5000, p.config.maxIdle().toMillis() / 4));
            timer.scheduleWithFixedDelay(() -> expire(p), period, period, TimeUnit.MILLISECONDS);
            refill(p);
        }
    }

    boolean isEmpty() {
        return pools.isEmpty();
    }

    /**
     * Takes an idle sandbox for this spec (its runtime resolved), or returns null: no pool for its shape, a
     * spec with an entrypoint, or the pool is empty (a miss; the pool refills either way). A sandbox taken is
     * admitted: the caller calls {@link #admitted()} once it counts among the tenants' live sandboxes.
     */
    Warm claim(SandboxSpec spec) {
        if (pools.isEmpty() || closed) {
            return null;
        }
        // Egress secrets are the tenant's, wired into the network when it is made: such a spec is never pooled.
        // A pooled sandbox was started without mounts: one that needs a codebase or volumes starts fresh.
        Pool p = spec.entrypoint().isEmpty() && spec.egressSecrets().isEmpty() && spec.codebase().isEmpty()
                && spec.volumes().isEmpty() ? pools.get(Shape.of(spec)) : null;
        if (p == null) {
            unpooled.incrementAndGet();
            return null;
        }
        Warm w;
        while ((w = takeIdle(p)) != null) {
            if (w.client().isOpen()) {
                break;
            }
            admitted();
            p.expired.incrementAndGet();
            discard(w);
        }
        (w != null ? p.hits : p.misses).incrementAndGet();
        // The refill (a cold create: runc, cgroups, mounts; tens of ms of CPU) waits a moment, so that it does
        // not compete with the claimed sandbox's first commands on a small machine; by then the claimed
        // sandbox is also among the tenants' live ones that the engine's maximum counts.
        scheduleQuietly(() -> refill(p), CLAIM_REFILL_DELAY_MS);
        return w;
    }

    /** Takes the first idle sandbox of a pool, admitted in the same step: its slot never looks free. */
    private Warm takeIdle(Pool p) {
        synchronized (slots) {
            Warm w = p.poll();
            if (w != null) {
                admitting++;
            }
            return w;
        }
    }

    /**
     * Admits a cold create under the engine's maximum, which counts the tenants' live sandboxes, the creates
     * admitted before this one and the pooled sandboxes, idle or being made. At the maximum it makes room: it
     * destroys an idle pooled sandbox, or waits (up to {@code wait}) for a pooled creation in flight to end and
     * destroys that one; meanwhile no refill starts. Returns false when nothing pooled can give way, and throws
     * UNAVAILABLE when the caller is interrupted while it waits. After true
     * the caller calls {@link #admitted()} once: when its sandbox counts among the live ones, or when it failed.
     */
    boolean admit(Duration wait) {
        long deadline = System.nanoTime() + wait.toNanos();
        Warm evicted = null;
        synchronized (slots) {
            waiting++;
            try {
                while (tenantLive.getAsLong() + admitting + held() >= maxSandboxes) {
                    // the idle sandbox's slot passes to this create now; it is destroyed below, before the create
                    evicted = takeEvictable();
                    if (evicted != null) {
                        break;
                    }
                    long left = deadline - System.nanoTime();
                    if (creating() == 0 || left <= 0) {
                        return false;
                    }
                    // woken when a creation ends; at least every ROOM_POLL_MS for room made otherwise (a destroy)
                    slots.wait(Math.max(1, Math.min(ROOM_POLL_MS, TimeUnit.NANOSECONDS.toMillis(left))));
                }
                admitting++;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new SandboxException(ErrorCode.UNAVAILABLE,
                        "interrupted while waiting for room under the engine's maximum of " + maxSandboxes + " sandboxes");
            } finally {
                waiting--;
            }
        }
        if (evicted != null) {
            discard(evicted);
        }
        return true;
    }

    /** An admitted create (see {@link #admit}, {@link #claim}) is now among the live sandboxes, or failed. */
    void admitted() {
        synchronized (slots) {
            admitting--;
        }
    }

    /**
     * Runs a step of a create that claimed {@code warm} (null: a cold create); if the step fails before the
     * sandbox is the tenant's (its name is taken), the untouched sandbox goes back to the front of its pool.
     */
    void unclaimOnFailure(Warm warm, Runnable step) {
        try {
            step.run();
        } catch (RuntimeException e) {
            if (warm != null) {
                Pool p = pools.get(Shape.of(warm.shape()));
                if (closed || p == null) {
                    discardAsync(warm);
                } else {
                    p.hits.decrementAndGet();
                    synchronized (slots) {
                        p.idle.addFirst(warm);
                        p.idleCount.incrementAndGet();
                    }
                }
            }
            throw e;
        }
    }

    /** Pooled sandboxes held now, idle or being created: they count against the engine's maximum. */
    private int held() {
        int n = creating();
        for (Pool p : pools.values()) {
            n += p.idleCount.get();
        }
        return n;
    }

    private int creating() {
        int n = 0;
        for (Pool p : pools.values()) {
            n += p.creating.get();
        }
        return n;
    }

    /** An idle pooled sandbox (of the fullest pool) to evict for a cold create at the limit, or null. */
    private Warm takeEvictable() {
        Pool fullest = null;
        for (Pool p : pools.values()) {
            if (fullest == null || p.idleCount.get() > fullest.idleCount.get()) {
                fullest = p;
            }
        }
        return fullest == null ? null : fullest.poll();
    }

    List<PoolStats> stats() {
        List<PoolStats> out = new ArrayList<>();
        for (Pool p : pools.values()) {
            out.add(p.stats());
        }
        return out;
    }

    /** Creates of specs no pool serves (other shapes, or an entrypoint). */
    long unpooled() {
        return unpooled.get();
    }

    // ---- refill and expiry ----

    private void refill(Pool p) {
        while (!closed && System.nanoTime() - p.retryAfterNanos >= 0) {
            synchronized (slots) {
                int creating = p.creating.get();
                if (creating >= p.config.refillConcurrency() || p.idleCount.get() + creating >= p.config.size()
                        || tenantLive.getAsLong() + admitting + waiting + held() >= maxSandboxes) {
                    return;
                }
                p.creating.incrementAndGet();
            }
            try {
                workers.execute(() -> createOne(p));
            } catch (RejectedExecutionException e) {
                created(p, null);
                return;
            }
        }
    }

    /** A pooled creation in flight ended: its sandbox (null: it failed) joins the idle ones; room is signalled. */
    private void created(Pool p, Warm w) {
        synchronized (slots) {
            if (w != null) {
                p.idle.addLast(w);
                p.idleCount.incrementAndGet();
            }
            p.creating.decrementAndGet();
            slots.notifyAll();
        }
    }

    private void createOne(Pool p) {
        long t0 = System.nanoTime();
        Warm w = null;
        try {
            w = starter.start(p.spec, p.config.maxIdle());
            p.recordRefill(System.nanoTime() - t0);
            p.created.incrementAndGet();
            p.consecutiveFailures.set(0);
        } catch (RuntimeException e) {
            p.failures.incrementAndGet();
            int n = p.consecutiveFailures.incrementAndGet();
            long backoff = Math.min(30_000, 100L << Math.min(n, 9));
            p.retryAfterNanos = System.nanoTime() + backoff * 1_000_000;
            LOG.log(System.Logger.Level.WARNING, "warm pool (" + p.shape + "): creating a sandbox failed, retrying in "
                    + backoff + " ms: " + e.getMessage());
            scheduleQuietly(() -> refill(p), backoff);
        }
        created(p, w);
        if (w != null) {
            Warm warm = w;
            // an init that dies while idle (OOM, the backstop deadline) leaves the pool at once
            warm.client().closed().whenComplete((v, e) -> {
                if (p.remove(warm)) {
                    p.expired.incrementAndGet();
                    discardAsync(warm);
                    refill(p);
                }
            });
        }
        if (closed) {
            // close() may have drained the queue before this one arrived
            Warm late;
            while ((late = p.poll()) != null) {
                discard(late);
            }
            return;
        }
        refill(p);
    }

    private void expire(Pool p) {
        long maxIdle = p.config.maxIdle().toNanos();
        long now = System.nanoTime();
        for (Warm w : p.idle) {
            if (now - w.createdNanos() >= maxIdle && p.remove(w)) {
                p.expired.incrementAndGet();
                discardAsync(w);
            }
        }
        refill(p);
    }

    private void discardAsync(Warm w) {
        try {
            workers.execute(() -> discard(w));
        } catch (RejectedExecutionException e) {
            discard(w);
        }
    }

    private void discard(Warm w) {
        try {
            starter.destroy(w);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "destroying pooled sandbox " + w.id() + " failed (the reconciler"
                    + " removes it at the next start): " + e.getMessage());
        }
    }

    private void scheduleQuietly(Runnable r, long millis) {
        try {
            timer.schedule(r, millis, TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            // closing
        }
    }

    /** Stops refilling, waits for creations in flight, and destroys every idle sandbox. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        timer.shutdownNow();
        long deadline = System.nanoTime() + CLOSE_WAIT.toNanos();
        List<CompletableFuture<Void>> all = new ArrayList<>();
        for (Pool p : pools.values()) {
            Warm w;
            while ((w = p.poll()) != null) {
                Warm warm = w;
                all.add(CompletableFuture.runAsync(() -> discard(warm), workers));
            }
        }
        try {
            CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(CLOSE_WAIT.toNanos(), TimeUnit.NANOSECONDS);
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "not every pooled sandbox was destroyed at close: " + e);
        }
        // creations in flight destroy their sandbox themselves (see createOne) and then end
        workers.shutdown();
        try {
            workers.awaitTermination(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static double pct(long[] sorted, double p) {
        if (sorted.length == 0) {
            return 0;
        }
        int i = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))] / 1e6;
    }
}
