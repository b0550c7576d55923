package io.paddock.server.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.wire.Wire;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.function.Predicate;

/**
 * The daemon's audit log: one JSON object per line in {@code <dir>/audit.log} (mode 0600), rotated by size to
 * {@code audit.log.1} (the newest) … {@code audit.log.N}, the oldest dropped, so it never holds more than about
 * {@code (N + 1) × maxBytes}. What goes into an entry is {@link Audit}'s business; this class only appends,
 * rotates and reads back.
 *
 * <p>Thread-safe: appends and rotations hold this object's lock (an entry is one small write; the lock is never
 * held while reading entries back). A read opens the files under the lock and reads them after releasing it:
 * a file renamed by a later rotation is still the same open file, and the current one is read only up to its
 * length at that moment, so a read sees each entry at most once and never half of one.
 */
public final class AuditLog implements AutoCloseable {
    /** The file's name in its directory. */
    public static final String FILE = "audit.log";
    /** Rotate when the current file would pass this size. */
    public static final long DEFAULT_MAX_BYTES = 16L << 20;
    /** Rotated files kept: {@code audit.log.1} … {@code audit.log.5}. */
    public static final int DEFAULT_KEEP = 5;

    private final Path dir;
    private final long maxBytes;
    private final int keep;
    // @GuardedBy("this")
    private FileChannel out;
    // @GuardedBy("this")
    private long size;
    // @GuardedBy("this")
    private boolean closed;

    private AuditLog(Path dir, long maxBytes, int keep) {
        this.dir = dir;
        this.maxBytes = maxBytes;
        this.keep = keep;
    }

    /**
     * Opens (creating when missing) {@code <dir>/audit.log} for appending. A file that is there but is not a
     * regular file (a link, say) is refused; one readable by others is made 0600.
     */
    public static AuditLog open(Path dir, long maxBytes, int keep) throws IOException {
        if (maxBytes < 1024) {
            throw new IllegalArgumentException("maxBytes must be at least 1024, got " + maxBytes);
        }
        if (keep < 1 || keep > 100) {
            throw new IllegalArgumentException("keep must be between 1 and 100, got " + keep);
        }
        if (!Files.isDirectory(dir)) {
            Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        }
        AuditLog log = new AuditLog(dir, maxBytes, keep);
        synchronized (log) {
            log.openCurrent();
        }
        return log;
    }

    /** The current file. */
    public Path file() {
        return dir.resolve(FILE);
    }

    private Path rotated(int n) {
        return dir.resolve(FILE + "." + n);
    }

    // @GuardedBy("this")
    private void openCurrent() throws IOException {
        Path f = file();
        if (Files.exists(f, LinkOption.NOFOLLOW_LINKS) && !Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException(f + " is not a regular file (links are not followed)");
        }
        out = FileChannel.open(f, Set.of(StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND,
                LinkOption.NOFOLLOW_LINKS), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-------"));
        size = out.size();
        if (size > 0 && !endsWithNewline(f, size)) {
            // a line torn by a crash: end it, so that it costs only itself, not the next entry too
            out.write(ByteBuffer.wrap(new byte[] {'\n'}));
            size++;
        }
    }

    private static boolean endsWithNewline(Path f, long size) throws IOException {
        try (FileChannel in = FileChannel.open(f, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
            ByteBuffer last = ByteBuffer.allocate(1);
            in.read(last, size - 1);
            return last.get(0) == '\n';
        }
    }

    /** Appends one entry as one line, rotating first when the file would pass its size. */
    public synchronized void append(ObjectNode entry) throws IOException {
        if (closed) {
            throw new IOException("the audit log is closed");
        }
        byte[] json = Wire.bytes(entry);
        byte[] line = Arrays.copyOf(json, json.length + 1);
        line[json.length] = '\n';
        if (size > 0 && size + line.length > maxBytes) {
            rotate();
        }
        ByteBuffer b = ByteBuffer.wrap(line);
        while (b.hasRemaining()) {
            out.write(b);
        }
        size += line.length;
    }

    // @GuardedBy("this")
    private void rotate() throws IOException {
        out.close();
        Files.deleteIfExists(rotated(keep));
        for (int i = keep - 1; i >= 1; i--) {
            if (Files.exists(rotated(i), LinkOption.NOFOLLOW_LINKS)) {
                Files.move(rotated(i), rotated(i + 1), StandardCopyOption.REPLACE_EXISTING);
            }
        }
        Files.move(file(), rotated(1), StandardCopyOption.REPLACE_EXISTING);
        openCurrent();
    }

    /**
     * The last {@code limit} entries that {@code filter} accepts, oldest first. Lines that are not JSON objects
     * (a torn write after a crash) are skipped.
     */
    public List<JsonNode> read(Predicate<JsonNode> filter, int limit) throws IOException {
        return read(null, filter, limit);
    }

    /**
     * As {@link #read(Predicate, int)}, parsing only the lines that contain {@code hint} (when not null): a cheap
     * first cut for a filter that only accepts entries holding that text.
     */
    public List<JsonNode> read(String hint, Predicate<JsonNode> filter, int limit) throws IOException {
        List<InputStream> files = new ArrayList<>();
        try {
            synchronized (this) {
                for (int i = keep; i >= 1; i--) {
                    Path f = rotated(i);
                    if (Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) {
                        files.add(Files.newInputStream(f, LinkOption.NOFOLLOW_LINKS));
                    }
                }
                FileChannel current = FileChannel.open(file(), StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS);
                files.add(new Bounded(Channels.newInputStream(current), size));
            }
            ArrayDeque<JsonNode> last = new ArrayDeque<>(Math.min(limit, 1024));
            for (InputStream in : files) {
                BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8), 64 * 1024);
                for (String line; (line = r.readLine()) != null; ) {
                    if (hint != null && !line.contains(hint)) {
                        continue;
                    }
                    JsonNode e = parse(line);
                    if (e != null && filter.test(e)) {
                        if (last.size() == limit) {
                            last.removeFirst();
                        }
                        last.addLast(e);
                    }
                }
            }
            return List.copyOf(last);
        } finally {
            for (InputStream in : files) {
                in.close();
            }
        }
    }

    private static JsonNode parse(String line) {
        if (line.isEmpty() || line.charAt(0) != '{') {
            return null;
        }
        try {
            JsonNode n = Wire.parse(line.getBytes(StandardCharsets.UTF_8));
            return n.isObject() ? n : null;
        } catch (RuntimeException e) {
            return null;
        }
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            out.close();
        } catch (IOException e) {
            System.getLogger(AuditLog.class.getName()).log(System.Logger.Level.WARNING, "closing the audit log: " + e);
        }
    }

    /** The first {@code limit} bytes of a stream. */
    private static final class Bounded extends InputStream {
        private final InputStream in;
        private long left;

        Bounded(InputStream in, long limit) {
            this.in = in;
            this.left = limit;
        }

        @Override
        public int read() throws IOException {
            if (left <= 0) {
                return -1;
            }
            int b = in.read();
            if (b >= 0) {
                left--;
            }
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (left <= 0) {
                return -1;
            }
            int n = in.read(b, off, (int) Math.min(len, left));
            if (n > 0) {
                left -= n;
            }
            return n;
        }

        @Override
        public void close() throws IOException {
            in.close();
        }
    }
}
