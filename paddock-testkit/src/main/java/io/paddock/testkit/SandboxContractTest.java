package io.paddock.testkit;

import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.ExecResult;
import io.paddock.ExitStatus;
import io.paddock.FileInfo;
import io.paddock.FileType;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.SandboxInfo;
import io.paddock.SandboxQuery;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;
import io.paddock.Signal;
import io.paddock.StopReason;
import io.paddock.TerminalSize;
import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The behaviour every Paddock backend must have, whatever isolates it (runc, runsc, a daemon over HTTP).
 * A backend's test class extends this and supplies {@link #paddock()}; it should also register the leak
 * check. Each test creates and destroys its own sandboxes.
 */
public abstract class SandboxContractTest {

    /** The Paddock under test, shared by the tests of one class. */
    protected abstract Paddock paddock();

    /** The isolation tier under test, for the few promises that differ per tier (docs/SECURITY.md). */
    protected Tier tier() {
        return Tier.RUNC;
    }

    /** A small sandbox: tests run many, on a 2-core machine. */
    protected SandboxSpec.Builder small() {
        return SandboxSpec.builder().memory(ByteSize.mib(256)).pids(128).disk(ByteSize.mib(256))
                .timeout(Duration.ofMinutes(2));
    }

    protected Sandbox create() {
        return paddock().create(small().build());
    }

    // ---- one-shot exec ----

    @Test
    void execCapturesStdoutAndExitCode() {
        try (Sandbox sb = create()) {
            ExecResult r = sb.exec("python3", "-c", "print(6*7)");
            assertThat(r.stdoutText()).isEqualTo("42\n");
            assertThat(r.exitCode()).isZero();
            assertThat(r.status().outcome()).isEqualTo(ExitStatus.Outcome.EXITED);
            assertThat(r.success()).isTrue();
        }
    }

    @Test
    void execReportsNonZeroExitAndSeparateStderr() {
        try (Sandbox sb = create()) {
            ExecResult r = sb.exec("sh", "-c", "echo out; echo err >&2; exit 3");
            assertThat(r.exitCode()).isEqualTo(3);
            assertThat(r.stdoutText()).isEqualTo("out\n");
            assertThat(r.stderrText()).isEqualTo("err\n");
        }
    }

    @Test
    void argvIsNeverInterpretedByAShell() {
        try (Sandbox sb = create()) {
            ExecResult r = sb.exec("echo", "$(id)", ";", "rm -rf /", "`x`");
            assertThat(r.stdoutText()).isEqualTo("$(id) ; rm -rf / `x`\n");
        }
    }

    /**
     * The seccomp profile allows what ordinary runtimes use, on every tier: {@code select} (glibc issues
     * pselect6, which gVisor's own syscall table calls "pselect"), poll, epoll and threads.
     */
    @Test
    void everydaySyscallsOfLanguageRuntimesAreAllowed() {
        try (Sandbox sb = create()) {
            ExecResult r = sb.exec("python3", "-c", """
                    import os, select, threading
                    r, w = os.pipe()
                    os.write(w, b"x")
                    got = []
                    t = threading.Thread(target=lambda: got.append(select.select([r], [], [], 5)[0] == [r]))
                    t.start(); t.join()
                    p = select.poll(); p.register(r)
                    e = select.epoll(); e.register(r)
                    print(got, len(p.poll(0)), len(e.poll(0)))
                    """);
            assertThat(r.stderrText()).isEmpty();
            assertThat(r.stdoutText()).isEqualTo("[True] 1 1\n");
        }
    }

    /**
     * The default {@code LANG=C.UTF-8} works, and comes from one locale archive: the host image carries one when
     * the host has none, so a program's start maps one file instead of opening twelve (110 system calls for
     * {@code echo} become 40; each is a trip through the Sentry on gVisor).
     */
    @Test
    void theDefaultLocaleIsUtf8FromOneArchive() {
        try (Sandbox sb = create()) {
            ExecResult r = sb.exec("sh", "-c", "locale charmap; test -f /usr/lib/locale/locale-archive && echo archive;"
                    + " locale -a | grep -ix c.utf-*8; python3 -c 'print(\"\\u00e9\".encode())'");
            assertThat(r.stderrText()).isEmpty();
            assertThat(r.stdoutText()).isEqualTo("UTF-8\narchive\nC.utf8\nb'\\xc3\\xa9'\n");
        }
    }

    /**
     * A command starts with every signal at its default disposition: the init ignores SIGPIPE for itself, and an
     * ignored signal survives execve, so the init resets what it does not leave at the default (found once at its
     * start; on gVisor, whose status has no signal masks, from what the init set itself). bash lists a signal
     * it was started with ignored as {@code trap -- '' SIG…}, with no trap of its own.
     */
    @Test
    void commandsStartWithNoSignalIgnored() {
        try (Sandbox sb = create()) {
            ExecResult r = sb.exec("bash", "-c", "trap -p; echo end");
            assertThat(r.stderrText()).isEmpty();
            assertThat(r.stdoutText()).isEqualTo("end\n");
        }
    }

    @Test
    void commandNotFoundExitsWith127AndSaysWhy() {
        try (Sandbox sb = create()) {
            ExecResult r = sb.exec("no-such-command-xyz");
            assertThat(r.exitCode()).isEqualTo(127);
            assertThat(r.stderrText()).contains("no-such-command-xyz");
        }
    }

    @Test
    void execEnvironmentCwdAndStdin() {
        try (Sandbox sb = paddock().create(small().env("MODE", "test").secret("API_TOKEN", "tok-123").build())) {
            ExecResult env = sb.exec(ExecRequest.builder().argv("sh", "-c", "echo $MODE $API_TOKEN $EXTRA $HOME; pwd")
                    .env("EXTRA", "x").cwd("/tmp").build());
            assertThat(env.stdoutText()).isEqualTo("test tok-123 x /workspace\n/tmp\n");
            ExecResult cat = sb.exec(ExecRequest.builder().argv("cat").stdin("hello stdin").build());
            assertThat(cat.stdoutText()).isEqualTo("hello stdin");
            assertThat(sb.exec("pwd").stdoutText()).isEqualTo("/workspace\n");
        }
    }

    @Test
    void secretsAreNotEchoedBySpecOrInfo() {
        SandboxSpec spec = small().secret("API_TOKEN", "tok-secret-value").build();
        assertThat(spec.toString()).doesNotContain("tok-secret-value").contains("API_TOKEN");
        try (Sandbox sb = paddock().create(spec)) {
            assertThat(sb.info().toString()).doesNotContain("tok-secret-value");
            assertThat(sb.toString()).doesNotContain("tok-secret-value");
        }
    }

    @Test
    void tenantProcessesRunAsTheUnprivilegedSandboxUser() {
        try (Sandbox sb = create()) {
            assertThat(sb.exec("id", "-u").stdoutText().trim()).isEqualTo("1000");
            assertThat(sb.exec("id", "-g").stdoutText().trim()).isEqualTo("1000");
        }
    }

    @Test
    void manyConcurrentExecs() throws Exception {
        try (Sandbox sb = create()) {
            ExecutorService pool = Executors.newFixedThreadPool(8);
            try {
                List<CompletableFuture<ExecResult>> results = new ArrayList<>();
                for (int i = 0; i < 40; i++) {
                    int n = i;
                    results.add(CompletableFuture.supplyAsync(() -> sb.exec("sh", "-c", "echo " + n), pool));
                }
                for (int i = 0; i < results.size(); i++) {
                    assertThat(results.get(i).get().stdoutText()).isEqualTo(i + "\n");
                }
            } finally {
                pool.shutdownNow();
            }
        }
    }

    // ---- streaming exec ----

    @Test
    void streamingExecWithStdin() throws Exception {
        try (Sandbox sb = create();
             ExecProcess p = sb.start(ExecRequest.builder().argv("cat").build())) {
            p.stdin().write("hi".getBytes(StandardCharsets.UTF_8));
            p.stdin().flush();
            byte[] got = p.stdout().readNBytes(2);
            assertThat(new String(got, StandardCharsets.UTF_8)).isEqualTo("hi");
            p.closeStdin();
            assertThat(p.awaitExit(Duration.ofSeconds(10))).hasValueSatisfying(s -> assertThat(s.exitCode()).isZero());
        }
    }

    @Test
    void anInteractiveShellRunsOnATerminalThatResizes() throws Exception {
        try (Sandbox sb = create();
             ExecProcess p = sb.start(ExecRequest.builder().argv("bash", "--norc", "--noprofile", "-i")
                     .terminal(new TerminalSize(100, 30)).build())) {
            OutputStream in = p.stdin();
            // The terminal echoes the typed line: the marker the test waits for is computed, so only the
            // command's own output has it.
            in.write("echo \"$TERM $(stty size) $(tty)\"; echo mark$((40+2))\n".getBytes(StandardCharsets.UTF_8));
            in.flush();
            String first = readUntil(p.stdout(), "mark42\r\n");
            assertThat(first).containsPattern("xterm-256color 30 100 /dev/pts/[0-9]+\r\n")
                    .doesNotContain("no job control");
            p.resize(new TerminalSize(132, 50));
            // The resize may land after the next line is read: ask until the shell answers with the new size. It
            // must come without resending it: readline writes back the size it read for every line (TIOCGWINSZ then
            // TIOCSWINSZ), and a resize between the two used to be undone for good (the init now sets it again).
            String sized = "";
            for (int i = 0; i < 20 && !sized.contains("50 132\r\n"); i++) {
                in.write(("stty size; echo size$((" + i + "+100))\n").getBytes(StandardCharsets.UTF_8));
                in.flush();
                sized = readUntil(p.stdout(), "size" + (i + 100) + "\r\n");
            }
            assertThat(sized).contains("50 132\r\n");
            in.write("echo oops >&2; exit 3\n".getBytes(StandardCharsets.UTF_8));
            in.flush();
            String rest = new String(p.stdout().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(rest).contains("oops\r\n");
            assertThat(p.stderr().readAllBytes()).isEmpty();
            assertThat(p.awaitExit(Duration.ofSeconds(10))).hasValueSatisfying(s -> assertThat(s.exitCode()).isEqualTo(3));
        }
    }

    @Test
    void aResizeSignalsTheForegroundProgramAndSurvivesAStaleWriteBack() throws Exception {
        try (Sandbox sb = create();
             ExecProcess p = sb.start(ExecRequest.builder().argv("bash", "-c",
                     // on the first SIGWINCH it writes back the old size, as a program that read it just before the
                     // resize would (readline does, for every line it reads); the resize must win
                     "trap 'trap - WINCH; stty rows 30 cols 100; echo winch' WINCH; echo ready;"
                             + " sleep 30 & s=$!; wait $s; kill $s; sleep 2; echo \"now $(stty size)\"")
                     .terminal(new TerminalSize(100, 30)).build())) {
            readUntil(p.stdout(), "ready\r\n");
            p.resize(new TerminalSize(132, 50));
            String out = new String(p.stdout().readAllBytes(), StandardCharsets.UTF_8);
            // gVisor sends no SIGWINCH itself: the init does, as a terminal emulator would
            assertThat(out).contains("winch\r\n").contains("now 50 132\r\n");
            assertThat(p.awaitExit(Duration.ofSeconds(10))).hasValueSatisfying(st -> assertThat(st.exitCode()).isZero());
        }
    }

    @Test
    void aOneShotExecOnATerminalSeesATerminalAndEndOfFile() {
        try (Sandbox sb = create()) {
            ExecResult r = sb.exec(ExecRequest.builder().argv("sh", "-c", "test -t 0 && test -t 1 && test -t 2 && echo tty")
                    .terminal(TerminalSize.DEFAULT).build());
            assertThat(r.stdoutText()).isEqualTo("tty\r\n");
            assertThat(r.exitCode()).isZero();
            if (tier() == Tier.RUNC) {
                // With nothing to type, the terminal gives end of file at once. gVisor's line discipline
                // (this release) does not implement the end-of-file character: docs/PROTOCOL.md.
                ExecResult cat = sb.exec(ExecRequest.builder().argv("sh", "-c", "cat; echo eof")
                        .terminal(TerminalSize.DEFAULT).timeout(Duration.ofSeconds(20)).build());
                assertThat(cat.stdoutText()).isEqualTo("eof\r\n");
            }
            try (ExecProcess p = sb.start(ExecRequest.builder().argv("sleep", "30").build())) {
                assertThatThrownBy(() -> p.resize(TerminalSize.DEFAULT)).isInstanceOf(SandboxException.class)
                        .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.FAILED_PRECONDITION));
            }
        }
    }

    /** Reads from {@code in} until what was read contains {@code marker}; returns all of it. */
    private static String readUntil(InputStream in, String marker) throws Exception {
        ByteArrayOutputStream seen = new ByteArrayOutputStream();
        byte[] buf = new byte[4096];
        while (!seen.toString(StandardCharsets.UTF_8).contains(marker)) {
            int n = in.read(buf);
            if (n < 0) {
                throw new AssertionError("end of output before '" + marker + "'; got: " + seen.toString(StandardCharsets.UTF_8));
            }
            seen.write(buf, 0, n);
        }
        return seen.toString(StandardCharsets.UTF_8);
    }

    @Test
    void streamedOutputArrivesWhileTheCommandRuns() throws Exception {
        try (Sandbox sb = create();
             ExecProcess p = sb.start(ExecRequest.builder().argv("sh", "-c", "echo first; exec sleep 30").build())) {
            BufferedReader out = new BufferedReader(new InputStreamReader(p.stdout(), StandardCharsets.UTF_8));
            assertThat(out.readLine()).isEqualTo("first");
            assertThat(p.isAlive()).isTrue();
            p.kill();
            assertThat(p.awaitExit(Duration.ofSeconds(10))).isPresent();
        }
    }

    @Test
    void stdoutAndStderrAreSeparateLiveStreams() throws Exception {
        try (Sandbox sb = create();
             ExecProcess p = sb.start(ExecRequest.builder().argv("sh", "-c", "echo o; echo e >&2; exit 5").build())) {
            CompletableFuture<byte[]> err = CompletableFuture.supplyAsync(() -> readAll(p.stderr()));
            assertThat(new String(p.stdout().readAllBytes(), StandardCharsets.UTF_8)).isEqualTo("o\n");
            assertThat(new String(err.get(), StandardCharsets.UTF_8)).isEqualTo("e\n");
            assertThat(p.awaitExit().exitCode()).isEqualTo(5);
        }
    }

    @Test
    void signalTerminatesAndIsReported() {
        try (Sandbox sb = create();
             ExecProcess p = sb.start(ExecRequest.builder().argv("sleep", "60").build())) {
            p.signal(Signal.SIGTERM);
            ExitStatus s = p.awaitExit(Duration.ofSeconds(10)).orElseThrow();
            assertThat(s.outcome()).isEqualTo(ExitStatus.Outcome.SIGNALED);
            assertThat(s.signal()).isEqualTo(15);
            assertThat(s.exitCode()).isEqualTo(143);
        }
    }

    /** A kill that arrives before the command has even started still reads as a kill, never as a failed start. */
    @Test
    void aCommandKilledAtOnceIsReportedKilled() {
        try (Sandbox sb = create()) {
            for (int i = 0; i < 20; i++) {
                try (ExecProcess p = sb.start(ExecRequest.builder().argv("sleep", "600").build())) {
                    p.kill();
                    ExitStatus s = p.awaitExit(Duration.ofSeconds(10)).orElseThrow();
                    assertThat(s.outcome()).as("round %d: %s", i, s).isEqualTo(ExitStatus.Outcome.SIGNALED);
                    assertThat(s.signal()).isEqualTo(9);
                }
            }
        }
    }

    @Test
    void largeOutputStreamsCompletelyWithBackpressure() throws Exception {
        try (Sandbox sb = create();
             ExecProcess p = sb.start(ExecRequest.builder().argv("head", "-c", "33554432", "/dev/zero")
                     .outputLimit(ExecRequest.UNLIMITED).build())) {
            long total = 0;
            byte[] buf = new byte[65536];
            int n;
            InputStream in = p.stdout();
            while ((n = in.read(buf)) > 0) {
                total += n;
            }
            assertThat(total).isEqualTo(32L << 20);
            assertThat(p.awaitExit().success()).isTrue();
        }
    }

    // ---- limits and timeouts ----

    @Test
    void execTimeoutKillsTheWholeProcessTree() {
        try (Sandbox sb = create()) {
            long start = System.nanoTime();
            ExecResult r = sb.exec(ExecRequest.builder().argv("sh", "-c", "sleep 1000 & setsid sleep 1001 & sleep 1002")
                    .timeout(Duration.ofSeconds(1)).build());
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            assertThat(r.status().outcome()).isEqualTo(ExitStatus.Outcome.TIMED_OUT);
            assertThat(r.exitCode()).isEqualTo(124);
            assertThat(took).isLessThan(Duration.ofSeconds(6));
            assertThat(sb.exec("sh", "-c", "ps -eo comm= | grep -c sleep || true").stdoutText().trim()).isEqualTo("0");
        }
    }

    @Test
    void outOfMemoryIsReportedAsOom() {
        try (Sandbox sb = paddock().create(small().memory(ByteSize.mib(64)).build())) {
            if (tier().oomStopsWholeSandbox()) {
                // The limit is enforced by killing the whole sandbox: the exec fails saying so, and the
                // sandbox stops with OOM (the host cgroup's oom_kill counter is where the engine saw it).
                assertThatThrownBy(() -> sb.exec("python3", "-c", "b = bytearray(256 * 1024 * 1024); print(len(b))"))
                        .isInstanceOf(SandboxException.class)
                        .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.RESOURCE_EXHAUSTED))
                        .hasMessageContaining("ran out of memory");
                SandboxInfo info = sb.awaitStop(Duration.ofSeconds(30)).orElseThrow();
                assertThat(info.stopReason()).contains(StopReason.OOM);
                assertCode(() -> sb.exec("echo", "dead"), ErrorCode.FAILED_PRECONDITION);
                return;
            }
            ExecResult r = sb.exec("python3", "-c", "b = bytearray(256 * 1024 * 1024); print(len(b))");
            if (!tier().oomVisiblePerCommand()) {
                assertThat(r.status().outcome()).isEqualTo(ExitStatus.Outcome.SIGNALED);
                assertThat(r.status().signal()).isEqualTo(9);
            } else {
                assertThat(r.status().outcome()).isEqualTo(ExitStatus.Outcome.OOM_KILLED);
            }
            assertThat(r.exitCode()).isEqualTo(137);
            assertThat(r.stdoutText()).doesNotContain("268435456");
            assertThat(sb.exec("echo", "still alive").stdoutText()).isEqualTo("still alive\n");
        }
    }

    @Test
    void outputCapIsReportedAsTruncated() {
        try (Sandbox sb = create()) {
            ExecResult r = sb.exec(ExecRequest.builder().argv("sh", "-c", "yes | head -c 5000000; echo done >&2")
                    .outputLimit(ByteSize.kib(64)).build());
            assertThat(r.stdout()).hasSize(64 * 1024);
            assertThat(r.status().stdoutTruncated()).isTrue();
            assertThat(r.status().stderrTruncated()).isFalse();
            assertThat(r.stderrText()).isEqualTo("done\n");
            assertThat(r.success()).isTrue();
        }
    }

    @Test
    void processLimitStopsForks() {
        try (Sandbox sb = paddock().create(small().pids(32).build())) {
            ExecResult r = sb.exec(ExecRequest.builder().argv("python3", "-c", """
                    import os, time
                    n = 0
                    try:
                        for _ in range(200):
                            if os.fork() == 0:
                                time.sleep(5); os._exit(0)
                            n += 1
                    except OSError as e:
                        print("fork failed after", n, e.errno)
                    """).timeout(Duration.ofSeconds(20)).build());
            assertThat(r.stdoutText()).startsWith("fork failed after");
            int forked = Integer.parseInt(r.stdoutText().split(" ")[3]);
            assertThat(forked).isLessThan(32);
        }
    }

    @Test
    void diskLimitGivesNoSpace() {
        try (Sandbox sb = paddock().create(small().disk(ByteSize.mib(8)).build())) {
            ExecResult r = sb.exec("sh", "-c", "dd if=/dev/zero of=/workspace/f bs=1M count=64 2>&1; echo rc=$?");
            assertThat(r.stdoutText()).contains("No space left on device");
            ExecResult size = sb.exec("sh", "-c", "du -sk /workspace | cut -f1");
            assertThat(Long.parseLong(size.stdoutText().trim())).isLessThanOrEqualTo(8 * 1024);
        }
    }

    @Test
    void openFilesLimitApplies() {
        try (Sandbox sb = paddock().create(small().openFiles(100).build())) {
            assertThat(sb.exec("sh", "-c", "ulimit -n").stdoutText().trim()).isEqualTo("100");
        }
    }

    /**
     * The host's binaries and libraries are read-only bind mounts whoever writes; the root itself is an overlay
     * whose writes land in the sandbox's own layer on disk, capped by {@code disk}, where the sandbox user may
     * write ({@code /opt}, besides {@code /tmp} and {@code /workspace}); root-owned places stay the root's.
     */
    @Test
    void hostBinariesAreReadOnlyAndTheRootIsWritableIntoADiskCappedLayer() {
        try (Sandbox sb = paddock().create(small().disk(ByteSize.mib(16)).build())) {
            ExecResult r = sb.exec("sh", "-c", "touch /usr/x 2>&1; touch /usr/bin/x 2>&1; touch /etc/x 2>&1; touch /x 2>&1");
            if (tier().readOnlyRootSaysErofs()) {
                assertThat(r.stdoutText()).contains("Read-only file system");
            }
            assertThat(r.stdoutText().lines().filter(l -> l.startsWith("touch: cannot touch")).count())
                    .as(r.stdoutText()).isEqualTo(4);
            assertThat(sb.exec("sh", "-c", "ls -a /usr/x /usr/bin/x /etc/x /x 2>/dev/null").stdoutText()).isEmpty();
            for (String line : sb.exec("cat", "/proc/self/mountinfo").stdoutText().strip().split("\n")) {
                String[] f = line.split(" ");
                if (f[4].equals("/usr")) {
                    assertThat(f[5].split(",")).as("mount options of %s: %s", f[4], line).contains("ro");
                }
                if (f[4].equals("/") && tier().rootWritable()) {
                    assertThat(f[5].split(",")).as("mount options of %s: %s", f[4], line).contains("rw");
                }
            }
            assertThat(sb.exec("touch", "/workspace/ok", "/tmp/ok").success()).isTrue();
            if (tier().rootWritable()) {
                ExecResult opt = sb.exec("sh", "-c", "echo kept > /opt/f && cat /opt/f"
                        + " && dd if=/dev/zero of=/opt/fill bs=1M count=64 2>&1; stat -c %s /opt/fill");
                assertThat(opt.stdoutText()).as(opt.stderrText()).startsWith("kept\n").contains("Disk quota exceeded");
                String[] lines = opt.stdoutText().trim().split("\n");
                assertThat(Long.parseLong(lines[lines.length - 1].trim())).as("bytes written to /opt")
                        .isLessThanOrEqualTo(ByteSize.mib(16).bytes());
            }
        }
        if (tier().rootWritable()) {
            // Another sandbox starts from the shared root, without the first one's writes.
            try (Sandbox sb = create()) {
                assertThat(sb.exec("sh", "-c", "ls -A /opt").stdoutText()).isEmpty();
            }
        }
        // A working directory the host root lacks is made, the user's, in the sandbox's own layer; one under the
        // host's read-only binds is refused by name.
        try (Sandbox sb = paddock().create(small().workdir("/sandbox/app").build())) {
            assertThat(sb.exec("sh", "-c", "pwd; touch x && ls").stdoutText()).isEqualTo("/sandbox/app\nx\n");
        }
        assertThatThrownBy(() -> paddock().create(small().workdir("/usr/local/app").build()))
                .isInstanceOf(SandboxException.class).hasMessageContaining("/usr");
    }

    @Test
    void labelsCanBeAddedToARunningSandbox() {
        try (Sandbox sb = paddock().create(small().label("team", "a").build())) {
            sb.updateLabels(java.util.Map.of("team", "b", "stage", "test"));
            assertThat(sb.info().labels()).containsEntry("team", "b").containsEntry("stage", "test");
            assertThat(paddock().list(io.paddock.SandboxQuery.builder().label("stage", "test").build()))
                    .extracting(io.paddock.SandboxInfo::id).contains(sb.id());
            assertThatThrownBy(() -> sb.updateLabels(java.util.Map.of("bad key!", "x")))
                    .isInstanceOf(SandboxException.class).hasMessageContaining("labels");
        }
    }

    @Test
    void usageCountsMemoryCpuAndTasks() throws Exception {
        Sandbox sb = create();
        if (!tier().countsUsage()) {
            try {
                assertThatThrownBy(sb::usage).isInstanceOfSatisfying(SandboxException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.FAILED_PRECONDITION));
            } finally {
                sb.destroy();
            }
            return;
        }
        try {
            assertThat(sb.exec("sh", "-c", "head -c 48m /dev/zero > /tmp/fill").exitCode()).isZero(); // in memory
            try (ExecProcess sleeper = sb.start(ExecRequest.builder().argv("sh", "-c", "echo up; exec sleep 60").build())) {
                // start() returns once the command is asked for, not once it runs: its first line says it does.
                assertThat(new BufferedReader(new InputStreamReader(sleeper.stdout(), StandardCharsets.UTF_8)).readLine())
                        .isEqualTo("up");
                io.paddock.ResourceUsage u = sb.usage();
                assertThat(u.memory().bytes()).as("memory, with 48 MiB in its /tmp").isGreaterThanOrEqualTo(40L << 20);
                assertThat(u.memoryLimit()).as("the enforced limit")
                        .hasValueSatisfying(l -> assertThat(l.bytes()).isGreaterThanOrEqualTo(256L << 20));
                assertThat(u.cpuTime()).isPositive();
                assertThat(u.processes()).as("the init and sleep at least").isGreaterThanOrEqualTo(2);
            }
        } finally {
            sb.destroy();
        }
        assertThatThrownBy(sb::usage).isInstanceOfSatisfying(SandboxException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.FAILED_PRECONDITION));
    }

    // ---- lifecycle ----

    @Test
    void lifetimeTimeoutDestroysTheSandbox() {
        Sandbox sb = paddock().create(small().timeout(Duration.ofSeconds(2)).build());
        SandboxInfo info = sb.awaitStop(Duration.ofSeconds(30)).orElseThrow();
        assertThat(info.state()).isEqualTo(SandboxState.STOPPED);
        assertThat(info.stopReason()).contains(StopReason.TIMEOUT);
        assertThatThrownBy(() -> sb.exec("true")).isInstanceOf(SandboxException.class)
                .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.FAILED_PRECONDITION));
    }

    @Test
    void aCommandCutOffByTheLifetimeSaysWhy() {
        Sandbox sb = paddock().create(small().timeout(Duration.ofSeconds(3)).build());
        assertThatThrownBy(() -> sb.exec("sleep", "60")).isInstanceOfSatisfying(SandboxException.class,
                e -> assertThat(e.getMessage()).contains("its lifetime timeout passed"));
        assertThat(sb.awaitStop(Duration.ofSeconds(30)).orElseThrow().stopReason()).contains(StopReason.TIMEOUT);
    }

    @Test
    void setTimeoutExtendsTheLifetime() throws Exception {
        try (Sandbox sb = paddock().create(small().timeout(Duration.ofSeconds(2)).build())) {
            sb.setTimeout(Duration.ofMinutes(1));
            Thread.sleep(3000);
            assertThat(sb.state()).isEqualTo(SandboxState.RUNNING);
            assertThat(sb.exec("true").success()).isTrue();
        }
    }

    @Test
    void findByIdNameAndLabels() {
        String name = "contract-" + Long.toHexString(new Random().nextLong() & 0xffffffffL);
        try (Sandbox a = paddock().create(small().name(name).label("team", "ml").label("tier", "a").build());
             Sandbox b = paddock().create(small().label("team", "ml").label("tier", "b").build())) {
            assertThat(paddock().get(a.id()).id()).isEqualTo(a.id());
            assertThat(paddock().get(a.id().value()).name()).contains(name);
            assertThat(paddock().getByName(name).id()).isEqualTo(a.id());
            assertThat(paddock().list(SandboxQuery.builder().label("team", "ml").build()))
                    .extracting(SandboxInfo::id).contains(a.id(), b.id());
            assertThat(paddock().list(SandboxQuery.builder().label("tier", "b").build()))
                    .extracting(SandboxInfo::id).containsExactly(b.id());
            assertThat(paddock().list(SandboxQuery.builder().label("tier", "b").state(SandboxState.STOPPED).build()))
                    .isEmpty();
            assertThat(paddock().get(a.id()).info().labels()).containsEntry("team", "ml");
            b.destroy();
            // a destroyed sandbox stays listed, stopped, for its retention; a query by state tells them apart
            assertThat(paddock().list(SandboxQuery.builder().label("tier", "b").state(SandboxState.STOPPED).build()))
                    .extracting(SandboxInfo::id).containsExactly(b.id());
            assertThat(paddock().list(SandboxQuery.builder().label("team", "ml").state(SandboxState.RUNNING).build()))
                    .extracting(SandboxInfo::id).containsExactly(a.id());
        }
    }

    @Test
    void namesAreUniqueAmongLiveSandboxesAndFreedByDestroy() {
        String name = "dup-" + Long.toHexString(new Random().nextLong() & 0xffffffffL);
        Sandbox first = paddock().create(small().name(name).build());
        try {
            assertThatThrownBy(() -> paddock().create(small().name(name).build()))
                    .isInstanceOf(SandboxException.class)
                    .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.ALREADY_EXISTS));
        } finally {
            first.destroy();
        }
        try (Sandbox second = paddock().create(small().name(name).build())) {
            assertThat(paddock().getByName(name).id()).isEqualTo(second.id());
        }
        assertThatThrownBy(() -> paddock().getByName(name)).isInstanceOf(SandboxException.class)
                .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.NOT_FOUND));
    }

    @Test
    void unknownIdIsNotFound() {
        assertThatThrownBy(() -> paddock().get(new SandboxId("sb-" + "a".repeat(26))))
                .isInstanceOf(SandboxException.class)
                .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.NOT_FOUND));
        assertThatThrownBy(() -> paddock().get("not-an-id"))
                .isInstanceOf(SandboxException.class)
                .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
    }

    @Test
    void destroyIsIdempotentAndStopsEverything() {
        Sandbox sb = create();
        SandboxId id = sb.id();
        sb.destroy();
        sb.destroy();
        assertThat(sb.state()).isEqualTo(SandboxState.STOPPED);
        assertThat(sb.info().stopReason()).contains(StopReason.DESTROYED);
        assertThat(paddock().list(SandboxQuery.builder().state(SandboxState.RUNNING).build()))
                .extracting(SandboxInfo::id).doesNotContain(id);
        assertThatThrownBy(() -> sb.files().read("/etc/hostname")).isInstanceOf(SandboxException.class);
    }

    @Test
    void entrypointRunsForTheSandboxLifeAndItsOutputIsKept() throws Exception {
        try (Sandbox sb = paddock().create(small().entrypoint("sh", "-c", "echo started; echo warn >&2; exec sleep 600").build())) {
            long deadline = System.nanoTime() + 10_000_000_000L;
            // stdout and stderr are pumped by separate threads: wait for both
            while (!(sb.logs().stdoutText().contains("started") && sb.logs().stderrText().contains("warn"))
                    && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertThat(sb.logs().stdoutText()).isEqualTo("started\n");
            assertThat(sb.logs().stderrText()).isEqualTo("warn\n");
            assertThat(sb.exec("sh", "-c", "ps -eo args= | grep -c '^sleep 600'").stdoutText().trim()).isEqualTo("1");
        }
    }

    @Test
    void sandboxStopsWhenItsEntrypointExits() {
        Sandbox sb = paddock().create(small().entrypoint("sh", "-c", "echo bye; exit 7").build());
        SandboxInfo info = sb.awaitStop(Duration.ofSeconds(30)).orElseThrow();
        assertThat(info.stopReason()).contains(StopReason.ENTRYPOINT_EXITED);
        assertThat(info.entrypointExit()).hasValueSatisfying(s -> assertThat(s.exitCode()).isEqualTo(7));
        assertThat(sb.logs().stdoutText()).isEqualTo("bye\n");
    }

    // ---- files ----

    @Test
    void filesRoundTrip() {
        try (Sandbox sb = create()) {
            sb.files().writeString("/workspace/a/b/hello.txt", "hello");
            assertThat(sb.files().readString("/workspace/a/b/hello.txt")).isEqualTo("hello");
            assertThat(sb.files().readString("a/b/hello.txt")).as("relative to workdir").isEqualTo("hello");
            assertThat(sb.exec("cat", "/workspace/a/b/hello.txt").stdoutText()).isEqualTo("hello");
            assertThat(sb.exec("stat", "-c", "%u", "/workspace/a/b/hello.txt").stdoutText().trim()).isEqualTo("1000");

            FileInfo st = sb.files().stat("/workspace/a/b/hello.txt");
            assertThat(st.type()).isEqualTo(FileType.FILE);
            assertThat(st.size()).isEqualTo(5);
            assertThat(st.name()).isEqualTo("hello.txt");

            sb.files().mkdir("/workspace/d1/d2");
            assertThat(sb.files().stat("/workspace/d1/d2").isDirectory()).isTrue();
            sb.files().move("/workspace/a/b/hello.txt", "/workspace/d1/moved.txt");
            assertThat(sb.files().exists("/workspace/a/b/hello.txt")).isFalse();
            assertThat(sb.files().list("/workspace/d1")).extracting(FileInfo::name)
                    .containsExactlyInAnyOrder("d2", "moved.txt");
            sb.files().remove("/workspace/d1/moved.txt");
            assertThat(sb.files().exists("/workspace/d1/moved.txt")).isFalse();
            sb.files().removeRecursive("/workspace/d1");
            assertThat(sb.files().exists("/workspace/d1")).isFalse();
            sb.files().removeRecursive("/workspace/never-existed");
        }
    }

    @Test
    void largeFilesStreamBothWays() throws Exception {
        try (Sandbox sb = create()) {
            byte[] data = new byte[12 * 1024 * 1024 + 7];
            new Random(1).nextBytes(data);
            sb.files().write("/workspace/big.bin", new ByteArrayInputStream(data));
            assertThat(sb.exec("sh", "-c", "wc -c < /workspace/big.bin").stdoutText().trim())
                    .isEqualTo(Integer.toString(data.length));
            try (InputStream in = sb.files().openRead("/workspace/big.bin")) {
                assertThat(Arrays.equals(in.readAllBytes(), data)).isTrue();
            }
            assertThat(sb.files().read("/workspace/big.bin")).isEqualTo(data);
        }
    }

    @Test
    void fileErrorsCarryTheRightCodes() {
        try (Sandbox sb = create()) {
            assertCode(() -> sb.files().read("/workspace/missing"), ErrorCode.NOT_FOUND);
            assertCode(() -> sb.files().write("/usr/bin/evil", new byte[1]), ErrorCode.PERMISSION_DENIED);
            assertCode(() -> sb.files().read("/workspace/../etc/passwd"), ErrorCode.INVALID_ARGUMENT);
            assertCode(() -> sb.files().read("/proc/self/environ"), ErrorCode.INVALID_ARGUMENT);
            assertCode(() -> sb.files().read("bad\0path"), ErrorCode.INVALID_ARGUMENT);
            sb.files().mkdir("/workspace/dir");
            assertCode(() -> sb.files().read("/workspace/dir"), ErrorCode.FAILED_PRECONDITION);
            sb.exec("mkfifo", "/workspace/fifo");
            assertCode(() -> sb.files().read("/workspace/fifo"), ErrorCode.FAILED_PRECONDITION);
            assertThat(sb.exec("echo", "usable").stdoutText()).isEqualTo("usable\n");
        }
    }

    @Test
    void filesAreResolvedInsideTheSandbox() {
        try (Sandbox sb = create()) {
            sb.exec("ln", "-s", "/", "/workspace/root");
            sb.exec("ln", "-s", "/tmp", "/workspace/tmplink");
            sb.files().writeString("/workspace/tmplink/through-link", "x");
            assertThat(sb.exec("cat", "/tmp/through-link").stdoutText()).isEqualTo("x");
            // The sandbox's /etc/hostname, never the host's.
            if (tier().symlinkToRootResolves()) {
                assertThat(sb.files().readString("/workspace/root/etc/hostname")).isEqualTo("sandbox\n");
            } else {
                assertCode(() -> sb.files().readString("/workspace/root/etc/hostname"), ErrorCode.FAILED_PRECONDITION);
                assertThat(sb.files().readString("/workspace/tmplink/through-link")).isEqualTo("x");
            }
            assertCode(() -> sb.files().writeString("/workspace/root/etc/evil", "x"), ErrorCode.PERMISSION_DENIED);
        }
    }

    // ---- bad input ----

    @Test
    void badSpecsAreRejectedNamingTheField() {
        assertInvalid(() -> SandboxSpec.builder().name("Not_A_Name"), "name");
        assertInvalid(() -> SandboxSpec.builder().label("bad key!", "v"), "labels");
        assertInvalid(() -> SandboxSpec.builder().label("k", "bad value!"), "labels");
        assertInvalid(() -> SandboxSpec.builder().env("1BAD", "v"), "env");
        assertInvalid(() -> SandboxSpec.builder().env("K", "nul\0"), "env");
        assertInvalid(() -> SandboxSpec.builder().memory(ByteSize.kib(1)), "memory");
        assertInvalid(() -> SandboxSpec.builder().cpus(0), "cpus");
        assertInvalid(() -> SandboxSpec.builder().pids(1), "pids");
        assertInvalid(() -> SandboxSpec.builder().workdir("relative"), "workdir");
        assertInvalid(() -> SandboxSpec.builder().workdir("/proc/self/fd/3"), "workdir");
        assertInvalid(() -> SandboxSpec.builder().timeout(Duration.ZERO), "timeout");
        assertInvalid(() -> ExecRequest.builder().argv(List.of()), "argv");
        assertInvalid(() -> ExecRequest.builder().argv("a\0b"), "argv");
        assertInvalid(() -> ExecRequest.builder().cwd("/proc/self/fd/7"), "cwd");
        assertInvalid(() -> paddock().create(small().image("no-such-image").build()), "image");
        assertInvalid(() -> paddock().create(small().workdir("/usr/lib").build()), "workdir");
        assertInvalid(() -> paddock().create(small().openFiles(1 << 20).build()), "openFiles");
    }

    // ---- helpers ----

    protected static void assertCode(Runnable r, ErrorCode code) {
        assertThatThrownBy(r::run).isInstanceOf(SandboxException.class)
                .satisfies(e -> assertThat(((SandboxException) e).code()).as(e.getMessage()).isEqualTo(code));
    }

    protected static void assertInvalid(Runnable r, String field) {
        assertThatThrownBy(r::run).isInstanceOf(SandboxException.class)
                .satisfies(e -> {
                    assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
                    assertThat(e.getMessage()).startsWith(field + ":");
                });
    }

    protected static byte[] readAll(InputStream in) {
        try {
            return in.readAllBytes();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    protected static void write(OutputStream out, String s) {
        try {
            out.write(s.getBytes(StandardCharsets.UTF_8));
            out.flush();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
