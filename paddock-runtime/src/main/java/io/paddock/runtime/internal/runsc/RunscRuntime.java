package io.paddock.runtime.internal.runsc;

import io.paddock.SandboxId;
import io.paddock.SandboxSpec;
import io.paddock.runtime.internal.bundle.OciHost;
import io.paddock.runtime.internal.bundle.OciTier;
import io.paddock.runtime.internal.host.Runsc;
import io.paddock.runtime.internal.image.GvisorCompat;
import io.paddock.runtime.internal.image.HostImage;
import io.paddock.runtime.internal.oci.BundlePlan;
import io.paddock.runtime.internal.oci.SeccompProfile;

import java.nio.file.Path;

/**
 * The gVisor tier: each sandbox runs in its own gVisor Sentry (a user-space kernel) with a gofer for file
 * access, started by {@code runsc} from the same bundle, init and FIFO channel as the runc tier. What the
 * tier adds is a second kernel between tenant code and the host's; see docs/SECURITY.md for what that buys
 * and costs.
 *
 * <p>Host side, per sandbox: the Sentry ({@code runsc-sandbox}, host uid 65534 in its own user namespace,
 * seccomp-filtered by gVisor), the gofer ({@code runsc-gofer}, the sandbox's leased host uid range, since it
 * honours the spec's uid mapping) and, on the ptrace platform, one stub process per tenant address space;
 * all of them in the sandbox's cgroups. Destroy kills them by cgroup and removes runsc's state files for the
 * id, which is what {@code runsc delete --force} does, minus its wait for the host's init to reap the
 * Sentry's zombie.
 */
public final class RunscRuntime extends OciTier {
    public static final String NAME = "runsc";

    private final Runsc runsc;
    private final HostImage image;
    private final Path compat;

    private RunscRuntime(OciHost host, Runsc runsc, HostImage image, Path compat) {
        super(host);
        this.runsc = runsc;
        this.image = image;
        this.compat = compat;
    }

    /**
     * Opens the runsc tier on a prepared host.
     *
     * @throws io.paddock.SandboxException FAILED_PRECONDITION with how to install runsc, when it is missing
     *                                     or cannot run here
     */
    public static RunscRuntime open(OciHost host) {
        Path binary = Runsc.locate();
        Runsc runsc = new Runsc(binary, host.tierDir("runsc"));
        runsc.checkUsable();
        Path compat = GvisorCompat.extractTo(host.stateDir().resolve("bin"));
        return new RunscRuntime(host, runsc, host.imageWithPreload(compat), compat);
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String describe() {
        return runsc.version() + " (gVisor; default platform), " + host.cgroups();
    }

    /** The filter is applied inside the Sentry ({@code --oci-seccomp}), which answers every errno with EPERM. */
    @Override
    protected SeccompProfile.Dialect seccompDialect() {
        return SeccompProfile.Dialect.GVISOR;
    }

    /** The host image plus {@link GvisorCompat} in {@code /etc/ld.so.preload}. */
    @Override
    protected HostImage image() {
        return image;
    }

    /** {@link GvisorCompat} for image sandboxes too (their coreutils hit the same statx flag). */
    @Override
    protected java.util.Optional<Path> preloadLibrary() {
        return java.util.Optional.of(compat);
    }

    /**
     * Room for the sandbox's machinery beside its tenant tasks: the Sentry's and gofer's threads (a few
     * dozen, more under load) and, on the ptrace platform, a stub process per tenant address space and stub
     * threads. Without it the Sentry itself hits {@code pids.max} and dies (the whole sandbox, not the
     * fork); the tenant's own limit is {@link #tenantProcessLimit}, enforced inside the Sentry. The host
     * limit stays a bounded backstop.
     */
    @Override
    protected long hostPids(SandboxSpec spec) {
        return 8L * spec.pids() + 512;
    }

    /**
     * Every tenant process gets RLIMIT_NPROC: the Sentry counts the sandbox user's tasks (processes and
     * threads) against it and fails fork and clone with EAGAIN beyond it. It refuses only once the count
     * exceeds the limit (Linux refuses at the limit), so {@code pids - 1} lets the tenant hold at most
     * {@code pids} tasks.
     */
    @Override
    public long tenantProcessLimit(SandboxSpec spec) {
        return spec.pids() - 1;
    }

    @Override
    protected void launch(SandboxId id, Path bundle, BundlePlan plan, Path toInit, Path fromInit, Path log) {
        runsc.runDetached(id.value(), bundle, toInit, fromInit, log, plan.netns().map(ns -> Path.of(ns.path())));
    }

    @Override
    protected boolean hasState(SandboxId id) {
        return runsc.hasState(id.value());
    }

    @Override
    protected void removeFromRuntime(SandboxId id) {
        // The cgroup holds the Sentry, the gofer and the ptrace stubs: killing it stops the whole sandbox.
        host.cgroups().killAndRemove(cgroupsPath(id));
        runsc.killRecorded(id.value());
        runsc.removeState(id.value());
    }
}
