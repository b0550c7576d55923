package io.paddock.engine;

import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.testkit.HostView;
import io.paddock.testkit.LeakCheckExtension;
import io.paddock.testkit.SandboxAttackTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The attack suite (ATTACKS.md) against the embedded engine on real runc. Needs root and runc (CI has
 * both). The host checks read {@code /proc} and {@code /sys/fs/cgroup} through {@link RuncHostView}.
 */
class RuncAttackTest extends SandboxAttackTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    private static final HostView HOST = new RuncHostView(LocalOptions.DEFAULT_STATE_DIR);

    private static Paddock paddock;

    @BeforeAll
    static void start() {
        paddock = Paddock.local();
    }

    @AfterAll
    static void stop() {
        if (paddock != null) {
            paddock.close();
        }
    }

    @Override
    protected Paddock paddock() {
        return paddock;
    }

    @Override
    protected HostView host() {
        return HOST;
    }
}
