package io.paddock;

import java.util.List;

/**
 * Volumes: named directories that outlive sandboxes and are shared by every sandbox that mounts them
 * ({@link VolumeMount}), with a size enforced by the host's filesystem. See docs/WORKSPACES.md.
 */
public interface Volumes {
    /** A volume's size when its creator names none: 1 GiB. */
    ByteSize DEFAULT_SIZE = ByteSize.gib(1);

    /**
     * Creates an empty volume of {@code size} (1 MiB to 1 TiB).
     *
     * @throws SandboxException ALREADY_EXISTS if the name is taken, INVALID_ARGUMENT for a bad name or size
     */
    VolumeInfo create(String name, ByteSize size);

    /** Creates an empty volume of {@link #DEFAULT_SIZE}. */
    default VolumeInfo create(String name) {
        return create(name, DEFAULT_SIZE);
    }

    List<VolumeInfo> list();

    /** @throws SandboxException NOT_FOUND */
    VolumeInfo get(String name);

    /** Deletes a volume and its files; refused (FAILED_PRECONDITION) while a sandbox mounts it. */
    void remove(String name);
}
