package io.paddock.langchain4j;

import dev.langchain4j.code.CodeExecutionEngine;
import io.paddock.ErrorCode;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The CodeExecutionEngine on real sandboxes (the embedded engine on runc; needs root). */
class PaddockCodeExecutionEngineTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    static Paddock paddock;

    @BeforeAll
    static void start() {
        paddock = Paddock.local();
    }

    @AfterAll
    static void stop() {
        if (paddock != null) {
            paddock.close();
        }
    }

    @Test
    void runsPythonAndAnswersWithItsOutput() {
        SandboxId id;
        try (PaddockCodeExecutionEngine python = PaddockCodeExecutionEngine.of(paddock)) {
            CodeExecutionEngine engine = python;
            assertThat(python.sandbox()).as("created lazily").isEmpty();

            assertThat(engine.execute("print(6*7)")).isEqualTo("42\n");
            assertThat(engine.execute("x = 6\nx * 7")).isEqualTo("42");          // the last expression's value
            assertThat(engine.execute("print('a')\n[1, 2]")).isEqualTo("a\n[1, 2]");
            // one sandbox: files persist between runs (variables do not: each run is a new process)
            engine.execute("open('/workspace/n.txt', 'w').write('41')");
            assertThat(engine.execute("print(int(open('n.txt').read()) + 1)")).isEqualTo("42\n");
            assertThat(engine.execute("print(x)")).startsWith("exited with code 1\n").contains("NameError");
            id = python.sandbox().orElseThrow().id();

            String failed = engine.execute("print('before')\n1/0");
            assertThat(failed).startsWith("exited with code 1\n").contains("stdout:\nbefore\n")
                    .contains("error: ZeroDivisionError: division by zero");
        }
        assertThat(PaddockToolsTest.goneIn(paddock, id)).as("close destroyed the sandbox").isTrue();
    }

    @Test
    void otherLanguagesTimeoutsAndPaddocksOwnFailures() {
        try (PaddockCodeExecutionEngine bash = PaddockCodeExecutionEngine.builder(paddock).language("bash")
                     .timeout(Duration.ofSeconds(2)).build();
             PaddockCodeExecutionEngine c = PaddockCodeExecutionEngine.builder(paddock).language("c").build();
             PaddockCodeExecutionEngine cobol = PaddockCodeExecutionEngine.builder(paddock).language("cobol").build()) {
            assertThat(bash.execute("echo $((6*7)) $(id -u)")).matches("42 [1-9][0-9]*\n");
            assertThat(c.execute("#include <stdio.h>\nint main(){printf(\"%d\\n\", 6*7);}")).isEqualTo("42\n");
            assertThat(c.execute("int main( {")).startsWith("compilation failed: exited with code 1\n");
            assertThat(bash.execute("echo started; while :; do :; done")).startsWith("timed out after ")
                    .contains("stdout:\nstarted\n");
            assertThatThrownBy(() -> cobol.execute("DISPLAY 'HI'."))
                    .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT))
                    .hasMessageContaining("cobol");
        }
    }
}
