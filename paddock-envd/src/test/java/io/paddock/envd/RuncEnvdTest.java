package io.paddock.envd;

import org.junit.jupiter.api.BeforeAll;

/** envd on the runc tier. Needs root and runc. */
class RuncEnvdTest extends EnvdContractTest {
    @BeforeAll
    static void start() {
        startTier("runc");
    }

    @Override
    String runtime() {
        return "runc";
    }
}
