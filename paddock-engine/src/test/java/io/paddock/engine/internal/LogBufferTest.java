package io.paddock.engine.internal;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

class LogBufferTest {
    @Test
    void growsWithWhatIsWrittenAndKeepsTheLastCapacityBytes() {
        LogBuffer b = new LogBuffer(10_000);
        assertThat(b.snapshot()).isEmpty();
        StringBuilder all = new StringBuilder();
        for (int i = 0; i < 3000; i++) {
            String s = i + ",";
            all.append(s);
            byte[] bytes = s.getBytes(StandardCharsets.US_ASCII);
            b.append(bytes, 0, bytes.length);
            String expected = all.length() <= 10_000 ? all.toString() : all.substring(all.length() - 10_000);
            assertThat(new String(b.snapshot(), StandardCharsets.US_ASCII)).isEqualTo(expected);
            assertThat(b.truncated()).isEqualTo(all.length() > 10_000);
        }
    }

    @Test
    void aWriteLargerThanTheCapacityKeepsItsTail() {
        LogBuffer b = new LogBuffer(8);
        byte[] x = "0123456789abc".getBytes(StandardCharsets.US_ASCII);
        b.append(x, 0, x.length);
        assertThat(new String(b.snapshot(), StandardCharsets.US_ASCII)).isEqualTo("56789abc");
        assertThat(b.truncated()).isTrue();
    }
}
