package io.paddock;

import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * What {@link SandboxFiles#stat} and {@link SandboxFiles#list} report about a file in a sandbox.
 *
 * @param path          the path as asked (for stat) or the directory's path joined with the name (for list)
 * @param name          the last component
 * @param type          file, directory, symlink (not followed) or other
 * @param size          size in bytes
 * @param mode          permission bits, for example {@code 0644}
 * @param modifiedAt    last modification time
 * @param symlinkTarget the link's target when {@code type} is {@link FileType#SYMLINK}
 */
public record FileInfo(String path, String name, FileType type, long size, int mode, Instant modifiedAt,
                       Optional<String> symlinkTarget) {
    public FileInfo {
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(modifiedAt, "modifiedAt");
        Objects.requireNonNull(symlinkTarget, "symlinkTarget");
    }

    public boolean isDirectory() {
        return type == FileType.DIRECTORY;
    }

    public boolean isFile() {
        return type == FileType.FILE;
    }
}
