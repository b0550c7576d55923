package io.paddock.runtime.internal.bundle;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.runtime.internal.host.Cgroups;
import io.paddock.internal.NativeResource;
import io.paddock.runtime.internal.host.HostFacts;
import io.paddock.runtime.internal.host.RootfsTool;
import io.paddock.runtime.internal.host.WritableLayers;
import io.paddock.runtime.internal.image.HostImage;
import io.paddock.runtime.internal.oci.BundlePlan;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * What every OCI tier on this host shares: the state directory (bundles, uid leases, images), the cgroup
 * layout, the host facts the spec depends on, and the host image. Opened once per engine and handed to
 * each tier, so that runc and runsc sandboxes draw from one pool of uid ranges and one bundle directory.
 *
 * <pre>
 *   &lt;state&gt;/sandboxes/&lt;id&gt;/   bundle: config.json, to-init, from-init, init.log, owner, runtime, slot
 *   &lt;state&gt;/uids/&lt;slot&gt;       uid-range leases
 *   &lt;state&gt;/images/host-&lt;hash&gt;/ the shared root directory of the host image
 *   &lt;state&gt;/runc/, runsc/       each tier's own --root
 *   &lt;state&gt;/roots/&lt;id&gt;/root  an image sandbox's root: the overlay mount (&lt;id&gt; 0700, the sandbox's)
 *   &lt;state&gt;/mounts/&lt;id&gt;/&lt;n&gt;  a sandbox's extra mounts (a codebase's overlay, a volume's id-mapped bind)
 *   &lt;state&gt;/resolv/&lt;id&gt;      a networked sandbox's /etc/resolv.conf (readable by runsc's gofer)
 *   &lt;storage&gt;/writable/&lt;id&gt;/  an image sandbox's writable layer (a btrfs subvolume with a quota; see
 *                              {@link WritableLayers}), set up on the first sandbox of an image
 * </pre>
 */
public record OciHost(Path stateDir, Path storageDir, Path initBinary, Cgroups cgroups, BundlePlan.HostFacts facts,
                      HostImage image, UidLeases uids, RootfsTool rootfsTool) {
    /** The mount and btrfs helper ({@code src/main/c/rootfs.c}). */
    public static final String ROOTFS_RESOURCE = "/io/paddock/runtime/paddock-rootfs";
    private static final java.util.concurrent.ConcurrentHashMap<Path, WritableLayers> WRITABLE =
            new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * Checks the host (root, cgroups), prepares the state directory and the host image.
     *
     * @throws SandboxException FAILED_PRECONDITION with how to fix it, when the host cannot run sandboxes
     */
    public static OciHost open(Path stateDir, Path initBinary) {
        return open(stateDir, io.paddock.LocalOptions.DEFAULT_STORAGE_DIR, initBinary);
    }

    /** As {@link #open(Path, Path)}, with image sandboxes' writable layers under {@code storageDir}. */
    public static OciHost open(Path stateDir, Path storageDir, Path initBinary) {
        if (!HostFacts.isRoot()) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION,
                    "the local Paddock engine must run as root: it gives every sandbox its own user namespace and"
                            + " host uid range, cgroups and mounts. Run as root (sudo), or connect to a Paddock daemon.");
        }
        Cgroups cgroups = Cgroups.detect();
        try {
            Files.createDirectories(stateDir);
            Files.setPosixFilePermissions(stateDir, PosixFilePermissions.fromString("rwx--x--x"));
            for (String d : List.of("sandboxes", "uids")) {
                privateDir(stateDir.resolve(d));
            }
            Files.createDirectories(stateDir.resolve("mounts"));
            Files.setPosixFilePermissions(stateDir.resolve("mounts"), PosixFilePermissions.fromString("rwx--x--x"));
            Files.createDirectories(stateDir.resolve("roots"));
            Files.setPosixFilePermissions(stateDir.resolve("roots"), PosixFilePermissions.fromString("rwx--x--x"));
            Files.createDirectories(stateDir.resolve("resolv"));
            Files.setPosixFilePermissions(stateDir.resolve("resolv"), PosixFilePermissions.fromString("rwx--x--x"));
            Files.createDirectories(stateDir.resolve("images"));
            Files.setPosixFilePermissions(stateDir.resolve("images"), PosixFilePermissions.fromString("rwx--x--x"));
            requirePassable(stateDir);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "cannot create the state directory " + stateDir + ": " + e);
        }
        HostImage image = HostImage.prepare(stateDir.resolve("images"), initBinary, Path.of("/"));
        Path rootfs = NativeResource.load(OciHost.class, ROOTFS_RESOURCE)
                .extractTo(stateDir.resolve("bin"), "paddock-rootfs-", "", "r-xr-xr-x");
        return new OciHost(stateDir, storageDir, initBinary, cgroups, HostFacts.probe(cgroups), image,
                new UidLeases(stateDir.resolve("uids"), UidLeases.DEFAULT_BASE, UidLeases.DEFAULT_SLOTS),
                new RootfsTool(rootfs));
    }

    /**
     * Checks that every directory above the state directory lets others pass: a sandbox's processes run as a host uid
     * of their own and reach their root, mounts and resolv.conf through it. Under a private parent (a {@code mktemp
     * -d}, {@code /root}) every create would fail with the runtime's "permission denied" while mounting the root.
     */
    static void requirePassable(Path stateDir) throws IOException {
        Path real = stateDir.toRealPath();
        for (Path dir = real.getParent(); dir != null; dir = dir.getParent()) {
            Set<PosixFilePermission> mode = Files.getPosixFilePermissions(dir);
            if (!mode.contains(PosixFilePermission.OTHERS_EXECUTE)) {
                throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "the state directory " + stateDir
                        + " is out of sandboxes' reach: " + dir + " has mode " + PosixFilePermissions.toString(mode)
                        + ", and each sandbox runs as a host uid of its own that must pass through it to its root."
                        + " Let others pass it (chmod o+x " + dir + ") or choose a state directory elsewhere (the"
                        + " default is " + io.paddock.LocalOptions.DEFAULT_STATE_DIR + ").");
            }
        }
    }

    /**
     * The disk-backed writable layers of image sandboxes, set up on first use (so that a host that only runs
     * the {@code host} image needs no btrfs).
     */
    public WritableLayers writable() {
        return WRITABLE.computeIfAbsent(storageDir, d -> sweep(WritableLayers.open(d, rootfsTool)));
    }

    /**
     * Deletes writable layers whose sandbox has no bundle: left by a crash between the two, or found after a
     * reboot (the state directory is gone with its bundles; the btrfs file on disk is not). A bundle is made
     * before its writable layer and removed after it, so a layer without one is nobody's. The storage directory
     * is shared by engines with state directories of their own (a CLI beside a daemon, two daemons), so the
     * bundle is looked for in the state directory of the engine that made the layer ({@link WritableLayers#owner});
     * a layer with no owner recorded (made by an older version) is left alone: it cannot be proved dead.
     */
    private WritableLayers sweep(WritableLayers layers) {
        for (io.paddock.SandboxId id : layers.list()) {
            Optional<Path> owner = layers.owner(id);
            if (owner.isPresent() && orphaned(owner.get(), id)) {
                try {
                    layers.delete(id);
                } catch (RuntimeException e) {
                    System.getLogger(OciHost.class.getName()).log(System.Logger.Level.WARNING,
                            "cannot remove the orphaned writable layer of " + id + ": " + e.getMessage());
                }
            }
        }
        return layers;
    }

    /** Whether the engine whose state directory is {@code ownerState} has no bundle of {@code id} (nor its staging). */
    static boolean orphaned(Path ownerState, io.paddock.SandboxId id) {
        Path sandboxes = ownerState.resolve("sandboxes");
        if (Files.exists(sandboxes.resolve(id.value()))) {
            return false;
        }
        try (var dirs = Files.list(sandboxes)) {
            return dirs.noneMatch(d -> d.getFileName().toString().startsWith("." + id.value()));
        } catch (IOException e) {
            return true; // no sandboxes directory at all (a reboot took the state directory)
        }
    }

    /** A tier's own directory under the state directory (its runtime's {@code --root}), root's only. */
    public Path tierDir(String name) {
        Path dir = stateDir.resolve(name);
        try {
            privateDir(dir);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "cannot create " + dir + ": " + e);
        }
        return dir;
    }

    /** The host image with a preload library (see {@link HostImage#prepare(Path, Path, Path, Path)}). */
    public HostImage imageWithPreload(Path library) {
        return HostImage.prepare(stateDir.resolve("images"), initBinary, Path.of("/"), library);
    }

    /** Where sandboxes' extra mounts (codebases, volumes) are mounted, one directory each. */
    public Path mountsDir() {
        return stateDir.resolve("mounts");
    }

    /** Where image sandboxes' roots are mounted, one directory each; traversable, unlike the bundles. */
    public Path rootsDir() {
        return stateDir.resolve("roots");
    }

    /** Networked sandboxes' resolver files, one each, bound read-only at their {@code /etc/resolv.conf}. */
    public Path resolvDir() {
        return stateDir.resolve("resolv");
    }

    public Path sandboxesDir() {
        return stateDir.resolve("sandboxes");
    }

    private static void privateDir(Path dir) throws IOException {
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
    }
}
