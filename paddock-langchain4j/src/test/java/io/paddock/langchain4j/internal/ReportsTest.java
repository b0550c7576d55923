package io.paddock.langchain4j.internal;

import io.paddock.ExitStatus;
import io.paddock.code.CellError;
import io.paddock.code.CodeResult;
import io.paddock.code.RichOutput;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/** The text a model reads: pure functions, no sandbox. */
class ReportsTest {
    static CodeResult result(CodeResult.Step step, int exit, String stdout, String stderr, String value, CellError error) {
        List<RichOutput> results = value == null ? List.of() : List.of(new RichOutput(Map.of(RichOutput.TEXT, value), true));
        return new CodeResult("python", step, ExitStatus.exited(exit, Duration.ofMillis(5)), stdout, stderr, results,
                List.of(), List.of(), Optional.ofNullable(error), false, Duration.ofMillis(5));
    }

    @Test
    void aCutSaysHowMuchItCutAndNeverSplitsACharacter() {
        assertThat(Reports.cap("abc", 3)).isEqualTo("abc");
        assertThat(Reports.cap("abcdef", 4)).isEqualTo("abcd\n… (2 more characters cut)");
        String emoji = "ab\uD83D\uDE00cd";                                   // a surrogate pair at 2..3
        assertThat(Reports.cap(emoji, 3)).isEqualTo("ab\n… (4 more characters cut)");
    }

    @Test
    void aSuccessfulRunReadsAsItsOutputAndAFailureAsAReport() {
        assertThat(Reports.output(result(CodeResult.Step.RUN, 0, "42\n", "", null, null), 100)).isEqualTo("42\n");
        assertThat(Reports.output(result(CodeResult.Step.RUN, 0, "a", "", "[1, 2]", null), 100)).isEqualTo("a\n[1, 2]");
        assertThat(Reports.output(result(CodeResult.Step.RUN, 0, "", "", "42", null), 100)).isEqualTo("42");
        assertThat(Reports.output(result(CodeResult.Step.RUN, 1, "before\n", "Traceback …\n", null,
                new CellError("ZeroDivisionError", "division by zero", "Traceback …")), 100))
                .isEqualTo("exited with code 1\nstdout:\nbefore\nstderr:\nTraceback …\nerror: ZeroDivisionError: division by zero\n");
        assertThat(Reports.code(result(CodeResult.Step.COMPILE, 1, "", "main.c:1: error", null, null), 100))
                .isEqualTo("compilation failed: exited with code 1\nstderr:\nmain.c:1: error\n");
    }
}
