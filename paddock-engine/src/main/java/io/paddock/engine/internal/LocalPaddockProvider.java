package io.paddock.engine.internal;

import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.spi.PaddockProvider;

/** Registers the embedded engine as {@code Paddock.local()}. */
public final class LocalPaddockProvider implements PaddockProvider {
    @Override
    public String kind() {
        return "local";
    }

    @Override
    public Paddock local(LocalOptions options) {
        return new LocalPaddock(options);
    }
}
