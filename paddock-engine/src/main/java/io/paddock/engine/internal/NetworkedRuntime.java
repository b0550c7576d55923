package io.paddock.engine.internal;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.SandboxSpec;
import io.paddock.network.SandboxNetworks;
import io.paddock.runtime.RuntimeRecord;
import io.paddock.runtime.RuntimeSandbox;
import io.paddock.runtime.SandboxRuntime;
import io.paddock.runtime.StartRequest;

import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A tier whose sandboxes get their network from {@link SandboxNetworks}: a spec with a network is started in
 * the namespace the network layer made for it, and every destroy (a failed create, a timeout, the reconciler's
 * cleanup of an orphan) removes the network after the sandbox. The tier itself only sees a namespace.
 */
final class NetworkedRuntime implements SandboxRuntime {
    /** Threads that finish networks while their sandboxes start (beyond 64 at once, the caller does); idle ones go. */
    private static final ExecutorService FINISHERS = new ThreadPoolExecutor(0, 64, 60, TimeUnit.SECONDS,
            new SynchronousQueue<>(), r -> {
                Thread t = new Thread(r, "paddock-network-finish");
                t.setDaemon(true);
                return t;
            }, new ThreadPoolExecutor.CallerRunsPolicy());

    private final SandboxRuntime tier;
    private final SandboxNetworks networks;

    NetworkedRuntime(SandboxRuntime tier, SandboxNetworks networks) {
        this.tier = tier;
        this.networks = networks;
    }

    @Override
    public String name() {
        return tier.name();
    }

    /**
     * The namespace and veth when the tier asks for them (in the user namespace it names), early in its start; the
     * rest of the network (addresses, rules, the resolver) is configured while the tier goes on, and the sandbox is
     * returned only once both are done.
     */
    @Override
    public RuntimeSandbox start(StartRequest request) {
        SandboxSpec spec = request.spec();
        if (!spec.hasNetwork() || request.network().isPresent()) {
            return tier.start(request);
        }
        AtomicReference<CompletableFuture<Void>> rest = new AtomicReference<>();
        RuntimeSandbox started = null;
        try {
            started = tier.start(request.inNetwork(owner -> {
                SandboxNetworks.Pending pending = networks.prepare(request.id(), spec.network(), spec.egressSecrets(), owner,
                        java.util.Optional.ofNullable(spec.labels().get(SandboxNetworks.TENANT_LABEL)));
                rest.set(CompletableFuture.runAsync(pending::finish, FINISHERS));
                return pending.namespace();
            }));
            if (rest.get() == null) {
                throw new SandboxException(ErrorCode.INTERNAL, "the " + tier.name() + " tier started sandbox "
                        + request.id() + " without making its network");
            }
            rest.get().join();
            return started;
        } catch (RuntimeException e) {
            RuntimeException cause = e instanceof CompletionException && e.getCause() instanceof RuntimeException r ? r : e;
            try {
                if (rest.get() != null) {
                    rest.get().exceptionally(t -> null).join(); // nothing may still be configuring what is removed next
                }
                if (started != null) {
                    started.closeChannel();
                    tier.destroy(request.id());
                }
                networks.detach(request.id());
            } catch (RuntimeException cleanup) {
                cause.addSuppressed(cleanup);
            }
            throw cause;
        }
    }

    @Override
    public RuntimeSandbox reattach(SandboxId id, byte[] preamble) {
        return tier.reattach(id, preamble);
    }

    /** The sandbox first (its processes hold the namespace), then its network. */
    @Override
    public void destroy(SandboxId id) {
        tier.destroy(id);
        networks.detach(id);
    }

    @Override
    public List<RuntimeRecord> records() {
        return tier.records();
    }

    @Override
    public boolean running(SandboxId id) {
        return tier.running(id);
    }

    @Override
    public Optional<io.paddock.runtime.RecordedSandbox> handOver(SandboxId id, String owner) {
        return tier.handOver(id, owner);
    }

    @Override
    public void respecified(SandboxId id, SandboxSpec spec, java.time.Instant createdAt) {
        tier.respecified(id, spec, createdAt);
    }

    @Override
    public String describe() {
        return tier.describe();
    }

    @Override
    public Optional<WritableLayer> writableLayer(SandboxId id) {
        return tier.writableLayer(id);
    }

    /** The network stays as it is while paused: the namespace, its rules and its address are the host's. */
    @Override
    public io.paddock.PauseMode pause(SandboxId id) {
        return tier.pause(id);
    }

    @Override
    public void checkForkable(SandboxId source) {
        tier.checkForkable(source);
    }

    /** The tier refuses networked sources, so a fork never needs a network of its own. */
    @Override
    public RuntimeSandbox fork(SandboxId source, StartRequest request) {
        return tier.fork(source, request);
    }

    /** A gVisor sandbox is restored into the same namespace; its interface gets back what gVisor took off it. */
    @Override
    public Optional<RuntimeSandbox> resume(SandboxId id, Optional<byte[]> preamble) {
        networks.readdress(id);
        return tier.resume(id, preamble);
    }

    @Override
    public void detach(SandboxId id) {
        tier.detach(id);
    }

    @Override
    public Optional<WritableLayer> mountLayer(SandboxId id, int index) {
        return tier.mountLayer(id, index);
    }

    @Override
    public AutoCloseable freeze(SandboxId id) {
        return tier.freeze(id);
    }

    @Override
    public Optional<io.paddock.ResourceUsage> usage(SandboxId id) {
        return tier.usage(id);
    }

    @Override
    public long tenantProcessLimit(SandboxSpec spec) {
        return tier.tenantProcessLimit(spec);
    }
}
