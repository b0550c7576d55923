package io.paddock.init.internal;

import io.paddock.ExecResult;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.channels.Channels;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The init as a Kubernetes pod runs it (docs/KUBERNETES.md): as the sandbox user 1000:1000 rather than root, with
 * every capability gone from every set (the bounding set too), no_new_privs, and the pod's supplementary group.
 * It must still serve commands and files as that user; here it is started so by {@code setpriv} (util-linux), as
 * root, which CI is.
 */
class UnprivilegedInitTest {
    private Path dir;
    private Process process;
    private InitClient client;

    @BeforeEach
    void start() throws IOException {
        assertThat(InitProcess.uid()).as("this test starts the init as another user, so it runs as root").isZero();
        dir = Files.createTempDirectory("paddock-unpriv-");
        // An emptyDir as a kubelet makes it: world-writable.
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
        Path workdir = dir.resolve("workspace");
        process = new ProcessBuilder("setpriv", "--reuid=1000", "--regid=1000", "--groups=1000", "--inh-caps=-all",
                "--ambient-caps=-all", "--bounding-set=-all", "--no-new-privs", "--",
                InitProcess.BINARY.toAbsolutePath().toString(), "--uid=1000", "--gid=1000", "--workdir=" + workdir)
                .redirectError(dir.resolve("init.log").toFile()).start();
        WritableByteChannel to = InitProcess.flushing(process.getOutputStream());
        ReadableByteChannel from = Channels.newChannel(process.getInputStream());
        byte[] nonce = InitProcess.nonce();
        InitClient.writeHello(to, nonce, true);
        client = InitClient.attach(from, to, nonce, Duration.ofSeconds(5), "unprivileged");
    }

    @AfterEach
    void stop() throws Exception {
        if (client != null && client.isOpen()) {
            client.shutdown();
        }
        process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        try (var walk = Files.walk(dir)) {
            walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    private ExecResult run(String... argv) {
        return client.run(SpawnRequest.builder(List.of(argv)).user(1000, 1000).cwd(dir.resolve("workspace").toString())
                .timeout(Duration.ofSeconds(20)).build(), null);
    }

    @Test
    void commandsRunAsThePodUserWithNoCapabilities() {
        ExecResult id = run("sh", "-c", "id -u; id -g; grep -E '^(CapBnd|CapEff|CapPrm|NoNewPrivs)' /proc/self/status");
        assertThat(id.stderrText()).isEmpty();
        assertThat(id.stdoutText()).startsWith("1000\n1000\n")
                .contains("CapBnd:\t0000000000000000").contains("CapEff:\t0000000000000000").contains("NoNewPrivs:\t1");
        assertThat(id.exitCode()).isZero();
    }

    @Test
    void filesAndTimeoutsWork() throws Exception {
        client.files().writeString(dir.resolve("workspace/f.txt").toString(), "written by an unprivileged init");
        assertThat(run("stat", "-c", "%u:%g", dir.resolve("workspace/f.txt").toString()).stdoutText()).isEqualTo("1000:1000\n");
        assertThat(client.files().readString(dir.resolve("workspace/f.txt").toString())).isEqualTo("written by an unprivileged init");
        ExecResult slow = client.run(SpawnRequest.builder(List.of("sh", "-c", "sleep 100 & setsid sleep 101 & sleep 102"))
                .user(1000, 1000).cwd("/").timeout(Duration.ofSeconds(1)).build(), null);
        assertThat(slow.exitCode()).isEqualTo(124);
    }

    @Test
    void anotherUserIsRefusedNotFaked() {
        ExecResult r = client.run(SpawnRequest.builder(List.of("id", "-u")).user(0, 0).cwd("/").build(), null);
        assertThat(r.exitCode()).isEqualTo(126);
        assertThat(r.stderrText()).contains("Operation not permitted");
    }
}
