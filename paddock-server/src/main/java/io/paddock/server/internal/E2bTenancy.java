package io.paddock.server.internal;

import io.paddock.ErrorCode;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.SandboxInfo;
import io.paddock.SandboxQuery;
import io.paddock.SandboxSpec;
import io.paddock.e2b.E2bAccess;

import java.util.List;

/**
 * The daemon's rules for the E2B listener: an E2B API key is a Paddock token (the operator's or a tenant's),
 * checked by the same {@link AuthGuard} (with its failure limit), and what each holder sees is {@link Tenancy}'s
 * answer, exactly as over REST. Thread-safe.
 */
public final class E2bTenancy implements E2bAccess {
    private final Paddock paddock;
    private final AuthGuard auth;
    private final Tenancy tenancy;

    public E2bTenancy(Paddock paddock, AuthGuard auth, Tenancy tenancy) {
        this.paddock = paddock;
        this.auth = auth;
        this.tenancy = tenancy;
    }

    @Override
    public Holder authenticate(String clientAddress, String apiKey) {
        Caller caller;
        try {
            caller = auth.check(clientAddress, apiKey == null || apiKey.isEmpty() ? List.of() : List.of("Bearer " + apiKey), false);
        } catch (HttpError e) {
            throw new SandboxException(e.code(), e.getMessage());
        }
        return new Holder() {
            @Override
            public Sandbox create(SandboxSpec spec) {
                return tenancy.create(caller, spec);
            }

            @Override
            public Sandbox get(String id) {
                return tenancy.get(caller, id);
            }

            @Override
            public List<SandboxInfo> list(SandboxQuery.Builder query) {
                query.build().labels().keySet().forEach(k -> tenancy.checkFilter(caller, k));
                return tenancy.list(caller, query);
            }

            @Override
            public SandboxInfo view(SandboxInfo info) {
                return tenancy.view(caller, info);
            }
        };
    }

    /** Templates' images are the daemon's own (their recipes are the operator's options), built as the operator. */
    @Override
    public java.util.Optional<io.paddock.Images> images() {
        return java.util.Optional.of(paddock.images());
    }

    @Override
    public Sandbox sandbox(String id) {
        if (!SandboxId.isValid(id)) {
            throw new SandboxException(ErrorCode.NOT_FOUND, "no sandbox " + Limits.shorten(id));
        }
        return paddock.get(new SandboxId(id));
    }
}
