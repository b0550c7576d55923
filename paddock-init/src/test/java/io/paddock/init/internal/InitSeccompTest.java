package io.paddock.init.internal;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code --seccomp-fd}: the init installs the filter it is handed before anything else, and an init that cannot
 * install it never starts (the runc tier hands it the sandbox's compiled profile, and config.json has none).
 */
class InitSeccompTest {
    @TempDir
    Path dir;

    @Test
    void aFilterThatIsNotAProgramStopsTheInit() throws Exception {
        for (byte[] bad : List.of(new byte[0], new byte[] {1, 2, 3, 4, 5}, new byte[8 * 4097])) {
            Path f = Files.write(dir.resolve("bad.bpf"), bad);
            Result r = start(f);
            assertThat(r.exit).as("init with a %d-byte filter: %s", bad.length, r.log).isEqualTo(3);
            assertThat(r.log).contains("seccomp filter");
        }
    }

    @Test
    void theFilterIsInstalledBeforeTheInitServes() throws Exception {
        // ld [0] (nr); jeq getppid(110) -> ret ERRNO(38); ret ALLOW: the init itself never calls getppid.
        ByteBuffer b = ByteBuffer.allocate(4 * 8).order(ByteOrder.LITTLE_ENDIAN);
        insn(b, 0x20, 0, 0, 0);
        insn(b, 0x15, 0, 1, 110);
        insn(b, 0x06, 0, 0, 0x00050000 | 38);
        insn(b, 0x06, 0, 0, 0x7fff0000);
        Path f = Files.write(dir.resolve("good.bpf"), b.array());
        Process p = new ProcessBuilder("sh", "-c", "exec \"$0\" --uid=65534 --gid=65534 --workdir=\"$2\" --seccomp-fd=3 3<\"$1\"",
                InitProcess.BINARY.toAbsolutePath().toString(), f.toString(), dir.resolve("w").toString())
                .redirectError(dir.resolve("log").toFile()).start();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            String status = "";
            while (System.nanoTime() < deadline && !status.contains("Seccomp:\t2")) {
                Thread.sleep(20);
                status = Files.readString(Path.of("/proc/" + p.pid() + "/status"), StandardCharsets.UTF_8);
            }
            assertThat(status).contains("Seccomp:\t2").contains("Seccomp_filters:\t1");
            assertThat(p.isAlive()).as(Files.readString(dir.resolve("log"))).isTrue();
        } finally {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    private static void insn(ByteBuffer b, int code, int jt, int jf, int k) {
        b.putShort((short) code).put((byte) jt).put((byte) jf).putInt(k);
    }

    private record Result(int exit, String log) {
    }

    private Result start(Path filter) throws Exception {
        Path log = dir.resolve("log");
        Process p = new ProcessBuilder("sh", "-c", "exec \"$0\" --uid=65534 --gid=65534 --workdir=\"$2\" --seccomp-fd=3 3<\"$1\"",
                InitProcess.BINARY.toAbsolutePath().toString(), filter.toString(), dir.resolve("w").toString())
                .redirectError(log.toFile()).start();
        assertThat(p.waitFor(10, TimeUnit.SECONDS)).isTrue();
        return new Result(p.exitValue(), Files.readString(log, StandardCharsets.UTF_8));
    }
}
