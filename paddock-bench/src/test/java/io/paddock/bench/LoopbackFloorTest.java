package io.paddock.bench;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** P10's floor measures real round trips on loopback: each answers, and a closed floor leaves no thread behind. */
class LoopbackFloorTest {
    @Test
    void bothRoundTripsAnswerAndCloseReleasesTheServer() throws Exception {
        long before = Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().startsWith("bench-floor")).count();
        try (LoopbackFloor floor = LoopbackFloor.start()) {
            for (int i = 0; i < 20; i++) {
                assertThat(floor.httpRoundTrip()).isPositive();
                assertThat(floor.webSocketRoundTrip()).isPositive();
            }
        }
        assertThat(Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().startsWith("bench-floor")
                && t.isAlive()).count()).isEqualTo(before);
    }
}
