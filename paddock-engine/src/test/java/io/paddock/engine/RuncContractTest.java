package io.paddock.engine;

import io.paddock.Paddock;
import io.paddock.testkit.SandboxContractTest;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The contract suite against the embedded engine on real runc. Needs root and runc (CI has both). */
class RuncContractTest extends SandboxContractTest {
    @RegisterExtension
    static final TierEngine ENGINE = TierEngine.runc();

    @Override
    protected Paddock paddock() {
        return ENGINE.paddock();
    }
}
