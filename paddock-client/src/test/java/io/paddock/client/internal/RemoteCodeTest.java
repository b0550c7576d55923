package io.paddock.client.internal;

import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.ExitStatus;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import io.paddock.code.Artifact;
import io.paddock.code.CodeContext;
import io.paddock.code.CodeInterpreter;
import io.paddock.code.CodeListener;
import io.paddock.code.CodeOptions;
import io.paddock.code.CodePolicy;
import io.paddock.code.CodePolicyException;
import io.paddock.code.CodeRequest;
import io.paddock.code.CodeResult;
import io.paddock.code.ContextInfo;
import io.paddock.code.Languages;
import io.paddock.code.Plot;
import io.paddock.code.PlotFormat;
import io.paddock.code.ShellResult;
import io.paddock.code.ShellSession;
import io.paddock.server.ServerOptions;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The code layer through the remote SDK: {@code CodeInterpreter.of(Paddock.connect(…).get(id))} gets the
 * remote interpreter, whose contexts and shells live in a real daemon on loopback over a real runc engine.
 * Needs root and runc (CI has both).
 */
class RemoteCodeTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);
    /** The daemon idles connections out this soon, so a quiet cell longer than it shows whether answers wait. */
    private static final Duration IDLE = Duration.ofSeconds(2);
    private static final byte[] PNG = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

    private static LoopbackDaemon daemon;
    private static Paddock paddock;
    /** Shared by the tests that leave it as they found it (each removes its contexts and shells). */
    private static Sandbox shared;

    @BeforeAll
    static void start() {
        daemon = LoopbackDaemon.start(ServerOptions.builder().idleTimeout(IDLE));
        paddock = daemon.connect();
        shared = create();
    }

    @AfterAll
    static void stop() {
        try {
            if (shared != null) {
                shared.destroy();
            }
            if (paddock != null) {
                paddock.close();
            }
        } finally {
            if (daemon != null) {
                daemon.close();
            }
        }
    }

    private static Sandbox create() {
        return paddock.create(SandboxSpec.builder().memory(ByteSize.mib(768)).timeout(Duration.ofMinutes(5)).build());
    }

    @Test
    void theRemoteProviderServesRemoteSandboxesOnly() {
        try (CodeInterpreter code = CodeInterpreter.of(shared)) {
            assertThat(code).isInstanceOf(RemoteCodeInterpreter.class);
            assertThat(code.sandbox()).isSameAs(shared);
        }
        // a custom language table stays with the built-in interpreter (which drives the remote sandbox)
        CodeOptions custom = CodeOptions.builder().languages(Languages.of(Languages.defaults().all())).build();
        assertThat(new RemoteCodeProvider().open(shared, custom)).isEmpty();
    }

    @Test
    void theAvailableLanguagesAreTheDaemonsLookUpInThisSandbox() {
        CodeOptions custom = CodeOptions.builder().languages(Languages.of(Languages.defaults().all())).build();
        try (CodeInterpreter remote = CodeInterpreter.of(shared); CodeInterpreter builtIn = CodeInterpreter.of(shared, custom)) {
            List<String> names = remote.availableLanguages().stream().map(io.paddock.code.Language::name).toList();
            assertThat(names).containsSubsequence("python", "javascript", "bash", "java", "c", "cpp", "perl");
            assertThat(names).isEqualTo(builtIn.availableLanguages().stream().map(io.paddock.code.Language::name).toList());
            assertThat(remote.availableLanguages()).allSatisfy(l -> assertThat(remote.languages().all()).contains(l));
        }
    }

    @Test
    void runsPythonAndACompiledLanguage() {
        try (CodeInterpreter code = CodeInterpreter.of(shared)) {
            List<String> heard = new ArrayList<>();
            CodeResult py = code.run(CodeRequest.of("python", "import sys\nprint(6*7)\nprint('e', file=sys.stderr)"),
                    new CodeListener() {
                        @Override
                        public void onStdout(String text) {
                            heard.add(text);
                        }
                    });
            assertThat(py.success()).isTrue();
            assertThat(py.language()).isEqualTo("python");
            assertThat(py.stdout()).isEqualTo("42\n");
            assertThat(py.stderr()).isEqualTo("e\n");
            assertThat(heard).containsExactly("42\n"); // streamed: one chunk, as the process wrote it at exit

            CodeResult c = code.run("c", "#include <stdio.h>\nint main(void){ printf(\"%d\\n\", 6*7); return 3; }");
            assertThat(c.step()).isEqualTo(CodeResult.Step.RUN);
            assertThat(c.exitCode()).isEqualTo(3);
            assertThat(c.stdout()).isEqualTo("42\n");

            CodeResult broken = code.run("c", "int main(void) { return nope; }");
            assertThat(broken.step()).isEqualTo(CodeResult.Step.COMPILE);
            assertThat(broken.stderr()).contains("nope");

            CodeResult err = code.run("python", "1/0");
            assertThat(err.exitCode()).isEqualTo(1);
            assertThat(err.error().orElseThrow().name()).isEqualTo("ZeroDivisionError");
        }
    }

    @Test
    void aQuietCellLongerThanTheDaemonsIdleTimeoutStillAnswers() {
        try (CodeInterpreter code = CodeInterpreter.of(shared); CodeContext py = code.createContext("python")) {
            CodeResult r = py.run("import time\ntime.sleep(" + (IDLE.toSeconds() * 2) + ")\n'woke'");
            assertThat(r.value().orElseThrow().text()).isEqualTo("'woke'");
        }
    }

    @Test
    void aStreamedCellQuietLongerThanTheDaemonsIdleTimeoutStillEnds() {
        try (CodeInterpreter code = CodeInterpreter.of(shared); CodeContext py = code.createContext("python")) {
            Heard heard = new Heard();
            CodeResult r = py.run(CodeRequest.cell("import time\nprint('a', flush=True)\ntime.sleep("
                    + (IDLE.toSeconds() * 2) + ")\nprint('b')"), heard);
            assertThat(r.stdout()).isEqualTo("a\nb\n");
            assertThat(heard.stdout()).isEqualTo("a\nb\n");
        }
    }

    /** Records what a listener hears, with when it heard it. */
    private static final class Heard implements CodeListener {
        final List<String> events = java.util.Collections.synchronizedList(new ArrayList<>());
        final StringBuffer out = new StringBuffer();
        final StringBuffer err = new StringBuffer();
        final List<io.paddock.code.RichOutput> results = java.util.Collections.synchronizedList(new ArrayList<>());
        final List<Plot> plots = java.util.Collections.synchronizedList(new ArrayList<>());
        final Map<String, Long> firstHeardAt = new java.util.concurrent.ConcurrentHashMap<>();

        @Override
        public void onStdout(String text) {
            out.append(text);
            events.add("out:" + text);
            firstHeardAt.putIfAbsent(text, System.nanoTime());
        }

        @Override
        public void onStderr(String text) {
            err.append(text);
            events.add("err:" + text);
        }

        @Override
        public void onResult(io.paddock.code.RichOutput output) {
            results.add(output);
            events.add("result");
        }

        @Override
        public void onPlot(Plot plot) {
            plots.add(plot);
            events.add("plot");
        }

        String stdout() {
            return out.toString();
        }

        String stderr() {
            return err.toString();
        }
    }

    private static final String TWO_LINES = "import time\nprint('first', flush=True)\ntime.sleep(1.5)\nprint('second', flush=True)";

    @Test
    void outputArrivesWhileACellOrARunIsStillRunning() {
        try (CodeInterpreter code = CodeInterpreter.of(shared); CodeContext py = code.createContext("python")) {
            for (boolean cell : new boolean[] {true, false}) {
                Heard heard = new Heard();
                CodeResult r = cell ? py.run(CodeRequest.cell(TWO_LINES), heard)
                        : code.run(CodeRequest.of("python", TWO_LINES), heard);
                long ended = System.nanoTime();
                assertThat(r.stdout()).isEqualTo("first\nsecond\n");
                assertThat(heard.stdout()).isEqualTo("first\nsecond\n");
                // the first line was heard before the 1.5 s sleep ended, so well before the answer came
                long early = ended - heard.firstHeardAt.get("first\n");
                assertThat(Duration.ofNanos(early)).as(cell ? "cell" : "run").isGreaterThan(Duration.ofMillis(1000));
            }
        }
    }

    @Test
    void streamedEventsKeepEachStreamsOrderAndMatchTheResult() {
        String code = "import sys\nfor i in range(200):\n    print('o%d' % i, flush=True)\n    print('e%d' % i, file=sys.stderr, flush=True)";
        try (CodeInterpreter interpreter = CodeInterpreter.of(shared); CodeContext py = interpreter.createContext("python")) {
            Heard cell = new Heard();
            CodeResult c = py.run(CodeRequest.cell(code), cell);
            Heard run = new Heard();
            CodeResult r = interpreter.run(CodeRequest.of("python", code), run);
            for (var pair : List.of(Map.entry(cell, c), Map.entry(run, r))) {
                assertThat(pair.getKey().stdout()).isEqualTo(pair.getValue().stdout()).startsWith("o0\no1\n").endsWith("o199\n");
                assertThat(pair.getKey().stderr()).isEqualTo(pair.getValue().stderr()).startsWith("e0\ne1\n").endsWith("e199\n");
            }
        }
    }

    @Test
    void richResultsAndPlotsAreStreamedAndTheResultMatchesTheUnstreamedOne() {
        String code = "import matplotlib.pyplot as plt\nplt.figure(figsize=(2, 2), dpi=50)\nplt.plot([1, 2])\nplt.show()\n"
                + "print('done')\n6 * 7";
        try (CodeInterpreter interpreter = CodeInterpreter.of(shared); CodeContext py = interpreter.createContext("python")) {
            Heard heard = new Heard();
            CodeResult streamed = py.run(CodeRequest.cell(code), heard);
            CodeResult plain = py.run(CodeRequest.cell(code)); // no listener: one JSON answer, as before
            assertThat(heard.events).containsExactly("plot", "out:done\n", "result");
            assertThat(heard.results).isEqualTo(streamed.results());
            assertThat(heard.results.get(0).text()).isEqualTo("42");
            assertThat(heard.plots).hasSize(1);
            assertThat(heard.plots.get(0).content()).isEqualTo(streamed.plots().get(0).content());
            assertThat(heard.plots.get(0).width()).isEqualTo(100);
            for (CodeResult r : List.of(streamed, plain)) {
                assertThat(r.stdout()).isEqualTo("done\n");
                assertThat(r.results()).isEqualTo(plain.results());
                assertThat(r.plots()).hasSize(1);
                assertThat(r.plots().get(0).content()).isEqualTo(plain.plots().get(0).content());
                assertThat(r.status().outcome()).isEqualTo(plain.status().outcome());
                assertThat(r.exitCode()).isEqualTo(plain.exitCode());
                assertThat(r.error()).isEqualTo(plain.error());
                assertThat(r.contextRestarted()).isFalse();
            }
            // a one-shot run: the same answer streamed or not
            String once = "import sys\nprint('x')\nprint('y', file=sys.stderr)\nsys.exit(3)";
            CodeResult a = interpreter.run(CodeRequest.of("python", once), new Heard());
            CodeResult b = interpreter.run(CodeRequest.of("python", once));
            assertThat(List.of(a.stdout(), a.stderr(), a.exitCode(), a.step(), a.language()))
                    .isEqualTo(List.of(b.stdout(), b.stderr(), b.exitCode(), b.step(), b.language()));
        }
    }

    @Test
    void aStreamedCellOfAGoneContextIsAPlainNotFound() {
        try (CodeInterpreter code = CodeInterpreter.of(shared)) {
            CodeContext ctx = code.createContext("python");
            ctx.close();
            Heard heard = new Heard();
            assertThatThrownBy(() -> ctx.run(CodeRequest.cell("print(1)"), heard)).isInstanceOfSatisfying(SandboxException.class, e -> {
                assertThat(e.code()).isEqualTo(ErrorCode.NOT_FOUND);
                assertThat(e.getMessage()).contains(ctx.id());
            });
            assertThat(heard.events).isEmpty();
        }
    }

    @Test
    void anInterruptedStreamIsUnavailableAndTheCellStillEnds() throws Exception {
        try (CodeInterpreter code = CodeInterpreter.of(shared); CodeContext py = code.createContext("python")) {
            java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.atomic.AtomicReference<Throwable> thrown = new java.util.concurrent.atomic.AtomicReference<>();
            Thread t = new Thread(() -> {
                try {
                    py.run(CodeRequest.builder().code("import time\nprint('go', flush=True)\ntime.sleep(30)")
                            .timeout(Duration.ofSeconds(3)).build(), new CodeListener() {
                        @Override
                        public void onStdout(String text) {
                            started.countDown();
                        }
                    });
                } catch (Throwable e) {
                    thrown.set(e);
                }
            });
            t.start();
            assertThat(started.await(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
            t.interrupt();
            t.join(10_000);
            assertThat(t.isAlive()).isFalse();
            assertThat(thrown.get()).isInstanceOfSatisfying(SandboxException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.UNAVAILABLE));
            // the daemon times the abandoned cell out as usual; the context then runs the next one
            assertThat(py.run("6 * 7").value().orElseThrow().text()).isEqualTo("42");
        }
    }

    @Test
    void aContextKeepsItsStateAcrossCellsAndOutlivesTheClientConnection() {
        String name = "keep-" + System.nanoTime();
        try (CodeInterpreter code = CodeInterpreter.of(shared)) {
            CodeContext ctx = code.createContext("python", name);
            assertThat(ctx.name()).hasValue(name);
            assertThat(ctx.run("import math\nx = 41").success()).isTrue();
            assertThat(ctx.run("x + 1").value().orElseThrow().text()).isEqualTo("42");
        }
        paddock.close(); // the first connection ends; the context lives in the daemon
        paddock = daemon.connect();
        shared = paddock.get(shared.id());
        try (CodeInterpreter code = CodeInterpreter.of(shared)) {
            assertThat(code.contexts()).extracting(ContextInfo::name).contains(java.util.Optional.of(name));
            CodeContext again = code.context(name);
            CodeResult r = again.run("x += 1\nmath.floor(x + 0.5)");
            assertThat(r.value().orElseThrow().text()).isEqualTo("42");
            assertThat(again.info().cells()).isEqualTo(3);
            code.removeContext(name);
            assertThatThrownBy(() -> code.context(name)).isInstanceOfSatisfying(SandboxException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.NOT_FOUND));
        }
    }

    @Test
    void contextsAreKeptApartRestartedAndRemoved() {
        try (CodeInterpreter code = CodeInterpreter.of(shared)) {
            CodeContext a = code.createContext("python");
            CodeContext b = code.createContext("javascript");
            CodeContext c = code.createContext("python");
            try {
                a.run("x = 'a'");
                c.run("x = 'c'");
                b.run("let x = 'b'");
                assertThat(a.run("x").value().orElseThrow().text()).isEqualTo("'a'");
                assertThat(b.run("x").value().orElseThrow().text()).isEqualTo("'b'");
                assertThat(c.run("x").value().orElseThrow().text()).isEqualTo("'c'");

                a.restart();
                CodeResult gone = a.run("x");
                assertThat(gone.error().orElseThrow().name()).isEqualTo("NameError");
                assertThat(a.info().restarts()).isEqualTo(1);
                assertThat(c.run("x").value().orElseThrow().text()).isEqualTo("'c'");

                a.close();
                a.close(); // idempotent
                assertThatThrownBy(() -> a.run("1")).isInstanceOfSatisfying(SandboxException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.NOT_FOUND);
                    assertThat(e.getMessage()).contains(a.id());
                });
                assertThat(code.contexts()).extracting(ContextInfo::id).doesNotContain(a.id()).contains(b.id(), c.id());
            } finally {
                b.close();
                c.close();
            }
        }
    }

    @Test
    void plotsComeBackAsPngsWithTheirSizeAndArtifactsAreCaptured() {
        try (CodeInterpreter code = CodeInterpreter.of(shared); CodeContext py = code.createContext("python")) {
            CodeResult plot = py.run("import matplotlib.pyplot as plt\nplt.figure(figsize=(4, 3), dpi=100)\n"
                    + "plt.plot([1, 2, 3], [1, 4, 9])\nplt.show()");
            assertThat(plot.plots()).hasSize(1);
            Plot p = plot.plots().get(0);
            assertThat(p.format()).isEqualTo(PlotFormat.PNG);
            byte[] png = p.content();
            assertThat(Arrays.copyOf(png, 8)).isEqualTo(PNG);
            ByteBuffer ihdr = ByteBuffer.wrap(png, 16, 8);
            assertThat(p.width()).isEqualTo(ihdr.getInt()).isEqualTo(400);
            assertThat(p.height()).isEqualTo(ihdr.getInt()).isEqualTo(300);

            CodeResult files = code.run(CodeRequest.builder().language("python").artifactContent(true)
                    .code("import os\nopen(os.path.join(os.environ['PADDOCK_ARTIFACTS_DIR'], 'out.csv'), 'w').write('a,b\\n1,2\\n')")
                    .build());
            assertThat(files.artifacts()).hasSize(1);
            Artifact a = files.artifacts().get(0);
            assertThat(a.name()).isEqualTo("out.csv");
            assertThat(a.mimeType()).isEqualTo("text/csv");
            assertThat(a.size()).isEqualTo(8);
            assertThat(new String(a.content().orElseThrow(), StandardCharsets.UTF_8)).isEqualTo("a,b\n1,2\n");
            assertThat(shared.files().read(a.path())).isEqualTo(a.content().orElseThrow());
        }
    }

    @Test
    void aShellSessionKeepsItsWorkingDirectoryAndVariables() {
        try (CodeInterpreter code = CodeInterpreter.of(shared); ShellSession sh = code.shell(Map.of("GREETING", "hi"))) {
            assertThat(sh.isAlive()).isTrue();
            ShellResult cd = sh.exec("mkdir -p /tmp/remote-shell && cd /tmp/remote-shell && export MODE=test");
            assertThat(cd.success()).isTrue();
            ShellResult r = sh.exec("echo \"$PWD $MODE $GREETING\"; echo err >&2; false");
            assertThat(r.stdout()).isEqualTo("/tmp/remote-shell test hi\n");
            assertThat(r.stderr()).isEqualTo("err\n");
            assertThat(r.exitCode()).isEqualTo(1);
            ShellResult slow = sh.exec("sleep 30", Duration.ofMillis(300));
            assertThat(slow.status().outcome()).isEqualTo(ExitStatus.Outcome.TIMED_OUT);
            assertThat(sh.exec("pwd").stdout()).isEqualTo("/tmp/remote-shell\n");
            sh.close();
            assertThat(sh.isAlive()).isFalse();
            assertThatThrownBy(() -> sh.exec("true")).isInstanceOfSatisfying(SandboxException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.NOT_FOUND));
        }
    }

    @Test
    void thePolicyRefusesCodeBeforeItIsSent() {
        CodeOptions strict = CodeOptions.builder().policy(CodePolicy.preset("standard")).build();
        try (CodeInterpreter code = CodeInterpreter.of(shared, strict)) {
            assertThat(code).isInstanceOf(RemoteCodeInterpreter.class);
            assertThatThrownBy(() -> code.run("python", "import os\nos.system('touch /tmp/refused')"))
                    .isInstanceOfSatisfying(CodePolicyException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.PERMISSION_DENIED);
                        assertThat(e.violations()).isNotEmpty();
                        assertThat(e.violations().get(0).line()).isEqualTo(2);
                    });
            assertThat(shared.files().exists("/tmp/refused")).isFalse();
            assertThat(code.check("python", "import ctypes")).isNotEmpty();
            try (ShellSession sh = code.shell()) {
                assertThatThrownBy(() -> sh.exec("rm -rf /")).isInstanceOf(CodePolicyException.class);
            }
            assertThat(code.run("python", "print(1)").stdout()).isEqualTo("1\n");
        }
    }

    @Test
    void unknownLanguagesAndContextsAreNamed() {
        try (CodeInterpreter code = CodeInterpreter.of(shared)) {
            assertThatThrownBy(() -> code.run("cobol", "DISPLAY 'HI'")).isInstanceOfSatisfying(SandboxException.class, e -> {
                assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
                assertThat(e.getMessage()).contains("cobol").contains("python");
            });
            assertThatThrownBy(() -> code.createContext("cobol")).isInstanceOfSatisfying(SandboxException.class, e -> {
                assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
                assertThat(e.getMessage()).contains("cobol");
            });
            assertThatThrownBy(() -> code.createContext("c")).isInstanceOfSatisfying(SandboxException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.FAILED_PRECONDITION));
            assertThatThrownBy(() -> code.context("no-such-context")).isInstanceOfSatisfying(SandboxException.class, e -> {
                assertThat(e.code()).isEqualTo(ErrorCode.NOT_FOUND);
                assertThat(e.getMessage()).contains("no-such-context");
            });
            String name = "dup-" + System.nanoTime();
            try (CodeContext first = code.createContext("python", name)) {
                assertThatThrownBy(() -> code.createContext("python", name)).isInstanceOfSatisfying(SandboxException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.ALREADY_EXISTS));
            }
        }
    }

    @Test
    void destroyingTheSandboxEndsItsContextsAndShellsInTheDaemon() throws InterruptedException {
        Sandbox sb = create();
        try (CodeInterpreter code = CodeInterpreter.of(sb)) {
            code.createContext("python", "doomed").run("x = 1");
            code.shell().exec("sleep 600 &");
            assertThat(daemonThreads(sb)).isNotEmpty();
        }
        sb.destroy();
        awaitNoDaemonThreads(sb);
    }

    @Test
    void aSandboxThatStopsOnItsOwnEndsItsContextsInTheDaemon() throws InterruptedException {
        Sandbox sb = create();
        try (CodeInterpreter code = CodeInterpreter.of(sb)) {
            code.createContext("python").run("x = 1");
            sb.setTimeout(Duration.ofMillis(200));
            assertThat(sb.awaitStop(Duration.ofSeconds(30))).isPresent();
            awaitNoDaemonThreads(sb);
            assertThatThrownBy(code::contexts).isInstanceOfSatisfying(SandboxException.class,
                    e -> assertThat(e.code()).isIn(ErrorCode.FAILED_PRECONDITION, ErrorCode.NOT_FOUND));
        } finally {
            sb.destroy();
        }
    }

    /** The daemon runs in this JVM: its code threads for the sandbox (interpreter pool and stop watcher). */
    private static List<String> daemonThreads(Sandbox sb) {
        return Thread.getAllStackTraces().keySet().stream().map(Thread::getName)
                .filter(n -> n.startsWith("paddock-code-") && n.contains(sb.id().value())).toList();
    }

    private static void awaitNoDaemonThreads(Sandbox sb) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (!daemonThreads(sb).isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        assertThat(daemonThreads(sb)).as("the daemon's code threads for " + sb.id()).isEmpty();
    }
}
