package io.paddock.runtime;

import java.nio.file.Path;
import java.util.Objects;

/**
 * A network namespace prepared for a sandbox by Paddock's network layer: the tier runs the sandbox in it
 * and gives it {@code resolvConf} as {@code /etc/resolv.conf}. The tier neither makes nor removes it, and
 * does not know what policy it carries.
 *
 * @param path       the namespace's file (for example {@code /run/netns/paddock-…}), owned by the host's user
 *                   namespace or by the one the tier named ({@link NetworkMaker}), in which no process of the
 *                   sandbox runs, so that nothing inside the sandbox can reconfigure it
 * @param resolvConf the sandbox's resolver configuration
 * @param trustedCa  a CA certificate (PEM) the sandbox must trust besides its image's own: added to its
 *                   {@code /etc/ssl/certs/ca-certificates.crt} when its root has one (the egress proxy's)
 */
public record NetworkNamespace(Path path, String resolvConf, java.util.Optional<String> trustedCa) {
    public NetworkNamespace {
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(resolvConf, "resolvConf");
        Objects.requireNonNull(trustedCa, "trustedCa");
    }

    public NetworkNamespace(Path path, String resolvConf) {
        this(path, resolvConf, java.util.Optional.empty());
    }
}
