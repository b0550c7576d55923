package io.paddock.runtime.internal.oci;

import io.paddock.SandboxSpec;
import io.paddock.runtime.internal.oci.OciSpec.Capabilities;
import io.paddock.runtime.internal.oci.OciSpec.Cpu;
import io.paddock.runtime.internal.oci.OciSpec.DeviceRule;
import io.paddock.runtime.internal.oci.OciSpec.IdMapping;
import io.paddock.runtime.internal.oci.OciSpec.Linux;
import io.paddock.runtime.internal.oci.OciSpec.Memory;
import io.paddock.runtime.internal.oci.OciSpec.Mount;
import io.paddock.runtime.internal.oci.OciSpec.Namespace;
import io.paddock.runtime.internal.oci.OciSpec.Pids;
import io.paddock.runtime.internal.oci.OciSpec.Resources;
import io.paddock.runtime.internal.oci.OciSpec.Rlimit;
import io.paddock.runtime.internal.oci.OciSpec.Root;
import io.paddock.runtime.internal.oci.OciSpec.User;

import java.util.ArrayList;
import java.util.List;

/**
 * Turns a {@link BundlePlan} into the OCI {@code config.json} of a sandbox: pure, deterministic, no I/O.
 *
 * <p>The container's process is Paddock's init, running as uid 0 of the sandbox's own user namespace (an
 * unprivileged host uid) with just the capabilities it needs to start tenant processes as the sandbox
 * user and to kill them. Tenant processes get none.
 */
public final class OciSpecBuilder {
    /** The sandbox user (uid and gid) that tenant processes and file operations run as. */
    public static final int SANDBOX_UID = 1000;
    public static final int SANDBOX_GID = 1000;
    /** Size of each sandbox's uid/gid range. */
    public static final long ID_RANGE = 65536;
    /** Where the init binary is inside every sandbox. */
    public static final String INIT_PATH = "/.paddock/init";
    public static final String HOSTNAME = "sandbox";
    /** The only environment the init itself gets; tenant environments travel in the init protocol. */
    public static final List<String> INIT_ENV = List.of("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    /** What the init keeps: switch to the sandbox user, kill tenant processes, drop their bounding set, bring up lo. */
    public static final List<String> INIT_CAPABILITIES =
            List.of("CAP_KILL", "CAP_NET_ADMIN", "CAP_SETGID", "CAP_SETPCAP", "CAP_SETUID");
    /**
     * What an image build's RUN step keeps as root of its sandbox's user namespace, as {@code docker build}
     * does (less raw sockets and device nodes): what package managers need to chown, drop to their own users
     * and set file capabilities.
     */
    public static final List<String> BUILD_CAPABILITIES = List.of("CAP_AUDIT_WRITE", "CAP_CHOWN", "CAP_DAC_OVERRIDE",
            "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_NET_BIND_SERVICE", "CAP_SETFCAP", "CAP_SETGID", "CAP_SETPCAP",
            "CAP_SETUID", "CAP_SYS_CHROOT");
    static final java.util.Map<String, Integer> CAPABILITY_BITS = java.util.Map.ofEntries(
            java.util.Map.entry("CAP_CHOWN", 0), java.util.Map.entry("CAP_DAC_OVERRIDE", 1),
            java.util.Map.entry("CAP_FOWNER", 3), java.util.Map.entry("CAP_FSETID", 4),
            java.util.Map.entry("CAP_KILL", 5), java.util.Map.entry("CAP_SETGID", 6),
            java.util.Map.entry("CAP_SETUID", 7), java.util.Map.entry("CAP_SETPCAP", 8),
            java.util.Map.entry("CAP_NET_BIND_SERVICE", 10), java.util.Map.entry("CAP_SYS_CHROOT", 18),
            java.util.Map.entry("CAP_AUDIT_WRITE", 29), java.util.Map.entry("CAP_SETFCAP", 31));
    /** The init needs fds for every exec's pipes; tenant processes get the spec's openFiles via the protocol. */
    static final long INIT_NOFILE = 16384;

    /** Kernel interfaces that leak host state or allow host-wide changes: masked (read empty). */
    public static final List<String> MASKED_PATHS = List.of(
            "/proc/acpi", "/proc/asound", "/proc/interrupts", "/proc/kallsyms", "/proc/kcore", "/proc/keys",
            "/proc/latency_stats", "/proc/sched_debug", "/proc/scsi", "/proc/timer_list", "/proc/timer_stats",
            "/sys/devices/virtual/powercap", "/sys/firmware", "/sys/kernel/debug", "/sys/kernel/security");
    public static final List<String> READONLY_PATHS = List.of(
            "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger");

    private OciSpecBuilder() {
    }

    /**
     * The init's rlimits: RLIMIT_NOFILE at {@value #INIT_NOFILE} (or the host's hard limit if lower), no core
     * dumps. In the spec unless the sandbox joins a prepared user namespace: runc sets them with {@code prlimit}
     * on the init, which needs CAP_SYS_RESOURCE over a namespace root does not own, so there whoever starts
     * runc sets them on itself and runc's init inherits them.
     */
    public static List<Rlimit> initRlimits(BundlePlan plan) {
        long nofile = Math.min(INIT_NOFILE, plan.host().nofileHardLimit());
        return List.of(new Rlimit("RLIMIT_NOFILE", nofile, nofile), new Rlimit("RLIMIT_CORE", 0, 0));
    }

    public static OciSpec build(BundlePlan plan) {
        SandboxSpec spec = plan.spec();
        List<String> args = new ArrayList<>(List.of(INIT_PATH, "--uid=" + plan.user().uid(), "--gid=" + plan.user().gid(),
                "--workdir=" + plan.user().workdir()));
        java.util.TreeSet<String> caps = new java.util.TreeSet<>(INIT_CAPABILITIES);
        if (plan.seccomp() == SeccompProfile.Dialect.GVISOR) {
            // For one mkdir in the Sentry's root cpu cgroup (mode 0555; runsc --cgroupfs), where the init keeps
            // each exec in a cgroup of its own, the Sentry having no child subreapers; the init drops it at once.
            caps.add("CAP_DAC_OVERRIDE");
        }
        if (!plan.user().tenantCaps().isEmpty()) {
            long mask = 0;
            for (String c : plan.user().tenantCaps()) {
                mask |= 1L << CAPABILITY_BITS.get(c);
            }
            args.add("--tenant-caps=0x" + Long.toHexString(mask));
            caps.addAll(plan.user().tenantCaps());
        }
        OciSpec.Process process = new OciSpec.Process(
                false,
                new User(0, 0),
                List.copyOf(args),
                INIT_ENV,
                // An image's working directory may not exist in it: as with Docker, the runtime creates it.
                plan.user().memoryScratch() ? "/" : plan.user().workdir(),
                Capabilities.only(List.copyOf(caps)),
                plan.userns().isPresent() ? List.of() : initRlimits(plan),
                true);

        long memory = spec.memory().bytes();
        Resources resources = new Resources(
                List.of(new DeviceRule(false, "rwm")),
                new Memory(memory, plan.host().swapAccounting() ? memory : null),
                new Cpu(Math.max(1000, Math.round(spec.cpus() * 100_000)), 100_000L),
                new Pids(plan.hostPids()));

        Linux linux = new Linux(
                List.of(new IdMapping(0, plan.uidBase(), ID_RANGE)),
                List.of(new IdMapping(0, plan.uidBase(), ID_RANGE)),
                resources,
                plan.cgroupsPath(),
                namespaces(plan),
                SeccompProfile.forArch(plan.host().arch(), plan.seccomp()),
                MASKED_PATHS,
                READONLY_PATHS);

        return new OciSpec("1.0.2", process, new Root(plan.rootfs(), !plan.user().writableRoot()), HOSTNAME,
                mounts(plan), linux);
    }

    /** Where Debian-like roots keep the CA bundle that OpenSSL, curl, Python and Node read. */
    public static final String CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt";

    private static List<Namespace> namespaces(BundlePlan plan) {
        List<Namespace> ns = new ArrayList<>();
        ns.add(new Namespace("pid"));
        plan.networkNamespaceEntry().ifPresent(path -> ns.add(new Namespace("network", path.isEmpty() ? null : path)));
        ns.addAll(List.of(new Namespace("ipc"), new Namespace("uts"), new Namespace("mount"),
                new Namespace("user", plan.userns().orElse(null)), new Namespace("cgroup")));
        return List.copyOf(ns);
    }

    static List<Mount> mounts(BundlePlan plan) {
        long disk = plan.spec().disk().bytes();
        // Inodes scale with size (one per 8 KiB) so that an inode flood stops at the sandbox's own quota.
        long inodes = Math.max(4096, Math.min(4_000_000, disk / 8192));
        String size = "size=" + disk;
        String nrInodes = "nr_inodes=" + inodes;
        List<Mount> m = new ArrayList<>();
        m.add(new Mount("/proc", "proc", "proc", List.of("nosuid", "noexec", "nodev")));
        m.add(new Mount("/dev", "tmpfs", "tmpfs", List.of("nosuid", "noexec", "strictatime", "mode=755", "size=65536k")));
        m.add(new Mount("/dev/pts", "devpts", "devpts",
                List.of("nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5")));
        // /dev/shm is memory too: a tenant that fills it must not pin the sandbox at its memory limit, so
        // it gets at most half the memory (and 64 MiB), and an inode cap like the other tmpfs mounts.
        long shm = Math.min(Math.min(disk, 64L << 20), plan.spec().memory().bytes() / 2);
        m.add(new Mount("/dev/shm", "tmpfs", "shm", List.of("nosuid", "noexec", "nodev", "mode=1777", "size=" + shm,
                "nr_inodes=" + Math.max(1024, Math.min(inodes, shm / 8192)))));
        m.add(new Mount("/dev/mqueue", "mqueue", "mqueue", List.of("nosuid", "noexec", "nodev")));
        if (plan.networkNamespaceEntry().isEmpty()) {
            // In a namespace the host owns, the sandbox may not mount sysfs: the launcher mounts it there.
            m.add(new Mount("/sys", "bind", plan.netns().orElseThrow().sysfsDir(), List.of("rbind", "ro", "nosuid", "noexec", "nodev")));
        } else {
            m.add(new Mount("/sys", "sysfs", "sysfs", List.of("nosuid", "noexec", "nodev", "ro")));
        }
        m.addAll(plan.imageMounts());
        plan.netns().ifPresent(ns -> m.add(new Mount("/etc/resolv.conf", "bind", ns.resolvConfFile(),
                List.of("bind", "ro", "nosuid", "nodev", "noexec"))));
        plan.netns().filter(ns -> ns.caBundleFile() != null).ifPresent(ns -> m.add(new Mount(CA_BUNDLE, "bind",
                ns.caBundleFile(), List.of("bind", "ro", "nosuid", "nodev", "noexec"))));
        if (plan.user().memoryScratch()) {
            // The writable area when the root's writable layer is not where /tmp and /workspace live (a stored
            // image's root is an overlay with a writable layer on disk, limited to `disk` by its quota, of which
            // they are part). runc gives a tmpfs root the mode of its mountpoint, so /tmp is 1777 and /workspace
            // 0755 in the image's root directory; ownership comes from the options. One the sandbox's own mounts
            // cover is left out.
            m.add(new Mount("/tmp", "tmpfs", "tmpfs", List.of("nosuid", "nodev", size, nrInodes)));
            m.add(new Mount("/workspace", "tmpfs", "tmpfs", List.of("nosuid", "nodev", size, nrInodes,
                    "uid=" + plan.user().uid(), "gid=" + plan.user().gid())));
            m.removeIf(t -> t.type().equals("tmpfs") && plan.extraMounts().stream().anyMatch(x -> x.destination().equals(t.destination())));
        }
        m.addAll(plan.extraMounts());
        return List.copyOf(m);
    }
}
