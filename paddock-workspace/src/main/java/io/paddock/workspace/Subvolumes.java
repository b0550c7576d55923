package io.paddock.workspace;

import java.nio.file.Path;

/**
 * The btrfs calls the stores need, made by the host's privileged tool (the engine adapts
 * {@code paddock-rootfs}); paths are on the writable btrfs filesystem.
 */
public interface Subvolumes {
    /** Creates subvolume {@code path} whose contents may not exceed {@code limitBytes}. */
    void create(Path path, long limitBytes);

    /** Creates {@code path} as a writable snapshot of subvolume {@code source}: an O(1) copy. */
    void snapshot(Path source, Path path);

    /** Deletes subvolume {@code path} with everything in it; nothing there is fine. */
    void delete(Path path);
}
