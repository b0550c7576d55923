package io.paddock.runtime.internal.host;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@link HostProcess#hold}: a helper held until closed, and one that never answers. */
class HostProcessTest {
    @Test
    void aHeldProcessGivesItsFirstLineAndEndsWhenClosed() throws Exception {
        HostProcess.Held held = HostProcess.hold(List.of("/bin/sh", "-c", "echo ready; exec cat"), Duration.ofSeconds(10));
        assertThat(held.firstLine()).isEqualTo("ready");
        assertThat(held.process().isAlive()).isTrue();
        held.close();
        assertThat(held.process().isAlive()).isFalse();
        assertThat(held.process().exitValue()).isZero();
    }

    @Test
    void aProcessThatEndsBeforeALineGivesEmptyText() {
        try (HostProcess.Held held = HostProcess.hold(List.of("/bin/true"), Duration.ofSeconds(10))) {
            assertThat(held.firstLine()).isEmpty();
        }
    }

    @Test
    void aProcessThatPrintsNothingInTimeIsKilledAndSaysSo() {
        long t0 = System.nanoTime();
        assertThatThrownBy(() -> HostProcess.hold(List.of("/bin/sleep", "60"), Duration.ofMillis(300)))
                .isInstanceOfSatisfying(SandboxException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.UNAVAILABLE);
                    assertThat(e.getMessage()).contains("/bin/sleep printed nothing within");
                });
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(10));
    }
}
