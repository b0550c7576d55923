package io.paddock.engine.internal;

import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.SandboxState;
import io.paddock.VolumeInfo;
import io.paddock.Volumes;
import io.paddock.workspace.VolumeStore;

import java.util.List;
import java.util.Objects;

/**
 * The embedded engine's {@link Volumes}: the {@link VolumeStore} on its writable filesystem, with the engine
 * saying which sandboxes mount each. A sandbox holds its volumes from its create until its mounts are gone
 * (STOPPED), whichever engine started it: a restarted engine re-adopts sandboxes with their specs, so a
 * volume stays in use across a restart.
 */
final class LocalVolumes implements Volumes {
    private final SandboxManager manager;

    LocalVolumes(SandboxManager manager) {
        this.manager = manager;
    }

    private VolumeStore store() {
        return manager.workspaces().volumes();
    }

    @Override
    public VolumeInfo create(String name, ByteSize size) {
        VolumeStore.Volume v = store().create(name, Objects.requireNonNull(size, "size"));
        return new VolumeInfo(v.name(), v.size(), 0, v.created(), List.of());
    }

    @Override
    public List<VolumeInfo> list() {
        return store().list().stream().map(this::info).toList();
    }

    @Override
    public VolumeInfo get(String name) {
        return info(store().get(Objects.requireNonNull(name, "name")));
    }

    @Override
    public void remove(String name) {
        Objects.requireNonNull(name, "name");
        synchronized (manager.workspaces().volumesLock) {
            store().get(name);
            List<SandboxId> users = users(name);
            if (!users.isEmpty()) {
                throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "volume '" + name + "' is mounted by "
                        + users.stream().map(SandboxId::value).toList() + "; destroy them first");
            }
            store().remove(name);
        }
    }

    private VolumeInfo info(VolumeStore.Volume v) {
        return new VolumeInfo(v.name(), v.size(), Math.max(0, store().used(v)), v.created(), users(v.name()));
    }

    /** The sandboxes that hold the volume mounted: every one not yet STOPPED whose spec names it. */
    private List<SandboxId> users(String volume) {
        return manager.allSandboxes().stream()
                .filter(s -> s.currentState() != SandboxState.STOPPED)
                .filter(s -> s.spec().volumes().stream().anyMatch(m -> m.volume().equals(volume)))
                .map(ManagedSandbox::id).sorted(java.util.Comparator.comparing(SandboxId::value)).toList();
    }
}
