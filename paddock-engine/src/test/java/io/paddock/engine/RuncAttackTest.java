package io.paddock.engine;

import io.paddock.Paddock;
import io.paddock.testkit.HostView;
import io.paddock.testkit.SandboxAttackTest;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The attack suite (ATTACKS.md) against the embedded engine on real runc. Needs root and runc (CI has
 * both). The host checks read {@code /proc} and {@code /sys/fs/cgroup} through {@link RuncHostView}.
 */
class RuncAttackTest extends SandboxAttackTest {
    @RegisterExtension
    static final TierEngine ENGINE = TierEngine.runc();

    @Override
    protected Paddock paddock() {
        return ENGINE.paddock();
    }

    @Override
    protected HostView host() {
        return ENGINE.host();
    }
}
