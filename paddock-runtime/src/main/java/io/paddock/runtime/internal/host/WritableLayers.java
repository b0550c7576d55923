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
 * exceeded"), and nothing written counts against the sandbox's memory.
 *
 * <p>Set up on first use, under a file lock so that engines sharing the state directory agree. Creating
 * and deleting a subvolume are one ioctl each ({@link RootfsTool}): the subvolume never exists without its
 * limit.
 */
public final class WritableLayers {
    private static final Duration SETUP_TIMEOUT = Duration.ofMinutes(2);
    /** The loop file's apparent size: sparse, so it costs only what sandboxes write. */
    static final long DEFAULT_LOOP_SIZE = 1L << 40;

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
                f.setLength(DEFAULT_LOOP_SIZE);
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
     * Makes the mounted filesystem's root root's own, mode 0700 (ATTACKS.md A86): it holds every tenant's codebase
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

    /** Deletes the sandbox's subvolume and everything in it. Idempotent. */
    public void delete(SandboxId id) {
        tool.deleteSubvolume(of(id));
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
