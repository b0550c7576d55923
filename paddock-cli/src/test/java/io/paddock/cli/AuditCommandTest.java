package io.paddock.cli;

import io.paddock.SandboxException;
import org.junit.jupiter.api.Test;

import java.time.Instant;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@code paddock audit --since}: a duration back from now, or a time with its offset. */
class AuditCommandTest {
    private static final Instant NOW = Instant.parse("2025-03-01T12:00:00Z");

    @Test
    void sinceTakesADurationOrATime() {
        assertThat(AuditCommand.since("30m", NOW)).isEqualTo(Instant.parse("2025-03-01T11:30:00Z"));
        assertThat(AuditCommand.since("2h", NOW)).isEqualTo(Instant.parse("2025-03-01T10:00:00Z"));
        assertThat(AuditCommand.since("7d", NOW)).isEqualTo(Instant.parse("2025-02-22T12:00:00Z"));
        assertThat(AuditCommand.since("90", NOW)).isEqualTo(Instant.parse("2025-03-01T11:58:30Z"));
        assertThat(AuditCommand.since("2025-01-31T12:00:00Z", NOW)).isEqualTo(Instant.parse("2025-01-31T12:00:00Z"));
        assertThat(AuditCommand.since("2025-01-31T13:00:00+01:00", NOW)).isEqualTo(Instant.parse("2025-01-31T12:00:00Z"));
        for (String bad : new String[] {"yesterday", "2025-01-31", "-5m", "5 m", ""}) {
            assertThatThrownBy(() -> AuditCommand.since(bad, NOW)).as(bad).isInstanceOf(SandboxException.class)
                    .hasMessageContaining("since");
        }
    }
}
