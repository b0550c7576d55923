package io.paddock.engine.internal;

import io.paddock.SandboxId;
import io.paddock.SandboxSpec;
import io.paddock.network.SandboxNetworks;
import io.paddock.runtime.NetworkNamespace;
import io.paddock.runtime.RuntimeRecord;
import io.paddock.runtime.RuntimeSandbox;
import io.paddock.runtime.SandboxRuntime;
import io.paddock.runtime.StartRequest;

import java.util.List;
import java.util.Optional;

/**
 * A tier whose sandboxes get their network from {@link SandboxNetworks}: a spec with a network is started in
 * the namespace the network layer made for it, and every destroy (a failed create, a timeout, the reconciler's
 * cleanup of an orphan) removes the network after the sandbox. The tier itself only sees a namespace.
 */
final class NetworkedRuntime implements SandboxRuntime {
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

    @Override
    public RuntimeSandbox start(StartRequest request) {
        SandboxSpec spec = request.spec();
        if (!spec.hasNetwork() || request.network().isPresent()) {
            return tier.start(request);
        }
        NetworkNamespace ns = networks.attach(request.id(), spec.network());
        try {
            return tier.start(new StartRequest(request.id(), spec, request.owner(), request.preamble(), request.image(),
                    Optional.of(ns)));
        } catch (RuntimeException e) {
            try {
                networks.detach(request.id());
            } catch (RuntimeException cleanup) {
                e.addSuppressed(cleanup);
            }
            throw e;
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
    public String describe() {
        return tier.describe();
    }

    @Override
    public AutoCloseable userNetwork(SandboxId id) {
        return tier.userNetwork(id);
    }

    @Override
    public Optional<WritableLayer> writableLayer(SandboxId id) {
        return tier.writableLayer(id);
    }

    @Override
    public long tenantProcessLimit(SandboxSpec spec) {
        return tier.tenantProcessLimit(spec);
    }
}
