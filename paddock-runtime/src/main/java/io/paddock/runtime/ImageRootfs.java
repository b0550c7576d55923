package io.paddock.runtime;

import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * The root filesystem of a sandbox whose image is not {@code host}: read-only layer directories, already
 * unpacked by whoever made them (the image store), stacked with a writable layer on disk. The tier mounts
 * them; it does not know or care where they came from.
 *
 * <p>Each layer is a directory in the overlay format (a whiteout is a 0/0 character device, an opaque
 * directory carries {@code user.overlay.opaque=y}) whose files are owned by the image's own ids
 * (0..65535); the tier maps them onto the sandbox's host range when it mounts them.
 *
 * @param layersDir the directory holding the layer directories
 * @param layers    names of layer directories inside {@code layersDir}, topmost first
 * @param uid       the user tenant processes and file operations run as (inside the sandbox)
 * @param gid       their group
 * @param workdir   the working directory of commands that name none, absolute
 * @param buildStep whether this is an image build's step: its root commands keep the capabilities
 *                  {@code docker build} gives RUN (over the sandbox's own user namespace only), so that package
 *                  managers work. Never set for tenants' sandboxes.
 * @param onHostRoot whether the layers stack on the tier's host image root (an image based on {@code host}, such
 *                  as a snapshot of a {@code host} sandbox): the tier generates that root inside {@code layersDir}
 *                  as the lowest layer and gives the sandbox the host image's read-only {@code /usr}, {@code /bin},
 *                  {@code /lib*} and its in-memory {@code /tmp} and {@code /workspace}
 */
public record ImageRootfs(Path layersDir, List<String> layers, int uid, int gid, String workdir, boolean buildStep,
                          boolean onHostRoot) {
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");

    /** Layers that are the whole root. */
    public ImageRootfs(Path layersDir, List<String> layers, int uid, int gid, String workdir, boolean buildStep) {
        this(layersDir, layers, uid, gid, workdir, buildStep, false);
    }

    public ImageRootfs {
        Objects.requireNonNull(layersDir, "layersDir");
        layers = List.copyOf(layers);
        if (layers.isEmpty()) {
            throw new IllegalArgumentException("an image needs at least one layer");
        }
        for (String l : layers) {
            if (!NAME.matcher(l).matches()) {
                throw new IllegalArgumentException("bad layer directory name: " + l);
            }
        }
        if (uid < 0 || uid > 65535 || gid < 0 || gid > 65535) {
            throw new IllegalArgumentException("uid and gid must be within 0..65535, got " + uid + ":" + gid);
        }
        if (!workdir.startsWith("/")) {
            throw new IllegalArgumentException("workdir must be absolute: " + workdir);
        }
    }
}
