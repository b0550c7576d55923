package io.paddock;

import java.net.ProxySelector;
import java.net.URI;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * Where the requests of a pull or push made on someone else's behalf may go ({@link Images#pull(String,
 * RegistryAuth, ImageListener, DestinationRule)}): every URL is given to {@link #accept} before a request goes
 * there (the registry, each redirect's target, each token realm), which throws a {@link SandboxException} to refuse
 * it. In-process only.
 *
 * <p>A check of a URL resolves its host, and the HTTP client resolves it again when it connects: a name that
 * answers differently the second time (DNS rebinding) would pass the check and connect elsewhere. A rule that
 * closes that gap gives a {@link #proxy()}: every connection of the pull goes through it, and it resolves the host
 * once, refuses unless the rule allows the addresses, and connects to the address it checked (TLS stays end to end
 * between the client and the registry).
 */
@FunctionalInterface
public interface DestinationRule extends Consumer<URI> {
    /** Every destination allowed, connections made directly: the operator's own pulls. */
    DestinationRule ANYWHERE = uri -> { };

    /** Throws a {@link SandboxException} (PERMISSION_DENIED) to refuse {@code uri} before a request goes there. */
    @Override
    void accept(URI uri);

    /**
     * The proxy (HTTP {@code CONNECT}) that every connection of the pull or push must go through, which connects
     * only to an address it resolved and checked itself; empty to connect directly (the check is then only as good
     * as the name's next answer). Empty by default.
     */
    default Optional<ProxySelector> proxy() {
        return Optional.empty();
    }
}
