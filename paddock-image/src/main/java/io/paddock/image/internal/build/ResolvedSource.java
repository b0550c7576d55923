package io.paddock.image.internal.build;

import io.paddock.FileType;

import java.nio.file.Path;
import java.util.Objects;

/**
 * One source of a {@code COPY} step, found in the build context: a literal source or one match of a
 * wildcard source.
 *
 * @param name the source as the build names it: its path relative to the context's root, {@code /}-separated
 *             ({@code .} for the root itself), or the synthetic name of an {@link io.paddock.Image} local
 *             source; a copied file keeps this name's last component
 * @param path where it is on this host, with every symlink resolved (a source that is a symlink is followed,
 *             as Docker follows it; links inside a copied directory are copied as links)
 * @param type {@link FileType#FILE} or {@link FileType#DIRECTORY}
 */
public record ResolvedSource(String name, Path path, FileType type) {
    public ResolvedSource {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(type, "type");
        if (type != FileType.FILE && type != FileType.DIRECTORY) {
            throw new IllegalArgumentException("a source is a file or a directory, not " + type);
        }
    }

    public boolean isDirectory() {
        return type == FileType.DIRECTORY;
    }
}
