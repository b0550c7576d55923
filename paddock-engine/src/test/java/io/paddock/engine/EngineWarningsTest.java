package io.paddock.engine;

import io.paddock.testkit.EngineWarnings;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/** The attack suite's view of the engine's warnings sees what the engine logs, and only while it is open. */
class EngineWarningsTest {
    private static final System.Logger ENGINE = System.getLogger("io.paddock.engine");

    @Test
    void itCollectsTheEnginesWarningsAboutASandboxWhileOpen() {
        ENGINE.log(System.Logger.Level.WARNING, "sandbox sb-before stopped (FAILED): logged before it was open");
        try (EngineWarnings warnings = new EngineWarnings()) {
            ENGINE.log(System.Logger.Level.INFO, "sandbox sb-one adopted");
            ENGINE.log(System.Logger.Level.WARNING, "sandbox sb-one stopped (FAILED): its init died; the end of its log: panic");
            ENGINE.log(System.Logger.Level.WARNING, "sandbox sb-two stopped (OOM)");
            assertThat(warnings.about("sb-one", Duration.ZERO)).isEqualTo(
                    "sandbox sb-one stopped (FAILED): its init died; the end of its log: panic");
            assertThat(warnings.about("sb-before", Duration.ZERO)).isEqualTo("none");
            assertThat(warnings.about("sb-three", Duration.ofMillis(100))).isEqualTo("none");
            warnings.close();
            ENGINE.log(System.Logger.Level.WARNING, "sandbox sb-three stopped");
            assertThat(warnings.about("sb-three", Duration.ZERO)).isEqualTo("none");
        }
    }
}
