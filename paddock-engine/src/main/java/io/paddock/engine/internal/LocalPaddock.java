package io.paddock.engine.internal;

import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxId;
import io.paddock.SandboxInfo;
import io.paddock.SandboxQuery;
import io.paddock.SandboxSpec;

import java.util.List;
import java.util.Objects;

/** {@link Paddock} backed by the embedded engine in this JVM. */
public final class LocalPaddock implements Paddock {
    private final SandboxManager manager;
    private final LocalImages images;
    private final LocalCodebases codebases;
    private final LocalVolumes volumes;

    public LocalPaddock(LocalOptions options) {
        this.manager = new SandboxManager(Objects.requireNonNull(options, "options"));
        this.images = new LocalImages(manager);
        this.codebases = new LocalCodebases(manager);
        this.volumes = new LocalVolumes(manager);
    }

    @Override
    public io.paddock.Codebases codebases() {
        return codebases;
    }

    @Override
    public io.paddock.Images images() {
        return images;
    }

    @Override
    public io.paddock.Volumes volumes() {
        return volumes;
    }

    @Override
    public Sandbox create(SandboxSpec spec) {
        return manager.create(Objects.requireNonNull(spec, "spec"));
    }

    @Override
    public Sandbox get(SandboxId id) {
        return manager.get(Objects.requireNonNull(id, "id"));
    }

    @Override
    public Sandbox getByName(String name) {
        return manager.getByName(Objects.requireNonNull(name, "name"));
    }

    @Override
    public List<SandboxInfo> list(SandboxQuery query) {
        return manager.list(Objects.requireNonNull(query, "query"));
    }

    /** Runtime binary, version and cgroup layout, for diagnostics. */
    public String describeRuntime() {
        return manager.describeRuntime();
    }

    /** The warm pools' counters: hits, misses, idle, refill latency ({@link io.paddock.PoolConfig}). */
    public List<PoolStats> poolStats() {
        return manager.poolStats();
    }

    /**
     * Sends the engine's events (creates, execs, stops, pulls; {@link EngineEvents}) to {@code listener} too, from
     * now on, until {@link #stopListening}. The daemon's metrics listen here.
     */
    public void listen(EngineEvents listener) {
        manager.listen(Objects.requireNonNull(listener, "listener"));
    }

    /** Stops sending the engine's events to {@code listener} (one added with {@link #listen}). */
    public void stopListening(EngineEvents listener) {
        manager.stopListening(Objects.requireNonNull(listener, "listener"));
    }

    @Override
    public void close() {
        manager.close();
    }
}
