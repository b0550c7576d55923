package io.paddock.runtime.internal.runsc;

import io.paddock.SandboxId;
import io.paddock.SandboxSpec;
import io.paddock.internal.NativeResource;
import io.paddock.runtime.internal.bundle.OciHost;
import io.paddock.runtime.internal.bundle.OciTier;
import io.paddock.runtime.internal.bundle.UidLeases;
import io.paddock.runtime.internal.host.Runsc;
import io.paddock.runtime.internal.image.GvisorCompat;
import io.paddock.runtime.internal.image.HostImage;
import io.paddock.runtime.internal.oci.BundlePlan;
import io.paddock.runtime.internal.oci.OciSpecBuilder;
import io.paddock.runtime.internal.oci.SeccompProfile;

import java.nio.file.Path;

/**
 * The gVisor tier: each sandbox runs in its own gVisor Sentry (a user-space kernel) with a gofer for file
 * access, started by {@code runsc} from the same bundle, init and FIFO channel as the runc tier. What the
 * tier adds is a second kernel between tenant code and the host's; see docs/SECURITY.md for what that buys
 * and costs.
 *
 * <p>Host side, per sandbox: the Sentry ({@code runsc-sandbox}, in its own user namespace, seccomp-filtered by
 * gVisor, as a host uid of the sandbox's own: {@link UidLeases#sentryId}, see {@link #LAUNCHER_RESOURCE}), the
 * gofer ({@code runsc-gofer}, the sandbox's leased host uid range, since it honours the spec's uid mapping) and,
 * on the ptrace platform, one stub process per tenant address space (the Sentry's uid); all of them in the
 * sandbox's cgroups, with or without a network ({@link #networkOwner}). Destroy kills them by cgroup and removes runsc's state files for the
 * id, which is what {@code runsc delete --force} does, minus its wait for the host's init to reap the
 * Sentry's zombie.
 */
public final class RunscRuntime extends OciTier {
    public static final String NAME = "runsc";
    /** The bundle's record of a paused sandbox's checkpoint: its SHA-256, written by the engine at pause. */
    static final String CHECKPOINT_DIGEST = "checkpoint.sha256";

    /**
     * The launcher that runs runsc in a user namespace of the sandbox's own, so that its Sentry is a host uid
     * of the sandbox's own ({@code src/main/c/runsc_userns.c}).
     */
    public static final String LAUNCHER_RESOURCE = "/io/paddock/runtime/paddock-runsc-userns";

    private final Runsc runsc;
    private final HostImage image;
    private final Path compat;
    private final Path launcher;

    private RunscRuntime(OciHost host, Runsc runsc, HostImage image, Path compat, Path launcher) {
        super(host);
        this.runsc = runsc;
        this.image = image;
        this.compat = compat;
        this.launcher = launcher;
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
        Path launcher = NativeResource.load(RunscRuntime.class, LAUNCHER_RESOURCE)
                .extractTo(host.stateDir().resolve("bin"), "paddock-runsc-userns-", "", "r-xr-xr-x");
        return new RunscRuntime(host, runsc, host.imageWithPreload(compat), compat, launcher);
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

    /** gVisor's annotation prefix for a mount hint: {@code dev.gvisor.spec.mount.<name>.<field>}. */
    static final String MOUNT_HINT = "dev.gvisor.spec.mount.";

    /**
     * Mount hints that let the Sentry cache what it reads through the image's read-only bind mounts (the host
     * image's {@code /usr}, the init and the preload library): share {@code container} is runsc's
     * {@code --file-access=exclusive} for that one mount, as the root mount has by default. Without it runsc
     * treats every bind mount as shared with the host and revalidates each path it walks there with the gofer:
     * about 80 gofer round trips for one {@code echo} (ld.so, libc, 13 locale files), every exec. Nothing the
     * tenant writes goes through these mounts (read-only), and access is still only through the gofer; what a
     * running sandbox may see late is a change the host makes to its own {@code /usr} (a package upgrade), as
     * for the root mount. The sandbox's own mounts (volumes, codebases: shared with the host or with other
     * sandboxes) keep runsc's default, revalidated on each walk.
     */
    @Override
    protected java.util.Map<String, String> annotations(BundlePlan plan) {
        return cachedMountHints(plan.imageMounts());
    }

    /** The hints of {@link #annotations}: share {@code container} for each read-only bind mount of these. */
    static java.util.Map<String, String> cachedMountHints(java.util.List<io.paddock.runtime.internal.oci.OciSpec.Mount> mounts) {
        java.util.Map<String, String> hints = new java.util.LinkedHashMap<>();
        java.util.Set<String> sources = new java.util.HashSet<>();
        int n = 0;
        for (io.paddock.runtime.internal.oci.OciSpec.Mount m : mounts) {
            if (!m.type().equals("bind") || m.options() == null || !m.options().contains("ro") || !sources.add(m.source())) {
                continue; // runsc refuses two hints with one source
            }
            String name = MOUNT_HINT + "paddock-image-" + n++ + ".";
            hints.put(name + "source", m.source());
            hints.put(name + "type", "bind");
            hints.put(name + "share", "container");
        }
        return hints;
    }

    @Override
    protected void launch(SandboxId id, Path bundle, BundlePlan plan, Path toInit, Path fromInit, Path log) {
        runsc.runDetached(id.value(), bundle, toInit, fromInit, log, plan.netns().map(ns -> Path.of(ns.path())),
                sentryUserns(plan.uidBase()));
    }

    /**
     * A networked sandbox's network namespace is made in the user namespace its runsc will run in (held open while
     * it is made; the network namespace keeps it from then on), so that runsc, as root there, may join it and its
     * Sentry still gets the sandbox's own uid.
     */
    @Override
    protected NetworkOwner networkOwner(long uidBase) {
        Runsc.HeldUserns held = runsc.holdUserns(sentryUserns(uidBase));
        return new NetworkOwner() {
            @Override
            public java.util.Optional<Path> userns() {
                return java.util.Optional.of(held.userns());
            }

            @Override
            public void close() {
                held.close();
            }
        };
    }

    /** The user namespace runsc starts the sandbox whose range starts at {@code uidBase} in: its Sentry's uid is its own. */
    private Runsc.SentryUserns sentryUserns(long uidBase) {
        return new Runsc.SentryUserns(launcher, host.uids().sentryId(uidBase), uidBase, OciSpecBuilder.ID_RANGE);
    }

    /**
     * A memory checkpoint: runsc writes the sandbox's state to {@link #checkpointDir} (on disk) and its Sentry,
     * gofer and stubs exit, so its memory is free. The checkpoint's SHA-256 is recorded in the bundle (root's
     * only, in /run), so that resume restores only the very bytes this engine saw written.
     *
     * <p>A networked sandbox is checkpointed and restored from inside its network namespace, as it was started
     * ({@link Runsc#runDetached}); the namespace, its veth and rules are the network layer's and stay as they are
     * while it is paused, and the restored Sentry drives the same interface again.
     */
    @Override
    protected io.paddock.PauseMode suspendInRuntime(SandboxId id, Path bundle) {
        Path dir = checkpointDir(id);
        try {
            deleteTree(dir);
            java.nio.file.Files.createDirectories(dir.getParent());
            java.nio.file.Files.createDirectory(dir, java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
                    java.nio.file.attribute.PosixFilePermissions.fromString("rwx------")));
            runsc.checkpoint(id.value(), dir, bundle.resolve("init.log"), netnsOf(bundle));
            // runsc returns while the Sentry is still exiting (for a large sandbox, a while): paused means its
            // memory is free, and a restore must not meet the old Sentry. The cgroup is removed once it is empty;
            // restore makes it again.
            host.cgroups().killAndRemove(cgroupsPath(id));
            java.nio.file.Files.writeString(bundle.resolve(CHECKPOINT_DIGEST), Checkpoints.digest(dir));
        } catch (java.io.IOException e) {
            throw new io.paddock.SandboxException(io.paddock.ErrorCode.INTERNAL, "cannot checkpoint sandbox " + id
                    + ": " + e, e);
        }
        return io.paddock.PauseMode.CHECKPOINTED;
    }

    /**
     * Verifies the checkpoint against the digest recorded at pause, then restores it; a checkpoint that changed
     * on disk (corrupted, or replaced) is refused before runsc reads a byte of it, so nothing of it runs.
     */
    @Override
    protected void resumeInRuntime(SandboxId id, Path bundle, Path toInit, Path fromInit, Path log) {
        Path dir = checkpointDir(id);
        Path digestFile = bundle.resolve(CHECKPOINT_DIGEST);
        try {
            verifyCheckpoint(id, dir, digestFile);
            runsc.restore(id.value(), bundle, dir, toInit, fromInit, log, netnsOf(bundle), sentryUserns(uidBase(bundle)));
            deleteTree(dir);
            java.nio.file.Files.deleteIfExists(digestFile);
        } catch (java.io.IOException e) {
            throw new io.paddock.SandboxException(io.paddock.ErrorCode.INTERNAL, "cannot restore sandbox " + id
                    + ": " + e, e);
        }
    }

    /** FAILED_PRECONDITION unless {@code dir} holds the very checkpoint whose digest was recorded at pause. */
    private static void verifyCheckpoint(SandboxId id, Path dir, Path digestFile) {
        try {
            if (!java.nio.file.Files.isDirectory(dir) || !java.nio.file.Files.isRegularFile(digestFile)) {
                throw new io.paddock.SandboxException(io.paddock.ErrorCode.FAILED_PRECONDITION, "sandbox " + id
                        + " has no checkpoint on this host");
            }
            String expected = java.nio.file.Files.readString(digestFile).trim();
            String actual = Checkpoints.digest(dir);
            if (!java.security.MessageDigest.isEqual(expected.getBytes(java.nio.charset.StandardCharsets.US_ASCII),
                    actual.getBytes(java.nio.charset.StandardCharsets.US_ASCII))) {
                throw new io.paddock.SandboxException(io.paddock.ErrorCode.FAILED_PRECONDITION, "the checkpoint of sandbox "
                        + id + " is not the one written when it was paused (its SHA-256 differs: corrupted or replaced"
                        + " on disk); it was not restored");
            }
        } catch (java.io.IOException e) {
            throw new io.paddock.SandboxException(io.paddock.ErrorCode.INTERNAL, "cannot restore sandbox " + id
                    + ": " + e, e);
        }
    }

    /**
     * A fork restores the source's checkpoint into a bundle of its own. Refused: a sandbox with a network (the
     * checkpointed netstack holds the source's address, which a second namespace cannot have too), and one with
     * a root or mounts of its own on the host (an image's writable layer, a codebase, a volume: its files there
     * would have to be copied and moved to the fork's uid range as of the checkpoint). The host image's sandboxes
     * keep their writable files ({@code /tmp}, {@code /workspace}) in the Sentry's memory, in the checkpoint.
     */
    @Override
    protected java.util.Optional<String> forkRefusal(SandboxId source, Path bundle) {
        if (networked(bundle)) {
            return java.util.Optional.of("sandbox " + source + " has a network: forks of networked gVisor sandboxes"
                    + " are not supported (its checkpointed network stack holds its own address)");
        }
        return java.util.Optional.empty();
    }

    /**
     * Verifies the source's checkpoint as a resume does, then restores it under the fork's id from the fork's
     * bundle; the checkpoint stays for the source's own resume.
     */
    @Override
    protected void restoreForkInRuntime(SandboxId source, SandboxId id, Path bundle, Path toInit, Path fromInit, Path log) {
        Path dir = checkpointDir(source);
        verifyCheckpoint(source, dir, bundle(source).resolve(CHECKPOINT_DIGEST));
        runsc.restore(id.value(), bundle, dir, toInit, fromInit, log, java.util.Optional.empty(), sentryUserns(uidBase(bundle)));
    }

    /** The network namespace a networked sandbox's spec names (made by the network layer), from its config.json. */
    static java.util.Optional<Path> netnsOf(Path bundle) {
        if (!networked(bundle)) {
            return java.util.Optional.empty();
        }
        try {
            com.fasterxml.jackson.databind.JsonNode spec = new com.fasterxml.jackson.databind.ObjectMapper()
                    .readTree(java.nio.file.Files.readAllBytes(bundle.resolve("config.json")));
            for (com.fasterxml.jackson.databind.JsonNode ns : spec.path("linux").path("namespaces")) {
                if (ns.path("type").asText().equals("network") && !ns.path("path").asText().isEmpty()) {
                    return java.util.Optional.of(Path.of(ns.path("path").asText()));
                }
            }
            return java.util.Optional.empty();
        } catch (java.io.IOException e) {
            throw new io.paddock.SandboxException(io.paddock.ErrorCode.INTERNAL, "cannot read the spec in " + bundle
                    + ": " + e, e);
        }
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
