package io.paddock.runtime.internal.host;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * The mount and btrfs calls behind image roots, made by {@code paddock-rootfs} (src/main/c/rootfs.c): Java
 * has no mount, open_tree, mount_setattr or ioctl. Each call is one short process with argv only.
 */
public final class RootfsTool {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private final Path binary;

    public RootfsTool(Path binary) {
        this.binary = binary;
    }

    /**
     * Mounts at {@code target} an overlay of {@code layers} (names in {@code layersDir}, topmost first), id-mapped
     * onto the host range starting at {@code uidBase}, with {@code upper} and {@code work} for writes.
     */
    public void mountOverlay(long uidBase, Path layersDir, List<String> layers, Path upper, Path work, Path target) {
        run(List.of(binary.toString(), "mount", Long.toString(uidBase), layersDir.toString(), String.join(":", layers),
                upper.toString(), work.toString(), target.toString()), "mounting the root filesystem at " + target);
    }

    /** Detaches whatever is mounted at {@code target}; nothing mounted is fine. */
    public void unmount(Path target) {
        run(List.of(binary.toString(), "umount", target.toString()), "unmounting " + target);
    }

    void createSubvolume(Path path, long limitBytes) {
        run(List.of(binary.toString(), "subvol-create", path.toString(), Long.toString(limitBytes)),
                "creating the writable layer " + path);
    }

    void deleteSubvolume(Path path) {
        run(List.of(binary.toString(), "subvol-delete", path.toString()), "deleting the writable layer " + path);
    }

    private static void run(List<String> argv, String what) {
        HostProcess.Result r = HostProcess.run(argv, TIMEOUT);
        if (!r.ok()) {
            throw new SandboxException(ErrorCode.INTERNAL, what + " failed: " + r.output());
        }
    }
}
