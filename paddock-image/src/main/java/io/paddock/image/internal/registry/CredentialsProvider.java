package io.paddock.image.internal.registry;

import java.util.Objects;
import java.util.Optional;

/**
 * Where the registry client finds credentials: asked once per pull or push with the registry as an
 * {@link io.paddock.image.internal.oci.ImageRef#registry()} names it ({@code 127.0.0.1:5000},
 * {@code docker.io}). Implementations must be safe to call from several threads.
 */
@FunctionalInterface
public interface CredentialsProvider {
    /** The credentials for {@code registry}, or empty to go anonymous. */
    Optional<Credentials> credentialsFor(String registry);

    /** Anonymous access everywhere. */
    static CredentialsProvider none() {
        return registry -> Optional.empty();
    }

    /** {@code credentials} for exactly {@code registry} (host[:port]), anonymous elsewhere. */
    static CredentialsProvider of(String registry, Credentials credentials) {
        Objects.requireNonNull(registry, "registry");
        Objects.requireNonNull(credentials, "credentials");
        return r -> registry.equals(r) ? Optional.of(credentials) : Optional.empty();
    }
}
