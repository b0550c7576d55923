package io.paddock.workspace;

import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.internal.Validate;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributeView;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.UUID;
import java.util.stream.Stream;

/**
 * Volumes on the host's writable btrfs filesystem: each is a directory {@code <dir>/<name>} (mode 0700, root's)
 * holding its record ({@code volume.properties}: size and creation time) and its files in the btrfs subvolume
 * {@code data}, whose quota group is limited to the volume's size, so that writes past it fail with EDQUOT.
 * The record is beside the subvolume, never in it: sandboxes mount only {@code data} and cannot change it.
 *
 * <p>The root of {@code data} is owned by uid and gid {@value #OWNER} with mode 0777: {@value #OWNER} is the
 * host image's sandbox user (and most images' first user), and 0777 lets the users of other images (root of
 * their own namespace, with no capability to override permissions) create files there too. Files keep the
 * ids they were written with in the sandbox (the tier id-maps the mount), so sandboxes of different ranges
 * and tiers see the same owners.
 *
 * <p>Creation is atomic: the volume is made under a temporary name ({@code .new-…}) and renamed into place;
 * removal renames it away ({@code .del-…}) first. {@link #sweep} deletes what a crash left under either
 * name. The names are {@link Validate#name} names, so never '.'-prefixed, '/'-bearing or empty.
 *
 * <p>Thread-safe: create and remove are serialised on this store. Whether a volume is in use is not known
 * here: the engine checks it before {@link #remove}, under its own lock.
 */
public final class VolumeStore {
    /** The smallest size: btrfs counts a new file's metadata against the limit too. */
    public static final ByteSize MIN_SIZE = ByteSize.mib(1);
    /** The largest size: the writable filesystem's own (a sparse 1 TiB loop file by default). */
    public static final ByteSize MAX_SIZE = ByteSize.gib(1024);
    /** The owner of a volume's root directory, in the sandbox's ids. */
    public static final int OWNER = 1000;
    private static final String RECORD = "volume.properties";
    private static final String DATA = "data";
    private static final String NEW = ".new-";
    private static final String DELETED = ".del-";

    private final Path dir;
    private final Subvolumes subvolumes;
    private final java.util.function.LongSupplier free;

    /** A stored volume: its name, size, creation time and the directory sandboxes mount. */
    public record Volume(String name, ByteSize size, Instant created, Path data) {
    }

    private VolumeStore(Path dir, Subvolumes subvolumes, java.util.function.LongSupplier free) {
        this.dir = dir;
        this.subvolumes = subvolumes;
        this.free = free;
    }

    /**
     * The store in {@code dir}, a directory on a btrfs filesystem with quotas enabled (made when missing,
     * mode 0700), with leftovers of interrupted creates and removes deleted.
     */
    public static VolumeStore open(Path dir, Subvolumes subvolumes) {
        return open(dir, subvolumes, () -> {
            try {
                return Files.getFileStore(dir).getUsableSpace();
            } catch (IOException e) {
                return 0;
            }
        });
    }

    /**
     * As {@link #open(Path, Subvolumes)}, with {@code free} saying what a new volume may reserve now: the store's
     * free space, which on a sparse loop file is the host disk's less its reserve, not what btrfs says.
     */
    public static VolumeStore open(Path dir, Subvolumes subvolumes, java.util.function.LongSupplier free) {
        try {
            if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
                Files.createDirectories(dir);
            }
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "cannot create the volume store " + dir + ": " + e, e);
        }
        VolumeStore store = new VolumeStore(dir, subvolumes, free);
        store.sweep();
        return store;
    }

    /** Where volumes are kept. */
    public Path dir() {
        return dir;
    }

    /**
     * Creates volume {@code name} of {@code size} bytes, empty.
     *
     * @throws SandboxException ALREADY_EXISTS, INVALID_ARGUMENT for a bad name or a size out of range, or
     *                          RESOURCE_EXHAUSTED for a size past the store's free space (ATTACKS.md A83d)
     */
    public synchronized Volume create(String name, ByteSize size) {
        Validate.name("name", name);
        checkSize(size);
        long available = free.getAsLong();
        if (size.bytes() > available) {
            throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "a volume of " + size + " cannot be reserved: the"
                    + " store has " + ByteSize.bytes(available / (1 << 20) << 20) + " free (the host disk's free space"
                    + " less the reserve it keeps); ask for less, or free space on the host");
        }
        Path target = dir.resolve(name);
        if (Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
            throw new SandboxException(ErrorCode.ALREADY_EXISTS, "a volume named '" + name + "' already exists");
        }
        Path tmp = dir.resolve(NEW + name + "-" + UUID.randomUUID());
        Instant created = Instant.now().truncatedTo(java.time.temporal.ChronoUnit.MILLIS);
        try {
            Files.createDirectory(tmp, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
            Path data = tmp.resolve(DATA);
            subvolumes.create(data, size.bytes());
            Files.setAttribute(data, "unix:uid", OWNER, LinkOption.NOFOLLOW_LINKS);
            Files.setAttribute(data, "unix:gid", OWNER, LinkOption.NOFOLLOW_LINKS);
            Files.setPosixFilePermissions(data, PosixFilePermissions.fromString("rwxrwxrwx"));
            Properties p = new Properties();
            p.setProperty("size", Long.toString(size.bytes()));
            p.setProperty("created", created.toString());
            try (OutputStream out = Files.newOutputStream(tmp.resolve(RECORD))) {
                p.store(out, "a Paddock volume");
            }
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException | RuntimeException e) {
            deleteQuietly(tmp);
            if (e instanceof SandboxException se) {
                throw se;
            }
            throw new SandboxException(ErrorCode.INTERNAL, "cannot create volume '" + name + "': " + e, e);
        }
        return new Volume(name, size, created, target.resolve(DATA));
    }

    private static void checkSize(ByteSize size) {
        if (size == null || size.compareTo(MIN_SIZE) < 0 || size.compareTo(MAX_SIZE) > 0) {
            throw SandboxException.invalid("size", "a volume's size is between 1 MiB and 1 TiB, got "
                    + (size == null ? "none" : size.bytes() + " bytes"));
        }
    }

    /** The volume named {@code name}, if it exists. */
    public Optional<Volume> find(String name) {
        if (name == null || name.isEmpty() || name.startsWith(".") || name.contains("/")) {
            return Optional.empty();
        }
        Path vol = dir.resolve(name);
        Path record = vol.resolve(RECORD);
        if (!Files.isRegularFile(record, LinkOption.NOFOLLOW_LINKS)) {
            return Optional.empty();
        }
        Properties p = new Properties();
        try (InputStream in = Files.newInputStream(record, LinkOption.NOFOLLOW_LINKS)) {
            p.load(in);
            return Optional.of(new Volume(name, ByteSize.bytes(Long.parseLong(p.getProperty("size"))),
                    Instant.parse(p.getProperty("created")), vol.resolve(DATA)));
        } catch (NoSuchFileException e) {
            return Optional.empty(); // removed meanwhile
        } catch (IOException | RuntimeException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot read the record of volume '" + name + "': " + e, e);
        }
    }

    /** @throws SandboxException NOT_FOUND */
    public Volume get(String name) {
        return find(name).orElseThrow(() -> new SandboxException(ErrorCode.NOT_FOUND, "no volume named '"
                + Validate.shorten(name) + "'"));
    }

    /** Every volume, by name. */
    public List<Volume> list() {
        List<Volume> out = new ArrayList<>();
        try (Stream<Path> s = Files.list(dir)) {
            for (String n : s.map(p -> p.getFileName().toString()).filter(n -> !n.startsWith(".")).sorted().toList()) {
                find(n).ifPresent(out::add);
            }
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot list the volumes in " + dir + ": " + e, e);
        }
        return out;
    }

    /**
     * Deletes volume {@code name} and its files. The caller has made sure that no sandbox mounts it.
     *
     * @throws SandboxException NOT_FOUND
     */
    public synchronized void remove(String name) {
        get(name);
        Path gone = dir.resolve(DELETED + name + "-" + UUID.randomUUID());
        try {
            Files.move(dir.resolve(name), gone, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot remove volume '" + name + "': " + e, e);
        }
        delete(gone);
    }

    /**
     * The bytes the volume's files take: the sizes of its regular files (and links), walked without following a
     * link and without leaving the directory it starts in (every directory is opened relative to its parent,
     * never by a path a sandbox could change meanwhile), so a link or a rename planted by a sandbox never leads
     * the walk onto the host.
     */
    public long used(Volume volume) {
        try (DirectoryStream<Path> root = Files.newDirectoryStream(volume.data())) {
            if (!(root instanceof SecureDirectoryStream<Path> secure)) {
                return -1; // a platform without openat: not measured
            }
            return walk(secure, 0);
        } catch (IOException e) {
            return -1;
        }
    }

    private static final int MAX_DEPTH = 256;

    private static long walk(SecureDirectoryStream<Path> dir, int depth) throws IOException {
        long total = 0;
        for (Path entry : dir) {
            Path name = entry.getFileName();
            BasicFileAttributes a;
            try {
                a = dir.getFileAttributeView(name, BasicFileAttributeView.class, LinkOption.NOFOLLOW_LINKS).readAttributes();
            } catch (NoSuchFileException e) {
                continue;
            }
            if (a.isDirectory() && depth < MAX_DEPTH) {
                try (SecureDirectoryStream<Path> sub = dir.newDirectoryStream(name, LinkOption.NOFOLLOW_LINKS)) {
                    total += walk(sub, depth + 1);
                } catch (IOException e) {
                    // gone, replaced by a link (O_NOFOLLOW refuses it) or unreadable: not counted
                }
            } else if (!a.isDirectory()) {
                total += a.size();
            }
        }
        return total;
    }

    /** Deletes what an interrupted create or remove left ({@code .new-…}, {@code .del-…}). */
    public synchronized void sweep() {
        try (Stream<Path> s = Files.list(dir)) {
            for (Path p : s.filter(p -> p.getFileName().toString().startsWith(NEW)
                    || p.getFileName().toString().startsWith(DELETED)).toList()) {
                deleteQuietly(p);
            }
        } catch (IOException e) {
            // nothing to sweep
        }
    }

    private void delete(Path volumeDir) {
        subvolumes.delete(volumeDir.resolve(DATA));
        try {
            Files.deleteIfExists(volumeDir.resolve(RECORD));
            Files.deleteIfExists(volumeDir);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot delete " + volumeDir + ": " + e, e);
        }
    }

    private void deleteQuietly(Path volumeDir) {
        try {
            delete(volumeDir);
        } catch (RuntimeException e) {
            System.getLogger(VolumeStore.class.getName()).log(System.Logger.Level.WARNING,
                    "cannot delete the volume leftover " + volumeDir + ": " + e.getMessage());
        }
    }
}
