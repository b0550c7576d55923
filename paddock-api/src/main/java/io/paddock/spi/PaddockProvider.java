package io.paddock.spi;

import io.paddock.LocalOptions;
import io.paddock.Paddock;

import java.net.URI;

/**
 * Service-provider interface behind {@link Paddock#local()}; implementations register themselves in
 * {@code META-INF/services/io.paddock.spi.PaddockProvider}. Not for application use.
 */
public interface PaddockProvider {
    /** {@code local} for the embedded engine, {@code remote} for the client of a Paddock daemon. */
    String kind();

    default Paddock local(LocalOptions options) {
        throw new UnsupportedOperationException(kind() + " provider has no local engine");
    }

    default Paddock connect(URI url, String token) {
        throw new UnsupportedOperationException(kind() + " provider cannot connect to a daemon");
    }
}
