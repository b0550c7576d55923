package io.paddock.server.internal;

import java.util.Objects;
import java.util.Optional;

/**
 * Who made an authenticated request: the operator (the daemon's own token, which sees and manages every
 * sandbox) or one tenant (a token of the tenants file, which sees only its own). Immutable.
 *
 * @param tenant the tenant's name; empty for the operator
 */
public record Caller(Optional<String> tenant) {
    /** The daemon's own token. */
    public static final Caller OPERATOR = new Caller(Optional.empty());

    public Caller {
        Objects.requireNonNull(tenant, "tenant");
    }

    public static Caller tenant(String name) {
        return new Caller(Optional.of(name));
    }

    public boolean isOperator() {
        return tenant.isEmpty();
    }
}
