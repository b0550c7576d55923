package io.paddock.workspace.internal;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * File operations on a codebase's stored directories (revisions and views), which only the engine writes:
 * nothing here follows a symbolic link, and every path is checked to stay a real directory chain under its
 * root before it is written, so a link the codebase holds can never send a write elsewhere.
 */
public final class Revisions {
    /** The permission bits a stored file keeps: its executable bits decide 0755 or 0644. */
    static final int FILE_MODE = 0644;
    static final int EXEC_MODE = 0755;
    static final int DIR_MODE = 0755;

    private Revisions() {
    }

    /** A stored directory's listing: every directory, file and link, no ignore rule applied, no link followed. */
    public static Tree list(Path root) throws IOException {
        List<Tree.Entry> out = new ArrayList<>();
        Files.walkFileTree(root, Set.of(), Integer.MAX_VALUE, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) {
                if (!dir.equals(root)) {
                    out.add(Tree.Entry.directory(relative(root, dir)));
                }
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                if (attrs.isSymbolicLink()) {
                    out.add(Tree.Entry.symlink(relative(root, file), Files.readSymbolicLink(file).toString()));
                } else if (attrs.isRegularFile()) {
                    out.add(Tree.Entry.file(relative(root, file), attrs.size()));
                }
                return FileVisitResult.CONTINUE;
            }
        });
        return new Tree(out);
    }

    static String relative(Path root, Path p) {
        return root.relativize(p).toString();
    }

    /** Whether every directory from {@code root} down to {@code rel}'s parent is a real directory (or absent). */
    public static Path safeTarget(Path root, String rel) {
        Path p = root;
        List<String> segments = Paths.segments(rel);
        for (int i = 0; i < segments.size() - 1; i++) {
            p = p.resolve(segments.get(i));
            if (Files.exists(p, LinkOption.NOFOLLOW_LINKS) && !Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "'" + rel + "': '" + relative(root, p)
                        + "' is not a directory in the codebase");
            }
        }
        return root.resolve(rel);
    }

    /** Makes the directories of {@code rel} (itself included) under {@code root}, without following links. */
    public static void makeDirectories(Path root, String rel) throws IOException {
        Path p = root;
        for (String s : Paths.segments(rel)) {
            p = p.resolve(s);
            if (!Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
                Files.createDirectory(p);
                Files.setAttribute(p, "unix:mode", DIR_MODE, LinkOption.NOFOLLOW_LINKS);
            } else if (!Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "'" + relative(root, p) + "' is not a directory");
            }
        }
    }

    /** Writes a file at {@code rel} from {@code content}, replacing what is there (never through a link). */
    public static long writeFile(Path root, String rel, InputStream content, boolean executable) throws IOException {
        Path target = safeTarget(root, rel);
        makeDirectories(root, Paths.parent(rel));
        deleteTree(target);
        long n;
        try (SeekableByteChannel ch = Files.newByteChannel(target, Set.of(StandardOpenOption.CREATE_NEW,
                StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS)); OutputStream out = Channels.newOutputStream(ch)) {
            n = content.transferTo(out);
        }
        Files.setAttribute(target, "unix:mode", executable ? EXEC_MODE : FILE_MODE, LinkOption.NOFOLLOW_LINKS);
        return n;
    }

    /** Makes a symbolic link at {@code rel}, replacing what is there. */
    public static void writeLink(Path root, String rel, String linkTarget) throws IOException {
        Path target = safeTarget(root, rel);
        makeDirectories(root, Paths.parent(rel));
        deleteTree(target);
        Files.createSymbolicLink(target, Path.of(linkTarget));
    }

    /** Deletes {@code p} and, if it is a directory, everything under it; links are deleted, never followed. */
    public static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        if (!Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
            Files.delete(p);
            return;
        }
        Files.walkFileTree(p, Set.of(), Integer.MAX_VALUE, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Files.delete(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path dir, IOException e) throws IOException {
                if (e != null) {
                    throw e;
                }
                Files.delete(dir);
                return FileVisitResult.CONTINUE;
            }
        });
    }

    /** One path of a stored directory as {@link #stat} read it: a link's target, a file's size and mode. */
    public record Node(Tree.Kind kind, long size, boolean executable, String target) {
    }

    /**
     * What {@code rel} is in a stored directory, read through directory descriptors (openat with O_NOFOLLOW at
     * every step), never by path: empty if it is absent, if something on the way is not a real directory (a link
     * is never followed, not even an intermediate one), or if it is neither a directory, a file nor a link (a
     * FIFO or a device is never opened).
     */
    public static java.util.Optional<Node> stat(Path root, String rel) throws IOException {
        List<String> segments = Paths.segments(rel);
        if (segments.isEmpty()) {
            return java.util.Optional.of(new Node(Tree.Kind.DIRECTORY, 0, false, ""));
        }
        List<SecureDirectoryStream<Path>> chain = new ArrayList<>();
        try {
            SecureDirectoryStream<Path> dir = openRoot(root);
            chain.add(dir);
            for (int i = 0; i < segments.size(); i++) {
                Path name = Path.of(segments.get(i));
                PosixFileAttributes a;
                try {
                    a = dir.getFileAttributeView(name, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS).readAttributes();
                } catch (NoSuchFileException e) {
                    return java.util.Optional.empty();
                }
                if (i < segments.size() - 1) {
                    if (!a.isDirectory()) {
                        return java.util.Optional.empty();
                    }
                    dir = dir.newDirectoryStream(name, LinkOption.NOFOLLOW_LINKS);
                    chain.add(dir);
                    continue;
                }
                if (a.isDirectory()) {
                    return java.util.Optional.of(new Node(Tree.Kind.DIRECTORY, 0, false, ""));
                }
                if (a.isRegularFile()) {
                    return java.util.Optional.of(new Node(Tree.Kind.FILE, a.size(),
                            a.permissions().contains(PosixFilePermission.OWNER_EXECUTE), ""));
                }
                if (a.isSymbolicLink()) {
                    // Every directory above was checked to be real through descriptors; a stored directory is
                    // never changed once made, so reading the link by path reaches this very link.
                    return java.util.Optional.of(new Node(Tree.Kind.SYMLINK, 0, false,
                            Files.readSymbolicLink(root.resolve(rel)).toString()));
                }
                return java.util.Optional.empty();
            }
            throw new IllegalStateException();
        } finally {
            for (SecureDirectoryStream<Path> d : chain) {
                d.close();
            }
        }
    }

    /**
     * Opens the regular file {@code rel} of a stored directory through directory descriptors with O_NOFOLLOW at
     * every step; anything else (absent, a link anywhere on the way, a FIFO, a device) is refused before any
     * open, so a read can neither leave the directory nor wait on a pipe.
     */
    public static InputStream openFile(Path root, String rel) throws IOException {
        java.util.Optional<Node> e = stat(root, rel);
        if (e.isEmpty() || e.get().kind() != Tree.Kind.FILE) {
            throw new IOException("'" + rel + "' is not a regular file of " + root);
        }
        List<String> segments = Paths.segments(rel);
        List<SecureDirectoryStream<Path>> chain = new ArrayList<>();
        try {
            SecureDirectoryStream<Path> dir = openRoot(root);
            chain.add(dir);
            for (int i = 0; i < segments.size() - 1; i++) {
                dir = dir.newDirectoryStream(Path.of(segments.get(i)), LinkOption.NOFOLLOW_LINKS);
                chain.add(dir);
            }
            return Channels.newInputStream(dir.newByteChannel(Path.of(segments.get(segments.size() - 1)),
                    Set.of(StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)));
        } finally {
            for (SecureDirectoryStream<Path> d : chain) {
                d.close();
            }
        }
    }

    private static SecureDirectoryStream<Path> openRoot(Path root) throws IOException {
        DirectoryStream<Path> top = Files.newDirectoryStream(root);
        if (!(top instanceof SecureDirectoryStream<Path> dir)) {
            top.close();
            throw new IOException("this platform cannot walk a directory by descriptor");
        }
        return dir;
    }

    /** Whether a stored file is executable by its owner. */
    public static boolean executable(Path file) throws IOException {
        return ((Integer) Files.getAttribute(file, "unix:mode", LinkOption.NOFOLLOW_LINKS) & 0100) != 0;
    }
}
