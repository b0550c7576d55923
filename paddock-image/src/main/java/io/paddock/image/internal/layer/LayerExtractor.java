package io.paddock.image.internal.layer;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.image.internal.oci.Digest;
import io.paddock.image.internal.oci.MediaTypes;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.apache.commons.compress.compressors.zstandard.ZstdCompressorInputStream;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributeView;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserDefinedFileAttributeView;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.zip.GZIPInputStream;

/**
 * Extracts one OCI image layer into a directory in the overlay format that Paddock mounts with
 * {@code overlay -o userxattr}: a whiteout is a character device 0/0 named like the deleted entry, an opaque
 * directory carries the xattr {@code user.overlay.opaque=y}. Files keep the layer's own numeric owners
 * (0-based, ids above 65535 become 65534; the mount idmaps them), permission bits including setuid, setgid
 * and sticky, and modification times.
 *
 * <p>Layers are hostile input. What this class guarantees, for any byte stream:
 * <ul>
 *   <li><b>Nothing outside {@code target} is created, changed or removed.</b> Entry names and hard link
 *       targets are normalised lexically ({@code /}, {@code ./} and {@code .} dropped, {@code ..} resolved);
 *       one that climbs above the root refuses the layer. No symlink is ever followed: every parent of an
 *       entry must be a real directory inside {@code target} (an entry that would go through a symlink
 *       refuses the layer), files are created with {@code O_EXCL|O_NOFOLLOW}, and owners, modes and times are
 *       set without following links. Symlinks are stored as they are: they are resolved inside the sandbox,
 *       never on the host. A hard link must name a regular file extracted earlier in this layer.</li>
 *   <li><b>Bounded work.</b> The uncompressed stream is counted as it is decompressed and the layer is
 *       refused with RESOURCE_EXHAUSTED once it passes {@link Limits#maxUncompressedBytes()} (so no file
 *       written is larger than that) or has more than {@link Limits#maxEntries()} entries. The headers of
 *       one entry (which the tar reader keeps in memory) may take at most 1 MiB, and sparse files, whose
 *       written size is not bounded by the stream's, are refused.</li>
 *   <li><b>No forged overlay metadata.</b> Xattrs from the tar (PAX {@code SCHILY.xattr.*}) are ignored, so
 *       a layer cannot plant {@code user.overlay.*}; device nodes and FIFOs in the tar are skipped, so it
 *       cannot plant a whiteout except by the {@code .wh.} names the OCI spec defines.</li>
 *   <li><b>Clear failures.</b> An unknown media type, an escaping or otherwise invalid entry and a corrupt or
 *       truncated stream (including one without the end-of-archive block) are INVALID_ARGUMENT; a blob that
 *       cannot be read is UNAVAILABLE; a host filesystem failure is INTERNAL (RESOURCE_EXHAUSTED when the
 *       disk is full).</li>
 * </ul>
 *
 * <p>On failure {@code target} holds a partial layer, which the caller deletes. Because the layer may hold
 * setuid-root files and world-writable directories, the caller keeps {@code target} under a directory only
 * root can enter. The extractor assumes nothing else writes inside {@code target} while it runs (the checks
 * above are made on a directory only it modifies).
 *
 * <p>Whiteouts ({@code .wh.NAME}) remove {@code NAME} if an earlier entry of this layer created it and leave
 * a whiteout in its place, with the entry's owner and time; the opaque marker ({@code .wh..wh..opq}) marks its directory opaque and keeps the
 * directory's other entries from this layer, before and after the marker. Directory modes and times are
 * applied after all entries, so a read-only directory can still be filled; directories the layer implies
 * but does not list are made {@code 0755}, owned by 0:0, with the time of the first entry inside them. AUFS
 * metadata ({@code .wh..wh.*} other than the opaque marker) is skipped. Hard links get the metadata of the file they link
 * to. Names are read as UTF-8; symlink targets are stored as Java paths (repeated and trailing slashes
 * dropped).
 *
 * <p>Thread-safe: an instance holds no state between calls. The blob stream is read but not closed.
 */
public final class LayerExtractor {
    /** Bounds on one layer, checked while it streams. */
    public record Limits(long maxUncompressedBytes, long maxEntries) {
        /** 16 GiB and a million entries: far above real images, far below what would hurt a host. */
        public static final Limits DEFAULT = new Limits(16L << 30, 1_000_000);

        public Limits {
            if (maxUncompressedBytes <= 0 || maxEntries <= 0) {
                throw new IllegalArgumentException("layer limits must be positive: " + maxUncompressedBytes
                        + " bytes, " + maxEntries + " entries");
            }
        }
    }

    static final int MAX_HEADER_BYTES = 1 << 20;
    static final int MAX_CHAINED_HEADERS = 16;
    static final String WHITEOUT_PREFIX = ".wh.";
    static final String OPAQUE_MARKER = ".wh..wh..opq";
    static final String OPAQUE_XATTR = "overlay.opaque";
    static final int NOBODY = 65534;
    static final long MAX_ID = 65535;

    private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;
    private static final int BUFFER = 1 << 16;

    private final Whiteouts whiteouts;

    public LayerExtractor(Whiteouts whiteouts) {
        this.whiteouts = Objects.requireNonNull(whiteouts, "whiteouts");
    }

    /**
     * Extracts the layer in {@code blob} (compressed as {@code mediaType} says) into {@code target}, an
     * existing empty directory, and returns its diffID, computed over the whole uncompressed stream.
     */
    public LayerResult extract(InputStream blob, String mediaType, Path target, Limits limits) {
        Objects.requireNonNull(blob, "blob");
        Objects.requireNonNull(target, "target");
        Objects.requireNonNull(limits, "limits");
        Compression compression = Compression.of(mediaType);
        Path root;
        try {
            root = target.toRealPath();
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "layer target " + target + " is not usable: " + e, e);
        }
        if (!Files.isDirectory(root, NOFOLLOW)) {
            throw new SandboxException(ErrorCode.INTERNAL, "layer target " + target + " is not a directory");
        }
        return new Extraction(root, limits).run(new SourceInputStream(blob), compression);
    }

    /** The compressions layers come in, by media type. */
    private enum Compression {
        NONE, GZIP, ZSTD;

        static Compression of(String mediaType) {
            if (MediaTypes.OCI_LAYER.equals(mediaType)) {
                return NONE;
            }
            if (MediaTypes.OCI_LAYER_GZIP.equals(mediaType) || MediaTypes.DOCKER_LAYER_GZIP.equals(mediaType)) {
                return GZIP;
            }
            if (MediaTypes.OCI_LAYER_ZSTD.equals(mediaType)) {
                return ZSTD;
            }
            throw SandboxException.invalid("mediaType", "'" + (mediaType == null ? "" : EntryPath.display(mediaType))
                    + "' is not a layer media type this extractor reads (" + MediaTypes.OCI_LAYER + ", +gzip, +zstd, "
                    + MediaTypes.DOCKER_LAYER_GZIP + ")");
        }

        InputStream open(InputStream in) throws IOException {
            switch (this) {
                case GZIP:
                    return new GZIPInputStream(in, BUFFER);
                case ZSTD:
                    return new ZstdCompressorInputStream(in);
                default:
                    return in;
            }
        }
    }

    /** Mode, owner and time of a directory, applied once all entries are in. */
    private record DirMeta(long uid, long gid, int mode, FileTime mtime) {
        /** A directory the layer implies but does not list: 0755, 0:0, the time of the entry inside it. */
        static DirMeta implied(TarArchiveEntry entry) {
            return new DirMeta(0, 0, 0755, entry.getLastModifiedTime());
        }
    }

    /** One call's state. */
    private final class Extraction {
        private final Path root;
        private final Limits limits;
        /** Directories to finish, by normalised path ("" is the root); descending order is children first. */
        private final TreeMap<String, DirMeta> dirs = new TreeMap<>();
        private final byte[] buffer = new byte[BUFFER];
        private SourceInputStream source;
        private MeteredInputStream metered;
        private GuardedTarInputStream tar;
        private long entries;
        private long skipped;

        Extraction(Path root, Limits limits) {
            this.root = root;
            this.limits = limits;
        }

        LayerResult run(SourceInputStream blob, Compression compression) {
            source = blob;
            MessageDigest diffId = Digest.sha256();
            InputStream decompressed = null;
            try {
                try {
                    decompressed = compression.open(source);
                } catch (IOException | RuntimeException e) {
                    throw streamFailure(e);
                }
                metered = new MeteredInputStream(decompressed, diffId, limits.maxUncompressedBytes());
                tar = new GuardedTarInputStream(metered, MAX_HEADER_BYTES, MAX_CHAINED_HEADERS);
                for (TarArchiveEntry entry = nextEntry(); entry != null; entry = nextEntry()) {
                    if (++entries > limits.maxEntries()) {
                        throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED,
                                "layer has more than " + limits.maxEntries() + " entries");
                    }
                    extract(entry);
                    drainEntry();
                }
                if (tar.endMarkerMissing()) {
                    throw new SandboxException(ErrorCode.INVALID_ARGUMENT,
                            "corrupt layer: the tar stream ends without its end-of-archive block (truncated)");
                }
                drainStream();
                finishDirectories();
                return new LayerResult(Digest.of(diffId), metered.count(), entries, skipped);
            } finally {
                closeQuietly(decompressed);
            }
        }

        // ---- entries ----

        private void extract(TarArchiveEntry entry) {
            String raw = entry.getName();
            if (!entry.isCheckSumOK()) {
                throw new SandboxException(ErrorCode.INVALID_ARGUMENT,
                        "corrupt layer: bad header checksum at entry '" + EntryPath.display(raw) + "'");
            }
            if (entry.isSparse()) {
                throw EntryPath.invalid(raw, "is a sparse file; sparse files are not supported");
            }
            EntryPath path = EntryPath.parse(raw);
            Kind kind = Kind.of(entry);
            if (path.isRoot()) {
                if (kind != Kind.DIRECTORY) {
                    throw EntryPath.invalid(raw, "would replace the layer's root directory");
                }
                dirs.put("", meta(entry));
                return;
            }
            if (isAufsMetadata(path)) {
                skipped++; // .wh..wh.plnk and the like: nothing to do with overlay
                return;
            }
            if (path.name().startsWith(WHITEOUT_PREFIX)) {
                whiteout(raw, path, entry);
                return;
            }
            switch (kind) {
                case DIRECTORY:
                    directory(raw, path, entry);
                    break;
                case REGULAR:
                    regularFile(raw, path, entry);
                    break;
                case SYMLINK:
                    symlink(raw, path, entry);
                    break;
                case HARD_LINK:
                    hardLink(raw, path, entry);
                    break;
                default:
                    skipped++;
            }
        }

        private void directory(String raw, EntryPath path, TarArchiveEntry entry) {
            Path p = parentOf(raw, path, entry).resolve(path.name());
            if (!removeExisting(path, p, true)) {
                mkdir(p);
            }
            dirs.put(path.toString(), meta(entry));
        }

        private void regularFile(String raw, EntryPath path, TarArchiveEntry entry) {
            Path p = parentOf(raw, path, entry).resolve(path.name());
            removeExisting(path, p, false);
            try (FileChannel out = FileChannel.open(p,
                    Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS),
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))) {
                for (int n = readEntry(); n >= 0; n = readEntry()) {
                    ByteBuffer b = ByteBuffer.wrap(buffer, 0, n);
                    while (b.hasRemaining()) {
                        out.write(b);
                    }
                }
            } catch (IOException e) {
                throw fsFailure("write", p, e);
            }
            setOwner(p, entry.getLongUserId(), entry.getLongGroupId());
            setMode(p, entry.getMode());
            setMtime(p, entry.getLastModifiedTime());
        }

        private void symlink(String raw, EntryPath path, TarArchiveEntry entry) {
            String linkTarget = entry.getLinkName();
            if (linkTarget.isEmpty() || linkTarget.indexOf('\0') >= 0
                    || linkTarget.getBytes(StandardCharsets.UTF_8).length > EntryPath.MAX_PATH_BYTES) {
                throw EntryPath.invalid(raw, "is a symlink to '" + EntryPath.display(linkTarget)
                        + "', which is empty, contains a NUL byte or is longer than " + EntryPath.MAX_PATH_BYTES + " bytes");
            }
            Path p = parentOf(raw, path, entry).resolve(path.name());
            removeExisting(path, p, false);
            try {
                Files.createSymbolicLink(p, p.getFileSystem().getPath(linkTarget));
            } catch (IOException e) {
                throw fsFailure("create symlink", p, e);
            }
            setOwner(p, entry.getLongUserId(), entry.getLongGroupId());
            setMtime(p, entry.getLastModifiedTime());
        }

        private void hardLink(String raw, EntryPath path, TarArchiveEntry entry) {
            String linkName = entry.getLinkName();
            EntryPath linkPath = EntryPath.parseLinkTarget(raw, linkName);
            String subject = "links to '" + EntryPath.display(linkName) + "', which";
            if (linkPath.equals(path)) {
                throw EntryPath.invalid(raw, "is a hard link to itself");
            }
            Path existing = linkTargetOf(raw, linkPath, subject);
            Path p = parentOf(raw, path, entry).resolve(path.name());
            removeExisting(path, p, false);
            // Removing what stood at p may have removed the target too (a link into the directory it replaces).
            existing = linkTargetOf(raw, linkPath, subject);
            try {
                Files.createLink(p, existing);
            } catch (IOException e) {
                throw fsFailure("create hard link", p, e);
            }
        }

        /** The regular file a hard link names, reached through real directories only. */
        private Path linkTargetOf(String raw, EntryPath linkPath, String subject) {
            if (linkPath.isRoot()) {
                throw EntryPath.invalid(raw, subject + " is the layer's root");
            }
            Path dir = walk(EntryPath.subject(raw) + " " + subject, linkPath.parent(), null);
            Path existing = dir == null ? null : dir.resolve(linkPath.name());
            BasicFileAttributes a = existing == null ? null : lstat(existing);
            if (a == null || !a.isRegularFile()) {
                throw EntryPath.invalid(raw, subject + " is not a regular file extracted earlier in this layer");
            }
            return existing;
        }

        private void whiteout(String raw, EntryPath path, TarArchiveEntry entry) {
            String name = path.name();
            if (name.equals(OPAQUE_MARKER)) {
                setOpaque(walk(EntryPath.subject(raw), path.parent(), entry));
                return;
            }
            String hidden = name.substring(WHITEOUT_PREFIX.length());
            if (hidden.isEmpty() || hidden.equals(".") || hidden.equals("..")) {
                throw EntryPath.invalid(raw, "is not a valid whiteout");
            }
            Path p = parentOf(raw, path, entry).resolve(hidden);
            removeExisting(path.parent().child(hidden), p, false);
            whiteouts.create(p);
            // owner and time as the tar says, so that writing the layer again gives the same tar; a device's
            // mode cannot be set without following links in Java, and overlay ignores it
            setOwner(p, entry.getLongUserId(), entry.getLongGroupId());
            setMtime(p, entry.getLastModifiedTime());
        }

        // ---- paths: every walk from the root refuses symlinks ----

        private Path parentOf(String raw, EntryPath path, TarArchiveEntry entry) {
            return walk(EntryPath.subject(raw), path.parent(), entry);
        }

        /**
         * The directory {@code dir} under the root, reached through real directories only. Missing ones are
         * created for {@code entry} (with its modification time) when it is not null, and null is returned
         * otherwise; a symlink or a non-directory on the way refuses the layer, with a message that starts
         * with {@code subject}.
         */
        private Path walk(String subject, EntryPath dir, TarArchiveEntry entry) {
            Path p = root;
            List<String> parts = dir.parts();
            for (int i = 0; i < parts.size(); i++) {
                p = p.resolve(parts.get(i));
                BasicFileAttributes a = lstat(p);
                if (a == null) {
                    if (entry == null) {
                        return null;
                    }
                    mkdir(p);
                    dirs.putIfAbsent(String.join("/", parts.subList(0, i + 1)), DirMeta.implied(entry));
                } else if (a.isSymbolicLink()) {
                    throw new SandboxException(ErrorCode.INVALID_ARGUMENT, subject + " goes through a symlink ('"
                            + EntryPath.display(String.join("/", parts.subList(0, i + 1))) + "')");
                } else if (!a.isDirectory()) {
                    throw new SandboxException(ErrorCode.INVALID_ARGUMENT, subject + " goes through '"
                            + EntryPath.display(String.join("/", parts.subList(0, i + 1))) + "', which is not a directory");
                }
            }
            return p;
        }

        /**
         * Removes what an earlier entry left at {@code p}, a directory with all it holds included, unless
         * both are directories ({@code keepDirectory}): those merge. Returns whether a directory was kept.
         */
        private boolean removeExisting(EntryPath path, Path p, boolean keepDirectory) {
            BasicFileAttributes a = lstat(p);
            if (a == null) {
                return false;
            }
            if (a.isDirectory() && keepDirectory) {
                return true;
            }
            try {
                if (a.isDirectory()) {
                    deleteTree(p);
                    String key = path.toString();
                    dirs.remove(key);
                    dirs.subMap(key + "/", key + "0").clear(); // '0' follows '/': exactly the descendants
                } else {
                    Files.delete(p);
                }
            } catch (IOException e) {
                throw fsFailure("remove", p, e);
            }
            return false;
        }

        private void finishDirectories() {
            for (Map.Entry<String, DirMeta> d : dirs.descendingMap().entrySet()) {
                String key = d.getKey();
                EntryPath path = key.isEmpty() ? EntryPath.ROOT : new EntryPath(Arrays.asList(key.split("/")));
                // Re-walk: the directory was recorded when created, but a later entry may have replaced it.
                Path p = path.isRoot() ? root : walkExisting(path);
                if (p == null) {
                    continue;
                }
                DirMeta meta = d.getValue();
                setOwner(p, meta.uid(), meta.gid());
                setMode(p, meta.mode());
                if (meta.mtime() != null) {
                    setMtime(p, meta.mtime());
                }
            }
        }

        /** The directory at {@code path} if it and all its parents are real directories; null otherwise. */
        private Path walkExisting(EntryPath path) {
            Path p = root;
            for (String part : path.parts()) {
                p = p.resolve(part);
                BasicFileAttributes a = lstat(p);
                if (a == null || !a.isDirectory() || a.isSymbolicLink()) {
                    return null;
                }
            }
            return p;
        }

        // ---- the stream ----

        private TarArchiveEntry nextEntry() {
            try {
                return tar.getNextEntry();
            } catch (IOException | RuntimeException e) {
                throw streamFailure(e);
            }
        }

        private int readEntry() {
            try {
                return tar.read(buffer, 0, buffer.length);
            } catch (IOException | RuntimeException e) {
                throw streamFailure(e);
            }
        }

        /** Reads what is left of the current entry, so that its bytes are counted outside any header budget. */
        private void drainEntry() {
            while (readEntry() >= 0) {
                // discard
            }
        }

        /** Reads the stream to its end after the last entry, so that the diffID covers all of it. */
        private void drainStream() {
            try {
                while (metered.read(buffer, 0, buffer.length) >= 0) {
                    // discard
                }
            } catch (IOException | RuntimeException e) {
                throw streamFailure(e);
            }
        }

        private SandboxException streamFailure(Exception e) {
            if (metered != null && metered.failure() != null) {
                return metered.failure();
            }
            if (source.failure() != null) {
                return new SandboxException(ErrorCode.UNAVAILABLE,
                        "cannot read the layer blob: " + source.failure().getMessage(), source.failure());
            }
            if (e instanceof SandboxException) {
                return (SandboxException) e;
            }
            String message = e.getMessage() != null ? e.getMessage()
                    : e instanceof EOFException ? "the stream ends early" : e.getClass().getSimpleName();
            return new SandboxException(ErrorCode.INVALID_ARGUMENT, "corrupt layer: " + message, e);
        }

        // ---- the filesystem; nothing here follows a symlink ----

        private BasicFileAttributes lstat(Path p) {
            try {
                return Files.readAttributes(p, BasicFileAttributes.class, NOFOLLOW);
            } catch (NoSuchFileException e) {
                return null;
            } catch (IOException e) {
                throw fsFailure("stat", p, e);
            }
        }

        private void mkdir(Path p) {
            try {
                Files.createDirectory(p, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
            } catch (IOException e) {
                throw fsFailure("create directory", p, e);
            }
        }

        private void setOwner(Path p, long uid, long gid) {
            try {
                Files.setAttribute(p, "unix:uid", layerId(uid), NOFOLLOW);
                Files.setAttribute(p, "unix:gid", layerId(gid), NOFOLLOW);
            } catch (IOException e) {
                throw fsFailure("set the owner of", p, e);
            }
        }

        /** Permission bits with setuid, setgid and sticky; never called on a symlink. */
        private void setMode(Path p, int mode) {
            try {
                Files.setAttribute(p, "unix:mode", mode & 07777, NOFOLLOW);
            } catch (IOException e) {
                throw fsFailure("set the mode of", p, e);
            }
        }

        private void setMtime(Path p, FileTime mtime) {
            if (mtime == null) {
                return;
            }
            try {
                Files.getFileAttributeView(p, BasicFileAttributeView.class, NOFOLLOW).setTimes(mtime, null, null);
            } catch (IOException e) {
                throw fsFailure("set the modification time of", p, e);
            }
        }

        private void setOpaque(Path dir) {
            UserDefinedFileAttributeView view = Files.getFileAttributeView(dir, UserDefinedFileAttributeView.class, NOFOLLOW);
            if (view == null) {
                throw new SandboxException(ErrorCode.INTERNAL, "the filesystem of " + root + " has no user xattrs");
            }
            try {
                view.write(OPAQUE_XATTR, ByteBuffer.wrap("y".getBytes(StandardCharsets.US_ASCII)));
            } catch (IOException e) {
                throw fsFailure("mark opaque", dir, e);
            }
        }

        private SandboxException fsFailure(String action, Path p, IOException e) {
            return LayerExtractor.fsFailure("cannot " + action + " " + p, e);
        }

        private DirMeta meta(TarArchiveEntry entry) {
            return new DirMeta(entry.getLongUserId(), entry.getLongGroupId(), entry.getMode(), entry.getLastModifiedTime());
        }
    }

    /** What an entry is, by its type flag (a type the tar reader guesses from a trailing slash aside). */
    private enum Kind {
        DIRECTORY, REGULAR, SYMLINK, HARD_LINK, OTHER;

        static Kind of(TarArchiveEntry entry) {
            switch (entry.getLinkFlag()) {
                case TarConstants.LF_DIR:
                    return DIRECTORY;
                case TarConstants.LF_NORMAL:
                case TarConstants.LF_OLDNORM:
                case TarConstants.LF_CONTIG:
                    // Pre-POSIX tars mark directories by a trailing slash on a regular entry.
                    return entry.getName().endsWith("/") ? DIRECTORY : REGULAR;
                case TarConstants.LF_SYMLINK:
                    return SYMLINK;
                case TarConstants.LF_LINK:
                    return HARD_LINK;
                default:
                    return OTHER; // devices, FIFOs, types with no meaning here
            }
        }
    }

    /**
     * Whether a path is AUFS metadata ({@code .wh..wh.plnk/…}, {@code .wh..wh.aufs}): any component starting
     * with {@code .wh..wh.}, except the opaque marker as the last one.
     */
    static boolean isAufsMetadata(EntryPath path) {
        List<String> parts = path.parts();
        for (int i = 0; i < parts.size(); i++) {
            String part = parts.get(i);
            if (part.startsWith(WHITEOUT_PREFIX + WHITEOUT_PREFIX) && !(i == parts.size() - 1 && part.equals(OPAQUE_MARKER))) {
                return true;
            }
        }
        return false;
    }

    /** A layer's uid or gid as stored on disk: 0..65535 as is, anything else 65534 (nobody). */
    static int layerId(long id) {
        return id < 0 || id > MAX_ID ? NOBODY : (int) id;
    }

    /** A failed host filesystem operation: RESOURCE_EXHAUSTED when the disk or quota is full, else INTERNAL. */
    static SandboxException fsFailure(String what, IOException e) {
        String reason = e instanceof FileSystemException && ((FileSystemException) e).getReason() != null
                ? ((FileSystemException) e).getReason() : String.valueOf(e.getMessage());
        ErrorCode code = reason.contains("No space left on device") || reason.contains("Disk quota exceeded")
                ? ErrorCode.RESOURCE_EXHAUSTED : ErrorCode.INTERNAL;
        return new SandboxException(code, what + ": " + e.getClass().getSimpleName() + ": " + reason, e);
    }

    private static void deleteTree(Path dir) throws IOException {
        // walkFileTree does not follow symlinks unless asked: a link inside is removed, never its target.
        Files.walkFileTree(dir, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Files.delete(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
                if (e != null) {
                    throw e;
                }
                Files.delete(d);
                return FileVisitResult.CONTINUE;
            }
        });
    }

    private static void closeQuietly(InputStream in) {
        if (in == null) {
            return;
        }
        try {
            in.close();
        } catch (IOException | RuntimeException e) {
            // the decompressor's resources are freed either way; the blob is the caller's
        }
    }
}
