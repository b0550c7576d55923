package io.paddock.image.internal.layer;

import io.paddock.image.internal.oci.Digest;

import java.util.Objects;

/**
 * What {@link LayerExtractor#extract} did with one layer.
 *
 * @param diffId            sha256 of the whole uncompressed tar stream, end-of-archive blocks and any trailing
 *                          bytes included: the value an image config lists in {@code rootfs.diff_ids}
 * @param uncompressedBytes length of that stream
 * @param entries           tar entries read (PAX and GNU long-name headers are part of the entry they describe)
 * @param skipped           entries deliberately not extracted: device nodes, FIFOs, tar types with no meaning
 *                          here, AUFS metadata ({@code .wh..wh.*} other than the opaque marker)
 */
public record LayerResult(Digest diffId, long uncompressedBytes, long entries, long skipped) {
    public LayerResult {
        Objects.requireNonNull(diffId, "diffId");
    }
}
