package io.paddock;

import java.util.List;

/**
 * Volumes: named directories that outlive sandboxes and are shared by every sandbox that mounts them
 * ({@link VolumeMount}), with a size enforced by the host's filesystem. See docs/WORKSPACES.md.
 */
public interface Volumes {
    /** @throws SandboxException ALREADY_EXISTS if the name is taken, INVALID_ARGUMENT for a bad name or size */
    VolumeInfo create(String name, ByteSize size);

    List<VolumeInfo> list();

    /** @throws SandboxException NOT_FOUND */
    VolumeInfo get(String name);

    /** Deletes a volume and its files; refused (FAILED_PRECONDITION) while a sandbox mounts it. */
    void remove(String name);
}
