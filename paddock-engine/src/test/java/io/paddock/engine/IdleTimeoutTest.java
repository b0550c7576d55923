package io.paddock.engine;

import io.paddock.ByteSize;
import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;
import io.paddock.StopReason;
import io.paddock.TimeoutAction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The idle timeout: a sandbox nothing uses for that long meets its timeout's fate (destroyed, or paused with
 * {@code onTimeout(PAUSE)}); a running command, a file operation or an exec keep it alive. Real runc.
 */
class IdleTimeoutTest {
    @RegisterExtension
    static final TierEngine ENGINE = TierEngine.runc();

    private static SandboxSpec.Builder spec() {
        return SandboxSpec.builder().memory(ByteSize.mib(128)).pids(64).timeout(Duration.ofMinutes(5))
                .idleTimeout(Duration.ofSeconds(2));
    }

    @Test
    void aRunningCommandKeepsItAliveAndIdlenessEndsIt() throws Exception {
        try (Sandbox sb = ENGINE.paddock().create(spec().build())) {
            ExecProcess p = sb.start(ExecRequest.of("sleep", "3"));
            Thread.sleep(2500);
            assertThat(sb.state()).as("a command runs: not idle").isEqualTo(SandboxState.RUNNING);
            p.onExit().get();
            for (int i = 0; i < 3; i++) {
                Thread.sleep(1000);
                sb.files().write("/workspace/touch", new byte[] {1}); // used: not idle
            }
            assertThat(sb.state()).isEqualTo(SandboxState.RUNNING);
            assertThat(sb.awaitStop(Duration.ofSeconds(10))).as("stopped once idle")
                    .hasValueSatisfying(i -> assertThat(i.stopReason()).contains(StopReason.TIMEOUT));
        }
    }

    @Test
    void withPauseItIsPausedAndAResumeStartsTheCountAgain() throws Exception {
        try (Sandbox sb = ENGINE.paddock().create(spec().onTimeout(TimeoutAction.PAUSE).build())) {
            for (int i = 0; i < 50 && sb.state() != SandboxState.PAUSED; i++) {
                Thread.sleep(200);
            }
            assertThat(sb.state()).isEqualTo(SandboxState.PAUSED);
            sb.resume();
            assertThat(sb.exec("echo", "back").stdoutText()).isEqualTo("back\n");
            assertThat(sb.state()).isEqualTo(SandboxState.RUNNING);
        }
    }
}
