package io.paddock.image.internal.registry;

import io.paddock.image.internal.oci.Descriptor;
import io.paddock.image.internal.oci.Digest;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The result of a pull. When it is returned, the manifest, the index (if any), the configuration and every
 * layer are in the blob store, each verified against its digest and size.
 *
 * @param manifestDigest    the digest of the platform's image manifest
 * @param manifestMediaType {@code MediaTypes.OCI_MANIFEST} or {@code MediaTypes.DOCKER_MANIFEST}
 * @param config            the digest of the image configuration blob
 * @param layers            the layers, bottom first, as the manifest lists them
 * @param index             the digest of the index (or Docker manifest list) the manifest was chosen from,
 *                          when the reference named one
 */
public record Pulled(Digest manifestDigest, String manifestMediaType, Digest config, List<Descriptor> layers,
                     Optional<Digest> index) {
    public Pulled {
        Objects.requireNonNull(manifestDigest, "manifestDigest");
        Objects.requireNonNull(manifestMediaType, "manifestMediaType");
        Objects.requireNonNull(config, "config");
        layers = List.copyOf(layers);
        Objects.requireNonNull(index, "index");
    }
}
