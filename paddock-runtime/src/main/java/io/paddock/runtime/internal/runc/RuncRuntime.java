package io.paddock.runtime.internal.runc;

import io.paddock.SandboxId;
import io.paddock.internal.NativeResource;
import io.paddock.runtime.internal.bundle.OciHost;
import io.paddock.runtime.internal.bundle.OciTier;
import io.paddock.runtime.internal.host.Runc;
import io.paddock.runtime.internal.host.SealedCopy;
import io.paddock.runtime.internal.host.SeccompFilters;
import io.paddock.runtime.internal.oci.BundlePlan;
import io.paddock.runtime.internal.oci.OciSpec;
import io.paddock.runtime.internal.oci.OciSpecBuilder;
import io.paddock.runtime.internal.oci.SeccompProfile;

import java.nio.file.Path;

/**
 * The runc tier: each sandbox is a runc container with its own user namespace and host uid range, its
 * own cgroups, the seccomp allowlist, a read-only root and Paddock's init as PID 1. Everything but the runc
 * command line is shared with the other OCI tiers ({@link OciTier}); runc keeps its state under
 * {@code <state>/runc}.
 *
 * <p>The user namespace is not runc's: runc would create it as root, and the kernel would then charge every
 * sandbox's inotify instances and watches (and its other per-user counts) to host root. It is created by the
 * sandbox's own host uid ({@value #LAUNCHER_RESOURCE}, see {@link Runc.OwnUserns}) and joined by runc.
 */
public final class RuncRuntime extends OciTier {
    public static final String NAME = "runc";
    /** The launcher that creates each sandbox's user namespace as its own host uid ({@code src/main/c/userns_run.c}). */
    public static final String LAUNCHER_RESOURCE = "/io/paddock/runtime/paddock-userns-run";

    /** The holder of runc's sealed copy ({@code src/main/c/sealed_exec.c}). */
    public static final String SEALED_EXEC_RESOURCE = "/io/paddock/runtime/paddock-sealed-exec";
    /** The compiler of seccomp profiles ({@code src/main/c/seccomp_compile.c}). */
    public static final String SECCOMP_COMPILER_RESOURCE = "/io/paddock/runtime/paddock-seccomp";

    private final Runc runc;
    private final Path launcher;
    private final SeccompFilters filters;
    /** The compiler's input for each profile object ({@link SeccompProfile#forArch} makes each once). */
    private final java.util.Map<OciSpec.Seccomp, String> filterInput = java.util.Collections.synchronizedMap(new java.util.IdentityHashMap<>());

    private RuncRuntime(OciHost host, Runc runc, Path launcher, SeccompFilters filters) {
        super(host);
        this.runc = runc;
        this.launcher = launcher;
        this.filters = filters;
        // Compiled now, so that neither the first sandbox waits for it nor a host without libseccomp opens the tier.
        filter(SeccompProfile.forArch(host.facts().arch(), SeccompProfile.Dialect.KERNEL));
    }

    /**
     * Opens the runc tier on a prepared host.
     *
     * @throws io.paddock.SandboxException FAILED_PRECONDITION with how to install runc, when it is missing
     */
    public static RuncRuntime open(OciHost host) {
        Path binary = Runc.locate();
        Path launcher = NativeResource.load(RuncRuntime.class, LAUNCHER_RESOURCE)
                .extractTo(host.stateDir().resolve("bin"), "paddock-userns-run-", "", "r-xr-xr-x");
        Path compiler = NativeResource.load(RuncRuntime.class, SECCOMP_COMPILER_RESOURCE)
                .extractTo(host.stateDir().resolve("bin"), "paddock-seccomp-", "", "r-xr-xr-x");
        Path holder = NativeResource.load(RuncRuntime.class, SEALED_EXEC_RESOURCE)
                .extractTo(host.stateDir().resolve("bin"), "paddock-sealed-exec-", "", "r-xr-xr-x");
        return new RuncRuntime(host, new Runc(binary, host.tierDir("runc"), SealedCopy.of(holder, binary)), launcher,
                new SeccompFilters(compiler, host.stateDir().resolve("seccomp")));
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
    protected boolean joinsPreparedUserns() {
        return true;
    }

    /**
     * The spec without its seccomp section, the init installing the same profile compiled once ({@link #launch}):
     * runc would compile it through libseccomp in every container's init, 3.1-3.4 ms of CPU each
     * (docs/BENCHMARKS.md, "The floors"). {@code paddock-seccomp} makes runc's libseccomp calls, so the program is
     * the one runc installs after its own -ENOSYS stub (system calls newer than the profile), which changes no
     * answer when the profile's default is ENOSYS, as Paddock's is ({@code RuncSeccompTest} compares both).
     */
    @Override
    protected OciSpec runtimeSpec(OciSpec spec) {
        return spec.withSeccompByInit(Runc.SECCOMP_FD);
    }

    @Override
    protected void launch(SandboxId id, Path bundle, BundlePlan plan, Path toInit, Path fromInit, Path log) {
        long nofile = OciSpecBuilder.initRlimits(plan).stream().filter(r -> r.type().equals("RLIMIT_NOFILE"))
                .mapToLong(OciSpec.Rlimit::hard).findFirst().orElseThrow();
        Path link = Path.of(plan.userns().orElseThrow());
        // The profile OciSpecBuilder put in the spec that runtimeSpec took it out of.
        Path filter = filter(SeccompProfile.forArch(plan.host().arch(), plan.seccomp()));
        runc.runDetached(id.value(), bundle, toInit, fromInit, log,
                new Runc.OwnUserns(launcher, plan.uidBase(), OciSpecBuilder.ID_RANGE, nofile, link,
                        plan.netns().map(ns -> new Runc.Netns(Path.of(ns.path()), Path.of(ns.sysfsDir()))),
                        java.util.Optional.of(filter)));
    }

    private Path filter(OciSpec.Seccomp profile) {
        String input = filterInput.computeIfAbsent(profile, SeccompProfile::compilerInput);
        return filters.of(input);
    }

    /**
     * Freezes the sandbox's processes (cgroup freezer): nothing runs, the memory stays resident. A memory
     * checkpoint would need CRIU, which fails on the hosts Paddock targets (docs/WORKSPACES.md).
     */
    @Override
    protected io.paddock.PauseMode suspendInRuntime(SandboxId id, Path bundle) {
        runc.freeze(id.value(), true);
        return io.paddock.PauseMode.FROZEN;
    }

    @Override
    protected void resumeInRuntime(SandboxId id, Path bundle, Path toInit, Path fromInit, Path log) {
        runc.freeze(id.value(), false);
    }

    @Override
    protected boolean hasState(SandboxId id) {
        return runc.hasState(id.value());
    }

    /**
     * {@code runc delete --force} without runc: every process of the sandbox's cgroups is killed (the init is PID 1
     * of the sandbox's own pid namespace, so its death takes the rest) and the cgroups removed, and only then
     * runc's state directory ({@link Runc#removeState}). A container that still runs is what {@code --force} is
     * for; runc would SIGKILL its init and poll for it in 100 ms steps.
     */
    @Override
    protected void removeFromRuntime(SandboxId id) {
        host.cgroups().killAndRemove(cgroupsPath(id));
        runc.removeState(id.value());
    }
}
