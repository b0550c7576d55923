package io.paddock.engine.internal;

import io.paddock.SandboxSpec;
import io.paddock.runtime.SandboxMount;
import io.paddock.runtime.internal.bundle.OciHost;
import io.paddock.runtime.internal.host.RootfsTool;
import io.paddock.workspace.Subvolumes;

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

    Workspaces(OciHost host) {
        this.host = host;
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
        return host.writable().dir();
    }

    /**
     * The mounts of a sandbox with this spec and root, in the order the tier mounts them: the codebase, then
     * the volumes. Prepares what they need (a codebase's view is made once per revision and rules).
     */
    List<SandboxMount> mounts(SandboxSpec spec, SandboxRoot root) {
        List<SandboxMount> out = new ArrayList<>();
        if (spec.codebase().isPresent() || !spec.volumes().isEmpty()) {
            throw new io.paddock.SandboxException(io.paddock.ErrorCode.FAILED_PRECONDITION, "codebases and volumes are not mounted yet");
        }
        return out;
    }
}
