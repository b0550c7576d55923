package io.paddock.engine;

import io.paddock.ByteSize;
import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.ExitStatus;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.TerminalSize;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A command on a terminal ends when its process tree is gone, with all of its output, on both tiers: the init
 * cannot wait for the master to read EIO there, since gVisor's never does (an empty master just has nothing to
 * read). Real runc and runsc; needs root and both.
 */
class TerminalEndTest {
    @RegisterExtension
    static final TierEngine ENGINE = TierEngine.runc();
    private static final long WAIT_S = 30;

    private static Sandbox create(String runtime) {
        return ENGINE.paddock().create(SandboxSpec.builder().runtime(runtime).memory(ByteSize.mib(256))
                .timeout(Duration.ofMinutes(5)).build());
    }

    /** The command's terminal output to its end, read on another thread so that a hang fails within WAIT_S. */
    private static String output(ExecProcess p) throws Exception {
        CompletableFuture<String> all = CompletableFuture.supplyAsync(() -> {
            try (InputStream in = p.stdout()) {
                ByteArrayOutputStream b = new ByteArrayOutputStream();
                in.transferTo(b);
                return b.toString(StandardCharsets.UTF_8);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        return all.get(WAIT_S, TimeUnit.SECONDS);
    }

    @ParameterizedTest
    @ValueSource(strings = {"runc", "runsc"})
    void aCommandThatExitsEndsWithAllItsOutput(String runtime) throws Exception {
        try (Sandbox sb = create(runtime)) {
            ExecProcess p = sb.start(ExecRequest.builder()
                    .argv("sh", "-c", "tty; stty size; seq 1 20000; exit 3").terminal(new TerminalSize(100, 30)).build());
            String out = output(p);
            assertThat(out).startsWith("/dev/pts/").contains("\r\n30 100\r\n").endsWith("\r\n19999\r\n20000\r\n");
            ExitStatus s = p.onExit().get(WAIT_S, TimeUnit.SECONDS);
            assertThat(s.exitCode()).isEqualTo(3);
            assertThat(p.stderr().readAllBytes()).isEmpty();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"runc", "runsc"})
    void aKilledShellEnds(String runtime) throws Exception {
        try (Sandbox sb = create(runtime)) {
            ExecProcess p = sb.start(ExecRequest.builder().argv("sh", "-c", "echo ready; sleep 300")
                    .terminal(TerminalSize.DEFAULT).build());
            byte[] ready = p.stdout().readNBytes("ready\r\n".length());
            assertThat(new String(ready, StandardCharsets.UTF_8)).isEqualTo("ready\r\n");
            p.kill();
            assertThat(output(p)).isEmpty();
            assertThat(p.onExit().get(WAIT_S, TimeUnit.SECONDS).signal()).isEqualTo(9);
        }
    }
}
