package io.paddock;

import java.io.InputStream;
import java.util.List;

/**
 * File operations inside a sandbox. They are performed by the sandbox's init, as the sandbox user, with
 * paths resolved inside the sandbox: a symlink planted by tenant code can never lead to a host file.
 *
 * <p>Paths are absolute, or relative to the sandbox's workdir, and may not contain {@code .} or {@code ..}
 * components. Only regular files and directories are served; pseudo filesystems ({@code /proc},
 * {@code /sys}, {@code /dev}) are refused. Writes land atomically: a reader sees the old file or the whole
 * new one, never a part.
 *
 * <p>Errors: {@code NOT_FOUND} for a missing path, {@code ALREADY_EXISTS}, {@code PERMISSION_DENIED} when
 * the sandbox user may not do it, {@code RESOURCE_EXHAUSTED} when the sandbox's disk is full,
 * {@code FAILED_PRECONDITION} for a wrong file type (reading a directory, removing a non-empty one).
 */
public interface SandboxFiles {
    /** The largest file {@link #read} returns whole (64 MiB); stream bigger ones with {@link #openRead}. */
    long READ_LIMIT = 64L << 20;

    /**
     * Returns a whole file. Files over {@link #READ_LIMIT} fail with {@code RESOURCE_EXHAUSTED}, so that a
     * huge (or endlessly growing) file cannot fill the caller's memory; stream those with {@link #openRead}.
     */
    byte[] read(String path);

    String readString(String path);

    /** Streams a file's content; the stream must be closed. */
    InputStream openRead(String path);

    /** Writes (creates or replaces) a file, creating missing parent directories. */
    void write(String path, byte[] data);

    void writeString(String path, String text);

    /** Writes a file from a stream, which is read to its end but not closed. */
    void write(String path, InputStream data);

    List<FileInfo> list(String directory);

    /** Describes a path without following a final symlink. */
    FileInfo stat(String path);

    boolean exists(String path);

    /** Creates a directory and any missing parents; succeeds if it already exists. */
    void mkdir(String path);

    /** Removes a file, a symlink or an empty directory. */
    void remove(String path);

    /** Removes a path and, for a directory, everything under it; succeeds if nothing is there. */
    void removeRecursive(String path);

    /** Renames a file or directory, replacing a file at the destination. */
    void move(String from, String to);
}
