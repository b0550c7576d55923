package io.paddock.spi;

import io.paddock.LocalOptions;
import io.paddock.Paddock;

/**
 * Service-provider interface behind {@link Paddock#local()}; implementations register themselves in
 * {@code META-INF/services/io.paddock.spi.PaddockProvider}. Not for application use.
 */
public interface PaddockProvider {
    /** {@code local} for the embedded engine. */
    String kind();

    Paddock local(LocalOptions options);
}
