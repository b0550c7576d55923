package io.paddock.image.internal.registry;

import io.paddock.image.internal.oci.Descriptor;
import io.paddock.image.internal.oci.Digest;
import io.paddock.image.internal.oci.ImageRef;

/**
 * What a push reports; every method has a no-op default. Called on the pushing thread: for each blob
 * {@link #blobStarted} then {@link #blobDone}, in the order given, then {@link #manifestPushed} once.
 * Implementations must be quick and must not throw.
 */
public interface PushListener {
    PushListener NONE = new PushListener() {
    };

    default void blobStarted(Descriptor blob) {
    }

    /** The registry has the blob; {@code alreadyPresent} when it had it before (nothing was uploaded). */
    default void blobDone(Descriptor blob, boolean alreadyPresent) {
    }

    default void manifestPushed(ImageRef target, Digest manifest) {
    }
}
