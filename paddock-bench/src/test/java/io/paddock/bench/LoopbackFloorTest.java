package io.paddock.bench;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * P10's floor measures real round trips on loopback: each answers, and a closed floor leaves no thread behind. P7's
 * floor relays a real host pipe: every byte arrives, however the size falls on its messages.
 */
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

    @Test
    void theRelayedHostPipeDeliversEveryByte() throws Exception {
        try (LoopbackFloor floor = LoopbackFloor.start()) {
            for (long size : new long[] {0, 1, 65536, 65537, 5L << 20}) {
                assertThat(floor.relayedHostPipe(size)).as("size %d", size).isEqualTo(size);
            }
        }
    }
}
