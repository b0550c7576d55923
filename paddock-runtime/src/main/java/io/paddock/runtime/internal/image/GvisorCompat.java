package io.paddock.runtime.internal.image;

import io.paddock.internal.NativeResource;

import java.nio.file.Path;

/**
 * The runsc tier's preload library ({@code src/main/c/gvisor_compat.c}, built by make into the classpath
 * resource {@value #RESOURCE}): it drops {@code AT_NO_AUTOMOUNT} from {@code statx}/{@code fstatat}, which
 * the gVisor build Debian ships rejects with EINVAL, so that coreutils' {@code ls}, {@code stat},
 * {@code du} and {@code cp} work on that tier.
 */
public final class GvisorCompat {
    public static final String RESOURCE = "/io/paddock/runtime/gvisor-compat.so";

    private GvisorCompat() {
    }

    /** Writes the library as {@code dir/gvisor-compat-<sha12>.so} unless it is already there; returns its path. */
    public static Path extractTo(Path dir) {
        return NativeResource.load(GvisorCompat.class, RESOURCE).extractTo(dir, "gvisor-compat-", ".so", "r-xr-xr-x");
    }
}
