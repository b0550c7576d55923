package io.paddock.runtime.internal.host;

import io.paddock.internal.NativeResource;
import io.paddock.runtime.internal.runc.RuncRuntime;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The sealed copy runc runs from: executable, the program's bytes, and writable by no one, root included. */
class SealedCopyTest {
    @Test
    void theCopyRunsAndCannotBeChanged(@TempDir Path dir) throws Exception {
        Path holder = NativeResource.load(RuncRuntime.class, RuncRuntime.SEALED_EXEC_RESOURCE)
                .extractTo(dir, "paddock-sealed-exec-", "", "r-xr-xr-x");
        Path program = Files.copy(Path.of("/usr/bin/echo"), dir.resolve("echo")); // "--version" works, as runc's
        SealedCopy copy = SealedCopy.of(holder, program);
        copy.settled.get(30, java.util.concurrent.TimeUnit.SECONDS);
        Path sealed = copy.path();
        assertThat(sealed.toString()).matches("/proc/[0-9]+/fd/[0-9]+");
        assertThat(SealedCopy.of(holder, program)).as("one holder per program").isSameAs(copy);

        HostProcess.Result r = HostProcess.run(List.of(sealed.toString(), "from", "the", "copy"), Duration.ofSeconds(10));
        assertThat(r.ok()).isTrue();
        assertThat(r.output().strip()).isEqualTo("from the copy");
        assertThat(Files.readAllBytes(sealed)).isEqualTo(Files.readAllBytes(program));
        // CVE-2019-5736: whoever can reach the file must not be able to change what the next runc runs.
        assertThatThrownBy(() -> Files.write(sealed, "#!/bin/sh\n".getBytes(StandardCharsets.UTF_8),
                StandardOpenOption.WRITE)).isInstanceOf(IOException.class);
        assertThatThrownBy(() -> Files.write(sealed, new byte[0], StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE)).isInstanceOf(IOException.class);
        assertThat(Files.readAllBytes(sealed)).isEqualTo(Files.readAllBytes(program));
        // The program's own file may change (an upgrade); the copy stays as it was.
        Files.write(program, "changed".getBytes(StandardCharsets.UTF_8));
        assertThat(HostProcess.run(List.of(sealed.toString(), "still"), Duration.ofSeconds(10)).output().strip()).isEqualTo("still");
    }

    @Test
    void aCopyThatDoesNotRunIsNotUsed(@TempDir Path dir) throws Exception {
        Path holder = NativeResource.load(RuncRuntime.class, RuncRuntime.SEALED_EXEC_RESOURCE)
                .extractTo(dir, "paddock-sealed-exec-", "", "r-xr-xr-x");
        Path program = Files.copy(Path.of("/usr/bin/false"), dir.resolve("false")); // "--version" fails
        SealedCopy copy = SealedCopy.of(holder, program);
        copy.settled.get(30, java.util.concurrent.TimeUnit.SECONDS);
        assertThat(copy.path()).as("runc's own file, when its copy cannot be run").isEqualTo(program);
    }
}
