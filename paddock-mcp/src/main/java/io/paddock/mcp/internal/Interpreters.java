package io.paddock.mcp.internal;

import io.paddock.Sandbox;
import io.paddock.SandboxId;
import io.paddock.code.CodeInterpreter;

import java.util.HashMap;
import java.util.Map;

/**
 * One code interpreter per sandbox, so that a named context ({@code run_code}'s {@code context}) keeps its state
 * between calls; the stdio server's (the daemon keeps its own, shared with its REST API). Thread-safe.
 */
public final class Interpreters implements AutoCloseable {
    private final Map<SandboxId, CodeInterpreter> bySandbox = new HashMap<>(); // guarded by this

    public synchronized CodeInterpreter get(Sandbox sandbox) {
        return bySandbox.computeIfAbsent(sandbox.id(), id -> CodeInterpreter.of(sandbox));
    }

    /** Ends the sandbox's contexts (before it is destroyed). */
    public void release(SandboxId id) {
        CodeInterpreter ci;
        synchronized (this) {
            ci = bySandbox.remove(id);
        }
        if (ci != null) {
            ci.close();
        }
    }

    @Override
    public void close() {
        Map<SandboxId, CodeInterpreter> all;
        synchronized (this) {
            all = new HashMap<>(bySandbox);
            bySandbox.clear();
        }
        all.values().forEach(CodeInterpreter::close);
    }
}
