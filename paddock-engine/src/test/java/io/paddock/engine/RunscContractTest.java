package io.paddock.engine;

import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.engine.internal.LocalPaddock;
import io.paddock.testkit.SandboxContractTest;
import io.paddock.testkit.Tier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The contract suite against the embedded engine on the gVisor tier: an engine whose default tier is
 * runsc. Needs root and runsc (CI installs both); a host without runsc fails here, it does not skip.
 */
class RunscContractTest extends SandboxContractTest {
    @RegisterExtension
    static final TierEngine ENGINE = TierEngine.runsc();

    @Override
    protected Paddock paddock() {
        return ENGINE.paddock();
    }

    @Override
    protected Tier tier() {
        return ENGINE.tier();
    }

    /** One engine, both tiers: each sandbox runs on, reports and is destroyed by the tier its spec named. */
    @Test
    void oneEngineRunsBothTiersAndRoutesEachSandboxToItsOwn() {
        assertThat(((LocalPaddock) paddock()).describeRuntime()).contains("runsc version").contains("runc version")
                .contains("(default)");
        try (Sandbox gvisor = paddock().create(small().build());
             Sandbox runc = paddock().create(small().runtime("runc").build())) {
            assertThat(gvisor.info().runtime()).isEqualTo("runsc");
            assertThat(runc.info().runtime()).isEqualTo("runc");
            // The Sentry's synthetic uid_map against runc's leased range: each really runs where it says.
            assertThat(gvisor.exec("cat", "/proc/self/uid_map").stdoutText().trim().split("\\s+")[1]).isEqualTo("0");
            assertThat(runc.exec("cat", "/proc/self/uid_map").stdoutText().trim().split("\\s+")[1]).isNotEqualTo("0");
            assertThat(paddock().get(runc.id()).info().runtime()).isEqualTo("runc");
        }
    }

    @Test
    void unknownRuntimeIsRejectedNamingTheField() {
        assertInvalid(() -> SandboxSpec.builder().runtime("kata"), "runtime");
        assertInvalid(() -> LocalOptions.builder().defaultRuntime("crun"), "defaultRuntime");
    }
}
