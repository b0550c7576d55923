package io.paddock;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@link BuildLimits} refuses what a step's sandbox could not have, naming the field. */
class BuildLimitsTest {
    @Test
    void limitsASandboxCouldNotHaveAreRefusedNamingTheField() {
        BuildLimits ok = new BuildLimits(Optional.of(0.5), ByteSize.mib(96), Duration.ofSeconds(20));
        assertThat(ok.cpus()).hasValue(0.5);
        assertThat(new BuildLimits(Optional.empty(), SandboxSpec.MIN_MEMORY, Duration.ofMillis(1)).cpus()).isEmpty();
        assertThatThrownBy(() -> new BuildLimits(Optional.of(0.0), ByteSize.mib(96), Duration.ofSeconds(1)))
                .isInstanceOf(SandboxException.class).hasMessageContaining("cpus");
        assertThatThrownBy(() -> new BuildLimits(Optional.of(Double.NaN), ByteSize.mib(96), Duration.ofSeconds(1)))
                .hasMessageContaining("cpus");
        assertThatThrownBy(() -> new BuildLimits(Optional.empty(), ByteSize.mib(8), Duration.ofSeconds(1)))
                .hasMessageContaining("memory").hasMessageContaining("16m");
        assertThatThrownBy(() -> new BuildLimits(Optional.empty(), ByteSize.mib(96), Duration.ZERO))
                .hasMessageContaining("time");
    }
}
