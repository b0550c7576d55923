package io.paddock.engine.internal;

import io.paddock.CodebaseChange;
import io.paddock.CodebaseInfo;
import io.paddock.CodebaseMount;
import io.paddock.CodebaseOptions;
import io.paddock.Codebases;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.runtime.SandboxRuntime;
import io.paddock.workspace.CodebaseStore;

import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/** {@link Codebases} of the embedded engine: the store on this host, and the sandboxes of this engine. */
final class LocalCodebases implements Codebases {
    private static final System.Logger LOG = System.getLogger(LocalCodebases.class.getName());
    private final SandboxManager manager;

    LocalCodebases(SandboxManager manager) {
        this.manager = manager;
    }

    @Override
    public CodebaseInfo create(String name, Path dir, CodebaseOptions options) {
        return manager.workspaces().codebases().create(name, Objects.requireNonNull(dir, "dir").toAbsolutePath(),
                Objects.requireNonNull(options, "options"));
    }

    @Override
    public List<CodebaseInfo> list() {
        return manager.workspaces().codebases().list();
    }

    @Override
    public CodebaseInfo get(String name) {
        return manager.workspaces().codebases().get(name);
    }

    @Override
    public void remove(String name) {
        // A sandbox is among the engine's (CREATING) before its codebase is mounted, and until it is STOPPED after.
        manager.workspaces().codebases().remove(name, () -> {
            List<String> users = manager.allSandboxes().stream()
                    .filter(s -> s.currentState() != io.paddock.SandboxState.STOPPED)
                    .filter(s -> s.spec().codebase().map(c -> c.codebase().equals(name)).orElse(false))
                    .map(s -> s.id().value()).toList();
            if (!users.isEmpty()) {
                throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "codebase '" + name + "' is mounted by "
                        + String.join(", ", users) + "; destroy them first");
            }
        });
    }

    @Override
    public List<CodebaseChange> diff(SandboxId sandbox) {
        Mounted m = mounted(sandbox);
        synchronized (m.sandbox().pauseLock) { // no pause or resume while the layer is read frozen
            return manager.workspaces().codebases().diff(sandbox.value(), m.mount(), m.upper(), hold(m));
        }
    }

    @Override
    public CodebaseInfo commit(SandboxId sandbox) {
        Mounted m = mounted(sandbox);
        synchronized (m.sandbox().pauseLock) {
            return manager.workspaces().codebases().commit(sandbox.value(), m.mount(), m.upper(), hold(m));
        }
    }

    /**
     * Freezes the sandbox while its layer is read, so that nothing in it changes between the store's check of an
     * entry and its read (a directory swapped for a link to a host path, a file for a FIFO). A sandbox the user
     * paused is already stopped: it is neither frozen again nor thawed. Called with the sandbox's pause lock held.
     */
    private CodebaseStore.LayerHold hold(Mounted m) {
        return () -> {
            if (m.sandbox().currentState() == io.paddock.SandboxState.PAUSED) {
                return () -> { };
            }
            AutoCloseable frozen = m.runtime().freeze(m.sandbox().id());
            return () -> {
                try {
                    frozen.close();
                } catch (Exception e) {
                    LOG.log(System.Logger.Level.WARNING, "thawing sandbox " + m.sandbox().id() + " after reading its"
                            + " codebase layer failed: " + e);
                }
            };
        };
    }

    private record Mounted(CodebaseMount mount, Path upper, ManagedSandbox sandbox, SandboxRuntime runtime) {
    }

    private Mounted mounted(SandboxId id) {
        ManagedSandbox sb = manager.get(Objects.requireNonNull(id, "sandbox"));
        CodebaseMount mount = sb.spec().codebase().orElseThrow(() -> new SandboxException(ErrorCode.FAILED_PRECONDITION,
                "sandbox " + id + " has no codebase"));
        if (!sb.currentState().isLive()) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "sandbox " + id + " has stopped; its changes were"
                    + " discarded with it");
        }
        SandboxRuntime runtime = manager.runtimeFor(sb);
        SandboxRuntime.WritableLayer layer = runtime.mountLayer(id, Workspaces.CODEBASE_MOUNT).orElseThrow(() ->
                new SandboxException(ErrorCode.FAILED_PRECONDITION, "sandbox " + id + "'s codebase layer is not on this host"));
        return new Mounted(mount, layer.upper(), sb, runtime);
    }
}
