package io.paddock.client.internal;

import io.paddock.Paddock;
import io.paddock.spi.PaddockProvider;

import java.net.URI;

/**
 * Registers the client of a Paddock daemon as {@link Paddock#connect(URI, String)}. Public only because
 * {@link java.util.ServiceLoader} needs it; not for application use.
 */
public final class RemotePaddockProvider implements PaddockProvider {
    @Override
    public String kind() {
        return "remote";
    }

    @Override
    public Paddock connect(URI url, String token) {
        return RemotePaddock.connect(url, token);
    }
}
