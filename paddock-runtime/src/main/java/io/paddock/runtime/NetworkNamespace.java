package io.paddock.runtime;

import java.nio.file.Path;
import java.util.Objects;

/**
 * A network namespace prepared for a sandbox by Paddock's network layer: the tier runs the sandbox in it
 * and gives it {@code resolvConf} as {@code /etc/resolv.conf}. The tier neither makes nor removes it, and
 * does not know what policy it carries.
 *
 * @param path       the namespace's file (for example {@code /run/netns/paddock-…}), owned by the host's user
 *                   namespace, so that nothing inside the sandbox can reconfigure it
 * @param resolvConf the sandbox's resolver configuration
 */
public record NetworkNamespace(Path path, String resolvConf) {
    public NetworkNamespace {
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(resolvConf, "resolvConf");
    }
}
