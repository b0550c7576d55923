package io.paddock.engine;

import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.ExecRequest;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import io.paddock.StopReason;
import io.paddock.testkit.HostView;
import io.paddock.testkit.SandboxAttackTest;
import io.paddock.testkit.Tier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The attack suite (ATTACKS.md) against the embedded engine on the gVisor tier. Needs root and runsc (CI
 * has both); without runsc the engine refuses to start and every test fails, none is skipped. The host
 * checks look at the Sentry, gofer and stubs through {@link RunscHostView}.
 */
class RunscAttackTest extends SandboxAttackTest {
    @RegisterExtension
    static final TierEngine ENGINE = TierEngine.runsc();

    @Override
    protected Paddock paddock() {
        return ENGINE.paddock();
    }

    @Override
    protected HostView host() {
        return ENGINE.host();
    }

    /**
     * 512 MiB instead of 128: on runsc the memory limit also holds the Sentry's and gofer's own memory, and
     * forked processes cost far more (63 sleeping Python children peak at about 345 MiB, against a few tens
     * on runc), so a 128 MiB sandbox dies of OOM before its fork loop reaches the pids limit the test is
     * about (docs/SECURITY.md). The pids and disk limits stay those of the shared suite; the memory tests
     * set their own limits.
     */
    @Override
    protected SandboxSpec.Builder small() {
        return super.small().memory(ByteSize.mib(512));
    }

    @Override
    protected Tier tier() {
        return ENGINE.tier();
    }

    /**
     * A Sentry refused a host task at the sandbox's {@code pids.max} backstop dies (its ptrace platform cannot make
     * the stub it needs), and the sandbox says why instead of "the init closed its channel": the running exec
     * fails RESOURCE_EXHAUSTED and the sandbox stops FAILED. The backstop is lowered to just above what the sandbox
     * holds, so that a few background processes reach it at once (a fork bomb reaches it within seconds).
     */
    @Test
    void aSentryStoppedAtItsHostProcessBackstopSaysSo() throws Exception {
        try (Sandbox sb = paddock().create(small().build())) {
            assertThat(sb.exec("true").success()).isTrue();
            Path v1 = Path.of("/sys/fs/cgroup/pids/paddock", sb.id().value(), "pids.max");
            Path max = Files.exists(v1) ? v1 : Path.of("/sys/fs/cgroup/paddock", sb.id().value(), "pids.max");
            Files.writeString(max, Long.toString(host().pidsCurrent(sb.id()) + 2));
            assertThatThrownBy(() -> sb.exec(ExecRequest.builder()
                    .argv("bash", "-c", "for i in $(seq 30); do sleep 5 & done; wait").timeout(Duration.ofSeconds(30)).build()))
                    .isInstanceOfSatisfying(SandboxException.class, e -> {
                        assertThat(e.code()).as(e.getMessage()).isEqualTo(ErrorCode.RESOURCE_EXHAUSTED);
                        assertThat(e.getMessage()).contains("reached its host process limit");
                    });
            assertThat(sb.awaitStop(Duration.ofSeconds(30)).orElseThrow().stopReason()).contains(StopReason.FAILED);
        }
    }
}
