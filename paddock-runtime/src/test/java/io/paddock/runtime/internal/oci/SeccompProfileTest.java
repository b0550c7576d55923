package io.paddock.runtime.internal.oci;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

class SeccompProfileTest {
    /** What paddock-seccomp reads: runc's view of the section, one rule per name, errno rules EPERM unless named. */
    @Test
    void compilerInputIsTheSectionAsRuncReadsIt() {
        OciSpec.Seccomp s = new OciSpec.Seccomp("SCMP_ACT_ERRNO", 38, List.of("SCMP_ARCH_X86_64"), List.of(
                new OciSpec.SyscallRule(List.of("read", "write"), "SCMP_ACT_ALLOW", null, null),
                new OciSpec.SyscallRule(List.of("ptrace"), "SCMP_ACT_ERRNO", null, null),
                new OciSpec.SyscallRule(List.of("clone"), "SCMP_ACT_ALLOW", null,
                        List.of(new OciSpec.SyscallArg(0, 0x7e020000L, 0, "SCMP_CMP_MASKED_EQ"))),
                new OciSpec.SyscallRule(List.of("ioctl"), "SCMP_ACT_ALLOW", null,
                        List.of(new OciSpec.SyscallArg(1, -1L, 0, "SCMP_CMP_NE")))));
        assertThat(SeccompProfile.compilerInput(s)).isEqualTo("""
                default errno 38
                arch x86_64
                rule allow 0 read
                rule allow 0 write
                rule errno 1 ptrace
                rule allow 0 clone 0 MASKED_EQ 2114060288 0
                rule allow 0 ioctl 1 NE 18446744073709551615 0
                """);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> SeccompProfile.compilerInput(new OciSpec.Seccomp(
                "SCMP_ACT_NOTIFY", null, List.of(), List.of()))).hasMessageContaining("SCMP_ACT_NOTIFY");
        // Paddock's own profile: every name of every rule, in order, and nothing the compiler would refuse.
        OciSpec.Seccomp mine = SeccompProfile.forArch("amd64");
        long names = mine.syscalls().stream().mapToLong(r -> r.names().size()).sum();
        assertThat(SeccompProfile.compilerInput(mine).lines().filter(l -> l.startsWith("rule ")).count()).isEqualTo(names);
    }

    @Test
    void allowAndDenyListsAreSortedAndDisjoint() {
        assertThat(SeccompProfile.ALLOWED).isSorted().doesNotHaveDuplicates();
        assertThat(SeccompProfile.DENIED).isSorted().doesNotHaveDuplicates();
        assertThat(SeccompProfile.ALLOWED).doesNotContainAnyElementsOf(SeccompProfile.DENIED);
    }

    @Test
    void escapeSyscallsAreNeverAllowed() {
        assertThat(SeccompProfile.ALLOWED).doesNotContain("mount", "umount2", "pivot_root", "unshare", "setns", "ptrace",
                "process_vm_readv", "process_vm_writev", "kcmp", "bpf", "keyctl", "add_key", "request_key",
                "userfaultfd", "perf_event_open", "kexec_load", "init_module", "finit_module", "open_by_handle_at",
                "name_to_handle_at", "acct", "quotactl", "swapon", "reboot", "clock_settime", "settimeofday",
                "adjtimex", "io_uring_setup", "clone3", "personality", "socket", "clone", "ioctl", "syslog");
    }

    @Test
    void ioctlCoverMatchesEverythingButTheExcludedRequests() {
        List<long[]> cover = SeccompProfile.coverExcept(List.of(SeccompProfile.TIOCSTI, SeccompProfile.TIOCLINUX));
        assertThat(matches(cover, SeccompProfile.TIOCSTI)).isFalse();
        assertThat(matches(cover, SeccompProfile.TIOCLINUX)).isFalse();
        assertThat(matches(cover, 0x1_0000_5412L)).as("high bits must not hide TIOCSTI").isFalse();
        assertThat(matches(cover, 0x541B)).as("FIONREAD").isTrue();
        assertThat(matches(cover, 0x5413)).as("TIOCGWINSZ").isTrue();
        Random r = new Random(42);
        for (int i = 0; i < 100_000; i++) {
            long v = r.nextLong();
            long low = v & 0xffffffffL;
            boolean excluded = low == SeccompProfile.TIOCSTI || low == SeccompProfile.TIOCLINUX;
            assertThat(matches(cover, v)).isEqualTo(!excluded);
        }
        assertThat(cover.size()).isLessThan(64);
    }

    @Test
    void ioctlCoverOfPatternsLeavesOutTerminalInjectionAndEveryBtrfsRequest() {
        List<long[]> cover = SeccompProfile.coverExceptPatterns(List.of(new long[] {0xffffffffL, SeccompProfile.TIOCSTI},
                new long[] {0xffffffffL, SeccompProfile.TIOCLINUX},
                new long[] {SeccompProfile.IOC_TYPE, SeccompProfile.BTRFS_IOCTL_MAGIC << 8}));
        long subvolCreate = 0x5000940eL; // BTRFS_IOC_SUBVOL_CREATE: _IOW(0x94, 14, struct btrfs_ioctl_vol_args)
        long subvolCreateV2 = 0x50009418L; // BTRFS_IOC_SUBVOL_CREATE_V2
        long snapCreateV2 = 0x50009417L;
        long snapDestroy = 0x5000940fL;
        for (long v : List.of(SeccompProfile.TIOCSTI, SeccompProfile.TIOCLINUX, subvolCreate, subvolCreateV2, snapCreateV2,
                snapDestroy, 0x1_5000_940eL, 0x9400L, 0xffff94ffL)) {
            assertThat(matches(cover, v)).as(Long.toHexString(v)).isFalse();
        }
        assertThat(matches(cover, 0x541B)).as("FIONREAD").isTrue();
        assertThat(matches(cover, 0x5413)).as("TIOCGWINSZ").isTrue();
        assertThat(matches(cover, 0x80086601L)).as("FS_IOC_GETFLAGS").isTrue();
        Random r = new Random(7);
        for (int i = 0; i < 100_000; i++) {
            long v = r.nextLong();
            long low = v & 0xffffffffL;
            boolean excluded = low == SeccompProfile.TIOCSTI || low == SeccompProfile.TIOCLINUX || (low & 0xff00) == 0x9400;
            assertThat(matches(cover, v)).as(Long.toHexString(v)).isEqualTo(!excluded);
        }
        assertThat(cover.size()).isLessThan(64);
    }

    private static boolean matches(List<long[]> cover, long value) {
        return cover.stream().anyMatch(mv -> (value & mv[0]) == mv[1]);
    }
}
