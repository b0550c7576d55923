package io.paddock.engine;

import io.paddock.ByteSize;
import io.paddock.Paddock;
import io.paddock.SandboxSpec;
import io.paddock.testkit.HostView;
import io.paddock.testkit.SandboxAttackTest;
import io.paddock.testkit.Tier;
import org.junit.jupiter.api.extension.RegisterExtension;

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
}
