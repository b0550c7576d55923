package io.paddock.runtime.internal.host;

import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.SandboxId;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * Disk-backed writable layers with a size limit: one btrfs subvolume per sandbox, its quota group limited
 * to the sandbox's {@code disk}, on a btrfs filesystem Paddock owns ({@code <storage>/writable}). This host's
 * ext4 and XFS have no project quotas (docs/ARCHITECTURE.md), so the filesystem is a sparse loop file
 * ({@code <storage>/writable.btrfs}) unless {@code <storage>/writable} is already a btrfs mount (a real
 * partition, which an operator may prefer). Writes past the limit fail with EDQUOT ("Disk quota
 * exceeded"), and nothing written counts against the sandbox's memory. The loop filesystem's size is cut to the
 * host's free space less a reserve ({@link #capToHost}), so that a full store never takes the host's disk to zero,
 * and its root is root's own, mode 0700 ({@link #lockDown}).
 *
 * <p>Set up on first use, under a file lock so that engines sharing the state directory agree. Creating
 * and deleting a subvolume are one ioctl each ({@link RootfsTool}): the subvolume never exists without its
 * limit.
 */
public final class WritableLayers {
    private static final Duration SETUP_TIMEOUT = Duration.ofMinutes(2);
    /** The loop file's largest apparent size: sparse, so it costs only what sandboxes write. */
    static final long DEFAULT_LOOP_SIZE = 1L << 40;
    /** The smallest size the loop filesystem is cut to; a host with less room gets a warning, not a smaller store. */
    static final long MIN_LOOP_SIZE = 1L << 30;
    private static final long GIB = 1L << 30;
    private static final System.Logger LOG = System.getLogger(WritableLayers.class.getName());

    private final Path dir;
    private final RootfsTool tool;

    private WritableLayers(Path dir, RootfsTool tool) {
        this.dir = dir;
        this.tool = tool;
    }

    /**
     * Opens (setting up when needed) the writable filesystem under {@code stateDir} (the storage directory).
     *
     * @throws SandboxException FAILED_PRECONDITION naming what is missing (btrfs-progs, loop devices)
     */
    public static WritableLayers open(Path stateDir, RootfsTool tool) {
        Path dir = stateDir.resolve("writable");
        Path lockFile = stateDir.resolve("writable.lock");
        try {
            Files.createDirectories(stateDir);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "cannot create " + stateDir + ": " + e, e);
        }
        try (FileChannel ch = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
             FileLock ignored = ch.lock()) {
            if (!isBtrfsMount(dir)) {
                setUp(stateDir, dir);
            }
            lockDown(dir);
            capToHost(stateDir, dir);
            clearStaleQuotaGroups(dir);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "cannot set up the writable layers under "
                    + stateDir + ": " + e, e);
        }
        return new WritableLayers(dir, tool);
    }

    private static void setUp(Path stateDir, Path dir) throws IOException {
        Path image = stateDir.resolve("writable.btrfs");
        Files.createDirectories(dir);
        if (!Files.exists(image)) {
            Path mkfs = HostProcess.locate("mkfs.btrfs", "PADDOCK_MKFS_BTRFS",
                    "mkfs.btrfs is not installed; sandboxes of images keep their writable layer on a btrfs"
                            + " filesystem Paddock makes. Install it: sudo apt-get install -y btrfs-progs");
            Path tmp = stateDir.resolve("writable.btrfs.tmp");
            try (RandomAccessFile f = new RandomAccessFile(tmp.toFile(), "rw")) {
                f.setLength(DEFAULT_LOOP_SIZE); // the filesystem in it is then cut to the host's room (capToHost)
            }
            check(HostProcess.run(List.of(mkfs.toString(), "-q", "-f", "-L", "paddock-writable", tmp.toString()),
                    SETUP_TIMEOUT), "mkfs.btrfs");
            Files.move(tmp, image, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        }
        check(HostProcess.run(List.of("mount", "-t", "btrfs", "-o", "loop,noatime", image.toString(), dir.toString()),
                SETUP_TIMEOUT), "mounting " + image + " (loop devices needed)");
        Path btrfs = HostProcess.locate("btrfs", "PADDOCK_BTRFS",
                "btrfs is not installed. Install it: sudo apt-get install -y btrfs-progs");
        check(HostProcess.run(List.of(btrfs.toString(), "quota", "enable", dir.toString()), SETUP_TIMEOUT),
                "btrfs quota enable");
    }

    /**
     * Removes the quota groups of subvolumes already deleted: a layer's group is destroyed with it, but the kernel
     * refuses while it is still cleaning the subvolume up, and such groups would pile up for the life of the
     * filesystem. Best effort, at every open (one process).
     */
    static void clearStaleQuotaGroups(Path dir) {
        Path btrfs;
        try {
            btrfs = HostProcess.locate("btrfs", "PADDOCK_BTRFS", "btrfs is not installed");
        } catch (SandboxException e) {
            return; // the store was set up by another host's tools; nothing to clear with
        }
        HostProcess.Result r = HostProcess.run(List.of(btrfs.toString(), "qgroup", "clear-stale", dir.toString()),
                SETUP_TIMEOUT);
        if (!r.ok()) {
            LOG.log(System.Logger.Level.DEBUG, "btrfs qgroup clear-stale " + dir + ": " + r.output().strip());
        }
    }

    /**
     * The free space the host's own filesystem keeps, which the store never takes (ATTACKS.md A83d): 5% of that
     * filesystem, at least 2 GiB and at most 64 GiB.
     */
    public static long reserve(Path onHost) throws IOException {
        long total = Files.getFileStore(onHost).getTotalSpace();
        return Math.min(64 * GIB, Math.max(2 * GIB, total / 20));
    }

    /**
     * A loop file is sparse: what btrfs says is free is not on the host's disk. So the loop filesystem's size is
     * cut (online, {@code btrfs filesystem resize}) to what the loop file holds now plus the host's free space less
     * {@link #reserve}, at most {@link #DEFAULT_LOOP_SIZE}: btrfs then answers ENOSPC before the loop file can take
     * the host's disk past its reserve. Checked at every open, so a store made by an older engine (1 TiB) is cut
     * too, and one whose host has gained room grows. A filesystem Paddock did not make (a partition mounted at
     * {@code writable}) is left as it is. Failing to resize (btrfs cannot shrink below what it has allocated) is a
     * warning: the store works, with less of a guarantee.
     */
    private static void capToHost(Path stateDir, Path dir) throws IOException {
        Path image = stateDir.resolve("writable.btrfs");
        if (!Files.isRegularFile(image, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        long target = Math.min(Math.min(DEFAULT_LOOP_SIZE, Files.size(image)),
                (allocated(image) + Files.getFileStore(image).getUsableSpace() - reserve(stateDir)) / GIB * GIB);
        long now = Files.getFileStore(dir).getTotalSpace();
        if (target < MIN_LOOP_SIZE) {
            LOG.log(System.Logger.Level.WARNING, "the host's disk under " + image + " has less than "
                    + (MIN_LOOP_SIZE >> 30) + " GiB free beyond its reserve of " + (reserve(stateDir) >> 30)
                    + " GiB: free some; the writable store is not cut further");
            target = Math.max(MIN_LOOP_SIZE, Math.min(now, target));
        }
        if (Math.abs(now - target) < GIB) {
            return;
        }
        Path btrfs = HostProcess.locate("btrfs", "PADDOCK_BTRFS",
                "btrfs is not installed. Install it: sudo apt-get install -y btrfs-progs");
        HostProcess.Result r = HostProcess.run(List.of(btrfs.toString(), "filesystem", "resize", Long.toString(target),
                dir.toString()), SETUP_TIMEOUT);
        if (!r.ok()) {
            LOG.log(System.Logger.Level.WARNING, "cannot resize the writable store " + dir + " to " + target
                    + " bytes (the host's free space less its reserve): " + r.output().strip());
        }
    }

    /** The bytes a (sparse) file takes on its disk. */
    private static long allocated(Path file) {
        HostProcess.Result r = HostProcess.run(List.of("stat", "-c", "%b %B", file.toString()), Duration.ofSeconds(10));
        String[] f = r.output().strip().split("\\s+");
        try {
            return r.ok() && f.length == 2 ? Long.parseLong(f[0]) * Long.parseLong(f[1]) : Files.size(file);
        } catch (NumberFormatException | IOException e) {
            return DEFAULT_LOOP_SIZE;
        }
    }

    /**
     * What a reservation (a volume's size, a codebase) may take now: the store's free space, and where the store
     * is a loop file, no more than the host's free space less its {@link #reserve}. 0 when it cannot be read.
     */
    public long available() {
        try {
            long free = Files.getFileStore(dir).getUsableSpace();
            Path image = dir.resolveSibling("writable.btrfs");
            if (Files.isRegularFile(image, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                free = Math.min(free, Files.getFileStore(image).getUsableSpace() - reserve(image.getParent()));
            }
            return Math.max(0, free);
        } catch (IOException e) {
            return 0;
        }
    }

    /**
     * Makes the mounted filesystem's root root's own, mode 0700 (ATTACKS.md A85): it holds every tenant's codebase
     * revisions ({@code none} files included), volumes and sandboxes' writable layers, whose own modes are the
     * sandboxes' (0755, 0777), so a host process of any other uid (a sandbox's host uid after an escape) must not
     * pass it. Set after mounting, on every open: the mode of the directory under a mount point is not the
     * mounted root's (a fresh btrfs's root is 0755), and a store set up by an older engine is fixed too. Nothing
     * but root needs to pass it: the tiers' overlays and binds are mounted by root, and sandboxes (runc's
     * user namespaces, runsc's gofer) reach the files only through those mounts, never by this path.
     */
    static void lockDown(Path dir) throws IOException {
        Files.setAttribute(dir, "unix:uid", 0, java.nio.file.LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(dir, "unix:gid", 0, java.nio.file.LinkOption.NOFOLLOW_LINKS);
        Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
    }

    private static void check(HostProcess.Result r, String what) {
        if (!r.ok()) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, what + " failed (exit " + r.exitCode() + "): " + r.output());
        }
    }

    /** Whether {@code dir} is a btrfs mount point, from this process's mount table. */
    static boolean isBtrfsMount(Path dir) throws IOException {
        String target = dir.toAbsolutePath().normalize().toString();
        for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
            // id parent major:minor root mountpoint options [optional fields] - fstype source superoptions
            String[] f = line.split(" ");
            int dash = List.of(f).indexOf("-");
            if (f.length > 4 && dash > 0 && dash + 1 < f.length && unescape(f[4]).equals(target)
                    && f[dash + 1].equals("btrfs")) {
                return true;
            }
        }
        return false;
    }

    private static String unescape(String s) {
        return s.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\");
    }

    public Path dir() {
        return dir;
    }

    /**
     * The writable layer of sandbox {@code id}: the subvolume holding {@code upper} and {@code work} for its
     * overlay, made with its limit by {@link RootfsTool#create}.
     */
    public Path of(SandboxId id) {
        return dir.resolve(id.value());
    }

    /** Deletes the sandbox's subvolume and everything in it, then its owner record. Idempotent. */
    public void delete(SandboxId id) {
        tool.deleteSubvolume(of(id));
        forget(id);
    }

    /** Removes the owner record ({@link #claim}) of a layer deleted by other means (with its overlay, in one process). */
    public void forget(SandboxId id) {
        try {
            Files.deleteIfExists(ownerFile(id));
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot remove " + ownerFile(id) + ": " + e, e);
        }
    }

    /** {@link #forget} for the store under {@code storageDir}, without opening (or setting up) the store. */
    public static void forgetClaim(Path storageDir, SandboxId id) {
        try {
            Files.deleteIfExists(storageDir.resolve("writable.owners").resolve(id.value()));
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot remove the claim of " + id + "'s writable layer: " + e, e);
        }
    }

    /**
     * Records that the writable layer {@code id} is about to be made is the sandbox's of the engine whose state
     * directory is {@code stateDir}: {@code <storage>/writable.owners/<id>}, outside the filesystem the sandboxes
     * write to. The storage directory is shared by engines with state directories of their own, so a sweep
     * needs it to tell a layer whose bundle is gone from one whose bundle is in another state directory.
     */
    public void claim(SandboxId id, Path stateDir) {
        try {
            Files.createDirectories(ownerFile(id).getParent());
            Files.writeString(ownerFile(id), stateDir.toAbsolutePath().normalize().toString(),
                    java.nio.charset.StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot record the owner of " + of(id) + ": " + e, e);
        }
    }

    /** The state directory of the engine that made the layer {@code id}; empty for a layer made before owners were recorded. */
    public java.util.Optional<Path> owner(SandboxId id) {
        try {
            String text = Files.readString(ownerFile(id), java.nio.charset.StandardCharsets.UTF_8).strip();
            return text.isEmpty() ? java.util.Optional.empty() : java.util.Optional.of(Path.of(text));
        } catch (IOException e) {
            return java.util.Optional.empty();
        }
    }

    private Path ownerFile(SandboxId id) {
        return dir.resolveSibling("writable.owners").resolve(id.value());
    }

    /** Ids of the sandboxes that have a writable layer here. */
    public List<SandboxId> list() {
        List<SandboxId> out = new ArrayList<>();
        try (Stream<Path> s = Files.list(dir)) {
            s.map(p -> p.getFileName().toString()).filter(SandboxId::isValid).sorted().forEach(n -> out.add(new SandboxId(n)));
        } catch (IOException e) {
            return List.of();
        }
        return out;
    }
}
