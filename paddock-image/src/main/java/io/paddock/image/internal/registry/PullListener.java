package io.paddock.image.internal.registry;

import io.paddock.image.internal.oci.Descriptor;

/**
 * What a pull reports while it fetches layers; every method has a no-op default. Called on the pulling
 * thread, one layer at a time in manifest order: for each layer {@link #layerStarted} once, then any number
 * of {@link #layerProgress} calls with growing counts, then {@link #layerDone} once (a failed download ends
 * with the pull's exception instead). Implementations must be quick and must not throw.
 */
public interface PullListener {
    PullListener NONE = new PullListener() {
    };

    default void layerStarted(Descriptor layer) {
    }

    /** {@code bytesDone} of {@code layer.size()} bytes have arrived and been stored. */
    default void layerProgress(Descriptor layer, long bytesDone) {
    }

    /** The layer is in the blob store; {@code cached} when it was there before this pull. */
    default void layerDone(Descriptor layer, boolean cached) {
    }
}
