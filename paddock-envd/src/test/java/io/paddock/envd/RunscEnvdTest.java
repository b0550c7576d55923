package io.paddock.envd;

import org.junit.jupiter.api.BeforeAll;

/** envd on the gVisor tier. Needs root and runsc; fails (never skips) without them. */
class RunscEnvdTest extends EnvdContractTest {
    @BeforeAll
    static void start() {
        startTier("runsc");
    }

    @Override
    String runtime() {
        return "runsc";
    }
}
