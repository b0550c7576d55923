package io.paddock.image.internal.layer;

import io.paddock.image.internal.oci.Digest;

import java.util.Objects;

/**
 * A layer written by {@link LayerWriter}.
 *
 * @param diffId sha256 of the uncompressed tar (the image config's {@code rootfs.diff_ids} entry)
 * @param digest sha256 of the bytes written (the manifest's layer digest; equal to {@code diffId} when not
 *               compressed)
 * @param size   number of bytes written (the manifest's layer size)
 */
public record LayerBlob(Digest diffId, Digest digest, long size) {
    public LayerBlob {
        Objects.requireNonNull(diffId, "diffId");
        Objects.requireNonNull(digest, "digest");
    }
}
