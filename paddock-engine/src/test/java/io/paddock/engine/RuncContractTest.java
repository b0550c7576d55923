package io.paddock.engine;

import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.testkit.LeakCheckExtension;
import io.paddock.testkit.SandboxContractTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The contract suite against the embedded engine on real runc. Needs root and runc (CI has both). */
class RuncContractTest extends SandboxContractTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

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
}
