package io.paddock.init.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.paddock.ErrorCode;
import io.paddock.ExecResult;
import io.paddock.ExitStatus;
import io.paddock.FileInfo;
import io.paddock.FileType;
import io.paddock.SandboxException;
import io.paddock.SandboxFiles;
import io.paddock.Signal;
import io.paddock.TerminalSize;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The real init binary, run as a plain child process, driven through InitClient. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class InitEndToEndTest {
    @TempDir
    Path dir;
    InitProcess init;
    InitClient client;

    @BeforeEach
    void start() throws Exception {
        init = InitProcess.started(dir);
        client = init.client;
    }

    @AfterEach
    void stop() throws Exception {
        init.close();
    }

    private SpawnRequest.Builder cmd(String... argv) {
        return SpawnRequest.builder(argv).user(InitProcess.uid(), InitProcess.gid()).cwd(init.workdir.toString());
    }

    private ExecResult run(String... argv) {
        return client.run(cmd(argv).build(), null);
    }

    private static String text(InputStream in) throws Exception {
        return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }

    // ------------------------------------------------------------------ exec

    @Test
    void echoRoundTrip() {
        ExecResult r = run("echo", "hello", "world");
        assertThat(r.stdoutText()).isEqualTo("hello world\n");
        assertThat(r.stderrText()).isEmpty();
        assertThat(r.status().outcome()).isEqualTo(ExitStatus.Outcome.EXITED);
        assertThat(r.exitCode()).isZero();
        assertThat(client.initBuildId()).isNotEmpty();
    }

    @Test
    void separatesStdoutAndStderrAndReportsExitCodes() {
        ExecResult r = run("sh", "-c", "echo out; echo err >&2; echo out2; exit 42");
        assertThat(r.stdoutText()).isEqualTo("out\nout2\n");
        assertThat(r.stderrText()).isEqualTo("err\n");
        assertThat(r.exitCode()).isEqualTo(42);
        assertThat(run("false").exitCode()).isEqualTo(1);
    }

    @Test
    void commandRunsInItsCwdWithItsEnvironmentOnly() {
        ExecResult r = client.run(cmd("sh", "-c", "pwd; env | sort").env(List.of("PATH=/usr/bin:/bin", "FOO=bar"))
                .cwd("/tmp").build(), null);
        assertThat(r.stdoutText()).startsWith("/tmp\n");
        assertThat(r.stdoutText()).contains("FOO=bar").doesNotContain("HOME=");
    }

    @Test
    void commandsStartWithDefaultDispositionsAnEmptyMaskAndNoBoundingSet() throws Exception {
        // The init ignores SIGPIPE itself; this one was also started with SIGHUP and SIGUSR1 ignored, which it
        // finds once at start-up (commands_prepare) for every command to reset.
        try (InitProcess ignoring = InitProcess.started(dir.resolve("ignoring"), "HUP", "USR1")) {
            for (InitProcess p : List.of(init, ignoring)) {
                ExecResult r = p.client.run(SpawnRequest.builder("grep", "-E", "^(SigIgn|SigBlk|CapBnd):", "/proc/self/status")
                        .user(InitProcess.uid(), InitProcess.gid()).cwd(p.workdir.toString()).build(), null);
                assertThat(r.stdoutText()).as(r.stderrText()).contains("SigIgn:\t0000000000000000")
                        .contains("SigBlk:\t0000000000000000").contains("CapBnd:\t0000000000000000");
            }
        }
    }

    @Test
    void leaksNoFileDescriptorsIntoCommands() {
        ExecResult r = run("sh", "-c", "ls /proc/self/fd");
        // 0, 1, 2 and the fd ls opens for the directory listing itself
        assertThat(r.stdoutText().trim().split("\\s+")).containsExactlyInAnyOrder("0", "1", "2", "3");
    }

    @Test
    void signalsReachTheProcessGroup() throws Exception {
        InitExec e = client.spawn(cmd("sleep", "100").build());
        waitForPid(e);
        e.signal(Signal.SIGTERM);
        ExitStatus s = e.awaitExit(Duration.ofSeconds(5)).orElseThrow();
        assertThat(s.outcome()).isEqualTo(ExitStatus.Outcome.SIGNALED);
        assertThat(s.signal()).isEqualTo(15);
        assertThat(s.exitCode()).isEqualTo(143);
        e.close();
    }

    @Test
    void killKillsTheWholeTree() throws Exception {
        InitExec e = client.spawn(cmd("sh", "-c", "sleep 1000 & echo $!; sleep 1000").build());
        String pid = firstLine(e.stdout());
        e.kill();
        ExitStatus s = e.awaitExit(Duration.ofSeconds(5)).orElseThrow();
        assertThat(s.outcome()).isEqualTo(ExitStatus.Outcome.SIGNALED);
        assertThat(s.exitCode()).isEqualTo(137);
        assertThat(e.exitReport().orElseThrow().killed()).isTrue();
        assertGone(pid);
        e.close();
    }

    @Test
    void commandNotFoundIs127AndSaysWhy() throws Exception {
        ExecResult r = run("no-such-command-xyz");
        assertThat(r.exitCode()).isEqualTo(127);
        assertThat(r.stderrText()).startsWith("paddock: no-such-command-xyz: ").contains("No such file");
        Path notExec = Files.writeString(dir.resolve("script"), "#!/bin/sh\necho hi\n");
        ExecResult r2 = run(notExec.toString());
        assertThat(r2.exitCode()).isEqualTo(126);
        assertThat(r2.stderrText()).contains("Permission denied");
        ExecResult r3 = client.run(cmd("true").cwd("/no/such/dir").build(), null);
        assertThat(r3.exitCode()).isEqualTo(127);
        assertThat(r3.stderrText()).contains("chdir /no/such/dir");
    }

    @Test
    void streamsStdin() throws Exception {
        InitExec e = client.spawn(cmd("cat").stdinPipe(true).build());
        byte[] data = new byte[3 * 1024 * 1024 + 17];
        new Random(1).nextBytes(data);
        CompletableFuture<byte[]> out = CompletableFuture.supplyAsync(() -> {
            try {
                return e.stdout().readAllBytes();
            } catch (Exception ex) {
                throw new RuntimeException(ex);
            }
        });
        try (OutputStream in = e.stdin()) {
            for (int off = 0; off < data.length; off += 10_000) {
                in.write(data, off, Math.min(10_000, data.length - off));
            }
        }
        assertThat(out.get(20, TimeUnit.SECONDS)).isEqualTo(data);
        assertThat(e.awaitExit().exitCode()).isZero();
        assertThatThrownBy(() -> e.stdin().write(1)).isInstanceOf(SandboxException.class);
        e.close();

        byte[] small = "line one\nline two\n".getBytes(StandardCharsets.UTF_8);
        ExecResult r = client.run(cmd("cat").build(), small);
        assertThat(r.stdout()).isEqualTo(small);
        // a command that does not read its stdin: writing it must not hang or fail the run
        ExecResult r2 = client.run(cmd("true").build(), new byte[2 * 1024 * 1024]);
        assertThat(r2.exitCode()).isZero();
    }

    @Test
    void largeOutputIsFlowControlled() throws Exception {
        long size = 50L * 1024 * 1024;
        InitExec e = client.spawn(cmd("head", "-c", String.valueOf(size), "/dev/zero").build());
        Thread.sleep(300); // nobody reads: the command must be stalled by the window, not buffered by us
        assertThat(e.stdout().available()).isLessThanOrEqualTo(SpawnRequest.DEFAULT_WINDOW);
        assertThat(e.isAlive()).isTrue();
        byte[] buf = new byte[64 * 1024];
        long total = 0;
        int n;
        InputStream out = e.stdout();
        while ((n = out.read(buf)) >= 0) {
            total += n;
            assertThat(out.available()).isLessThanOrEqualTo(SpawnRequest.DEFAULT_WINDOW);
        }
        assertThat(total).isEqualTo(size);
        assertThat(e.awaitExit().exitCode()).isZero();
        e.close();
    }

    /**
     * A streaming command's output takes the fast path (its pipe grown, spliced to the engine's when nothing is
     * queued, read into the queue otherwise): both streams at once, read in uneven bursts so that the pipes fill
     * and empty at every point of a frame, must still arrive whole and in order.
     */
    @Test
    void streamedOutputArrivesWholeAndInOrder() throws Exception {
        InitExec e = client.spawn(cmd("sh", "-c", "seq 1 1500000 & seq 2000000 -1 1000001 >&2; wait").build());
        java.util.concurrent.FutureTask<byte[]> err = new java.util.concurrent.FutureTask<>(() -> e.stderr().readAllBytes());
        Thread reader = new Thread(err, "stderr-reader");
        reader.setDaemon(true);
        reader.start();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Random random = new Random(7);
        byte[] buf = new byte[300 * 1024];
        int n;
        while ((n = e.stdout().read(buf, 0, 1 + random.nextInt(buf.length))) >= 0) {
            out.write(buf, 0, n);
            if (random.nextInt(40) == 0) {
                Thread.sleep(20); // let the window close and the pipes fill
            }
        }
        assertThat(e.awaitExit().exitCode()).isZero();
        StringBuilder want = new StringBuilder();
        for (int i = 1; i <= 1_500_000; i++) {
            want.append(i).append('\n');
        }
        assertThat(out.toString(StandardCharsets.US_ASCII).contentEquals(want)).as("stdout is seq 1 1500000").isTrue();
        want.setLength(0);
        for (int i = 2_000_000; i >= 1_000_001; i--) {
            want.append(i).append('\n');
        }
        assertThat(new String(err.get(60, TimeUnit.SECONDS), StandardCharsets.US_ASCII).contentEquals(want))
                .as("stderr is seq 2000000 -1 1000001").isTrue();
        e.close();
    }

    @Test
    void theReaderGivesAStreamsBuffersBackOnceNothingIsInFlight() throws Exception {
        // P6: an idle sandbox's reader holds 16 KiB, not the 1 MiB buffer of a stream
        assertThat(client.readerBufferBytes()).isEqualTo(InitClient.IDLE_BUFFER);
        InitExec e = client.spawn(cmd("head", "-c", String.valueOf(8 << 20), "/dev/zero").build());
        long total = 0;
        int peak = 0;
        byte[] buf = new byte[64 * 1024];
        int n;
        while ((n = e.stdout().read(buf)) >= 0) {
            total += n;
            peak = Math.max(peak, client.readerBufferBytes());
        }
        assertThat(total).isEqualTo(8 << 20);
        assertThat(e.awaitExit().exitCode()).isZero();
        e.close();
        assertThat(peak).as("a stream reads in large steps").isGreaterThan(InitClient.IDLE_BUFFER);
        // the reader trims once it has dispatched the EXIT, just after the exit was reported
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (client.readerBufferBytes() != InitClient.IDLE_BUFFER && System.nanoTime() < until) {
            Thread.sleep(10);
        }
        assertThat(client.readerBufferBytes()).as("after the exit nothing is in flight").isEqualTo(InitClient.IDLE_BUFFER);
        assertThat(run("echo", "still", "talking").stdoutText()).isEqualTo("still talking\n");
    }

    @Test
    void capTruncatesAndSaysSo() {
        ExecResult r = client.run(cmd("sh", "-c", "head -c 100000 /dev/zero; echo done >&2").stdoutCap(1000).build(),
                null);
        assertThat(r.stdout()).hasSize(1000);
        assertThat(r.status().stdoutTruncated()).isTrue();
        assertThat(r.status().stderrTruncated()).isFalse();
        assertThat(r.stderrText()).isEqualTo("done\n");
        assertThat(r.exitCode()).isZero();
    }

    @Test
    void closedStreamDoesNotStallTheCommand() throws Exception {
        InitExec e = client.spawn(cmd("head", "-c", "20000000", "/dev/zero").build());
        e.stdout().close();
        assertThat(e.awaitExit(Duration.ofSeconds(20)).orElseThrow().exitCode()).isZero();
        e.close();
    }

    @Test
    void timeoutKillsTheTreeIncludingSetsidChildren() throws Exception {
        long start = System.nanoTime();
        ExecResult r = client.run(cmd("sh", "-c",
                "sleep 1000 & echo $!; setsid sh -c 'echo $$; exec sleep 1000' & sleep 1000")
                .timeout(Duration.ofMillis(800)).build(), null);
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
        assertThat(r.status().outcome()).isEqualTo(ExitStatus.Outcome.TIMED_OUT);
        assertThat(r.exitCode()).isEqualTo(124);
        String[] pids = r.stdoutText().trim().split("\\s+");
        assertThat(pids).hasSize(2);
        for (String pid : pids) {
            assertGone(pid);
        }
    }

    @Test
    void reapsOrphanedGrandchildren() throws Exception {
        // 300 grandchildren whose parent exits at once: they are reparented to the shim, which reaps them
        ExecResult r = run("sh", "-c", "for i in $(seq 300); do (sleep 0.01 &) ; done; echo done");
        assertThat(r.stdoutText()).isEqualTo("done\n");
        long initPid = init.process.pid();
        for (int i = 0; i < 100 && !childrenOf(initPid).isEmpty(); i++) {
            Thread.sleep(20);
        }
        assertThat(childrenOf(initPid)).as("children (shims, zombies) of the init").isEmpty();
    }

    private static List<String> childrenOf(long pid) throws Exception {
        List<String> out = new ArrayList<>();
        try (var s = Files.list(Path.of("/proc"))) {
            for (Path p : s.filter(x -> x.getFileName().toString().matches("\\d+")).toList()) {
                try {
                    String stat = Files.readString(p.resolve("stat"));
                    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                    if (Long.parseLong(f[1]) == pid) {
                        out.add(p.getFileName() + ":" + f[0]);
                    }
                } catch (java.io.IOException gone) {
                    // exited meanwhile
                }
            }
        }
        return out;
    }

    @Test
    void manyConcurrentExecs() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(32);
        try {
            List<Future<ExecResult>> results = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                String arg = "exec-" + i;
                results.add(pool.submit(() -> client.run(cmd("sh", "-c", "echo $0; echo $0 >&2", arg).build(), null)));
            }
            for (int i = 0; i < 100; i++) {
                ExecResult r = results.get(i).get(30, TimeUnit.SECONDS);
                assertThat(r.stdoutText()).isEqualTo("exec-" + i + "\n");
                assertThat(r.stderrText()).isEqualTo("exec-" + i + "\n");
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aShimSharesTheInitsMemoryOnAStackOfItsOwn() throws Exception {
        // Two execs alive at once: each shim is a process of its own whose memory is the init's, so a shim sees
        // the stacks the init mapped after it started (the second shim's); a forked shim would hold a copy
        InitExec a = client.spawn(cmd("sleep", "1000").build());
        waitForPid(a);
        InitExec b = client.spawn(cmd("sleep", "1000").build());
        waitForPid(b);
        long initPid = init.process.pid();
        long shimA = parentOf(a.pid());
        assertThat(shimA).isNotEqualTo(initPid);
        assertThat(parentOf(shimA)).isEqualTo(initPid);
        String initMaps = Files.readString(Path.of("/proc", Long.toString(initPid), "maps"));
        assertThat(shimStacks(initMaps)).as("shim stacks mapped in the init:%n%s", initMaps).isEqualTo(2);
        assertThat(Files.readString(Path.of("/proc", Long.toString(shimA), "maps"))).isEqualTo(initMaps);
        a.kill();
        b.kill();
        a.close();
        b.close();
    }

    @Test
    void shimStacksAreReusedNotLeaked() throws Exception {
        long initPid = init.process.pid();
        Path maps = Path.of("/proc", Long.toString(initPid), "maps");
        for (int batch = 0; batch < 2; batch++) {
            List<InitExec> running = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                running.add(client.spawn(cmd("sleep", "1000").build()));
            }
            for (InitExec e : running) {
                waitForPid(e);
            }
            assertThat(shimStacks(Files.readString(maps))).isEqualTo(20);
            for (InitExec e : running) {
                e.kill();
                assertThat(e.awaitExit(Duration.ofSeconds(5))).isPresent();
                e.close();
            }
            for (int i = 0; i < 200 && !childrenOf(initPid).isEmpty(); i++) {
                Thread.sleep(10);
            }
            assertThat(childrenOf(initPid)).as("shims of the init").isEmpty();
            client.ping(); // the init has reaped them all and given their stacks back by the time it answers
            assertThat(shimStacks(Files.readString(maps))).as("stacks kept for the next execs").isEqualTo(8);
        }
    }

    @Test
    void aCommandThatKillsItsShimHarmsNeitherTheInitNorTheNextExecs() throws Exception {
        // The command runs as the init's own uid here, so it may signal its shim (as a root command could in a
        // sandbox): the exec ends as killed, and the stacks of the dead shim serve the execs after it. It kills
        // the shim only once the shim's first record has arrived (the pid is known): killed before that record,
        // the exec reads as failed to start (126, "the exec's shim process died"), which one run in three of the
        // old `sh -c 'kill -9 $PPID'` hit on 2026-12-02.
        InitExec e = client.spawn(cmd("sh", "-c", "read go; kill -9 $PPID; echo after").stdinPipe(true).build());
        waitForPid(e);
        e.stdin().write("go\n".getBytes(StandardCharsets.UTF_8));
        e.closeStdin();
        ExitStatus status = e.awaitExit(Duration.ofSeconds(10)).orElseThrow();
        assertThat(status.outcome()).as("the exec whose command killed its shim: %s", status)
                .isEqualTo(ExitStatus.Outcome.SIGNALED);
        e.close();
        for (int i = 0; i < 20; i++) {
            assertThat(run("echo", "ok-" + i).stdoutText()).isEqualTo("ok-" + i + "\n");
        }
        assertThat(shimStacks(Files.readString(Path.of("/proc", Long.toString(init.process.pid()), "maps"))))
                .isBetween(1L, 8L);
    }

    /** The shims' stack regions in a maps file: each has two guard pages, inaccessible private anonymous ones. */
    private static long shimStacks(String maps) {
        long guards = maps.lines().filter(l -> {
            String[] f = l.trim().split("\\s+");
            String[] range = f[0].split("-");
            long size = Long.parseUnsignedLong(range[1], 16) - Long.parseUnsignedLong(range[0], 16);
            return f[1].equals("---p") && f.length == 5 && size == 4096;
        }).count();
        assertThat(guards % 2).as("guard pages come in pairs").isZero();
        return guards / 2;
    }

    private static long parentOf(long pid) throws Exception {
        String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        return Long.parseLong(stat.substring(stat.lastIndexOf(')') + 2).split(" ")[1]);
    }

    @Test
    void failFailsEverythingPending() throws Exception {
        InitExec e = client.spawn(cmd("sleep", "1000").build());
        SandboxException reason = new SandboxException(ErrorCode.FAILED_PRECONDITION, "sandbox destroyed");
        CompletableFuture<Throwable> waiter = CompletableFuture.supplyAsync(() -> {
            try {
                e.awaitExit();
                return null;
            } catch (Throwable t) {
                return t;
            }
        });
        Thread.sleep(100);
        client.fail(reason);
        assertThat(waiter.get(5, TimeUnit.SECONDS)).isSameAs(reason);
        assertThatThrownBy(() -> client.run(cmd("true").build(), null)).isSameAs(reason);
        assertThatThrownBy(() -> client.files().stat("/")).isSameAs(reason);
        assertThat(client.closed()).succeedsWithin(Duration.ofSeconds(1));
        // the init is still alive (no ORPHAN_DIE): kill it for the cleanup
        init.process.descendants().forEach(ProcessHandle::destroyForcibly);
        init.process.destroyForcibly();
    }

    @Test
    void shutdownEndsTheChannel() throws Exception {
        client.shutdown();
        assertThat(client.closed()).succeedsWithin(Duration.ofSeconds(5));
        assertThat(init.process.waitFor(5, TimeUnit.SECONDS)).isTrue();
        assertThat(init.process.exitValue()).isZero();
        assertThatThrownBy(client::ping).isInstanceOf(SandboxException.class)
                .extracting(t -> ((SandboxException) t).code()).isEqualTo(ErrorCode.UNAVAILABLE);
    }

    @Test
    void deadlineKillsEverything() throws Exception {
        InitExec e = client.spawn(cmd("sleep", "1000").build());
        waitForPid(e);
        client.setDeadline(Duration.ofMillis(300));
        assertThat(init.process.waitFor(5, TimeUnit.SECONDS)).isTrue();
        assertThat(init.process.exitValue()).isEqualTo(124);
        assertGone(String.valueOf(e.pid()));
    }

    @Test
    void pingIsFast() {
        client.ping();
        long[] ns = new long[200];
        for (int i = 0; i < ns.length; i++) {
            ns[i] = client.ping().toNanos();
        }
        Arrays.sort(ns);
        assertThat(Duration.ofNanos(ns[ns.length / 2])).as("ping p50 %d us (p90 %d us) over %d pings",
                ns[ns.length / 2] / 1000, ns[ns.length * 9 / 10] / 1000, ns.length).isLessThan(Duration.ofMillis(5));
    }

    @Test
    void resyncsAfterAHalfReadFrame() throws Exception {
        // A "previous engine" that read half a frame and died: drive the raw pipes by hand.
        InitProcess p = new InitProcess(dir.resolve("second"));
        try {
            byte[] n1 = InitProcess.nonce();
            p.writeChannel.write(ByteBuffer.wrap(Frames.hello(n1, false)));
            // a PING whose payload imitates a HELLO_ACK for the old nonce: must not fool the resync
            byte[] fake = ByteBuffer.allocate(2000).position(1500).putInt(0x50444B31).put(n1).array();
            p.writeChannel.write(ByteBuffer.wrap(Frames.ping(fake)));
            int ackLen = 4 + 5 + 4 + 16 + 4 + 4 + client.initBuildId().length();
            p.fromInit.readNBytes(ackLen + 1000); // the HELLO_ACK and half of the PONG
            // garbage on the way in: the init discards it and keeps serving
            p.toInit.write(new byte[] {(byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, 1, 2, 3});
            p.toInit.flush();
            Thread.sleep(200);
            InitClient c2 = p.attach(InitProcess.nonce());
            p.client = c2;
            assertThat(c2.ping()).isLessThan(Duration.ofSeconds(1));
            ExecResult r = c2.run(SpawnRequest.builder("echo", "again").user(InitProcess.uid(), InitProcess.gid())
                    .build(), null);
            assertThat(r.stdoutText()).isEqualTo("again\n");
            assertThat(p.logText()).contains("protocol error");
        } finally {
            p.close();
        }
    }

    @Test
    void attachTimesOutWithoutAnAnswer() throws Exception {
        InitProcess p = new InitProcess(dir.resolve("third"));
        try {
            // no HELLO written: nothing will come
            long start = System.nanoTime();
            assertThatThrownBy(() -> InitClient.attach(p.readChannel, p.writeChannel, InitProcess.nonce(),
                    Duration.ofMillis(300), "silent"))
                    .isInstanceOf(SandboxException.class).hasMessageContaining("did not answer HELLO")
                    .extracting(t -> ((SandboxException) t).code()).isEqualTo(ErrorCode.UNAVAILABLE);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(3));
        } finally {
            p.process.destroyForcibly();
            p.process.waitFor(5, TimeUnit.SECONDS);
        }
    }

    // ------------------------------------------------------------------ terminals

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
    void aTerminalIsTheCommandsStdioAndControllingTerminalAndResizes() throws Exception {
        InitExec e = client.spawn(cmd("sh", "-c",
                "tty; stty size; echo to-stderr >&2; test -t 0 && test -t 1 && test -t 2 && echo all-ttys;"
                        + " exec 3</dev/tty && echo has-ctty; echo ready; read line; echo got:$line; stty size")
                .stdinPipe(true).terminal(new TerminalSize(100, 30)).build());
        String first = readUntil(e.stdout(), "ready\r\n");
        assertThat(first).containsPattern("/dev/pts/[0-9]+\r\n").contains("30 100\r\n", "to-stderr\r\n",
                "all-ttys\r\n", "has-ctty\r\n");
        e.resize(new TerminalSize(132, 50));
        e.stdin().write("hello\n".getBytes(StandardCharsets.UTF_8));
        e.stdin().flush();
        String rest = text(e.stdout());
        // The terminal echoes what is typed, then the command answers at the new size.
        assertThat(rest).contains("hello\r\n", "got:hello\r\n", "50 132\r\n");
        assertThat(text(e.stderr())).isEmpty();
        assertThat(e.awaitExit(Duration.ofSeconds(10)).orElseThrow().exitCode()).isZero();
    }

    @Test
    void closingATerminalsStdinTypesEndOfFile() throws Exception {
        InitExec e = client.spawn(cmd("sh", "-c", "cat; echo cat-ended:$?").stdinPipe(true)
                .terminal(TerminalSize.DEFAULT).build());
        e.stdin().write("one\n".getBytes(StandardCharsets.UTF_8));
        e.closeStdin();
        String out = text(e.stdout());
        assertThat(out).contains("one\r\none\r\n", "cat-ended:0");
        assertThat(e.awaitExit(Duration.ofSeconds(10)).orElseThrow().exitCode()).isZero();
    }

    @Test
    void aTerminalWithoutInputGivesEndOfFileAtOnceAndItsCommandIsKilledWithItsTree() throws Exception {
        ExecResult r = client.run(cmd("sh", "-c", "cat; echo eof").terminal(TerminalSize.DEFAULT).build(), null);
        assertThat(r.stdoutText()).contains("eof\r\n");
        assertThat(r.exitCode()).isZero();

        InitExec e = client.spawn(cmd("sh", "-c", "sleep 300 & sleep 300").stdinPipe(true)
                .terminal(TerminalSize.DEFAULT).build());
        e.kill();
        ExitStatus status = e.awaitExit(Duration.ofSeconds(10)).orElseThrow();
        assertThat(status.outcome()).isEqualTo(ExitStatus.Outcome.SIGNALED);
    }

    @Test
    void resizingACommandWithoutATerminalIsRefused() {
        InitExec e = client.spawn(cmd("sleep", "30").build());
        assertThatThrownBy(() -> e.resize(TerminalSize.DEFAULT)).isInstanceOf(SandboxException.class)
                .satisfies(x -> assertThat(((SandboxException) x).code()).isEqualTo(ErrorCode.FAILED_PRECONDITION));
        e.close();
    }

    // ------------------------------------------------------------------ files

    @Test
    void writeReadRoundTrip() throws Exception {
        SandboxFiles f = client.files();
        String p = init.workdir + "/sub/dir/hello.txt";
        f.writeString(p, "hello files\n");
        assertThat(f.readString(p)).isEqualTo("hello files\n");
        assertThat(Files.readString(Path.of(p))).isEqualTo("hello files\n");
        // relative paths resolve against the workdir
        assertThat(f.readString("sub/dir/hello.txt")).isEqualTo("hello files\n");
        f.writeString("sub/dir/hello.txt", "replaced");
        assertThat(Files.readString(Path.of(p))).isEqualTo("replaced");
        f.write("empty", new byte[0]);
        assertThat(f.read("empty")).isEmpty();
        // no temp files left behind
        assertThat(Files.list(Path.of(p).getParent()).map(x -> x.getFileName().toString()).toList())
                .containsExactly("hello.txt");
    }

    @Test
    void streamsLargeFilesBothWays() throws Exception {
        SandboxFiles f = client.files();
        int size = 20 * 1024 * 1024;
        Random rnd = new Random(7);
        MessageDigest want = MessageDigest.getInstance("SHA-256");
        InputStream source = new InputStream() {
            int left = size;

            @Override
            public int read() {
                byte[] one = new byte[1];
                return read(one, 0, 1) < 0 ? -1 : one[0] & 0xFF;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                if (left == 0) {
                    return -1;
                }
                int n = Math.min(len, Math.min(left, 50_000));
                byte[] chunk = new byte[n];
                rnd.nextBytes(chunk);
                want.update(chunk);
                System.arraycopy(chunk, 0, b, off, n);
                left -= n;
                return n;
            }
        };
        f.write("big.bin", source);
        assertThat(Files.size(init.workdir.resolve("big.bin"))).isEqualTo(size);
        MessageDigest got = MessageDigest.getInstance("SHA-256");
        long total = 0;
        try (InputStream in = f.openRead("big.bin")) {
            byte[] buf = new byte[100_000];
            int n;
            while ((n = in.read(buf)) >= 0) {
                got.update(buf, 0, n);
                total += n;
                assertThat(in.available()).isLessThanOrEqualTo(InitFiles.READ_WINDOW);
            }
        }
        assertThat(total).isEqualTo(size);
        assertThat(got.digest()).isEqualTo(want.digest());
        // closing a read early does not leave the init or the channel stuck
        try (InputStream in = f.openRead("big.bin")) {
            assertThat(in.read()).isGreaterThanOrEqualTo(0);
        }
        assertThat(client.ping()).isLessThan(Duration.ofSeconds(2));
    }

    @Test
    void listStatMkdirRemoveMove() throws Exception {
        SandboxFiles f = client.files();
        String w = init.workdir.toString();
        f.mkdir(w + "/a/b/c");
        f.mkdir(w + "/a/b/c"); // exists: fine
        f.writeString(w + "/a/file.txt", "12345");
        Files.createSymbolicLink(init.workdir.resolve("a/link"), Path.of("/etc/passwd"));

        List<FileInfo> entries = f.list(w + "/a");
        assertThat(entries).extracting(FileInfo::name).containsExactlyInAnyOrder("b", "file.txt", "link");
        FileInfo file = entries.stream().filter(e -> e.name().equals("file.txt")).findFirst().orElseThrow();
        assertThat(file.type()).isEqualTo(FileType.FILE);
        assertThat(file.size()).isEqualTo(5);
        assertThat(file.mode()).isEqualTo(0644);
        assertThat(file.path()).isEqualTo(w + "/a/file.txt");

        FileInfo link = f.stat(w + "/a/link");
        assertThat(link.type()).isEqualTo(FileType.SYMLINK);
        assertThat(link.symlinkTarget()).contains("/etc/passwd");
        FileInfo d = f.stat(w + "/a/b");
        assertThat(d.isDirectory()).isTrue();
        assertThat(d.name()).isEqualTo("b");
        assertThat(d.modifiedAt()).isAfter(java.time.Instant.now().minusSeconds(60));

        assertThat(f.exists(w + "/a/file.txt")).isTrue();
        assertThat(f.exists(w + "/a/nope")).isFalse();
        assertThat(f.exists(w + "/a/file.txt/x")).isFalse();

        f.move(w + "/a/file.txt", w + "/a/b/moved.txt");
        assertThat(f.readString(w + "/a/b/moved.txt")).isEqualTo("12345");
        assertThat(f.exists(w + "/a/file.txt")).isFalse();

        assertThatThrownBy(() -> f.remove(w + "/a/b")).isInstanceOf(SandboxException.class)
                .extracting(t -> ((SandboxException) t).code()).isEqualTo(ErrorCode.FAILED_PRECONDITION);
        f.remove(w + "/a/link");
        assertThat(Files.exists(Path.of("/etc/passwd"))).isTrue();
        f.removeRecursive(w + "/a");
        assertThat(Files.exists(init.workdir.resolve("a"))).isFalse();
        f.removeRecursive(w + "/a"); // nothing there: fine
    }

    @Test
    void removeRecursiveDoesNotFollowSymlinks() throws Exception {
        Path outside = Files.createDirectories(dir.resolve("outside"));
        Files.writeString(outside.resolve("keep"), "keep");
        Path t = Files.createDirectories(init.workdir.resolve("t/inner"));
        Files.createSymbolicLink(t.resolve("escape"), outside);
        client.files().removeRecursive(init.workdir + "/t");
        assertThat(Files.exists(init.workdir.resolve("t"))).isFalse();
        assertThat(Files.readString(outside.resolve("keep"))).isEqualTo("keep");
    }

    @Test
    void listsLargeDirectoriesInBatches() throws Exception {
        Path big = Files.createDirectories(init.workdir.resolve("many"));
        for (int i = 0; i < 5000; i++) {
            Files.createFile(big.resolve("file-with-a-longish-name-" + i));
        }
        assertThat(client.files().list(big.toString())).hasSize(5000);
    }

    @Test
    void refusesFifosAndPseudoFiles() throws Exception {
        SandboxFiles f = client.files();
        assertThat(new ProcessBuilder("mkfifo", init.workdir.resolve("p").toString()).start().waitFor()).isZero();
        long start = System.nanoTime();
        assertThatThrownBy(() -> f.read(init.workdir + "/p")).isInstanceOf(SandboxException.class)
                .extracting(t -> ((SandboxException) t).code()).isEqualTo(ErrorCode.FAILED_PRECONDITION);
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));

        Files.createSymbolicLink(init.workdir.resolve("env"), Path.of("/proc/self/environ"));
        assertThatThrownBy(() -> f.read(init.workdir + "/env")).isInstanceOf(SandboxException.class)
                .extracting(t -> ((SandboxException) t).code()).isEqualTo(ErrorCode.PERMISSION_DENIED);
        assertThatThrownBy(() -> f.read("/proc/self/status")).isInstanceOf(SandboxException.class)
                .extracting(t -> ((SandboxException) t).code()).isEqualTo(ErrorCode.PERMISSION_DENIED);
        // a magic link is refused outright
        assertThatThrownBy(() -> f.read("/proc/self/fd/0")).isInstanceOf(SandboxException.class);
        assertThatThrownBy(() -> f.list("/proc")).isInstanceOf(SandboxException.class)
                .extracting(t -> ((SandboxException) t).code()).isEqualTo(ErrorCode.PERMISSION_DENIED);
        assertThatThrownBy(() -> f.read("/dev/zero")).isInstanceOf(SandboxException.class)
                .extracting(t -> ((SandboxException) t).code()).isEqualTo(ErrorCode.FAILED_PRECONDITION);
        assertThat(client.ping()).isLessThan(Duration.ofSeconds(1));
    }

    @Test
    void mapsErrnosToCodesWithReadableMessages() throws Exception {
        SandboxFiles f = client.files();
        String w = init.workdir.toString();
        assertThatThrownBy(() -> f.read(w + "/missing")).isInstanceOf(SandboxException.class)
                .hasMessage(w + "/missing: No such file or directory")
                .extracting(t -> ((SandboxException) t).code()).isEqualTo(ErrorCode.NOT_FOUND);
        assertThatThrownBy(() -> f.read(w)).isInstanceOf(SandboxException.class)
                .extracting(t -> ((SandboxException) t).code()).isEqualTo(ErrorCode.FAILED_PRECONDITION);
        f.mkdir(w + "/d");
        assertThatThrownBy(() -> f.writeString(w + "/d", "x")).isInstanceOf(SandboxException.class)
                .extracting(t -> ((SandboxException) t).code()).isEqualTo(ErrorCode.FAILED_PRECONDITION);
        f.writeString(w + "/plain", "x");
        assertThatThrownBy(() -> f.mkdir(w + "/plain")).isInstanceOf(SandboxException.class)
                .extracting(t -> ((SandboxException) t).code()).isEqualTo(ErrorCode.FAILED_PRECONDITION);
        assertThatThrownBy(() -> f.stat(w + "/nope/deeper")).isInstanceOf(SandboxException.class)
                .extracting(t -> ((SandboxException) t).code()).isEqualTo(ErrorCode.NOT_FOUND);
        assertThatThrownBy(() -> f.move(w + "/nope", w + "/x")).isInstanceOf(SandboxException.class)
                .extracting(t -> ((SandboxException) t).code()).isEqualTo(ErrorCode.NOT_FOUND);
    }

    @Test
    void fileOperationsRunAsTheSandboxUser() throws Exception {
        if (InitProcess.uid() != 0) {
            return; // needs root to start an init for another user
        }
        Path d2 = dir.resolve("nobody");
        Files.createDirectories(d2);
        Path secret = Files.writeString(dir.resolve("secret"), "root only");
        Files.setPosixFilePermissions(secret, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        Process p = new ProcessBuilder(InitProcess.BINARY.toAbsolutePath().toString(), "--uid=65534", "--gid=65534",
                "--workdir=/tmp").redirectError(d2.resolve("log").toFile()).start();
        InitClient c = null;
        try {
            byte[] n = InitProcess.nonce();
            var w = InitProcess.flushing(p.getOutputStream());
            InitClient.writeHello(w, n, true);
            c = InitClient.attach(java.nio.channels.Channels.newChannel(p.getInputStream()), w, n,
                    Duration.ofSeconds(5), "nobody");
            InitClient cc = c;
            assertThatThrownBy(() -> cc.files().read(secret.toString())).isInstanceOf(SandboxException.class)
                    .extracting(t -> ((SandboxException) t).code()).isEqualTo(ErrorCode.PERMISSION_DENIED);
            assertThat(c.run(SpawnRequest.builder("id", "-u").user(65534, 65534).build(), null).stdoutText())
                    .isEqualTo("65534\n");
        } finally {
            if (c != null) {
                c.close(); // closes the init's input: with ORPHAN_DIE it kills everything and exits
            }
            p.getOutputStream().close();
            boolean exited = p.waitFor(5, TimeUnit.SECONDS);
            if (!exited) {
                p.destroyForcibly();
            }
            assertThat(exited).as("init exits on end of input with ORPHAN_DIE").isTrue();
            assertThat(p.exitValue()).isEqualTo(1);
        }
    }

    // ------------------------------------------------------------------ helpers

    private static void waitForPid(InitExec e) throws InterruptedException {
        for (int i = 0; i < 500 && e.pid() == 0; i++) {
            Thread.sleep(10);
        }
        assertThat(e.pid()).isPositive();
    }

    private static String firstLine(InputStream in) throws Exception {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) >= 0 && c != '\n') {
            b.write(c);
        }
        return b.toString(StandardCharsets.UTF_8);
    }

    /** The process is gone (not even a zombie) within a short while. */
    private static void assertGone(String pid) throws InterruptedException {
        Path p = Path.of("/proc", pid.trim());
        for (int i = 0; i < 200 && Files.exists(p); i++) {
            Thread.sleep(10);
        }
        assertThat(Files.exists(p)).as("process " + pid + " still exists").isFalse();
    }
}
