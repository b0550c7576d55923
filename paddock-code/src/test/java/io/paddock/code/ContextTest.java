package io.paddock.code;

import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.ExitStatus;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Stateful contexts on a real sandbox: state, isolation, rich output, plots, timeouts, lifecycle. */
class ContextTest extends SandboxTestBase {

    @Test
    void pythonStatePersistsAcrossCellsAndIsKeptApartBetweenContexts() {
        try (Sandbox sb = sandbox(); CodeInterpreter ci = CodeInterpreter.of(sb)) {
            CodeContext a = ci.createContext("python", "a");
            CodeContext b = ci.createContext("python");
            assertThat(a.run("import math\nx = 41\ndef twice(n):\n    return 2 * n").success()).isTrue();
            assertThat(b.run("x = 'other'").success()).isTrue();
            assertThat(a.run("twice(x) + math.floor(0.5)").value().orElseThrow().text()).isEqualTo("82");
            assertThat(b.run("x").value().orElseThrow().text()).isEqualTo("'other'");
            CodeResult missing = b.run("twice(1)");
            assertThat(missing.exitCode()).isEqualTo(1);
            assertThat(missing.error().orElseThrow().name()).isEqualTo("NameError");
            assertThat(missing.stderr()).contains("NameError");
            // output of subprocesses and C-level writes is captured, in the right stream, even without a newline
            CodeResult out = a.run("import os, sys\nprint('py')\nos.system('echo sub; echo err >&2')\nos.write(1, b'raw')\nsys.stderr.write('e2')");
            assertThat(out.stdout()).isEqualTo("py\nsub\nraw");
            assertThat(out.stderr()).isEqualTo("err\ne2");
            assertThat(ci.contexts()).extracting(ContextInfo::id).containsExactly(a.id(), b.id());
            assertThat(ci.context("a")).isSameAs(a);
        }
    }

    @Test
    void javascriptStatePersistsAcrossCellsAndIsKeptApartBetweenContexts() {
        try (Sandbox sb = sandbox(); CodeInterpreter ci = CodeInterpreter.of(sb)) {
            CodeContext a = ci.createContext("javascript");
            CodeContext b = ci.createContext("js");
            assertThat(a.run("const path = require('path'); let x = 41; function twice(n) { return 2 * n }").success()).isTrue();
            assertThat(b.run("var x = 'other'").success()).isTrue();
            assertThat(a.run("twice(x)").value().orElseThrow().text()).isEqualTo("82");
            assertThat(a.run("path.basename('/a/b.txt')").value().orElseThrow().json()).hasValue("\"b.txt\"");
            assertThat(b.run("x").value().orElseThrow().text()).isEqualTo("'other'");
            assertThat(b.run("typeof twice").value().orElseThrow().text()).isEqualTo("'undefined'");
            CodeResult err = b.run("null.f");
            assertThat(err.exitCode()).isEqualTo(1);
            assertThat(err.error().orElseThrow().name()).isEqualTo("TypeError");
            CodeResult out = a.run("process.stdout.write('no-newline'); console.error('e'); require('child_process').execSync('echo sub', {stdio: 'inherit'}); undefined");
            assertThat(out.stdout()).isEqualTo("no-newlinesub\n");
            assertThat(out.stderr()).isEqualTo("e\n");
            assertThat(out.results()).isEmpty();
            CodeResult awaited = a.run("await new Promise(r => setTimeout(() => r(7), 10))");
            assertThat(awaited.success()).as(awaited.stderr()).isTrue();
        }
    }

    /** The kernels' pumps (threads, select, pipes, IPC) work under gVisor too, not only under runc. */
    @Test
    void contextsWorkOnTheGvisorTier() {
        try (Sandbox sb = paddock.create(SandboxSpec.builder().runtime("runsc").memory(ByteSize.mib(768))
                .timeout(Duration.ofMinutes(5)).build());
             CodeInterpreter ci = CodeInterpreter.of(sb)) {
            CodeContext py = ci.createContext("python");
            assertThat(py.run("x = 41\nprint('py')").stdout()).isEqualTo("py\n");
            CodeResult value = py.run("x + 1");
            assertThat(value.value().orElseThrow().text()).isEqualTo("42");
            assertThat(value.duration()).isLessThan(Duration.ofSeconds(2));
            CodeResult big = py.run("import os\nos.write(1, b'b' * 200000)\n'v'");
            assertThat(big.stdout()).isEqualTo("b".repeat(200000));
            assertThat(big.value().orElseThrow().text()).isEqualTo("'v'");
            CodeContext js = ci.createContext("javascript");
            assertThat(js.run("let y = 6; console.log('js')").stdout()).isEqualTo("js\n");
            assertThat(js.run("y * 7").value().orElseThrow().text()).isEqualTo("42");
        }
    }

    /**
     * The Python kernel's pipes: the cell's own thread drains them, so output more than a pipe holds, split
     * UTF-8 and late output of a background process each land whole, in order, in the right cell.
     */
    @Test
    void pythonOutputComesWholeBeforeTheValueAndStaysInItsCell() {
        try (Sandbox sb = sandbox(); CodeInterpreter ci = CodeInterpreter.of(sb); CodeContext py = ci.createContext("python")) {
            List<String> seen = new ArrayList<>();
            CodeResult big = py.run(CodeRequest.cell("import os\nos.write(1, b'a' * 300000)\n"
                    + "e = 'é'.encode()\nos.write(1, e[:1]); os.write(1, e[1:])\nos.write(2, b'err')\n7"), new CodeListener() {
                @Override
                public void onStdout(String text) {
                    seen.add("out");
                }

                @Override
                public void onResult(RichOutput output) {
                    seen.add("=" + output.text());
                }
            });
            assertThat(big.stdout()).isEqualTo("a".repeat(300000) + "é");
            assertThat(big.stderr()).isEqualTo("err");
            assertThat(seen.get(seen.size() - 1)).isEqualTo("=7");
            assertThat(seen).contains("out");

            CodeResult capped = py.run(CodeRequest.builder().code("print('x' * 5000)").outputLimit(ByteSize.bytes(1000)).build());
            assertThat(capped.stdout()).hasSize(1000);
            assertThat(capped.status().stdoutTruncated()).isTrue();
            assertThat(py.run("1").status().stdoutTruncated()).isFalse();

            // output written after its cell ended, between cells, is not the next cell's
            assertThat(py.run("import subprocess\nsubprocess.Popen('sleep 0.3; echo late', shell=True)\nprint('now')").stdout())
                    .isEqualTo("now\n");
            sleep(Duration.ofMillis(600));
            CodeResult later = py.run("'later'");
            assertThat(later.stdout()).isEmpty();
            assertThat(later.value().orElseThrow().text()).isEqualTo("'later'");

            // a request line longer than one read of the kernel's stdin
            CodeResult longCode = py.run("s = '" + "z".repeat(200_000) + "'\nlen(s)");
            assertThat(longCode.value().orElseThrow().text()).isEqualTo("200000");
        }
    }

    @Test
    void theLastExpressionComesBackAsTextHtmlAndJson() {
        try (Sandbox sb = sandbox(); CodeInterpreter ci = CodeInterpreter.of(sb); CodeContext py = ci.createContext("python")) {
            RichOutput json = py.run("{'a': [1, 2], 'b': None}").value().orElseThrow();
            assertThat(json.text()).isEqualTo("{'a': [1, 2], 'b': None}");
            assertThat(json.json()).hasValue("{\"a\": [1, 2], \"b\": null}");
            RichOutput html = py.run("class T:\n    def _repr_html_(self):\n        return '<b>t</b>'\n    def __repr__(self):\n        return 'T()'\nT()")
                    .value().orElseThrow();
            assertThat(html.text()).isEqualTo("T()");
            assertThat(html.html()).hasValue("<b>t</b>");
            assertThat(html.json()).isEmpty();
            assertThat(py.run("x = 1").results()).isEmpty();
            assertThat(py.run("None").results()).isEmpty();
            CodeResult shown = py.run("display({'n': 1})\n'last'");
            assertThat(shown.results()).hasSize(2);
            assertThat(shown.results().get(0).fromLastExpression()).isFalse();
            assertThat(shown.value().orElseThrow().json()).hasValue("\"last\"");
        }
    }

    @Test
    void plotsAndArtifactsComeBackFromCells() {
        try (Sandbox sb = sandbox(); CodeInterpreter ci = CodeInterpreter.of(sb); CodeContext py = ci.createContext("python")) {
            CodeResult r = py.run(CodeRequest.builder().code("import matplotlib.pyplot as plt, os\n"
                    + "plt.figure(figsize=(4, 3)); plt.plot([1, 2]); plt.show()\n"
                    + "open(os.environ['PADDOCK_ARTIFACTS_DIR'] + '/notes.md', 'w').write('# hi')\n"
                    + "fig = plt.figure(figsize=(2, 2)); plt.plot([2, 1])").artifactContent(true).build());
            assertThat(r.success()).as(r.stderr()).isTrue();
            assertThat(r.plots()).hasSize(2);
            RunTest.assertPng(r.plots().get(0), 400, 300);
            RunTest.assertPng(r.plots().get(1), 200, 200);
            assertThat(r.artifacts()).singleElement().satisfies(a -> {
                assertThat(a.name()).isEqualTo("notes.md");
                assertThat(a.mimeType()).isEqualTo("text/markdown");
                assertThat(new String(a.content().orElseThrow(), StandardCharsets.UTF_8)).isEqualTo("# hi");
            });
            // each cell has its own artifacts directory: the next one starts empty
            assertThat(py.run("fig").plots()).hasSize(1);
            assertThat(py.run("1").artifacts()).isEmpty();
        }
    }

    @Test
    void aTimedOutCellIsInterruptedAndThePythonContextKeepsItsState() {
        CodeOptions opts = CodeOptions.builder().interruptGrace(Duration.ofMillis(800)).build();
        try (Sandbox sb = sandbox(); CodeInterpreter ci = CodeInterpreter.of(sb, opts)) {
            CodeContext py = ci.createContext("python");
            py.run("x = 5");
            CodeResult slow = py.run("import time\nprint('start', flush=True)\nwhile True:\n    time.sleep(0.01)", Duration.ofMillis(500));
            assertThat(slow.timedOut()).isTrue();
            assertThat(slow.status().outcome()).isEqualTo(ExitStatus.Outcome.TIMED_OUT);
            assertThat(slow.contextRestarted()).isFalse();
            assertThat(slow.stdout()).isEqualTo("start\n");
            assertThat(slow.error().orElseThrow().name()).isEqualTo("KeyboardInterrupt");
            assertThat(py.run("x").value().orElseThrow().text()).isEqualTo("5");

            // a cell that swallows the interrupt: the context is restarted and says so
            CodeResult stubborn = py.run("while True:\n    try:\n        time.sleep(10)\n    except KeyboardInterrupt:\n        pass",
                    Duration.ofMillis(300));
            assertThat(stubborn.timedOut()).isTrue();
            assertThat(stubborn.contextRestarted()).isTrue();
            assertThat(py.run("'x' in dir()").value().orElseThrow().text()).isEqualTo("False");
            assertThat(py.info().restarts()).isEqualTo(1);

            CodeContext js = ci.createContext("javascript");
            js.run("let y = 6");
            CodeResult spin = js.run("while (true) {}", Duration.ofMillis(500));
            assertThat(spin.timedOut()).isTrue();
            assertThat(spin.contextRestarted()).isFalse();
            assertThat(js.run("y").value().orElseThrow().text()).isEqualTo("6");
        }
    }

    @Test
    void contextsAreListedRestartedAndRemoved() {
        try (Sandbox sb = sandbox(); CodeInterpreter ci = CodeInterpreter.of(sb)) {
            CodeContext a = ci.createContext("python", "work");
            a.run("v = 1");
            assertThatThrownBy(() -> ci.createContext("python", "work"))
                    .isInstanceOf(SandboxException.class)
                    .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.ALREADY_EXISTS));
            a.restart();
            assertThat(a.run("'v' in dir()").value().orElseThrow().text()).isEqualTo("False");
            assertThat(a.info().cells()).isEqualTo(2);
            // a process that dies is restarted, and the cell says so
            CodeResult died = a.run("import os; os._exit(7)");
            assertThat(died.contextRestarted()).isTrue();
            assertThat(died.exitCode()).isEqualTo(7);
            assertThat(a.run("1 + 1").value().orElseThrow().text()).isEqualTo("2");
            try (CodeContext js = ci.createContext("javascript")) {
                js.run("globalThis.k = 1");
                CodeResult exited = js.run("process.exit(5)");
                assertThat(exited.contextRestarted()).isTrue();
                assertThat(exited.exitCode()).isEqualTo(5);
                assertThat(js.run("typeof k").value().orElseThrow().text()).isEqualTo("'undefined'");
            }
            ci.removeContext("work");
            assertThat(ci.contexts()).isEmpty();
            assertThatThrownBy(() -> a.run("1")).isInstanceOf(SandboxException.class).hasMessageContaining("was removed");
            assertThatThrownBy(() -> ci.removeContext("work"))
                    .isInstanceOf(SandboxException.class)
                    .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.NOT_FOUND));
            a.close(); // idempotent
            assertThatThrownBy(() -> a.run(CodeRequest.builder().language("javascript").code("1").build()))
                    .isInstanceOf(SandboxException.class);
        }
    }

    @Test
    void outputIsStreamedToAListener() {
        try (Sandbox sb = sandbox(); CodeInterpreter ci = CodeInterpreter.of(sb); CodeContext py = ci.createContext("python")) {
            List<String> seen = new ArrayList<>();
            CodeResult r = py.run(CodeRequest.cell("for i in range(3): print(i)\n42"), new CodeListener() {
                @Override
                public void onStdout(String text) {
                    seen.add(text);
                }

                @Override
                public void onResult(RichOutput output) {
                    seen.add("=" + output.text());
                }
            });
            assertThat(String.join("", seen)).isEqualTo("0\n1\n2\n=42");
            assertThat(r.stdout()).isEqualTo("0\n1\n2\n");
        }
    }

    private static void sleep(Duration d) {
        try {
            Thread.sleep(d.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
