package io.paddock.init.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class InitBinaryTest {
    @TempDir
    Path dir;

    @Test
    void extractsOnceUnderItsHash() throws Exception {
        InitBinary b = InitBinary.load();
        assertThat(b.sha256()).hasSize(64).matches("[0-9a-f]+");
        Path p = b.extractTo(dir.resolve("bin"));
        assertThat(p.getFileName().toString()).isEqualTo("paddock-init-" + b.sha256().substring(0, 12));
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(p))).isEqualTo("rwxr-xr-x");
        assertThat(InitBinary.sha256Hex(Files.readAllBytes(p))).isEqualTo(b.sha256());
        long mtime = Files.getLastModifiedTime(p).toMillis();
        Thread.sleep(20);
        assertThat(b.extractTo(dir.resolve("bin"))).isEqualTo(p);
        assertThat(Files.getLastModifiedTime(p).toMillis()).isEqualTo(mtime); // intact: not rewritten
        Files.write(p, new byte[] {1, 2, 3});
        assertThat(InitBinary.sha256Hex(Files.readAllBytes(b.extractTo(dir.resolve("bin"))))).isEqualTo(b.sha256());
        try (var s = Files.list(dir.resolve("bin"))) {
            assertThat(s.count()).isEqualTo(1); // no temp files left
        }
    }
}
