package io.paddock.runtime.internal.host;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.paddock.internal.NativeResource;
import io.paddock.runtime.internal.oci.OciSpec;
import io.paddock.runtime.internal.oci.SeccompProfile;
import io.paddock.runtime.internal.runc.RuncRuntime;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The runc tier's init installs a seccomp program compiled once by {@code paddock-seccomp} instead of runc compiling
 * the profile in each container. This holds only if the program is the very one runc would install: here runc runs
 * a container whose config.json carries the profile, the filter the kernel holds for that container's process is
 * read back ({@code PTRACE_SECCOMP_GET_FILTER}, root), and after runc's own -ENOSYS stub it must be the compiled file
 * byte for byte, and with the stub give the same answer for every system call. Needs root, runc and gcc (for the
 * small reader), as CI has.
 */
class RuncSeccompTest {
    private static final java.time.Duration TIMEOUT = java.time.Duration.ofSeconds(60);
    private static final String READER = """
            #include <stdio.h>
            #include <stdlib.h>
            #include <sys/ptrace.h>
            #include <sys/wait.h>
            #include <linux/filter.h>
            #ifndef PTRACE_SECCOMP_GET_FILTER
            #define PTRACE_SECCOMP_GET_FILTER 0x420c
            #endif
            int main(int argc, char **argv) {
                if (argc != 3) return 2;
                pid_t pid = atoi(argv[1]);
                if (ptrace(PTRACE_SEIZE, pid, 0, 0) != 0) { perror("seize"); return 1; }
                if (ptrace(PTRACE_INTERRUPT, pid, 0, 0) != 0) { perror("interrupt"); return 1; }
                if (waitpid(pid, NULL, __WALL) != pid) { perror("waitpid"); return 1; }
                long n = ptrace(PTRACE_SECCOMP_GET_FILTER, pid, 0, NULL);
                if (n <= 0) { perror("count"); return 1; }
                struct sock_filter *f = calloc(n, sizeof *f);
                if (ptrace(PTRACE_SECCOMP_GET_FILTER, pid, 0, f) != n) { perror("filter"); return 1; }
                if (ptrace(PTRACE_SECCOMP_GET_FILTER, pid, 1, NULL) >= 0) { fprintf(stderr, "more than one filter\\n"); return 1; }
                FILE *out = fopen(argv[2], "wb");
                if (!out || fwrite(f, sizeof *f, n, out) != (size_t) n || fclose(out) != 0) { perror(argv[2]); return 1; }
                ptrace(PTRACE_DETACH, pid, 0, 0);
                return 0;
            }
            """;

    @Test
    void theCompiledProgramIsTheOneRuncInstalls(@TempDir Path dir) throws Exception {
        OciSpec.Seccomp profile = SeccompProfile.forArch(System.getProperty("os.arch"), SeccompProfile.Dialect.KERNEL);
        Path compiler = NativeResource.load(RuncRuntime.class, RuncRuntime.SECCOMP_COMPILER_RESOURCE)
                .extractTo(dir, "paddock-seccomp-", "", "r-xr-xr-x");
        Path compiled = new SeccompFilters(compiler, dir.resolve("filters")).of(SeccompProfile.compilerInput(profile));

        Files.writeString(dir.resolve("reader.c"), READER);
        ok(HostProcess.run(List.of("gcc", "-O1", "-o", dir.resolve("reader").toString(), dir.resolve("reader.c").toString()),
                TIMEOUT));

        // A container that runc starts with the profile in its config.json: the host's /usr under an empty root.
        Path root = Files.createDirectories(dir.resolve("bundle/root"));
        for (String d : List.of("usr", "proc", "dev", "tmp")) {
            Files.createDirectories(root.resolve(d));
        }
        for (String link : List.of("bin", "lib", "lib64")) {
            if (Files.isSymbolicLink(Path.of("/" + link))) {
                Files.createSymbolicLink(root.resolve(link), Files.readSymbolicLink(Path.of("/" + link)));
            }
        }
        String id = "paddock-seccomp-test-" + ProcessHandle.current().pid();
        OciSpec spec = new OciSpec("1.0.2",
                new OciSpec.Process(false, new OciSpec.User(65534, 65534), List.of("/usr/bin/sleep", "60"),
                        List.of("PATH=/usr/bin"), "/", OciSpec.Capabilities.only(List.of()), List.of(), true),
                new OciSpec.Root(root.toString(), true), "seccomp-test",
                List.of(new OciSpec.Mount("/usr", "bind", "/usr", List.of("rbind", "ro")),
                        new OciSpec.Mount("/proc", "proc", "proc", List.of())),
                new OciSpec.Linux(null, null, null, "/paddock-test/" + id,
                        List.of(new OciSpec.Namespace("pid", null), new OciSpec.Namespace("mount", null),
                                new OciSpec.Namespace("ipc", null), new OciSpec.Namespace("uts", null)),
                        profile, null, null));
        Files.write(dir.resolve("bundle/config.json"), new ObjectMapper().writeValueAsBytes(spec));
        Path state = Files.createDirectories(dir.resolve("runc"));
        String runc = Runc.locate().toString();
        try {
            // Its output to a file: the detached container keeps runc's stdio open.
            Path log = dir.resolve("runc.log");
            assertThat(HostProcess.runWithFiles(List.of(runc, "--root", state.toString(), "run", "--detach", "--bundle",
                    dir.resolve("bundle").toString(), id), Path.of("/dev/null"), log, log, TIMEOUT))
                    .as("runc run: %s", Files.readString(log)).isZero();
            long pid = new Runc(Path.of(runc), state).initPid(id);
            Path installed = dir.resolve("installed.bpf");
            ok(HostProcess.run(List.of(dir.resolve("reader").toString(), Long.toString(pid), installed.toString()), TIMEOUT));

            byte[] mine = Files.readAllBytes(compiled);
            byte[] theirs = Files.readAllBytes(installed);
            assertThat(mine.length).as("a program of %d instructions", mine.length / 8).isGreaterThan(100 * 8);
            // runc 1.1.5 (Debian's) puts its -ENOSYS stub in front: the program itself must be ours, byte for byte,
            assertThat(theirs.length).isGreaterThanOrEqualTo(mine.length);
            assertThat(java.util.Arrays.copyOfRange(theirs, theirs.length - mine.length, theirs.length))
                    .as("the program runc installed, after its stub, against paddock-seccomp's").isEqualTo(mine);
            // and with the stub the answers must be the same: every system call number of both ABIs and a foreign
            // architecture, with each argument at each value the profile compares with.
            List<Long> values = new ArrayList<>(List.of(0L, 1L, 0xffffffffL, 0xffffffff00000000L, -1L));
            for (OciSpec.SyscallRule rule : profile.syscalls()) {
                for (OciSpec.SyscallArg a : rule.args() == null ? List.<OciSpec.SyscallArg>of() : rule.args()) {
                    values.addAll(List.of(a.value(), a.valueTwo(), a.value() | a.valueTwo(), a.valueTwo() | (1L << 40)));
                }
            }
            int compared = 0;
            for (long arch : new long[] {0xc000003eL, 0x40000003L}) {
                for (long nr = 0; nr < 1024; nr++) {
                    for (long n : new long[] {nr, nr | 0x40000000L}) {
                        long[] args = new long[6];
                        assertThat(Bpf.run(theirs, n, arch, args)).as("nr %d", n).isEqualTo(Bpf.run(mine, n, arch, args));
                        for (int i = 0; i < 6; i++) {
                            for (long v : values) {
                                args = new long[6];
                                args[i] = v;
                                assertThat(Bpf.run(theirs, n, arch, args)).as("nr %d arg %d = %x", n, i, v)
                                        .isEqualTo(Bpf.run(mine, n, arch, args));
                                compared++;
                            }
                        }
                    }
                }
            }
            assertThat(compared).isGreaterThan(100_000);
        } finally {
            HostProcess.run(List.of(runc, "--root", state.toString(), "delete", "--force", id), TIMEOUT);
        }
    }

    /** The classic BPF a seccomp program uses (libseccomp's and runc's), run over one {@code seccomp_data}. */
    static final class Bpf {
        static long run(byte[] prog, long nr, long arch, long[] args) {
            java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(prog).order(java.nio.ByteOrder.LITTLE_ENDIAN);
            long a = 0;
            int pc = 0;
            for (int steps = 0; steps < 100_000; steps++) {
                int at = pc * 8;
                int code = b.getShort(at) & 0xffff;
                int jt = b.get(at + 2) & 0xff;
                int jf = b.get(at + 3) & 0xff;
                long k = b.getInt(at + 4) & 0xffffffffL;
                switch (code) {
                    case 0x20 -> { // ld [k]: seccomp_data {int nr; u32 arch; u64 ip; u64 args[6]}
                        a = switch ((int) k) {
                            case 0 -> nr & 0xffffffffL;
                            case 4 -> arch;
                            default -> {
                                int i = ((int) k - 16) / 8;
                                assertThat(k).as("a load of an argument word").isBetween(16L, 63L);
                                yield (k % 8 == 0 ? args[i] : args[i] >>> 32) & 0xffffffffL;
                            }
                        };
                        pc++;
                    }
                    case 0x54 -> { // and #k
                        a &= k;
                        pc++;
                    }
                    case 0x05 -> pc += 1 + (int) k; // ja
                    case 0x15 -> pc += 1 + (a == k ? jt : jf); // jeq
                    case 0x25 -> pc += 1 + (a > k ? jt : jf); // jgt
                    case 0x35 -> pc += 1 + (a >= k ? jt : jf); // jge
                    case 0x45 -> pc += 1 + ((a & k) != 0 ? jt : jf); // jset
                    case 0x06 -> { // ret #k
                        return k;
                    }
                    default -> throw new AssertionError("instruction 0x" + Integer.toHexString(code) + " at " + pc);
                }
            }
            throw new AssertionError("no return");
        }
    }

    private static void ok(HostProcess.Result r) {
        assertThat(r.ok()).as(r.output()).isTrue();
    }
}
