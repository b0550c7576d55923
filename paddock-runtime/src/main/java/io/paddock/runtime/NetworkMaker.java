package io.paddock.runtime;

import java.nio.file.Path;
import java.util.Optional;

/**
 * Makes a sandbox's network namespace when its tier asks, during the start, so that the tier can say which user
 * namespace must own it: joining a network namespace takes CAP_SYS_ADMIN in the user namespace that owns it, and
 * the gVisor tier runs runsc in a user namespace of the sandbox's own. The tier neither knows how the namespace is
 * made nor removes it.
 */
@FunctionalInterface
public interface NetworkMaker {
    /**
     * @param owner the user namespace (a file such as {@code /proc/<pid>/ns/user}, valid during this call) the
     *              network namespace must be created in; empty for the host's
     */
    NetworkNamespace make(Optional<Path> owner);
}
