package io.paddock.runtime.internal.runc;

import io.paddock.SandboxId;
import io.paddock.runtime.internal.bundle.OciHost;
import io.paddock.runtime.internal.bundle.OciTier;
import io.paddock.runtime.internal.host.Runc;

import java.nio.file.Path;

/**
 * The runc tier: each sandbox is a runc container with its own user namespace and host uid range, its
 * own cgroups, the seccomp allowlist, a read-only root and Paddock's init as PID 1. Everything but the runc
 * command line is shared with the other OCI tiers ({@link OciTier}); runc keeps its state under
 * {@code <state>/runc}.
 */
public final class RuncRuntime extends OciTier {
    public static final String NAME = "runc";

    private final Runc runc;

    private RuncRuntime(OciHost host, Runc runc) {
        super(host);
        this.runc = runc;
    }

    /**
     * Opens the runc tier on a prepared host.
     *
     * @throws io.paddock.SandboxException FAILED_PRECONDITION with how to install runc, when it is missing
     */
    public static RuncRuntime open(OciHost host) {
        Path binary = Runc.locate();
        return new RuncRuntime(host, new Runc(binary, host.tierDir("runc")));
    }

    /** Checks the host, prepares the state directory and opens the runc tier on it. */
    public static RuncRuntime open(Path stateDir, Path initBinary) {
        return open(OciHost.open(stateDir, initBinary));
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String describe() {
        return runc.version() + ", " + host.cgroups();
    }

    @Override
    protected void launch(SandboxId id, Path bundle, Path toInit, Path fromInit, Path log) {
        runc.runDetached(id.value(), bundle, toInit, fromInit, log);
    }

    @Override
    protected boolean hasState(SandboxId id) {
        return runc.hasState(id.value());
    }

    @Override
    protected void removeFromRuntime(SandboxId id) {
        runc.deleteForce(id.value());
    }
}
