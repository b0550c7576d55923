package io.paddock.engine.internal;

import io.paddock.CodebaseMount;
import io.paddock.SandboxId;
import io.paddock.SandboxSpec;
import io.paddock.workspace.CodebaseStore;
import io.paddock.runtime.SandboxMount;
import io.paddock.runtime.internal.bundle.OciHost;
import io.paddock.runtime.internal.host.RootfsTool;
import io.paddock.workspace.Subvolumes;
import io.paddock.workspace.VolumeStore;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What a sandbox mounts besides its root: its codebase's view and its volumes, prepared here from the
 * workspace stores and handed to the tier as {@link SandboxMount}s. The stores live on the host's writable
 * btrfs filesystem, under {@code codebases/} and {@code volumes/}.
 */
final class Workspaces {
    private final OciHost host;
    private volatile CodebaseStore codebases;
    /** Opened on first use, as the writable filesystem is (a host that never uses volumes needs no btrfs). */
    private volatile VolumeStore volumes;
    /**
     * Held while a sandbox's volumes are resolved and while a volume is checked for use and removed, so that a
     * remove never runs between a create's resolving a volume and the sandbox's appearing as its user.
     */
    final Object volumesLock = new Object();

    /** @param host the host's OCI tiers' shared state, or null where this engine has none (a Kubernetes-only daemon) */
    Workspaces(OciHost host) {
        this.host = host;
    }

    private OciHost host() {
        if (host == null) {
            throw new io.paddock.SandboxException(io.paddock.ErrorCode.FAILED_PRECONDITION, "codebases and volumes live"
                    + " on this host's btrfs filesystem, which this engine cannot use (it runs without root, for"
                    + " the kubernetes tier only)");
        }
        return host;
    }

    /** The codebases, on the writable filesystem (set up on first use). */
    CodebaseStore codebases() {
        CodebaseStore c = codebases;
        if (c == null) {
            synchronized (this) {
                if (codebases == null) {
                    codebases = new CodebaseStore(writableDir().resolve("codebases"), subvolumes(host().rootfsTool()),
                            host().writable()::available);
                    codebases.sweep();
                }
                c = codebases;
            }
        }
        return c;
    }

    /** The btrfs calls of the stores, made by the host's {@code paddock-rootfs}. */
    static Subvolumes subvolumes(RootfsTool tool) {
        return new Subvolumes() {
            @Override
            public void create(Path path, long limitBytes) {
                tool.createSubvolume(path, limitBytes);
            }

            @Override
            public void snapshot(Path source, Path path) {
                tool.snapshot(source, path);
            }

            @Override
            public void delete(Path path) {
                tool.deleteSubvolume(path);
            }
        };
    }

    /** The writable btrfs filesystem's directory, set up on first use. */
    Path writableDir() {
        return host().writable().dir();
    }

    /**
     * The mounts of a sandbox with this spec and root, in the order the tier mounts them: the codebase, then
     * the volumes. Prepares what they need (a codebase's view is made once per revision and rules).
     */
    List<SandboxMount> mounts(SandboxId id, SandboxSpec spec, SandboxRoot root) {
        List<SandboxMount> out = new ArrayList<>();
        spec.codebase().ifPresent(c -> out.add(codebaseMount(id, c, root)));
        out.addAll(volumeMounts(spec));
        return out;
    }

    /** The volume store under the writable filesystem ({@code <writable>/volumes}), opened on first use. */
    VolumeStore volumes() {
        VolumeStore v = volumes;
        if (v == null) {
            synchronized (this) {
                v = volumes;
                if (v == null) {
                    v = VolumeStore.open(writableDir().resolve("volumes"), subvolumes(host().rootfsTool()),
                            host().writable()::available);
                    volumes = v;
                }
            }
        }
        return v;
    }

    /**
     * The spec's volumes, each its data directory shared as it is. Called with the sandbox already among the
     * engine's sandboxes, so that once a volume is resolved here a remove sees it in use (see {@link #volumesLock}).
     */
    private List<SandboxMount> volumeMounts(SandboxSpec spec) {
        if (spec.volumes().isEmpty()) {
            return List.of();
        }
        List<SandboxMount> out = new ArrayList<>();
        synchronized (volumesLock) { // the spec has checked that no two mounts overlap
            for (io.paddock.VolumeMount v : spec.volumes()) {
                VolumeStore.Volume volume = volumes().find(v.volume()).orElseThrow(() -> io.paddock.SandboxException.invalid(
                        "volumes", "no volume named '" + v.volume() + "' (create it first: paddock volume create " + v.volume() + ")"));
                out.add(new SandboxMount.Shared(volume.data(), v.path(), v.readOnly()));
            }
        }
        return out;
    }

    /** The index of the codebase among a sandbox's mounts ({@link #mounts}): always the first. */
    static final int CODEBASE_MOUNT = 0;

    private SandboxMount codebaseMount(SandboxId id, CodebaseMount c, SandboxRoot root) {
        CodebaseStore.Mounted m;
        try {
            m = codebases().mount(id.value(), c, root.uid(), root.gid());
        } catch (io.paddock.SandboxException e) {
            if (e.code() == io.paddock.ErrorCode.NOT_FOUND) {
                throw io.paddock.SandboxException.invalid("codebase", e.getMessage() + " (paddock codebase create)");
            }
            throw e;
        }
        return new SandboxMount.Layered(m.view(), c.path(), m.rootMode(), m.rootUid(), m.rootGid());
    }

    /** Records what a fork of {@code source} holds of its codebase (the revision it started from). */
    void forked(SandboxId source, SandboxId fork, SandboxSpec spec) {
        spec.codebase().ifPresent(c -> codebases().forked(source.value(), fork.value(), c.codebase()));
    }

    /** Forgets what a destroyed sandbox held. */
    void released(SandboxId id, SandboxSpec spec) {
        spec.codebase().ifPresent(c -> {
            if (codebases != null || host != null && Files.isDirectory(host.storageDir().resolve("writable").resolve("codebases"))) {
                codebases().unmount(id.value(), c.codebase());
            }
        });
    }
}
