package io.paddock.workspace.internal;

import io.paddock.CodebaseChange;

import java.io.IOException;
import java.io.InputStream;
import java.nio.channels.Channels;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.UserDefinedFileAttributeView;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;

/**
 * What a sandbox changed in its codebase, read from its overlay's writable layer ({@code upper}) against the
 * revision it started from. The layer is the sandbox's to write while this reads it, so it is walked through
 * directory descriptors ({@link SecureDirectoryStream}: openat with O_NOFOLLOW), never by path: a directory the
 * sandbox swaps for a link meanwhile cannot send a read outside the layer.
 *
 * <p>In the layer, a file or link is added or modified; a character device (or anything else that is not a
 * file, directory or link: the sandbox cannot make devices) is a whiteout, a deletion; a directory marked
 * opaque ({@code user.overlay.opaque}) replaced the one below, whose entries it does not hold are deleted.
 */
public final class UpperDiff {
    /** One change, with how to read what the sandbox wrote (files and links only). */
    public record Change(String path, CodebaseChange.Kind kind, Kind type, String linkTarget, boolean executable,
                         Opener content) {
    }

    /** What the changed path now is. */
    public enum Kind { FILE, DIRECTORY, SYMLINK, DELETED }

    @FunctionalInterface
    public interface Opener {
        InputStream open() throws IOException;
    }

    private final Path upper;
    private final Path base;
    private final Tree baseTree;
    private final TreeMap<String, Change> changes = new TreeMap<>(Tree.ORDER);

    private UpperDiff(Path upper, Path base, Tree baseTree) {
        this.upper = upper;
        this.base = base;
        this.baseTree = baseTree;
    }

    /**
     * The changes, in the tree's order (a directory before what is under it). Files whose contents and mode
     * equal the base's (a copy-up without a change) are not changes. {@link Change#content()} opens the layer's file when
     * called, through descriptors as the walk does.
     */
    public static List<Change> of(Path upper, Path base, Tree baseTree) throws IOException {
        UpperDiff d = new UpperDiff(upper, base, baseTree);
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(upper)) {
            if (!(ds instanceof SecureDirectoryStream<Path> root)) {
                throw new IOException("this platform cannot walk a directory by descriptor");
            }
            d.walk(root, "", false);
        }
        return List.copyOf(d.changes.values());
    }

    /** {@code hidesBase}: an opaque directory above hides the base's entries, so each directory here is opaque too. */
    private void walk(SecureDirectoryStream<Path> dir, String rel, boolean hidesBase) throws IOException {
        List<String> names = new ArrayList<>();
        for (Path p : dir) {
            names.add(p.getFileName().toString());
        }
        names.sort(null);
        for (String name : names) {
            String path = Paths.child(rel, name);
            Path n = Path.of(name);
            PosixFileAttributes a;
            try {
                a = dir.getFileAttributeView(n, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS).readAttributes();
            } catch (java.nio.file.NoSuchFileException gone) {
                continue;
            }
            boolean inBase = baseTree.get(path).isPresent();
            if (a.isDirectory()) {
                boolean opaque = hidesBase || opaque(rel, name);
                boolean baseDir = baseTree.isDirectory(path);
                if (!baseDir) {
                    if (inBase) {
                        record(path, CodebaseChange.Kind.DELETED, Kind.DELETED, null, false, null);
                    }
                    record(path, CodebaseChange.Kind.ADDED, Kind.DIRECTORY, null, false, null);
                } else if (opaque) {
                    deleteBaseChildren(path, dir, n);
                }
                try (SecureDirectoryStream<Path> sub = dir.newDirectoryStream(n, LinkOption.NOFOLLOW_LINKS)) {
                    walk(sub, path, opaque || !baseDir);
                }
            } else if (a.isRegularFile()) {
                boolean exec = a.permissions().contains(PosixFilePermission.OWNER_EXECUTE);
                Opener open = () -> open(upper, path);
                if (inBase && baseTree.get(path).get().kind() == Tree.Kind.FILE && same(path, a, exec, open)) {
                    continue;
                }
                record(path, inBase ? CodebaseChange.Kind.MODIFIED : CodebaseChange.Kind.ADDED, Kind.FILE, null, exec, open);
            } else if (a.isSymbolicLink()) {
                String target = Files.readSymbolicLink(upper.resolve(path)).toString();
                if (inBase && target.equals(baseTree.get(path).get().target())) {
                    continue;
                }
                record(path, inBase ? CodebaseChange.Kind.MODIFIED : CodebaseChange.Kind.ADDED, Kind.SYMLINK, target, false, null);
            } else if (inBase) {
                record(path, CodebaseChange.Kind.DELETED, Kind.DELETED, null, false, null);
            }
        }
    }

    /** The base's entries under {@code dir} that an opaque directory in the layer does not hold: deleted. */
    private void deleteBaseChildren(String dir, SecureDirectoryStream<Path> parent, Path name) throws IOException {
        Set<String> present = new java.util.HashSet<>();
        try (SecureDirectoryStream<Path> sub = parent.newDirectoryStream(name, LinkOption.NOFOLLOW_LINKS)) {
            for (Path p : sub) {
                present.add(p.getFileName().toString());
            }
        }
        for (Tree.Entry e : baseTree.entries()) {
            if (Paths.parent(e.path()).equals(dir) && !present.contains(Paths.name(e.path()))) {
                record(e.path(), CodebaseChange.Kind.DELETED, Kind.DELETED, null, false, null);
            }
        }
    }

    private void record(String path, CodebaseChange.Kind kind, Kind type, String target, boolean exec, Opener open) {
        // A deletion and a re-creation of the same path read as one modification.
        Change before = changes.get(path);
        if (before != null && before.kind() == CodebaseChange.Kind.DELETED && kind == CodebaseChange.Kind.ADDED) {
            kind = CodebaseChange.Kind.MODIFIED;
        }
        changes.put(path, new Change(path, kind, type, target, exec, open));
    }

    private boolean opaque(String rel, String name) {
        try {
            UserDefinedFileAttributeView x = Files.getFileAttributeView(upper.resolve(Paths.child(rel, name)),
                    UserDefinedFileAttributeView.class, LinkOption.NOFOLLOW_LINKS);
            return x.list().contains("overlay.opaque");
        } catch (IOException e) {
            return false;
        }
    }

    private boolean same(String path, PosixFileAttributes a, boolean exec, Opener open) throws IOException {
        // the base read through descriptors: the path is the sandbox's to choose
        java.util.Optional<Revisions.Node> b = Revisions.stat(base, path);
        if (b.isEmpty() || b.get().kind() != Tree.Kind.FILE || b.get().size() != a.size() || b.get().executable() != exec) {
            return false;
        }
        try (InputStream x = open.open(); InputStream y = Revisions.openFile(base, path)) {
            return equalStreams(x, y);
        }
    }

    public static boolean equalStreams(InputStream x, InputStream y) throws IOException {
        byte[] bx = new byte[65536];
        byte[] by = new byte[65536];
        while (true) {
            int nx = x.readNBytes(bx, 0, bx.length);
            int ny = y.readNBytes(by, 0, by.length);
            if (nx != ny || !java.util.Arrays.equals(bx, 0, nx, by, 0, ny)) {
                return false;
            }
            if (nx == 0) {
                return true;
            }
        }
    }

    /**
     * Opens the file {@code rel} of the layer through a chain of directory descriptors, each opened with
     * O_NOFOLLOW from the one before: a component swapped for a link fails the open instead of leaving the layer.
     */
    static InputStream open(Path upper, String rel) throws IOException {
        List<String> segments = Paths.segments(rel);
        List<SecureDirectoryStream<Path>> chain = new ArrayList<>();
        try {
            DirectoryStream<Path> top = Files.newDirectoryStream(upper);
            if (!(top instanceof SecureDirectoryStream<Path> dir)) {
                top.close();
                throw new IOException("this platform cannot walk a directory by descriptor");
            }
            chain.add(dir);
            for (int i = 0; i < segments.size() - 1; i++) {
                dir = dir.newDirectoryStream(Path.of(segments.get(i)), LinkOption.NOFOLLOW_LINKS);
                chain.add(dir);
            }
            Path last = Path.of(segments.get(segments.size() - 1));
            // Only a regular file is opened: a FIFO would wait for a writer, a device is never the sandbox's.
            if (!dir.getFileAttributeView(last, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS).readAttributes().isRegularFile()) {
                throw new IOException("'" + rel + "' is no longer a regular file in the sandbox's layer");
            }
            SeekableByteChannel ch = dir.newByteChannel(last,
                    Set.of(StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS));
            return Channels.newInputStream(ch);
        } finally {
            for (SecureDirectoryStream<Path> d : chain) {
                d.close();
            }
        }
    }
}
