package io.paddock.image.internal.layer;

import java.nio.file.Path;

/**
 * Creates overlayfs whiteouts: a character device with device number 0/0 at a given path, which hides the
 * entry of the same name in lower layers. Java has no {@code mknod}, so the way it is made is supplied by
 * the caller; {@link #MKNOD} runs the host's {@code mknod} program through the runtime's fenced host package
 * ({@link io.paddock.runtime.internal.host.ImageTools#whiteout}), where every process Paddock starts lives.
 *
 * <p>Implementations must create exactly the path given (the parent is a real directory inside the layer
 * and nothing exists at the path) and fail with a {@link io.paddock.SandboxException} otherwise.
 */
@FunctionalInterface
public interface Whiteouts {
    /** Runs {@code mknod PATH c 0 0} with an empty environment; INTERNAL when it fails. Needs root (or
     * {@code CAP_MKNOD}; kernels since 5.8 allow a 0/0 device without it). */
    Whiteouts MKNOD = io.paddock.runtime.internal.host.ImageTools::whiteout;

    void create(Path path);
}
