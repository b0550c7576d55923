package io.paddock.client.internal;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.Iterator;
import java.util.List;
import java.util.function.Consumer;

/**
 * A tar of files on this host, produced as it is read: the body of a remote build (its context). Nothing is
 * staged: directories are listed as the walk reaches them (in name order, so the same tree is the same
 * tar), each file is opened when its turn comes and read straight into the stream, so memory stays flat
 * whatever the size of the tree.
 *
 * <p>What goes in: regular files (content, permission bits including set-id and sticky, modification time),
 * directories and symlinks. <b>Symlinks are stored as symlinks and never followed</b>, wherever they point;
 * a {@link #tree} root that is itself a symlink is followed only when the caller resolved it first (the
 * caller names that path). Owners are 0:0 (a build sets owners itself). FIFOs, sockets and devices are
 * skipped and reported to {@code skipped}. Names are relative, {@code /}-separated; long or non-ASCII names,
 * long link targets and sizes of 8 GiB or more use POSIX pax headers.
 *
 * <p>A read failure (a file vanished, shrank, or is unreadable) ends the stream with an {@link IOException}
 * naming the path, remembered in {@link #failure()}, so that the caller reports it as such rather than as a
 * transport failure. Not thread-safe: one reader.
 */
final class TarStream extends InputStream {
    private static final int BLOCK = 512;
    private static final long MAX_OCTAL_SIZE = 077777777777L;

    /** Where entries come from, in order: in-memory files, then trees, each walked lazily. */
    private final Iterator<Source> sources;
    private final Consumer<String> skipped;
    /** The walk of the current tree: a stack of directories, each with its remaining sorted children. */
    private final Deque<Frame> walk = new ArrayDeque<>();
    private byte[] pending = new byte[0];
    private int pendingAt;
    private InputStream content;
    private long contentLeft;
    private String contentName;
    private int padding;
    private boolean trailerSent;
    private volatile IOException failure;

    /** One thing to put in the tar: bytes under a name, or a tree (a file or a directory) under a prefix. */
    private record Source(String name, byte[] bytes, Path tree, boolean shallow) {
    }

    private record Frame(Path dir, String name, Iterator<Path> children) {
    }

    private TarStream(List<Source> sources, Consumer<String> skipped) {
        this.sources = List.copyOf(sources).iterator();
        this.skipped = skipped;
    }

    /** Collects what a tar holds; {@link #open()} makes a fresh stream of it (each one reads the disk anew). */
    static final class Builder {
        private final List<Source> sources = new ArrayList<>();
        private Consumer<String> skipped = s -> { };

        /** A regular file {@code name} (mode 0644) holding {@code bytes}. */
        Builder bytes(String name, byte[] bytes) {
            sources.add(new Source(name, bytes.clone(), null, false));
            return this;
        }

        /**
         * {@code path} under {@code prefix}: a file as the one entry {@code prefix}; a directory as the entry
         * {@code prefix/} and everything under it; with an empty prefix, a directory's contents only (a build
         * context). {@code path} itself is taken as it is (resolve it first to follow a link the caller named).
         */
        Builder tree(String prefix, Path path) {
            sources.add(new Source(prefix, null, path, false));
            return this;
        }

        /** {@code path} as the one entry {@code name}: a directory without what is under it (a listed upload). */
        Builder entry(String name, Path path) {
            sources.add(new Source(name, null, path, true));
            return this;
        }

        /** Told the name of each special file left out. */
        Builder onSkipped(Consumer<String> skipped) {
            this.skipped = skipped;
            return this;
        }

        TarStream open() {
            return new TarStream(sources, skipped);
        }
    }

    static Builder builder() {
        return new Builder();
    }

    /** The read failure that ended the stream, if one did. */
    IOException failure() {
        return failure;
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        int n = read(one, 0, 1);
        return n < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        if (len == 0) {
            return 0;
        }
        try {
            while (true) {
                if (pendingAt < pending.length) {
                    int n = Math.min(len, pending.length - pendingAt);
                    System.arraycopy(pending, pendingAt, b, off, n);
                    pendingAt += n;
                    return n;
                }
                if (contentLeft > 0) {
                    int n = content.read(b, off, (int) Math.min(len, contentLeft));
                    if (n < 0) {
                        throw new IOException("'" + contentName + "' became shorter while it was being sent");
                    }
                    contentLeft -= n;
                    return n;
                }
                if (content != null) {
                    content.close();
                    content = null;
                    pending(new byte[padding]);
                    continue;
                }
                if (!nextEntry()) {
                    if (trailerSent) {
                        return -1;
                    }
                    trailerSent = true;
                    pending(new byte[2 * BLOCK]);
                }
            }
        } catch (IOException e) {
            if (failure == null) {
                failure = e;
            }
            closeContent();
            throw e;
        }
    }

    private void pending(byte[] bytes) {
        pending = bytes;
        pendingAt = 0;
    }

    /** Queues the next entry's header (and opens its content); false when there is none. */
    private boolean nextEntry() throws IOException {
        while (true) {
            Frame top = walk.peek();
            if (top != null) {
                if (!top.children().hasNext()) {
                    walk.pop();
                    continue;
                }
                Path child = top.children().next();
                String name = (top.name().isEmpty() ? "" : top.name() + "/") + child.getFileName();
                if (entry(name, child, false)) {
                    return true;
                }
                continue;
            }
            if (!sources.hasNext()) {
                return false;
            }
            Source s = sources.next();
            if (s.bytes() != null) {
                header(s.name(), '0', 0644, s.bytes().length, System.currentTimeMillis() / 1000, "");
                content = new java.io.ByteArrayInputStream(s.bytes());
                contentLeft = s.bytes().length;
                contentName = s.name();
                padding = padding(s.bytes().length);
                return true;
            }
            if (s.name().isEmpty()) {
                walk.push(new Frame(s.tree(), "", children(s.tree(), ".")));
            } else if (entry(s.name(), s.tree(), s.shallow())) {
                return true;
            }
        }
    }

    /** Queues the entry for {@code path} as {@code name}; false when it is skipped (a special file). */
    private boolean entry(String name, Path path, boolean shallow) throws IOException {
        BasicFileAttributes a;
        try {
            a = Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (IOException e) {
            throw new IOException("cannot read '" + name + "': " + e.getMessage(), e);
        }
        long mtime = a.lastModifiedTime().toMillis() / 1000;
        if (a.isSymbolicLink()) {
            header(name, '2', mode(path, 0777), 0, mtime, Files.readSymbolicLink(path).toString());
            return true;
        }
        if (a.isDirectory()) {
            header(name + "/", '5', mode(path, 0755), 0, mtime, "");
            if (!shallow) {
                walk.push(new Frame(path, name, children(path, name)));
            }
            return true;
        }
        if (!a.isRegularFile()) {
            skipped.accept(name);
            return false;
        }
        try {
            content = Files.newInputStream(path, LinkOption.NOFOLLOW_LINKS);
        } catch (IOException e) {
            throw new IOException("cannot read '" + name + "': " + e.getMessage(), e);
        }
        header(name, '0', mode(path, 0644), a.size(), mtime, "");
        contentLeft = a.size();
        contentName = name;
        padding = padding(a.size());
        return true;
    }

    private static Iterator<Path> children(Path dir, String name) throws IOException {
        List<Path> out = new ArrayList<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
            ds.forEach(out::add);
        } catch (IOException e) {
            throw new IOException("cannot list '" + name + "': " + e.getMessage(), e);
        }
        out.sort((x, y) -> x.getFileName().toString().compareTo(y.getFileName().toString()));
        return out.iterator();
    }

    /** Permission, set-id and sticky bits, not following a symlink. */
    private static int mode(Path p, int dflt) {
        try {
            return ((Integer) Files.getAttribute(p, "unix:mode", LinkOption.NOFOLLOW_LINKS)) & 07777;
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            try {
                int m = 0;
                for (PosixFilePermission perm : Files.getPosixFilePermissions(p, LinkOption.NOFOLLOW_LINKS)) {
                    m |= 1 << (8 - perm.ordinal());
                }
                return m;
            } catch (IOException | UnsupportedOperationException e2) {
                return dflt;
            }
        }
    }

    private static int padding(long size) {
        int r = (int) (size % BLOCK);
        return r == 0 ? 0 : BLOCK - r;
    }

    // ---- headers ----

    /** Queues a ustar header, preceded by a pax header when the name, link or size does not fit ustar. */
    private void header(String name, char type, int mode, long size, long mtime, String link) {
        byte[] nameBytes = name.getBytes(StandardCharsets.UTF_8);
        byte[] linkBytes = link.getBytes(StandardCharsets.UTF_8);
        StringBuilder pax = new StringBuilder();
        if (nameBytes.length > 100 || !isAscii(name)) {
            pax.append(record("path", name));
        }
        if (linkBytes.length > 100 || !isAscii(link)) {
            pax.append(record("linkpath", link));
        }
        if (size > MAX_OCTAL_SIZE) {
            pax.append(record("size", Long.toString(size)));
        }
        byte[] ustar = ustar(fit(name), type, mode, size > MAX_OCTAL_SIZE ? 0 : size, mtime, fit(link));
        if (pax.length() == 0) {
            pending(ustar);
            return;
        }
        byte[] records = pax.toString().getBytes(StandardCharsets.UTF_8);
        byte[] paxHeader = ustar(fit("PaxHeaders/" + name), 'x', 0644, records.length, mtime, "");
        byte[] all = new byte[paxHeader.length + records.length + padding(records.length) + ustar.length];
        System.arraycopy(paxHeader, 0, all, 0, paxHeader.length);
        System.arraycopy(records, 0, all, paxHeader.length, records.length);
        System.arraycopy(ustar, 0, all, all.length - ustar.length, ustar.length);
        pending(all);
    }

    /** A pax record, {@code "<length> <key>=<value>\n"}, where the length counts the whole record. */
    static String record(String key, String value) {
        int body = (" " + key + "=" + value + "\n").getBytes(StandardCharsets.UTF_8).length;
        int length = body + Integer.toString(body).length();
        if (Integer.toString(length).length() != Integer.toString(body).length()) {
            length++; // one more digit
        }
        return length + " " + key + "=" + value + "\n";
    }

    /** A name for a ustar field: as it is when it fits, else an ASCII stand-in (the pax header carries the real one). */
    private static String fit(String s) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < s.length() && out.length() < 100; i++) {
            char c = s.charAt(i);
            out.append(c >= 0x20 && c < 0x7f ? c : '_');
        }
        return out.toString();
    }

    private static boolean isAscii(String s) {
        return s.chars().allMatch(c -> c >= 0x20 && c < 0x7f);
    }

    private static byte[] ustar(String name, char type, int mode, long size, long mtime, String link) {
        byte[] h = new byte[BLOCK];
        put(h, 0, 100, name.getBytes(StandardCharsets.US_ASCII));
        octal(h, 100, 8, mode);
        octal(h, 108, 8, 0);
        octal(h, 116, 8, 0);
        octal(h, 124, 12, size);
        octal(h, 136, 12, Math.max(0, Math.min(mtime, MAX_OCTAL_SIZE)));
        Arrays.fill(h, 148, 156, (byte) ' ');
        h[156] = (byte) type;
        put(h, 157, 100, link.getBytes(StandardCharsets.US_ASCII));
        put(h, 257, 6, "ustar\0".getBytes(StandardCharsets.US_ASCII));
        put(h, 263, 2, "00".getBytes(StandardCharsets.US_ASCII));
        long sum = 0;
        for (byte x : h) {
            sum += x & 0xff;
        }
        octal(h, 148, 7, sum);
        h[155] = ' ';
        return h;
    }

    private static void put(byte[] h, int at, int max, byte[] value) {
        System.arraycopy(value, 0, h, at, Math.min(max, value.length));
    }

    /** {@code value} as zero-padded octal filling {@code width - 1} bytes, then NUL. */
    private static void octal(byte[] h, int at, int width, long value) {
        String s = Long.toOctalString(value);
        s = "0".repeat(Math.max(0, width - 1 - s.length())) + s;
        put(h, at, width - 1, s.getBytes(StandardCharsets.US_ASCII));
        h[at + width - 1] = 0;
    }

    private void closeContent() {
        if (content != null) {
            try {
                content.close();
            } catch (IOException ignored) {
                // nothing more to read from it
            }
            content = null;
        }
    }

    @Override
    public void close() {
        closeContent();
        walk.clear();
    }
}
