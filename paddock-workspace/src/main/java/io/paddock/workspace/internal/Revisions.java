package io.paddock.workspace.internal;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
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

    /** Whether a stored file is executable by its owner. */
    public static boolean executable(Path file) throws IOException {
        return ((Integer) Files.getAttribute(file, "unix:mode", LinkOption.NOFOLLOW_LINKS) & 0100) != 0;
    }
}
