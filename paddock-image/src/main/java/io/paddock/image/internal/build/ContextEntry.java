package io.paddock.image.internal.build;

import io.paddock.FileType;

import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;

/**
 * One file, directory or symlink under a {@link ResolvedSource}, as {@link BuildContext#entries} lists them:
 * what the executor copies and what the inputs hash covers.
 *
 * @param relativePath   {@code /}-separated path below the source; empty for the source itself
 * @param path           where it is on this host (not followed if it is a symlink)
 * @param type           file, directory or symlink (never {@link FileType#OTHER})
 * @param mode           permission bits including set-id and sticky bits, such as {@code 0755}
 * @param size           size in bytes of a file; 0 otherwise
 * @param symlinkTarget  the link's target, as stored, when {@code type} is {@link FileType#SYMLINK}
 */
public record ContextEntry(String relativePath, Path path, FileType type, int mode, long size,
                           Optional<String> symlinkTarget) {
    public ContextEntry {
        Objects.requireNonNull(relativePath, "relativePath");
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(symlinkTarget, "symlinkTarget");
        if (type == FileType.OTHER) {
            throw new IllegalArgumentException("only files, directories and symlinks are copied");
        }
        if ((type == FileType.SYMLINK) != symlinkTarget.isPresent()) {
            throw new IllegalArgumentException("a symlink, and only a symlink, has a target");
        }
    }
}
