package io.paddock.wire;

import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.ExecRequest;
import io.paddock.ExitStatus;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class WireTest {
    @Test
    void specRoundTrips() {
        SandboxSpec spec = SandboxSpec.builder().name("a-b").label("team", "ml").env("K", "V").secret("S", "x")
                .memory(ByteSize.mib(256)).cpus(1.5).pids(64).disk(ByteSize.gib(2)).openFiles(2048)
                .timeout(Duration.ofSeconds(90)).entrypoint("sleep", "1").workdir("/workspace/p").build();
        assertThat(Wire.spec(Wire.json(spec))).isEqualTo(spec);
    }

    @Test
    void specAcceptsSizesAsStringsOrBytes() {
        SandboxSpec s = Wire.spec(Wire.parse("{\"memory\":\"256m\",\"disk\":1048576}".getBytes(StandardCharsets.UTF_8)));
        assertThat(s.memory()).isEqualTo(ByteSize.mib(256));
        assertThat(s.disk()).isEqualTo(ByteSize.mib(1));
    }

    @Test
    void badFieldsAreInvalidArgumentsNamingTheField() {
        assertInvalid("{\"memory\":\"lots\"}", "memory");
        assertInvalid("{\"pids\":\"many\"}", "pids");
        assertInvalid("{\"bogus\":1}", "bogus");
        assertInvalid("{\"name\":\"Bad Name\"}", "name");
        assertInvalid("[1,2]", "body");
        assertInvalid("{", "body");
        assertInvalid("{\"labels\":" + "{\"a\":".repeat(40) + "1" + "}".repeat(41), "body");
    }

    @Test
    void execRequestRoundTrips() {
        ExecRequest r = ExecRequest.builder().argv("sh", "-c", "cat").env("A", "1").cwd("/tmp")
                .timeout(Duration.ofSeconds(3)).stdin("in").outputLimit(ByteSize.kib(4)).build();
        ExecRequest back = Wire.execRequest(Wire.json(r, true));
        assertThat(back.argv()).isEqualTo(r.argv());
        assertThat(back.env()).isEqualTo(r.env());
        assertThat(back.cwd()).isEqualTo(r.cwd());
        assertThat(back.timeout()).isEqualTo(r.timeout());
        assertThat(back.stdin().orElseThrow()).isEqualTo("in".getBytes(StandardCharsets.UTF_8));
        assertThat(back.outputLimit()).isEqualTo(r.outputLimit());
    }

    @Test
    void exitStatusRoundTrips() {
        ExitStatus s = new ExitStatus(ExitStatus.Outcome.OOM_KILLED, 137, 9, true, false, Duration.ofMillis(1234));
        assertThat(Wire.exitStatus(Wire.json(s))).isEqualTo(s);
    }

    @Test
    void errorsRoundTripThroughHttp() {
        for (ErrorCode code : ErrorCode.values()) {
            SandboxException e = new SandboxException(code, "boom " + code);
            SandboxException back = Wire.exception(HttpStatus.of(code), Wire.bytes(Wire.error(e)));
            assertThat(back.code()).isEqualTo(code);
            assertThat(back.getMessage()).isEqualTo("boom " + code);
        }
        assertThat(Wire.exception(502, "<html>bad gateway</html>".getBytes(StandardCharsets.UTF_8)).code())
                .isEqualTo(ErrorCode.UNAVAILABLE);
    }

    private static void assertInvalid(String json, String field) {
        assertThatThrownBy(() -> Wire.spec(Wire.parse(json.getBytes(StandardCharsets.UTF_8))))
                .isInstanceOf(SandboxException.class)
                .satisfies(e -> {
                    assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
                    assertThat(e.getMessage()).startsWith(field + ":");
                });
    }
}
