package io.paddock.runtime.internal.oci;

import io.paddock.runtime.internal.oci.OciSpec.Seccomp;
import io.paddock.runtime.internal.oci.OciSpec.SyscallArg;
import io.paddock.runtime.internal.oci.OciSpec.SyscallRule;

import java.util.ArrayList;
import java.util.List;

/**
 * Paddock's seccomp allowlist, written for sandboxes whose tenant processes hold no capabilities.
 *
 * <p>Derived from the Docker/Moby default profile, then tightened: everything that needs a capability
 * there is denied here outright, and so are clock adjustment, io_uring, handle-based opens, ptrace and
 * cross-process memory access, module loading, kexec, keyrings, BPF, userfaultfd, perf, new mount API
 * calls, namespace creation and joining, and {@code TIOCSTI}/{@code TIOCLINUX} terminal injection.
 *
 * <ul>
 *   <li>Syscalls not listed fail with {@code ENOSYS}, so that libraries fall back as they do on an older
 *       kernel (glibc falls back from {@code clone3} to {@code clone}, for example).</li>
 *   <li>The dangerous set is listed explicitly and fails with {@code EPERM}.</li>
 *   <li>Only the native ABI is allowed: a 32-bit ({@code int 0x80}) or x32 syscall does not match the
 *       filter's architecture and kills the process.</li>
 * </ul>
 */
public final class SeccompProfile {
    static final int EPERM = 1;
    static final int ENOSYS = 38;

    /** Syscalls tenant code may make with any arguments. Sorted; the golden test pins this list. */
    public static final List<String> ALLOWED = List.of(
            "accept", "accept4", "access", "alarm", "arch_prctl", "bind", "brk", "capget", "capset", "chdir",
            "chmod", "chown", "clock_getres", "clock_gettime", "clock_nanosleep", "close", "close_range",
            "connect", "copy_file_range", "creat", "dup", "dup2", "dup3", "epoll_create", "epoll_create1",
            "epoll_ctl", "epoll_pwait", "epoll_pwait2", "epoll_wait", "eventfd", "eventfd2", "execve",
            "execveat", "exit", "exit_group", "faccessat", "faccessat2", "fadvise64", "fallocate", "fchdir",
            "fchmod", "fchmodat", "fchmodat2", "fchown", "fchownat", "fcntl", "fdatasync", "fgetxattr",
            "flistxattr", "flock", "fork", "fremovexattr", "fsetxattr", "fstat", "fstatfs", "fsync",
            "ftruncate", "futex", "futex_waitv", "futimesat", "get_mempolicy", "get_robust_list",
            "get_thread_area", "getcpu", "getcwd", "getdents", "getdents64", "getegid", "geteuid", "getgid",
            "getgroups", "getitimer", "getpeername", "getpgid", "getpgrp", "getpid", "getppid", "getpriority",
            "getrandom", "getresgid", "getresuid", "getrlimit", "getrusage", "getsid", "getsockname",
            "getsockopt", "gettid", "gettimeofday", "getuid", "getxattr", "inotify_add_watch", "inotify_init",
            "inotify_init1", "inotify_rm_watch", "io_cancel", "io_destroy", "io_getevents", "io_pgetevents",
            "io_setup", "io_submit", "ioprio_get", "ioprio_set", "kill", "landlock_add_rule",
            "landlock_create_ruleset", "landlock_restrict_self", "lchown", "lgetxattr", "link", "linkat",
            "listen", "listxattr", "llistxattr", "lremovexattr", "lseek", "lsetxattr", "lstat", "madvise",
            "membarrier", "memfd_create", "mincore", "mkdir", "mkdirat", "mlock", "mlock2",
            "mlockall", "mmap", "mprotect", "mq_getsetattr", "mq_notify", "mq_open", "mq_timedreceive",
            "mq_timedsend", "mq_unlink", "mremap", "msgctl", "msgget", "msgrcv", "msgsnd", "msync", "munlock",
            "munlockall", "munmap", "nanosleep", "newfstatat", "open", "openat", "openat2", "pause",
            "pidfd_open", "pidfd_send_signal", "pipe", "pipe2", "poll", "ppoll", "prctl", "pread64", "preadv",
            "preadv2", "prlimit64", "pselect6", "pwrite64", "pwritev", "pwritev2", "read", "readahead",
            "readlink", "readlinkat", "readv", "recvfrom", "recvmmsg", "recvmsg", "remap_file_pages",
            "removexattr", "rename", "renameat", "renameat2", "restart_syscall", "rmdir", "rseq",
            "rt_sigaction", "rt_sigpending", "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn",
            "rt_sigsuspend", "rt_sigtimedwait", "rt_tgsigqueueinfo", "sched_get_priority_max",
            "sched_get_priority_min", "sched_getaffinity", "sched_getattr", "sched_getparam",
            "sched_getscheduler", "sched_rr_get_interval", "sched_setaffinity", "sched_setattr",
            "sched_setparam", "sched_setscheduler", "sched_yield", "seccomp", "select", "semctl", "semget",
            "semop", "semtimedop", "sendfile", "sendmmsg", "sendmsg", "sendto", "set_robust_list",
            "set_thread_area", "set_tid_address", "setfsgid", "setfsuid", "setgid", "setgroups", "setitimer",
            "setpgid", "setpriority", "setregid", "setresgid", "setresuid", "setreuid", "setrlimit", "setsid",
            "setsockopt", "setuid", "setxattr", "shmat", "shmctl", "shmdt", "shmget", "shutdown",
            "sigaltstack", "signalfd", "signalfd4", "socketpair", "splice", "stat", "statfs", "statx",
            "symlink", "symlinkat", "sync", "sync_file_range", "syncfs", "sysinfo", "tee", "tgkill", "time",
            "timer_create", "timer_delete", "timer_getoverrun", "timer_gettime", "timer_settime",
            "timerfd_create", "timerfd_gettime", "timerfd_settime", "times", "tkill", "truncate", "umask",
            "uname", "unlink", "unlinkat", "utime", "utimensat", "utimes", "vfork", "vmsplice", "wait4",
            "waitid", "write", "writev");

    /** Syscalls refused with EPERM whatever their arguments: the escape and host-tampering set. */
    public static final List<String> DENIED = List.of(
            "_sysctl", "acct", "add_key", "adjtimex", "bpf", "chroot", "clock_adjtime", "clock_settime",
            "delete_module", "fanotify_init", "finit_module", "fsconfig", "fsmount", "fsopen", "fspick",
            "init_module", "io_uring_enter", "io_uring_register", "io_uring_setup", "ioperm", "iopl", "kcmp",
            "kexec_file_load", "kexec_load", "keyctl", "lookup_dcookie", "mbind", "migrate_pages",
            "modify_ldt", "mount", "mount_setattr", "move_mount", "move_pages", "name_to_handle_at",
            "nfsservctl", "open_by_handle_at", "open_tree", "perf_event_open", "pidfd_getfd", "pivot_root",
            "process_madvise", "process_vm_readv", "process_vm_writev", "ptrace", "quotactl", "quotactl_fd",
            "reboot", "request_key", "set_mempolicy", "setdomainname", "sethostname", "setns", "settimeofday",
            "swapoff", "swapon", "syslog", "umount2", "unshare", "uselib", "userfaultfd", "ustat", "vhangup");

    /** The namespace flags a plain {@code clone} may not carry (CLONE_NEWNS … CLONE_NEWNET, CLONE_NEWCGROUP). */
    static final long CLONE_NAMESPACE_FLAGS = 0x7E020000L;
    static final long AF_VSOCK = 40;
    static final long TIOCSTI = 0x5412;
    static final long TIOCLINUX = 0x541C;
    /** The type byte of an ioctl request ({@code _IOC_TYPE}), and btrfs's ({@code BTRFS_IOCTL_MAGIC}). */
    static final long IOC_TYPE = 0xff00;
    static final long BTRFS_IOCTL_MAGIC = 0x94;
    /** Personalities allowed: Linux, Linux|UNAME26, Linux32, Linux32|UNAME26, and query (0xffffffff). */
    static final List<Long> PERSONALITIES = List.of(0x0L, 0x8L, 0x20000L, 0x20008L, 0xffffffffL);

    private SeccompProfile() {
    }

    /**
     * Masked-equality tests whose union is every 32-bit value except {@code excluded}. libseccomp lets a
     * rule test one condition per argument and joins rules by OR; an unconditional allow would swallow a
     * conditional deny, so the complement is built bit by bit instead: at each bit where the remaining
     * excluded values agree, the other branch holds none of them and becomes one rule.
     */
    static List<long[]> coverExcept(List<Long> excluded) {
        List<Long> values = excluded.stream().map(v -> v & 0xffffffffL).distinct().toList();
        // Bits on which every excluded value agrees first: each yields one rule and no branching.
        List<Integer> order = new ArrayList<>();
        List<Integer> differing = new ArrayList<>();
        for (int bit = 0; bit < 32; bit++) {
            long b = 1L << bit;
            boolean agree = values.stream().allMatch(v -> (v & b) == (values.get(0) & b));
            (agree ? order : differing).add(bit);
        }
        order.addAll(differing);
        List<long[]> out = new ArrayList<>();
        cover(order, 0, 0, 0, values, out);
        return out;
    }

    /**
     * As {@link #coverExcept}, for excluded patterns: each {mask, value} excludes every 32-bit request whose
     * bits under {@code mask} equal {@code value}'s (a full mask: one request; {@link #IOC_TYPE}: a whole
     * driver's requests). The result, OR'ed, matches exactly the requests no pattern excludes.
     */
    static List<long[]> coverExceptPatterns(List<long[]> excluded) {
        List<long[]> patterns = excluded.stream()
                .map(p -> new long[] {p[0] & 0xffffffffL, p[1] & p[0] & 0xffffffffL}).toList();
        List<long[]> out = new ArrayList<>();
        coverPatterns(0, 0, patterns, out);
        return out;
    }

    private static void coverPatterns(long mask, long value, List<long[]> excluded, List<long[]> out) {
        List<long[]> live = excluded.stream().filter(p -> ((value ^ p[1]) & mask & p[0]) == 0).toList();
        if (live.isEmpty()) {
            out.add(new long[] {mask, value});
            return;
        }
        if (live.stream().anyMatch(p -> (p[0] & ~mask) == 0)) {
            return; // wholly inside an excluded pattern
        }
        // A bit every live pattern fixes to the same value first (one branch leaves them all at once), then one
        // they all fix (it splits them), then any the first one fixes.
        long open = live.get(0)[0] & ~mask;
        long shared = open;
        long agreed = open;
        for (long[] p : live) {
            shared &= p[0];
            agreed &= p[0] & ~(p[1] ^ live.get(0)[1]);
        }
        long bit = Long.lowestOneBit(agreed != 0 ? agreed : shared != 0 ? shared : open);
        coverPatterns(mask | bit, value, excluded, out);
        coverPatterns(mask | bit, value | bit, excluded, out);
    }

    private static void cover(List<Integer> order, int i, long mask, long value, List<Long> excluded,
                              List<long[]> out) {
        if (excluded.isEmpty()) {
            out.add(new long[] {mask, value});
            return;
        }
        if (i == order.size()) {
            return; // exactly an excluded value
        }
        long b = 1L << order.get(i);
        List<Long> ones = excluded.stream().filter(v -> (v & b) != 0).toList();
        List<Long> zeros = excluded.stream().filter(v -> (v & b) == 0).toList();
        cover(order, i + 1, mask | b, value, zeros, out);
        cover(order, i + 1, mask | b, value | b, ones, out);
    }

    /** The profile for the host's architecture ({@code amd64} or {@code aarch64}). */
    /** File types mknod may create: regular files, FIFOs and sockets, never device nodes. */
    static final long S_IFMT = 0170000;
    static final List<Long> MKNOD_TYPES = List.of(0L, 0100000L, 0010000L, 0140000L);

    /** How the filter will be applied; see {@link #forArch(String, Dialect)}. */
    public enum Dialect {
        /** By the host kernel through runc: every action and errno as written. */
        KERNEL,
        /**
         * By gVisor's Sentry ({@code runsc --oci-seccomp}, 2022-12 build), which answers every
         * {@code SCMP_ACT_ERRNO} rule and the default action with EPERM, whatever errno the spec names. A
         * rule that exists only to say ENOSYS (clone3, so that libc falls back to clone) would then break
         * thread creation, so it is left out: the Sentry itself answers clone3 with ENOSYS.
         */
        GVISOR
    }

    /**
     * The profile as {@code paddock-seccomp} reads it ({@code src/main/c/seccomp_compile.c}): what runc 1.1 makes
     * of the same config.json section before it calls libseccomp. One rule line per system call name, in order;
     * an errno rule without its number is EPERM, as runc's; architectures by libseccomp's names.
     */
    public static String compilerInput(Seccomp profile) {
        StringBuilder b = new StringBuilder();
        b.append("default ").append(action(profile.defaultAction())).append(' ')
                .append(errno(profile.defaultAction(), profile.defaultErrnoRet())).append('\n');
        for (String arch : profile.architectures()) {
            if (!arch.startsWith("SCMP_ARCH_")) {
                throw new IllegalArgumentException("unknown seccomp architecture " + arch);
            }
            b.append("arch ").append(arch.substring("SCMP_ARCH_".length()).toLowerCase(java.util.Locale.ROOT)).append('\n');
        }
        for (SyscallRule rule : profile.syscalls()) {
            StringBuilder conditions = new StringBuilder();
            for (SyscallArg a : rule.args() == null ? List.<SyscallArg>of() : rule.args()) {
                if (!a.op().startsWith("SCMP_CMP_")) {
                    throw new IllegalArgumentException("unknown seccomp comparison " + a.op());
                }
                conditions.append(' ').append(a.index()).append(' ').append(a.op().substring("SCMP_CMP_".length()))
                        .append(' ').append(Long.toUnsignedString(a.value())).append(' ')
                        .append(Long.toUnsignedString(a.valueTwo()));
            }
            for (String name : rule.names()) {
                if (!name.matches("[a-z0-9_]+")) {
                    throw new IllegalArgumentException("bad system call name " + name);
                }
                b.append("rule ").append(action(rule.action())).append(' ').append(errno(rule.action(), rule.errnoRet()))
                        .append(' ').append(name).append(conditions).append('\n');
            }
        }
        return b.toString();
    }

    private static String action(String oci) {
        return switch (oci) {
            case "SCMP_ACT_ALLOW" -> "allow";
            case "SCMP_ACT_ERRNO" -> "errno";
            case "SCMP_ACT_KILL", "SCMP_ACT_KILL_THREAD" -> "kill";
            case "SCMP_ACT_KILL_PROCESS" -> "kill_process";
            case "SCMP_ACT_TRAP" -> "trap";
            case "SCMP_ACT_LOG" -> "log";
            default -> throw new IllegalArgumentException("unsupported seccomp action " + oci);
        };
    }

    private static int errno(String action, Integer errnoRet) {
        return action.equals("SCMP_ACT_ERRNO") ? (errnoRet == null ? EPERM : errnoRet) : 0;
    }

    public static Seccomp forArch(String osArch) {
        return forArch(osArch, Dialect.KERNEL);
    }

    public static Seccomp forArch(String osArch, Dialect dialect) {
        // Immutable and the same for every sandbox of a tier: made once (every create's config.json holds it).
        return BUILT.computeIfAbsent(osArch + "/" + dialect, k -> build(osArch, dialect));
    }

    private static final java.util.concurrent.ConcurrentHashMap<String, Seccomp> BUILT = new java.util.concurrent.ConcurrentHashMap<>();

    private static Seccomp build(String osArch, Dialect dialect) {
        String arch = switch (osArch) {
            case "amd64", "x86_64" -> "SCMP_ARCH_X86_64";
            case "aarch64", "arm64" -> "SCMP_ARCH_AARCH64";
            default -> throw new IllegalArgumentException("unsupported architecture for the seccomp profile: " + osArch);
        };
        List<SyscallRule> rules = new ArrayList<>();
        // gVisor (2022-12) has no limit on the number of POSIX message queues (no fs.mqueue.queues_max): a
        // tenant could make them until the sandbox's memory ran out. There they are unavailable instead.
        List<String> allowed = dialect == Dialect.GVISOR ? ALLOWED.stream().filter(s -> !s.equals("mq_open")).toList() : ALLOWED;
        rules.add(new SyscallRule(allowed, "SCMP_ACT_ALLOW", null, null));
        rules.add(new SyscallRule(DENIED, "SCMP_ACT_ERRNO", EPERM, null));
        // clone without namespace flags only; clone3 passes its flags in memory seccomp cannot read, so it
        // answers ENOSYS and libc falls back to clone.
        rules.add(new SyscallRule(List.of("clone"), "SCMP_ACT_ALLOW", null,
                List.of(new SyscallArg(0, CLONE_NAMESPACE_FLAGS, 0, "SCMP_CMP_MASKED_EQ"))));
        if (dialect == Dialect.KERNEL) {
            rules.add(new SyscallRule(List.of("clone3"), "SCMP_ACT_ERRNO", ENOSYS, null));
        } else {
            // Passed to the Sentry, which does not implement clone3 (2022-12) and answers ENOSYS itself; a
            // later gVisor that implements it keeps any namespace it creates inside the Sentry.
            rules.add(new SyscallRule(List.of("clone3"), "SCMP_ACT_ALLOW", null, null));
            // The Sentry resolves names through its own syscall table, which calls pselect6 "pselect"; an
            // unknown name is skipped, so without this glibc's select() and Python's select.select fail.
            rules.add(new SyscallRule(List.of("pselect"), "SCMP_ACT_ALLOW", null, null));
            rules.add(new SyscallRule(List.of("mq_open"), "SCMP_ACT_ERRNO", ENOSYS, null));
        }
        // mknod makes files, FIFOs and sockets; device nodes are refused here too, not only by the missing
        // CAP_MKNOD (gVisor 2022-12 lets an unprivileged tenant make them).
        for (long type : MKNOD_TYPES) {
            rules.add(new SyscallRule(List.of("mknod"), "SCMP_ACT_ALLOW", null,
                    List.of(new SyscallArg(1, S_IFMT, type, "SCMP_CMP_MASKED_EQ"))));
            rules.add(new SyscallRule(List.of("mknodat"), "SCMP_ACT_ALLOW", null,
                    List.of(new SyscallArg(2, S_IFMT, type, "SCMP_CMP_MASKED_EQ"))));
        }
        rules.add(new SyscallRule(List.of("socket"), "SCMP_ACT_ALLOW", null,
                List.of(new SyscallArg(0, AF_VSOCK, 0, "SCMP_CMP_NE"))));
        for (long p : PERSONALITIES) {
            rules.add(new SyscallRule(List.of("personality"), "SCMP_ACT_ALLOW", null,
                    List.of(new SyscallArg(0, p, 0, "SCMP_CMP_EQ"))));
        }
        // ioctl: everything but terminal input injection and btrfs's own requests (a sandbox writing straight to
        // a volume's btrfs subvolume could otherwise make a subvolume of its own in it, which the volume's size
        // does not count and which stops the volume from being deleted; docs/SECURITY.md). The kernel reads the
        // request as a 32-bit int, so only its low 32 bits count, and a request with high bits set must not slip
        // past a 64-bit compare.
        for (long[] maskValue : coverExceptPatterns(List.of(new long[] {0xffffffffL, TIOCSTI},
                new long[] {0xffffffffL, TIOCLINUX}, new long[] {IOC_TYPE, BTRFS_IOCTL_MAGIC << 8}))) {
            rules.add(new SyscallRule(List.of("ioctl"), "SCMP_ACT_ALLOW", null,
                    List.of(new SyscallArg(1, maskValue[0], maskValue[1], "SCMP_CMP_MASKED_EQ"))));
        }
        return new Seccomp("SCMP_ACT_ERRNO", ENOSYS, List.of(arch), List.copyOf(rules));
    }
}
