package io.paddock.server.internal;

import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxId;
import io.paddock.SandboxInfo;
import io.paddock.SandboxQuery;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;

import java.util.List;

/**
 * The engine's sandboxes as one {@link Caller} may reach them, as a {@link Paddock}: creates go through
 * {@link Tenancy#create} (reserved label, per-tenant names and cap), lookups through {@link Tenancy#get} and
 * {@link Tenancy#getByName} (someone else's sandbox is as unknown as a missing one), lists are scoped to the
 * caller. For code written once over {@code Paddock}, such as the MCP tools. Answers carry the engine's view
 * of a sandbox; show them through {@link Tenancy#view}. Images, codebases and volumes are not offered.
 * Closing it does nothing. Thread-safe.
 */
public final class TenantPaddock implements Paddock {
    private final Tenancy tenancy;
    private final Caller caller;

    public TenantPaddock(Tenancy tenancy, Caller caller) {
        this.tenancy = tenancy;
        this.caller = caller;
    }

    @Override
    public Sandbox create(SandboxSpec spec) {
        return tenancy.create(caller, spec);
    }

    @Override
    public Sandbox get(SandboxId id) {
        return tenancy.get(caller, id.value());
    }

    @Override
    public Sandbox get(String id) {
        return tenancy.get(caller, id); // malformed ids answer as unknown ones do
    }

    @Override
    public Sandbox getByName(String name) {
        return tenancy.getByName(caller, name);
    }

    @Override
    public List<SandboxInfo> list(SandboxQuery query) {
        SandboxQuery.Builder b = SandboxQuery.builder();
        query.labels().forEach((k, v) -> {
            tenancy.checkFilter(caller, k);
            b.label(k, v);
        });
        if (!query.states().isEmpty()) {
            b.state(query.states().toArray(new SandboxState[0]));
        }
        query.name().ifPresent(n -> b.name(tenancy.filterName(caller, n)));
        return tenancy.list(caller, b);
    }

    @Override
    public void close() {
        // the daemon owns the engine
    }
}
