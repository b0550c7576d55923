package io.paddock.runtime;

import java.nio.file.Path;
import java.util.Objects;

/**
 * A directory a sandbox gets besides its root, prepared by whoever starts it (the engine's workspace layer);
 * the tier mounts it and does not know what it is. Both kinds hold files owned by the image's own ids
 * (0..65535, and anything else for "nobody"), which the tier maps onto the sandbox's host range.
 */
public sealed interface SandboxMount permits SandboxMount.Shared, SandboxMount.Layered {
    /** Where it appears in the sandbox: absolute and normalised (checked by the spec's own types). */
    String target();

    /**
     * A directory shared as it is (a volume): the sandbox's writes land in it, with the ids they have in the
     * sandbox, so that sandboxes of different ranges share it.
     */
    record Shared(Path dir, String target, boolean readOnly) implements SandboxMount {
        public Shared {
            Objects.requireNonNull(dir, "dir");
            checkTarget(target);
        }
    }

    /**
     * A read-only directory with a writable layer of the sandbox's own (a codebase's view): the sandbox's
     * writes land in that layer, in its writable subvolume (so they count in its {@code disk}), never in
     * {@code lower}. The tier says where the layer is ({@link SandboxRuntime#mountLayer}).
     *
     * @param lower    the directory, read-only, named by its parent and its name (as an image's layers are)
     * @param rootMode the mode of the mount's root directory in the sandbox
     * @param rootUid  its owner in the image's ids, or -1 for one the sandbox cannot map (it cannot write there)
     * @param rootGid  its group, as {@code rootUid}
     */
    record Layered(Path lower, String target, int rootMode, int rootUid, int rootGid) implements SandboxMount {
        public Layered {
            Objects.requireNonNull(lower, "lower");
            if (lower.getParent() == null) {
                throw new IllegalArgumentException("lower needs a parent directory: " + lower);
            }
            checkTarget(target);
            if (rootMode < 0 || rootMode > 07777 || rootUid < -1 || rootUid > 65535 || rootGid < -1 || rootGid > 65535) {
                throw new IllegalArgumentException("bad root mode or owner: " + rootMode + " " + rootUid + ":" + rootGid);
            }
        }
    }

    private static void checkTarget(String target) {
        Objects.requireNonNull(target, "target");
        if (!target.startsWith("/") || target.equals("/") || !Path.of(target).normalize().toString().equals(target)) {
            throw new IllegalArgumentException("a mount's target must be an absolute, normal path other than /: " + target);
        }
    }
}
