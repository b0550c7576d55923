package io.paddock.client.internal;

import io.paddock.ByteSize;
import io.paddock.CodebaseChange;
import io.paddock.CodebaseInfo;
import io.paddock.Paddock;
import io.paddock.PermissionPreset;
import io.paddock.PermissionRule;
import io.paddock.SandboxSpec;
import io.paddock.Workspace;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The remote SDK's codebases against a real daemon: the upload is walked here (ignore files, links that lead
 * out) and what was left out is reported; {@link Workspace} runs a sandbox on it and cleans up what it made.
 */
class RemoteCodebasesTest {
    private static LoopbackDaemon daemon;
    private static Path dir;

    @BeforeAll
    static void start() throws IOException {
        daemon = LoopbackDaemon.start();
        dir = Files.createTempDirectory("paddock-cb-remote");
        Files.writeString(dir.resolve("main.py"), "print('hi')\n");
        Files.createDirectories(dir.resolve("out/deep"));
        Files.writeString(dir.resolve("out/deep/.keep"), "");
        Files.writeString(dir.resolve(".gitignore"), "*.tmp\n");
        Files.writeString(dir.resolve("scratch.tmp"), "junk");
        Files.writeString(dir.resolve("large.bin"), "x".repeat(4096));
        Files.createSymbolicLink(dir.resolve("passwd"), Path.of("/etc/passwd"));
        Files.createSymbolicLink(dir.resolve("inside"), Path.of("main.py"));
    }

    @AfterAll
    static void stop() throws IOException {
        daemon.close();
        io.paddock.image.internal.store.ImageStore.deleteTree(dir);
    }

    @Test
    void anUploadReportsWhatItLeftOutAndAWorkspaceCleansUp() {
        try (Paddock remote = daemon.connect()) {
            CodebaseInfo info = remote.codebases().create("remote-cb", dir,
                    new io.paddock.CodebaseOptions(List.of("large.*"), ByteSize.mib(1)));
            try {
                assertThat(info.skipped()).extracting(CodebaseInfo.Skipped::path)
                        .containsExactlyInAnyOrder("scratch.tmp", "passwd", "large.bin");
                assertThat(info.files()).isEqualTo(4); // main.py, out/deep/.keep, .gitignore, the inside link
                assertThat(remote.codebases().get("remote-cb").revision()).isEqualTo(1);
            } finally {
                remote.codebases().remove("remote-cb");
            }

            String codebase;
            try (Workspace ws = Workspace.fromLocal(remote, dir, PermissionPreset.AGENT_SAFE,
                    List.of(PermissionRule.parse("main.py:view")), SandboxSpec.builder().memory(ByteSize.mib(128)), List.of())) {
                codebase = ws.codebase();
                assertThat(ws.sandbox().exec("sh", "-c", "cat /workspace/main.py 2>&1; cat /workspace/inside 2>&1;"
                        + " echo o > /workspace/out/o").stdoutText()).contains("Permission denied").doesNotContain("print");
                assertThat(ws.diff()).containsExactly(new CodebaseChange("out/o", CodebaseChange.Kind.ADDED, true));
                assertThat(ws.commit().revision()).isEqualTo(2);
            }
            assertThat(remote.codebases().list()).extracting(CodebaseInfo::name).doesNotContain(codebase);
        }
    }
}
