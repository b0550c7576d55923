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
     * Creates the btrfs subvolume {@code subvol} limited to {@code limitBytes}, its {@code upper} (with
     * {@code entries}, see rootfs.c) and {@code work} directories, and mounts the overlay of {@code layers} at
     * {@code target}: a sandbox's whole root in one process.
     */
    public void create(long uidBase, Path subvol, long limitBytes, Path layersDir, List<String> layers, Path target,
                       List<String> entries) {
        create(List.of(), uidBase, subvol, limitBytes, layersDir, layers, target, entries);
    }

    /**
     * As {@link #create(long, Path, long, Path, List, Path, List)}, making the FIFOs {@code fifos} (mode 0600,
     * nothing may be there) first in the same process: a new sandbox's channel costs no process of its own.
     */
    public void create(List<Path> fifos, long uidBase, Path subvol, long limitBytes, Path layersDir, List<String> layers,
                       Path target, List<String> entries) {
        List<String> argv = new java.util.ArrayList<>(List.of(binary.toString()));
        for (Path fifo : fifos) {
            argv.addAll(List.of("-p", fifo.toString()));
        }
        argv.addAll(List.of("create", Long.toString(uidBase),
                subvol.toString(), Long.toString(limitBytes), layersDir.toString(), String.join(":", layers),
                target.toString()));
        argv.addAll(entries);
        run(argv, "making the root filesystem at " + target);
    }

    /**
     * Mounts at {@code target} an overlay of {@code lower} (id-mapped onto the range from {@code uidBase}) with
     * {@code dir/upper} and {@code dir/work}, which it makes, {@code entries} in upper (see rootfs.c).
     */
    public void overlay(long uidBase, Path lower, Path dir, Path target, List<String> entries) {
        List<String> argv = new java.util.ArrayList<>(List.of(binary.toString(), "overlay", Long.toString(uidBase),
                lower.getParent().toString(), lower.getFileName().toString(), dir.toString(), target.toString()));
        argv.addAll(entries);
        run(argv, "mounting " + lower + " at " + target);
    }

    /** Mounts {@code source} at {@code target} through an id-mapped, nosuid, nodev clone, read-only or not. */
    public void bind(long uidBase, Path source, Path target, boolean readOnly) {
        run(List.of(binary.toString(), "bind", Long.toString(uidBase), source.toString(), target.toString(),
                readOnly ? "ro" : "rw"), "mounting " + source + " at " + target);
    }

    /** Creates the btrfs subvolume {@code path} limited to {@code limitBytes}. */
    public void createSubvolume(Path path, long limitBytes) {
        run(List.of(binary.toString(), "subvol-create", path.toString(), Long.toString(limitBytes)),
                "creating the btrfs subvolume " + path);
    }

    /** Creates {@code path} as a writable snapshot of the btrfs subvolume {@code source}. */
    public void snapshot(Path source, Path path) {
        run(List.of(binary.toString(), "snapshot", source.toString(), path.toString()),
                "snapshotting " + source + " as " + path);
    }

    /** As {@link #snapshot(Path, Path)}, the snapshot limited to {@code limitBytes} from the start. */
    public void snapshot(Path source, Path path, long limitBytes) {
        run(List.of(binary.toString(), "snapshot", source.toString(), path.toString(), Long.toString(limitBytes)),
                "snapshotting " + source + " as " + path);
    }

    /**
     * Mounts at {@code target} the overlay of {@code layers} in {@code layersDir} (id-mapped onto the range from
     * {@code uidBase}) over an existing {@code upper} and {@code work}.
     */
    public void mount(long uidBase, Path layersDir, List<String> layers, Path upper, Path work, Path target) {
        run(List.of(binary.toString(), "mount", Long.toString(uidBase), layersDir.toString(), String.join(":", layers),
                upper.toString(), work.toString(), target.toString()), "mounting the overlay at " + target);
    }

    /** Detaches whatever is mounted at {@code target}; nothing mounted is fine. */
    public void unmount(Path target) {
        run(List.of(binary.toString(), "umount", target.toString()), "unmounting " + target);
    }

    /**
     * {@link #unmount} of {@code target}, then {@link #deleteSubvolume} of {@code subvol}, in one process: a
     * sandbox's root removed at the cost of one process rather than two.
     */
    public void removeRoot(Path target, Path subvol) {
        run(List.of(binary.toString(), "remove-root", target.toString(), subvol.toString()),
                "removing the root " + target + " and its writable layer " + subvol);
    }

    /** Deletes the btrfs subvolume {@code path} and everything in it; nothing there is fine. */
    public void deleteSubvolume(Path path) {
        run(List.of(binary.toString(), "subvol-delete", path.toString()), "deleting the writable layer " + path);
    }

    private static void run(List<String> argv, String what) {
        HostProcess.Result r = HostProcess.run(argv, TIMEOUT);
        if (!r.ok()) {
            throw new SandboxException(ErrorCode.INTERNAL, what + " failed: " + r.output());
        }
    }
}
