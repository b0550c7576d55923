package io.paddock.image.internal.layer;

import io.paddock.SandboxException;
import io.paddock.image.internal.oci.Digest;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;

import java.io.FileNotFoundException;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.UserDefinedFileAttributeView;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.zip.Deflater;
import java.util.zip.GZIPOutputStream;

/**
 * Turns a directory in the overlay format (the upper directory of a build step's {@code overlay -o userxattr}
 * mount) into an OCI layer: the inverse of {@link LayerExtractor}.
 *
 * <p>The tar it writes is deterministic: the same tree (names, contents, owners, modes, whole-second
 * modification times) gives the same bytes, so the same layer digest.
 * <ul>
 *   <li>Entries come in name order within each directory, a directory before what it holds; names are
 *       relative, without a leading {@code /}, directories end with {@code /}; long names and link targets
 *       and non-ASCII names use PAX headers, big numbers PAX too.</li>
 *   <li>Owners are numeric: the on-disk id minus {@code uidShift} (the build's idmap), an id outside
 *       {@code [uidShift, uidShift + 65536)} becoming 65534; user and group names are empty. Modes keep
 *       setuid, setgid and sticky; times are whole seconds; no access or change times, no xattrs.</li>
 *   <li>Regular files with several links inside the tree are written once, at the first name in this
 *       order, and then as hard links to it.</li>
 *   <li>An overlay whiteout (character device 0/0) becomes an empty file {@code .wh.NAME} (mode 0600, the
 *       device's owner and time); an opaque directory ({@code user.overlay.opaque=y}) is followed by an
 *       empty {@code DIR/.wh..wh..opq} with the directory's owner, permissions and time. Other devices,
 *       FIFOs and sockets are left out.</li>
 * </ul>
 * With {@code gzip} the tar is compressed at {@link Deflater#BEST_SPEED}: layers are written once per build
 * step, where speed matters more than the last few percent of size (level 1 is several times faster than
 * the default level 6 and rarely more than 10% larger). The gzip header carries no time or name.
 *
 * <p>The directory may have been written by untrusted code: symlinks in it are written as links and never
 * followed, and only regular files are opened. It must not change while it is written (the build step that
 * made it has stopped). {@code out} is written to but not closed. Failures reading the directory or writing {@code out} are INTERNAL (RESOURCE_EXHAUSTED when a
 * disk is full). Thread-safe: an instance holds no state between calls.
 */
public final class LayerWriter {
    private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;
    private static final int S_IFMT = 0170000;
    private static final int S_IFDIR = 0040000;
    private static final int S_IFREG = 0100000;
    private static final int S_IFLNK = 0120000;
    private static final int S_IFCHR = 0020000;
    private static final String ATTRIBUTES = "unix:mode,uid,gid,ino,dev,rdev,nlink,size,lastModifiedTime";
    private static final int BUFFER = 1 << 16;

    /**
     * Writes the layer for {@code dir}'s contents (not {@code dir} itself) to {@code out}, gzip-compressed if
     * {@code gzip}, with owners shifted down by {@code uidShift}.
     */
    public LayerBlob write(Path dir, OutputStream out, boolean gzip, long uidShift) {
        return write(dir, out, gzip, uidShift, java.util.Set.of());
    }

    /**
     * As {@link #write(Path, OutputStream, boolean, long)}, leaving out the entries at the relative paths
     * {@code excluded} ({@code etc/hosts}, {@code .paddock}: a directory with all it holds), whatever they are
     * (a whiteout too), without changing {@code dir}: what turns a live sandbox's writable layer into a layer.
     */
    public LayerBlob write(Path dir, OutputStream out, boolean gzip, long uidShift, java.util.Set<String> excluded) {
        Objects.requireNonNull(dir, "dir");
        Objects.requireNonNull(excluded, "excluded");
        Objects.requireNonNull(out, "out");
        if (uidShift < 0) {
            throw new IllegalArgumentException("uidShift must not be negative: " + uidShift);
        }
        if (!Files.isDirectory(dir, NOFOLLOW)) {
            throw SandboxException.invalid("dir", dir + " is not a directory");
        }
        CountingDigestOutputStream blob = new CountingDigestOutputStream(out);
        MessageDigest diffId = Digest.sha256();
        FastGzipOutputStream gz = null;
        boolean done = false;
        try {
            OutputStream tarBytes;
            if (gzip) {
                gz = new FastGzipOutputStream(blob);
                tarBytes = new DigestOutputStream(gz, diffId);
            } else {
                tarBytes = new DigestOutputStream(blob, diffId);
            }
            TarArchiveOutputStream tar = new TarArchiveOutputStream(tarBytes, StandardCharsets.UTF_8.name());
            tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
            tar.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
            tar.setAddPaxHeadersForNonAsciiNames(true);
            new Walk(tar, uidShift, excluded).root(dir);
            tar.finish();
            tar.close(); // finishes the gzip stream; the blob stream only flushes `out`
            done = true;
        } catch (IOException e) {
            throw LayerExtractor.fsFailure("cannot write the layer of " + dir, e);
        } finally {
            if (!done && gz != null) {
                gz.release();
            }
        }
        return new LayerBlob(Digest.of(diffId), Digest.of(blob.digest), blob.count);
    }

    /** One call's walk over the tree. */
    private static final class Walk {
        private final TarArchiveOutputStream tar;
        private final long uidShift;
        private final java.util.Set<String> excluded;
        /** First name written for each multiply-linked regular file, by (device, inode). */
        private final Map<List<Long>, String> linked = new HashMap<>();
        private final byte[] buffer = new byte[BUFFER];

        Walk(TarArchiveOutputStream tar, long uidShift, java.util.Set<String> excluded) {
            this.tar = tar;
            this.uidShift = uidShift;
            this.excluded = excluded;
        }

        void root(Path dir) throws IOException {
            if (isOpaque(dir)) {
                Map<String, Object> a = Files.readAttributes(dir, ATTRIBUTES, NOFOLLOW);
                putEmptyFile(LayerExtractor.OPAQUE_MARKER, a);
            }
            children(dir, "");
        }

        private void children(Path dir, String prefix) throws IOException {
            // Paths from the directory stream keep the name's bytes, so a name that is not UTF-8 is still
            // found on disk (its tar name is decoded, with replacement characters).
            List<Path> children = new ArrayList<>();
            try (DirectoryStream<Path> stream = Files.newDirectoryStream(dir)) {
                stream.forEach(children::add);
            }
            children.sort(Comparator.comparing(p -> p.getFileName().toString()));
            for (Path p : children) {
                entry(p, prefix, p.getFileName().toString());
            }
        }

        private void entry(Path p, String prefix, String name) throws IOException {
            String rel = prefix + name;
            if (excluded.contains(rel)) {
                return;
            }
            Map<String, Object> a = Files.readAttributes(p, ATTRIBUTES, NOFOLLOW);
            int mode = (Integer) a.get("mode");
            switch (mode & S_IFMT) {
                case S_IFDIR: {
                    put(new TarArchiveEntry(rel + "/", TarConstants.LF_DIR), a, S_IFDIR);
                    if (isOpaque(p)) {
                        putEmptyFile(rel + "/" + LayerExtractor.OPAQUE_MARKER, a);
                    }
                    children(p, rel + "/");
                    break;
                }
                case S_IFREG: {
                    regularFile(p, rel, a);
                    break;
                }
                case S_IFLNK: {
                    TarArchiveEntry e = new TarArchiveEntry(rel, TarConstants.LF_SYMLINK);
                    e.setLinkName(Files.readSymbolicLink(p).toString());
                    put(e, a, S_IFLNK);
                    break;
                }
                case S_IFCHR: {
                    if (((Number) a.get("rdev")).longValue() == 0) {
                        putWhiteout(prefix + LayerExtractor.WHITEOUT_PREFIX + name, a);
                    }
                    break;
                }
                default:
                    break; // block devices, FIFOs, sockets: not part of an image
            }
        }

        private void regularFile(Path p, String rel, Map<String, Object> a) throws IOException {
            if ((Integer) a.get("nlink") > 1) {
                List<Long> key = List.of(((Number) a.get("dev")).longValue(), ((Number) a.get("ino")).longValue());
                String first = linked.putIfAbsent(key, rel);
                if (first != null) {
                    TarArchiveEntry e = new TarArchiveEntry(rel, TarConstants.LF_LINK);
                    e.setLinkName(first);
                    put(e, a, S_IFREG);
                    return;
                }
            }
            long size = (Long) a.get("size");
            TarArchiveEntry e = new TarArchiveEntry(rel, TarConstants.LF_NORMAL);
            e.setSize(size);
            put(e, a, S_IFREG);
            try (InputStream in = Files.newInputStream(p, NOFOLLOW)) {
                long left = size;
                while (left > 0) {
                    int n = in.read(buffer, 0, (int) Math.min(buffer.length, left));
                    if (n < 0) {
                        throw new FileNotFoundException(p + " shrank while it was written to the layer");
                    }
                    tar.write(buffer, 0, n);
                    left -= n;
                }
            }
            tar.closeArchiveEntry();
        }

        /** The opaque marker: an empty regular file with its directory's owner, permissions and time. */
        private void putEmptyFile(String name, Map<String, Object> a) throws IOException {
            put(new TarArchiveEntry(name, TarConstants.LF_NORMAL), a, S_IFREG);
            tar.closeArchiveEntry();
        }

        /**
         * A whiteout: an empty regular file with the device's owner and time, and mode 0600 (a device's
         * permissions depend on the umask of whoever made it and mean nothing to overlay).
         */
        private void putWhiteout(String name, Map<String, Object> a) throws IOException {
            Map<String, Object> attributes = new HashMap<>(a);
            attributes.put("mode", S_IFREG | 0600);
            putEmptyFile(name, attributes);
        }

        /** Writes the header of {@code e} with owner, mode and time from {@code a}; data follows for files. */
        private void put(TarArchiveEntry e, Map<String, Object> a, int type) throws IOException {
            e.setMode(type | ((Integer) a.get("mode") & 07777));
            e.setUserId(layerId(Integer.toUnsignedLong((Integer) a.get("uid"))));
            e.setGroupId(layerId(Integer.toUnsignedLong((Integer) a.get("gid"))));
            e.setUserName("");
            e.setGroupName("");
            FileTime mtime = (FileTime) a.get("lastModifiedTime");
            e.setModTime(FileTime.from(mtime.to(TimeUnit.SECONDS), TimeUnit.SECONDS));
            tar.putArchiveEntry(e);
            if (type != S_IFREG || e.isLink()) {
                tar.closeArchiveEntry();
            }
        }

        private long layerId(long onDisk) {
            long id = onDisk - uidShift;
            return id < 0 || id > LayerExtractor.MAX_ID ? LayerExtractor.NOBODY : id;
        }

        private static boolean isOpaque(Path dir) throws IOException {
            UserDefinedFileAttributeView view = Files.getFileAttributeView(dir, UserDefinedFileAttributeView.class, NOFOLLOW);
            if (view == null) {
                return false;
            }
            try {
                if (!view.list().contains(LayerExtractor.OPAQUE_XATTR)) {
                    return false;
                }
                int size = view.size(LayerExtractor.OPAQUE_XATTR);
                if (size != 1) {
                    return false;
                }
                ByteBuffer value = ByteBuffer.allocate(size);
                view.read(LayerExtractor.OPAQUE_XATTR, value);
                return value.get(0) == 'y';
            } catch (FileSystemException e) {
                if (e.getReason() != null && e.getReason().contains("not supported")) {
                    return false; // a filesystem without user xattrs has no opaque directories
                }
                throw e;
            }
        }
    }

    /** gzip at level 1; its {@link #release()} frees the native deflater when the stream is abandoned. */
    private static final class FastGzipOutputStream extends GZIPOutputStream {
        FastGzipOutputStream(OutputStream out) throws IOException {
            super(out, BUFFER);
            def.setLevel(Deflater.BEST_SPEED);
        }

        void release() {
            def.end();
        }
    }

    /** Counts and hashes what reaches the caller's stream; closing it only flushes. */
    private static final class CountingDigestOutputStream extends FilterOutputStream {
        final MessageDigest digest = Digest.sha256();
        long count;

        CountingDigestOutputStream(OutputStream out) {
            super(out);
        }

        @Override
        public void write(int b) throws IOException {
            out.write(b);
            digest.update((byte) b);
            count++;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
            digest.update(b, off, len);
            count += len;
        }

        @Override
        public void close() throws IOException {
            out.flush();
        }
    }
}
