package io.paddock.mcp.internal;

import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxInfo;

import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;

/**
 * What one tool call may reach: a {@link Paddock} (the whole engine, a remote daemon, or the daemon as one
 * tenant sees it), how a sandbox is shown to the caller, and how it is destroyed. Immutable.
 *
 * @param paddock the sandboxes this caller may create, find and list
 * @param view    a sandbox's description as the caller sees it (a tenant's own name, no reserved label)
 * @param destroy destroys a sandbox (the daemon ends its code contexts first)
 */
public record Scope(Paddock paddock, UnaryOperator<SandboxInfo> view, Consumer<Sandbox> destroy) {
    public Scope {
        Objects.requireNonNull(paddock, "paddock");
        Objects.requireNonNull(view, "view");
        Objects.requireNonNull(destroy, "destroy");
    }

    /** The whole of {@code paddock}, shown as it is. */
    public static Scope of(Paddock paddock) {
        return new Scope(paddock, UnaryOperator.identity(), Sandbox::destroy);
    }
}
