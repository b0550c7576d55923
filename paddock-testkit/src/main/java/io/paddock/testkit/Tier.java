package io.paddock.testkit;

/**
 * What an isolation tier promises where tiers legitimately differ, so that the shared suites assert each
 * tier's own promise instead of the weakest common one. Every difference is recorded in docs/SECURITY.md.
 * A daemon reports the tier of the engine behind it.
 */
public enum Tier {
    /** Namespaces, cgroups and a seccomp allowlist on the host kernel. */
    RUNC("runc", true, false, true, true, true),
    /** gVisor: tenant code runs on the Sentry, a user-space kernel; the host sees only the Sentry, gofer and stubs. */
    RUNSC("runsc", false, true, false, false, false),
    /**
     * A pod in a Kubernetes cluster (docs/KUBERNETES.md); tested here through fabric8's mock API server and a kubelet
     * test double whose "node" runs each pod as a runc sandbox, so its kernel-facing promises are runc's; what differs
     * is what the pod spec decides (a read-only root) and what a node does not tell (a command's OOM kill).
     */
    KUBERNETES("kubernetes", false, false, true, true, true, false, false);

    private final String runtimeName;
    private final boolean hostSeesTenantProcesses;
    private final boolean oomStopsWholeSandbox;
    private final boolean readOnlyRootSaysErofs;
    private final boolean symlinkToRootResolves;
    /** runc: the host kernel's own interfaces; runsc: the Sentry's synthetic ones (see the methods below). */
    private final boolean hostKernelInterfaces;

    /** Whether the root outside /tmp and the workdir is writable into a disk-capped layer (OCI tiers). */
    private final boolean rootWritable;
    /** Whether a command the OOM killer killed reads OOM_KILLED (the tier sees the sandbox's cgroup counter). */
    private final boolean oomVisiblePerCommand;

    Tier(String runtimeName, boolean hostSeesTenantProcesses, boolean oomStopsWholeSandbox,
         boolean readOnlyRootSaysErofs, boolean symlinkToRootResolves, boolean hostKernelInterfaces) {
        this(runtimeName, hostSeesTenantProcesses, oomStopsWholeSandbox, readOnlyRootSaysErofs, symlinkToRootResolves,
                hostKernelInterfaces, true, true);
    }

    Tier(String runtimeName, boolean hostSeesTenantProcesses, boolean oomStopsWholeSandbox,
         boolean readOnlyRootSaysErofs, boolean symlinkToRootResolves, boolean hostKernelInterfaces,
         boolean rootWritable, boolean oomVisiblePerCommand) {
        this.rootWritable = rootWritable;
        this.oomVisiblePerCommand = oomVisiblePerCommand;
        this.runtimeName = runtimeName;
        this.hostSeesTenantProcesses = hostSeesTenantProcesses;
        this.oomStopsWholeSandbox = oomStopsWholeSandbox;
        this.readOnlyRootSaysErofs = readOnlyRootSaysErofs;
        this.symlinkToRootResolves = symlinkToRootResolves;
        this.hostKernelInterfaces = hostKernelInterfaces;
    }

    /**
     * Whether {@code /proc/<pid>/status} has every field of Linux's. gVisor's synthetic one has no
     * {@code NoNewPrivs} and no {@code CapAmb}; the suites then ask the kernel with {@code prctl} instead.
     */
    public boolean procStatusComplete() {
        return hostKernelInterfaces;
    }

    /**
     * Whether tmpfs honours {@code nr_inodes}. gVisor's tmpfs (2022-12) ignores it: an inode flood is
     * bounded by the sandbox's memory limit (every inode is Sentry memory), not by ENOSPC. A known gap.
     */
    public boolean tmpfsInodeLimit() {
        return hostKernelInterfaces;
    }

    /**
     * Whether the init's {@code /proc/1/environ} and {@code /proc/1/fd} listing are closed to tenant
     * processes (it is non-dumpable). gVisor (2022-12) lists them (the environment is only PATH and HOME;
     * re-opening an fd is still refused). A known gap.
     */
    public boolean procHidesInit() {
        return hostKernelInterfaces;
    }

    /**
     * Whether {@code /dev} has only the standard devices. gVisor adds its own emulated {@code /dev/fuse}
     * and {@code /dev/net/tun}, openable, but useless without the capabilities to mount or configure a
     * device (tenants have none, and mount is refused by seccomp). A known gap.
     */
    public boolean onlyStandardDevices() {
        return hostKernelInterfaces;
    }

    /**
     * Whether the 32-bit and x32 system call ABIs exist at all. gVisor implements only the native ABI: an
     * {@code int 0x80} or x32 call fails with EINVAL or ENOSYS before any handler runs.
     */
    public boolean foreignSyscallAbis() {
        return hostKernelInterfaces;
    }

    /**
     * Whether lowering a nice value needs CAP_SYS_NICE. gVisor (2022-12) lets an unprivileged task do it;
     * priorities are the Sentry's own bookkeeping and never reach the host's scheduler (the Sentry's host
     * threads keep their nice value), so it buys no CPU beyond the cgroup's quota. A known gap.
     */
    public boolean niceNeedsCapability() {
        return hostKernelInterfaces;
    }

    /**
     * Whether the sandbox's inotify instances and watches are the host kernel's, held to the per-user limits
     * {@code fs.inotify.max_user_instances} and {@code max_user_watches}. runc: yes. The kernel charges an
     * inotify object to its user at every user-namespace level up to the host's, where that user is the
     * namespace's creator: the sandbox's own host uid (the runc tier creates the namespace as that uid), so
     * the limits hold per sandbox and host root keeps its own allowance. runsc: no; inotify is the Sentry's
     * own, bounded by the sandbox's open files and memory.
     */
    public boolean inotifyPerUserLimits() {
        return hostKernelInterfaces;
    }

    /**
     * Whether POSIX message queues exist, limited in number per IPC namespace ({@code fs.mqueue.queues_max},
     * 256). gVisor (2022-12) has no such limit, so there the seccomp profile refuses {@code mq_open}: a
     * tenant cannot make any.
     */
    public boolean mqueueQueuesMax() {
        return hostKernelInterfaces;
    }

    /**
     * Whether {@code pids} bounds every task of the sandbox, execs included. runc: {@code pids.max} counts
     * every task, so at the limit a new exec fails to start (126, "fork: Resource temporarily
     * unavailable"). runsc: the limit is the tenant's RLIMIT_NPROC, which binds forks and clones of tenant
     * processes; the init spawns an exec as root, so one still runs at the limit (and its own forks fail).
     */
    public boolean pidsLimitCoversExecs() {
        return hostKernelInterfaces;
    }

    /** The namespace links {@code /proc/self/ns} shows inside a sandbox. gVisor shows net, pid and user only. */
    public java.util.List<String> namespaceLinks() {
        return hostKernelInterfaces ? java.util.List.of("cgroup", "ipc", "mnt", "net", "pid", "user", "uts")
                : java.util.List.of("net", "pid", "user");
    }

    /**
     * Whether a write to a read-only mount (the host's {@code /usr}) fails with EROFS even where permissions
     * would refuse it anyway. gVisor checks permissions first and says EACCES; both tiers bind it read-only,
     * which the contract checks in mountinfo.
     */
    public boolean readOnlyRootSaysErofs() {
        return readOnlyRootSaysErofs;
    }

    /**
     * Whether a symlink to {@code /} followed by more components ({@code /workspace/root/etc/hostname}
     * with {@code root -> /}) resolves like Linux. The gVisor build Debian ships (2022-12) resolves it to
     * {@code /} itself, for every program (its VFS, not Paddock's init): the lookup ends inside the
     * sandbox, wrongly, with EISDIR.
     */
    public boolean symlinkToRootResolves() {
        return symlinkToRootResolves;
    }

    /** The runtime name sandboxes on this tier report in {@code SandboxInfo.runtime()}. */
    public String runtimeName() {
        return runtimeName;
    }

    /**
     * Whether tenant processes are host processes (runc: each is a host task in the sandbox's cgroups,
     * namespaces and uid range). Under gVisor they exist only inside the Sentry; the host sees the Sentry,
     * the gofer and the platform's stub processes instead, and the host checks look at those.
     */
    public boolean hostSeesTenantProcesses() {
        return hostSeesTenantProcesses;
    }

    /**
     * Whether running out of memory stops the whole sandbox. runc: the kernel's OOM killer kills the
     * allocating process and the sandbox lives on. runsc: the host's OOM killer kills the Sentry (it holds
     * all the sandbox's memory; gvisor#2520), so the sandbox stops with {@code StopReason.OOM} and the exec
     * fails with {@code RESOURCE_EXHAUSTED}. Either way the limit is enforced.
     */
    public boolean oomStopsWholeSandbox() {
        return oomStopsWholeSandbox;
    }

    /**
     * Whether the sandbox's root (outside {@code /tmp} and the working directory) is writable into a layer of its own
     * capped at {@code disk}. runc, runsc: yes. Kubernetes: no, the pod's {@code readOnlyRootFilesystem} is set (pinned
     * by the golden pod specs; the kubelet test double runs the runc tier's root, so the suites skip the check there).
     */
    public boolean rootWritable() {
        return rootWritable;
    }

    /**
     * Whether a command killed by the kernel's OOM killer reads {@code OOM_KILLED}. runc: the engine reads the
     * sandbox's cgroup counter. Kubernetes: the counter is the node's; the command reads SIGKILL (137), and only an
     * OOM kill of the init itself (the container) is reported, as the sandbox's stop reason.
     */
    public boolean oomVisiblePerCommand() {
        return oomVisiblePerCommand;
    }
}
