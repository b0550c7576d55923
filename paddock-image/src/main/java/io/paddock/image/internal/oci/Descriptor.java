package io.paddock.image.internal.oci;

import java.util.Objects;

/**
 * An OCI content descriptor reduced to what locating and verifying content needs: the media type, the
 * digest and the exact size in bytes. Content fetched for a descriptor must hash to {@link #digest()} and
 * be exactly {@link #size()} bytes long.
 *
 * @param mediaType the content's media type, for example {@link MediaTypes#OCI_LAYER_GZIP}; never blank
 * @param digest    the sha256 digest of the content
 * @param size      the content's length in bytes; never negative
 */
public record Descriptor(String mediaType, Digest digest, long size) {
    public Descriptor {
        Objects.requireNonNull(mediaType, "mediaType");
        Objects.requireNonNull(digest, "digest");
        if (mediaType.isBlank()) {
            throw new IllegalArgumentException("blank media type");
        }
        if (size < 0) {
            throw new IllegalArgumentException("negative size " + size);
        }
    }
}
