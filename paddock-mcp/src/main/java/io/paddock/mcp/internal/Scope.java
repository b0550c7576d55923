package io.paddock.mcp.internal;

import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxInfo;
import io.paddock.code.CodeInterpreter;

import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.UnaryOperator;

/**
 * What one tool call may reach: a {@link Paddock} (the whole engine, a remote daemon, or the daemon as one
 * tenant sees it), how a sandbox is shown to the caller, how it is destroyed, and whose code interpreter
 * keeps its code contexts. Immutable.
 *
 * @param paddock the sandboxes this caller may create, find and list
 * @param view    a sandbox's description as the caller sees it (a tenant's own name, no reserved label)
 * @param destroy destroys a sandbox, ending its code contexts first
 * @param code    the sandbox's interpreter, kept (and closed) by the scope's owner: the tools never close it
 * @param audit   hears each call of a tool that may change something (the daemon's audit log)
 */
public record Scope(Paddock paddock, UnaryOperator<SandboxInfo> view, Consumer<Sandbox> destroy,
                    Function<Sandbox, CodeInterpreter> code, ToolAudit audit) {
    public Scope {
        Objects.requireNonNull(paddock, "paddock");
        Objects.requireNonNull(view, "view");
        Objects.requireNonNull(destroy, "destroy");
        Objects.requireNonNull(code, "code");
        Objects.requireNonNull(audit, "audit");
    }

    /** A scope whose calls no one audits. */
    public Scope(Paddock paddock, UnaryOperator<SandboxInfo> view, Consumer<Sandbox> destroy,
                 Function<Sandbox, CodeInterpreter> code) {
        this(paddock, view, destroy, code, ToolAudit.NONE);
    }

    /** The whole of {@code paddock}, shown as it is, with code contexts kept in {@code interpreters}. */
    public static Scope of(Paddock paddock, Interpreters interpreters) {
        return new Scope(paddock, UnaryOperator.identity(), sb -> {
            interpreters.release(sb.id());
            sb.destroy();
        }, interpreters::get);
    }
}
