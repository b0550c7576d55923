package io.paddock.runtime.internal.oci;

import io.paddock.SandboxSpec;
import io.paddock.runtime.internal.oci.OciSpec.Mount;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Everything {@link OciSpecBuilder} needs, gathered beforehand so that building the spec does no I/O.
 *
 * @param spec          the sandbox's spec
 * @param rootfs        host path of the image's (read-only) root directory
 * @param imageMounts   the image's mounts (for the host image: {@code /usr} read-only)
 * @param uidBase       first host uid (and gid) of the sandbox's 65536-id range
 * @param cgroupsPath   the sandbox's cgroup path, for example {@code /paddock/sb-…}
 * @param host          facts about the host
 * @param hostPids      the sandbox cgroup's {@code pids.max}: the spec's {@code pids} on runc, where every
 *                      tenant task is a host task; more on runsc, where the Sentry's and gofer's threads and
 *                      the platform's stubs count too (and the tenant limit is enforced inside the Sentry)
 * @param seccomp       who applies the seccomp filter (the host kernel, or gVisor's Sentry)
 * @param userns        the user namespace the sandbox joins (a path to its namespace file), already mapped to
 *                      {@code uidBase} and owned by that unprivileged host uid, so that the kernel charges the
 *                      sandbox's per-user counts (inotify, ...) to it and not to root; the init's rlimits are
 *                      then set by whoever starts the runtime, not in the spec (see {@link OciSpecBuilder#initRlimits}).
 *                      Empty: the runtime creates the namespace (as root) and sets the rlimits itself
 * @param user          who tenant processes and file operations run as, and where commands start, and whether
 *                      the root filesystem is an image's writable overlay on disk (then {@code /tmp} and
 *                      {@code /workspace} are part of it) or the host image's read-only root (then they are
 *                      size-capped tmpfs mounts)
 * @param netns         the network namespace (its file) the sandbox runs in, made by the network layer and
 *                      owned by the host; empty: a new one with only loopback. Joined by the runtime when it
 *                      creates the user namespace; when the sandbox joins a prepared user namespace the
 *                      launcher puts the runtime in it instead (see userns_run.c) and the spec names none
 * @param extraMounts   the sandbox's own mounts (codebases, volumes), last in the spec so that they cover
 *                      what is under them
 */
public record BundlePlan(SandboxSpec spec, String rootfs, List<Mount> imageMounts, long uidBase, String cgroupsPath,
                         HostFacts host, long hostPids, SeccompProfile.Dialect seccomp, Optional<String> userns,
                         RootUser user, Optional<Netns> netns, List<Mount> extraMounts) {
    /**
     * The sandbox user of the host image's root directory used as is: uid and gid 1000, starting in the spec's
     * workdir, read-only root (the benchmark's plain runc peer; Paddock's tiers give the host image a writable
     * root, {@link #hostUserOnWritableRoot}).
     */
    public static RootUser hostUser(SandboxSpec spec) {
        return new RootUser(OciSpecBuilder.SANDBOX_UID, OciSpecBuilder.SANDBOX_GID, spec.workdir(), false, List.of());
    }

    /**
     * The sandbox user of the host image on a writable root (an overlay over the host root directory with a
     * disk-capped writable layer): uid and gid 1000, starting in the spec's workdir, {@code /tmp} and
     * {@code /workspace} still size-capped tmpfs mounts.
     */
    public static RootUser hostUserOnWritableRoot(SandboxSpec spec) {
        return new RootUser(OciSpecBuilder.SANDBOX_UID, OciSpecBuilder.SANDBOX_GID, spec.workdir(), true, List.of(), true);
    }

    /**
     * @param uid          tenant processes' and file operations' uid inside the sandbox
     * @param gid          their gid
     * @param workdir      where commands start unless they name a directory
     * @param writableRoot whether the root is an overlay with a disk-backed writable layer
     * @param tenantCaps   capabilities commands running as uid 0 keep (over the sandbox's own user namespace
     *                     only): none, except for image builds' RUN steps
     * @param memoryScratch whether {@code /tmp} and {@code /workspace} are size-capped tmpfs mounts (the host
     *                     image, and images based on it) rather than part of the root
     */
    public record RootUser(int uid, int gid, String workdir, boolean writableRoot, List<String> tenantCaps,
                           boolean memoryScratch) {
        /** A stored image's root is writable and holds {@code /tmp} and {@code /workspace}; a read-only one does not. */
        public RootUser(int uid, int gid, String workdir, boolean writableRoot, List<String> tenantCaps) {
            this(uid, gid, workdir, writableRoot, tenantCaps, !writableRoot);
        }

        public RootUser {
            if (!writableRoot && !memoryScratch) {
                throw new IllegalArgumentException("a read-only root needs its writable areas in memory");
            }
            Objects.requireNonNull(workdir, "workdir");
            tenantCaps = List.copyOf(tenantCaps);
            for (String c : tenantCaps) {
                if (!OciSpecBuilder.CAPABILITY_BITS.containsKey(c)) {
                    throw new IllegalArgumentException("unknown capability " + c);
                }
            }
        }
    }

    public BundlePlan {
        Objects.requireNonNull(user, "user");
        Objects.requireNonNull(spec, "spec");
        Objects.requireNonNull(rootfs, "rootfs");
        imageMounts = List.copyOf(imageMounts);
        Objects.requireNonNull(cgroupsPath, "cgroupsPath");
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(seccomp, "seccomp");
        Objects.requireNonNull(userns, "userns");
        Objects.requireNonNull(netns, "netns");
        extraMounts = List.copyOf(extraMounts);
        if (hostPids < spec.pids()) {
            throw new IllegalArgumentException("hostPids " + hostPids + " is below the spec's pids " + spec.pids());
        }
    }

    /** A plan without a namespace to join. */
    public BundlePlan(SandboxSpec spec, String rootfs, List<Mount> imageMounts, long uidBase, String cgroupsPath,
                      HostFacts host, long hostPids, SeccompProfile.Dialect seccomp) {
        this(spec, rootfs, imageMounts, uidBase, cgroupsPath, host, hostPids, seccomp, Optional.empty(), hostUser(spec),
                Optional.empty(), List.of());
    }

    /**
     * A plain runc plan (the benchmark's runc peer): the spec's pids limit, the filter applied by the host
     * kernel, the user namespace created by runc.
     */
    public BundlePlan(SandboxSpec spec, String rootfs, List<Mount> imageMounts, long uidBase, String cgroupsPath,
                      HostFacts host) {
        this(spec, rootfs, imageMounts, uidBase, cgroupsPath, host, spec.pids(), SeccompProfile.Dialect.KERNEL);
    }

    /** The same plan, joining the user namespace at {@code path} instead of having the runtime create one. */
    public BundlePlan joiningUserns(String path) {
        return new BundlePlan(spec, rootfs, imageMounts, uidBase, cgroupsPath, host, hostPids, seccomp,
                Optional.of(path), user, netns, extraMounts);
    }

    /** The same plan for an image's root at {@code rootfs} with its own mounts and user. */
    public BundlePlan withImageRoot(String rootfs, List<Mount> imageMounts, RootUser user) {
        return new BundlePlan(spec, rootfs, imageMounts, uidBase, cgroupsPath, host, hostPids, seccomp, userns, user,
                netns, extraMounts);
    }

    /** The same plan, in a prepared network namespace (see {@link #netns()}). */
    public BundlePlan inNetns(Netns ns) {
        return new BundlePlan(spec, rootfs, imageMounts, uidBase, cgroupsPath, host, hostPids, seccomp, userns, user,
                Optional.of(ns), extraMounts);
    }

    /** The same plan with the sandbox's own mounts (see {@link #extraMounts()}). */
    public BundlePlan withExtraMounts(List<Mount> mounts) {
        return new BundlePlan(spec, rootfs, imageMounts, uidBase, cgroupsPath, host, hostPids, seccomp, userns, user,
                netns, mounts);
    }

    /** The namespace entry of the spec: none when the launcher puts the runtime in the sandbox's namespace. */
    Optional<String> networkNamespaceEntry() {
        return netns.isPresent() && userns.isPresent() ? Optional.empty()
                : Optional.of(netns.map(Netns::path).orElse(""));
    }

    /**
     * @param path           the namespace's file
     * @param resolvConfFile a host file bound read-only at the sandbox's {@code /etc/resolv.conf}
     * @param sysfsDir       where the namespace's sysfs is mounted for the spec to bind at {@code /sys}, when the
     *                       sandbox cannot mount one itself (see {@link #networkNamespaceEntry()})
     * @param caBundleFile   a host file bound read-only at {@code /etc/ssl/certs/ca-certificates.crt}, or null
     */
    public record Netns(String path, String resolvConfFile, String sysfsDir, String caBundleFile) {
        public Netns(String path, String resolvConfFile, String sysfsDir) {
            this(path, resolvConfFile, sysfsDir, null);
        }

        public Netns {
            Objects.requireNonNull(path, "path");
            Objects.requireNonNull(resolvConfFile, "resolvConfFile");
            Objects.requireNonNull(sysfsDir, "sysfsDir");
        }
    }

    /**
     * @param arch             {@code os.arch} of the JVM
     * @param swapAccounting   whether the memory controller accounts swap (then swap is limited to 0)
     * @param nofileHardLimit  the host's hard RLIMIT_NOFILE, which a runtime may not exceed
     */
    public record HostFacts(String arch, boolean swapAccounting, long nofileHardLimit) {
    }
}
