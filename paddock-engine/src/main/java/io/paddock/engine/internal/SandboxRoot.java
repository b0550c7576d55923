package io.paddock.engine.internal;

import io.paddock.SandboxSpec;
import io.paddock.image.internal.SandboxImage;
import io.paddock.runtime.ImageRootfs;
import io.paddock.runtime.internal.oci.OciSpecBuilder;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * What a sandbox's image decides about it: the root the tier mounts (none for the {@code host} image), and
 * how its processes start: the image's environment, user and working directory.
 *
 * @param rootfs  the layers, or empty for the {@code host} image
 * @param env     the environment every command starts from, before the sandbox's and the command's own
 * @param uid     the user commands and file operations run as
 * @param gid     their group
 * @param workdir where commands start unless they say otherwise
 * @param imageId the stored image's id ({@code sha256:…}), or empty for {@code host}
 */
record SandboxRoot(Optional<ImageRootfs> rootfs, Map<String, String> env, int uid, int gid, String workdir,
                   Optional<String> imageId) {
    static SandboxRoot host(SandboxSpec spec) {
        return new SandboxRoot(Optional.empty(), ExecEnvironment.BASE, OciSpecBuilder.SANDBOX_UID,
                OciSpecBuilder.SANDBOX_GID, spec.workdir(), Optional.empty());
    }

    /**
     * An image's root: the spec's working directory wins when it is not the default; the base environment
     * is the image's, completed with Paddock's defaults (HOME, USER, … for the image's user).
     */
    static SandboxRoot of(SandboxSpec spec, SandboxImage image) {
        return of(spec, image, false);
    }

    /** As {@link #of(SandboxSpec, SandboxImage)}; {@code buildStep} for an image build's RUN sandbox. */
    static SandboxRoot of(SandboxSpec spec, SandboxImage image, boolean buildStep) {
        String workdir = spec.workdir().equals(SandboxSpec.DEFAULT_WORKDIR) ? image.workdir() : spec.workdir();
        Map<String, String> env = new LinkedHashMap<>(image.env());
        boolean root = image.uid() == 0;
        env.putIfAbsent("HOME", root ? "/root" : SandboxSpec.DEFAULT_WORKDIR);
        env.putIfAbsent("USER", root ? "root" : "sandbox");
        env.putIfAbsent("LOGNAME", env.get("USER"));
        env.putIfAbsent("LANG", "C.UTF-8");
        env.putIfAbsent("TMPDIR", "/tmp");
        env.putIfAbsent("HOSTNAME", OciSpecBuilder.HOSTNAME);
        return new SandboxRoot(Optional.of(new ImageRootfs(image.layersDir(), image.layers(), image.uid(), image.gid(),
                workdir, buildStep, image.onHostRoot())), Map.copyOf(env), image.uid(), image.gid(), workdir, Optional.of(image.id().toString()));
    }
}
