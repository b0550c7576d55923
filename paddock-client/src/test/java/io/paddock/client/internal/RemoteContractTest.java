package io.paddock.client.internal;

import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.testkit.LeakCheckExtension;
import io.paddock.testkit.SandboxContractTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The whole contract suite through the remote SDK ({@link Paddock#connect}) against a real daemon on
 * loopback, over the embedded engine on real runc. Needs root and runc (CI has both).
 */
class RemoteContractTest extends SandboxContractTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    private static LoopbackDaemon daemon;
    private static Paddock paddock;

    @BeforeAll
    static void start() {
        daemon = LoopbackDaemon.start();
        paddock = daemon.connect();
    }

    @AfterAll
    static void stop() {
        try {
            if (paddock != null) {
                paddock.close();
            }
        } finally {
            if (daemon != null) {
                daemon.close();
            }
        }
    }

    @Override
    protected Paddock paddock() {
        return paddock;
    }
}
