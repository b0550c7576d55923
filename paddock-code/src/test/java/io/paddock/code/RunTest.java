package io.paddock.code;

import io.paddock.ErrorCode;
import io.paddock.ExitStatus;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** One-shot runs in every language of the default table, on a real sandbox. */
class RunTest extends SandboxTestBase {

    @Test
    void roundTripInEveryLanguageWithAToolchain() {
        Map<String, String> programs = new LinkedHashMap<>();
        programs.put("python", "import sys\nprint(sum(range(10)), 'from', sys.version_info[0])");
        programs.put("javascript", "console.log([1,2,3].reduce((a, b) => a + b) * 7.5, 'from', 'node')");
        programs.put("bash", "x=45; echo \"$x from $(basename $0 .sh)\"");
        programs.put("java", "public class Hello { public static void main(String[] a) { System.out.println(45 + \" from java\"); } }");
        programs.put("c", "#include <stdio.h>\nint main(void) { printf(\"%d from c\\n\", 45); return 0; }");
        programs.put("cpp", "#include <iostream>\nint main() { std::cout << 45 << \" from cpp\" << std::endl; }");
        programs.put("perl", "my $x = 45; print \"$x from perl\\n\";");
        try (Sandbox sb = sandbox(); CodeInterpreter code = CodeInterpreter.of(sb)) {
            for (Map.Entry<String, String> p : programs.entrySet()) {
                CodeResult r = code.run(p.getKey(), p.getValue());
                assertThat(r.success()).as(p.getKey() + ": " + r + "\n" + r.stderr()).isTrue();
                assertThat(r.stdout()).as(p.getKey()).startsWith("45 from ");
                assertThat(r.language()).isEqualTo(p.getKey());
            }
            // aliases, a non-zero exit and stdin closed
            CodeResult r = code.run("py", "import sys; sys.stderr.write('bad\\n'); sys.exit(3)");
            assertThat(r.exitCode()).isEqualTo(3);
            assertThat(r.stderr()).isEqualTo("bad\n");
            assertThat(code.run("sh", "read x; echo \"[$x]\"").stdout()).isEqualTo("[]\n");
        }
    }

    @Test
    void compileErrorsAndMissingToolchainsAreReportedClearly() {
        try (Sandbox sb = sandbox(); CodeInterpreter code = CodeInterpreter.of(sb)) {
            CodeResult r = code.run("c", "int main(void) { return nope; }");
            assertThat(r.step()).isEqualTo(CodeResult.Step.COMPILE);
            assertThat(r.success()).isFalse();
            assertThat(r.stderr()).contains("nope");
            for (String lang : new String[] {"go", "ruby", "r"}) {
                Language row = code.languages().get(lang);
                String cmd = row.run().get(0);
                boolean present = sb.exec("sh", "-c", "command -v " + cmd).success();
                if (present) {
                    continue; // this host's image has it: the row simply runs
                }
                assertThatThrownBy(() -> code.run(lang, "x"))
                        .isInstanceOf(SandboxException.class)
                        .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.FAILED_PRECONDITION))
                        .hasMessageContaining("'" + cmd + "' is missing from this sandbox's image");
            }
            assertThat(code.run("python", "print('still usable')").stdout()).isEqualTo("still usable\n");
        }
    }

    @Test
    void theAvailableLanguagesAreTheRowsTheImageHasAToolchainFor() {
        Language tcl = new Language("tcl", List.of(), "main.tcl", List.of(), List.of("no-such-tclsh", "{file}"),
                List.of(), Map.of(), Optional.empty(), false, false, "#", List.of());
        Language pascal = new Language("pascal", List.of(), "main.pas", List.of("no-such-fpc", "{file}"),
                List.of("sh", "{dir}/main"), List.of(), Map.of(), Optional.empty(), false, false, "//", List.of());
        CodeOptions options = CodeOptions.builder().languages(Languages.defaults().with(tcl).with(pascal)).build();
        try (Sandbox sb = sandbox(); CodeInterpreter code = CodeInterpreter.of(sb, options)) {
            List<String> names = code.availableLanguages().stream().map(Language::name).toList();
            assertThat(names).containsSubsequence("python", "javascript", "bash", "java", "c", "cpp", "perl");
            assertThat(names).doesNotContain("tcl", "pascal"); // a missing run command, a missing compiler
            for (String lang : new String[] {"go", "ruby", "r"}) {
                String cmd = code.languages().get(lang).run().get(0);
                assertThat(names.contains(lang)).as(lang).isEqualTo(sb.exec("sh", "-c", "command -v " + cmd).success());
            }
            // in table order
            assertThat(names).isEqualTo(code.languages().all().stream().map(Language::name).filter(names::contains).toList());
            assertThatThrownBy(() -> code.run("tcl", "puts hi")).hasMessageContaining("'no-such-tclsh' is missing");
        }
    }

    @Test
    void badInputIsRefusedWithTheFieldNamed() {
        try (Sandbox sb = sandbox(); CodeInterpreter code = CodeInterpreter.of(sb)) {
            assertThatThrownBy(() -> code.run("cobol", "DISPLAY 'HI'"))
                    .isInstanceOf(SandboxException.class).hasMessageContaining("unknown language 'cobol'")
                    .hasMessageContaining("python")
                    .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
            assertThatThrownBy(() -> code.run("python", "  \n"))
                    .isInstanceOf(SandboxException.class).hasMessageStartingWith("code: empty");
            char[] big = new char[CodeRequest.MAX_CODE_BYTES + 1];
            Arrays.fill(big, '#');
            assertThatThrownBy(() -> code.run("python", new String(big)))
                    .isInstanceOf(SandboxException.class).hasMessageContaining("too large");
            assertThatThrownBy(() -> code.run(CodeRequest.cell("print(1)")))
                    .isInstanceOf(SandboxException.class).hasMessageContaining("language: missing");
            assertThatThrownBy(() -> code.createContext("bash"))
                    .isInstanceOf(SandboxException.class).hasMessageContaining("no stateful contexts");
            assertThatThrownBy(() -> code.context("ctx-nope"))
                    .isInstanceOf(SandboxException.class).hasMessageContaining("no code context 'ctx-nope'")
                    .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.NOT_FOUND));
            assertThat(code.run("python", "print('ok')").stdout()).isEqualTo("ok\n");
        }
    }

    @Test
    void runsTimeOutAndCapOutput() {
        try (Sandbox sb = sandbox(); CodeInterpreter code = CodeInterpreter.of(sb)) {
            CodeResult slow = code.run(CodeRequest.builder().language("python").code("import time; print('a', flush=True); time.sleep(30)")
                    .timeout(Duration.ofMillis(700)).build());
            assertThat(slow.timedOut()).isTrue();
            assertThat(slow.status().outcome()).isEqualTo(ExitStatus.Outcome.TIMED_OUT);
            assertThat(slow.stdout()).isEqualTo("a\n");
            CodeResult loud = code.run(CodeRequest.builder().language("python").code("print('x' * 100000)")
                    .outputLimit(io.paddock.ByteSize.kib(4)).build());
            assertThat(loud.stdout()).hasSize(4096);
            assertThat(loud.status().stdoutTruncated()).isTrue();
        }
    }

    @Test
    void matplotlibFiguresComeBackAsPngWithTheirSizeOrSvgOnRequest() {
        String code = "import matplotlib.pyplot as plt\n"
                + "plt.plot([1, 2, 3], [1, 4, 9]); plt.title('shown'); plt.show()\n"
                + "fig = plt.figure(figsize=(3, 2), dpi=100); plt.bar(['a', 'b'], [3, 5])\n"
                + "print('done')\n";
        try (Sandbox sb = sandbox(); CodeInterpreter ci = CodeInterpreter.of(sb)) {
            CodeResult r = ci.run("python", code);
            assertThat(r.success()).as(r.stderr()).isTrue();
            assertThat(r.stdout()).isEqualTo("done\n");
            assertThat(r.plots()).hasSize(2);
            assertPng(r.plots().get(0), 640, 480);
            assertPng(r.plots().get(1), 300, 200);

            CodeResult svg = ci.run(CodeRequest.builder().language("python").code(code).plotFormat(PlotFormat.SVG).build());
            assertThat(svg.plots()).hasSize(2);
            assertThat(svg.plots().get(0).format()).isEqualTo(PlotFormat.SVG);
            assertThat(new String(svg.plots().get(0).content(), StandardCharsets.UTF_8)).contains("<svg");
            assertThat(svg.plots().get(1).width()).isEqualTo(300);
        }
    }

    static void assertPng(Plot plot, int width, int height) {
        byte[] b = plot.content();
        assertThat(plot.format()).isEqualTo(PlotFormat.PNG);
        assertThat(Arrays.copyOf(b, 8)).containsExactly(0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n');
        assertThat(new String(b, 12, 4, StandardCharsets.US_ASCII)).isEqualTo("IHDR");
        int w = ((b[16] & 0xff) << 24) | ((b[17] & 0xff) << 16) | ((b[18] & 0xff) << 8) | (b[19] & 0xff);
        int h = ((b[20] & 0xff) << 24) | ((b[21] & 0xff) << 16) | ((b[22] & 0xff) << 8) | (b[23] & 0xff);
        assertThat(w).isEqualTo(width);
        assertThat(h).isEqualTo(height);
        assertThat(plot.width()).isEqualTo(width);
        assertThat(plot.height()).isEqualTo(height);
    }

    @Test
    void filesUnderTheArtifactsDirectoryComeBackWithTypeSizeAndBytesOnRequest() {
        String code = "import os, json\n"
                + "d = os.environ['PADDOCK_ARTIFACTS_DIR']\n"
                + "open(os.path.join(d, 'table.csv'), 'w').write('a,b\\n1,2\\n')\n"
                + "os.makedirs(os.path.join(d, 'sub'))\n"
                + "json.dump({'k': 1}, open(os.path.join(d, 'sub', 'data.json'), 'w'))\n"
                + "open(os.path.join(d, 'blob'), 'wb').write(bytes(range(10)))\n";
        try (Sandbox sb = sandbox(); CodeInterpreter ci = CodeInterpreter.of(sb)) {
            CodeResult r = ci.run(CodeRequest.builder().language("python").code(code).artifactContent(true).build());
            assertThat(r.success()).as(r.stderr()).isTrue();
            assertThat(r.artifacts()).extracting(Artifact::name).containsExactly("blob", "sub/data.json", "table.csv");
            assertThat(r.artifacts()).extracting(Artifact::mimeType)
                    .containsExactly("application/octet-stream", "application/json", "text/csv");
            Artifact csv = r.artifacts().get(2);
            assertThat(csv.size()).isEqualTo(8);
            assertThat(new String(csv.content().orElseThrow(), StandardCharsets.UTF_8)).isEqualTo("a,b\n1,2\n");
            assertThat(sb.files().readString(csv.path())).isEqualTo("a,b\n1,2\n");

            // metadata only by default; other languages get the same directory
            CodeResult js = ci.run("javascript", "require('fs').writeFileSync(process.env.PADDOCK_ARTIFACTS_DIR + '/out.txt', 'hi')");
            assertThat(js.artifacts()).singleElement().satisfies(a -> {
                assertThat(a.name()).isEqualTo("out.txt");
                assertThat(a.mimeType()).isEqualTo("text/plain");
                assertThat(a.size()).isEqualTo(2);
                assertThat(a.content()).isEmpty();
            });
        }
    }

    @Test
    void theLastExpressionOfAPythonRunIsRichOutput() {
        try (Sandbox sb = sandbox(); CodeInterpreter ci = CodeInterpreter.of(sb)) {
            CodeResult r = ci.run("python", "x = {'a': [1, 2]}\nx");
            assertThat(r.value()).hasValueSatisfying(v -> {
                assertThat(v.text()).isEqualTo("{'a': [1, 2]}");
                assertThat(v.json()).hasValue("{\"a\": [1, 2]}");
            });
            assertThat(r.stdout()).isEmpty();
            CodeResult err = ci.run("python", "def f():\n    return 1 / 0\nf()");
            assertThat(err.exitCode()).isEqualTo(1);
            assertThat(err.stderr()).contains("ZeroDivisionError").contains("line 2, in f");
            assertThat(err.error()).hasValueSatisfying(e -> assertThat(e.name()).isEqualTo("ZeroDivisionError"));
        }
    }
}
