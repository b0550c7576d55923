package io.paddock.engine.internal;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Tier selection without a host: what the engine says and does when a tier is missing. */
class RuntimesTest {
    private static final String MISSING = "runsc (gVisor) is not installed. Install it with: apt-get install -y runsc";

    @Test
    void aTierTheHostLacksIsAFailedPreconditionSayingHowToInstallIt() {
        Runtimes r = new Runtimes(null, Map.of(), Map.of("runc", "runc is not installed", "runsc", MISSING), "runc");
        assertThatThrownBy(() -> r.require("runsc")).isInstanceOf(SandboxException.class)
                .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.FAILED_PRECONDITION))
                .hasMessageContaining("apt-get install -y runsc");
        assertThatThrownBy(() -> r.require("runc")).hasMessageContaining("apt-get install -y runc");
        assertThat(r.summary()).contains("runc: not available (default)").contains("runsc: not available");
    }

    @Test
    void specsWithoutATierGetTheDefault() {
        Runtimes r = new Runtimes(null, Map.of(), Map.of(), "runsc");
        assertThat(r.nameFor(SandboxSpec.builder().build())).isEqualTo("runsc");
        assertThat(r.nameFor(SandboxSpec.builder().runtime("runc").build())).isEqualTo("runc");
        assertThat(r.find("runc")).isEmpty();
    }
}
