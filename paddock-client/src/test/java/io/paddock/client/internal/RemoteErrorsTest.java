package io.paddock.client.internal;

import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.ExecResult;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;
import io.paddock.server.ServerOptions;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Random;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * What only the remote SDK can get wrong: transport and auth failures, the token's secrecy, ownership on
 * close, and the exec stream's backpressure, keep-alive, stdin chunking and interrupts. The daemon here
 * idles connections out after 2 s, so a quiet command's stream must be kept alive by the daemon's pings.
 */
class RemoteErrorsTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    private static LoopbackDaemon daemon;
    private static Paddock paddock;

    @BeforeAll
    static void start() {
        daemon = LoopbackDaemon.start(ServerOptions.builder().idleTimeout(Duration.ofSeconds(2)));
        paddock = daemon.connect();
    }

    @AfterAll
    static void stop() {
        try {
            if (paddock != null) {
                paddock.close();
            }
        } finally {
            if (daemon != null) {
                daemon.close();
            }
        }
    }

    private static SandboxSpec small() {
        return SandboxSpec.builder().memory(ByteSize.mib(256)).pids(128).disk(ByteSize.mib(256))
                .timeout(Duration.ofMinutes(2)).build();
    }

    @Test
    void execsReuseTheClientsSocketsAcrossSandboxesAndQuietSpells() throws Exception {
        Http http = ((RemotePaddock) paddock).http();
        try (Sandbox a = paddock.create(small()); Sandbox b = paddock.create(small())) {
            a.exec("true");
            long opened = http.channelsOpened();
            for (int i = 0; i < 10; i++) {
                assertThat(a.exec("echo", "a" + i).stdoutText()).isEqualTo("a" + i + "\n");
                assertThat(b.exec("echo", "b" + i).stdoutText()).isEqualTo("b" + i + "\n");
            }
            assertThat(http.channelsOpened()).as("one socket served 20 commands in two sandboxes").isEqualTo(opened);
            // longer than the daemon's idle timeout (2 s): its pings keep the idle socket open
            Thread.sleep(3_000);
            assertThat(a.exec("echo", "after").stdoutText()).isEqualTo("after\n");
            assertThat(http.channelsOpened()).as("the idle socket lived through the quiet spell").isEqualTo(opened);

            // stdin sent while the command exits may reach the daemon after the exit: the next command is not touched
            for (int i = 0; i < 20; i++) {
                try (ExecProcess p = a.start(ExecRequest.builder().argv("head", "-c", "1").build())) {
                    try {
                        for (int k = 0; k < 50; k++) {
                            p.stdin().write(new byte[100]);
                            p.stdin().flush();
                        }
                    } catch (java.io.IOException | SandboxException e) {
                        // it exited meanwhile
                    }
                    assertThat(p.awaitExit().exitCode()).isZero();
                }
                ExecResult next = a.exec("sh", "-c", "cat; echo next" + i);
                assertThat(next.stdoutText()).isEqualTo("next" + i + "\n");
            }

            // a command closed while it runs takes its socket down with it; the next opens another
            ExecProcess sleeping = a.start(ExecRequest.builder().argv("sleep", "60").build());
            sleeping.close();
            assertThat(a.exec("echo", "again").stdoutText()).isEqualTo("again\n");

            // commands at once each get a socket; at most a few stay open idle
            long before = http.channelsOpened();
            java.util.concurrent.ExecutorService threads = java.util.concurrent.Executors.newFixedThreadPool(6);
            java.util.List<CompletableFuture<String>> runs = new java.util.ArrayList<>();
            for (int t = 0; t < 6; t++) {
                int n = t;
                runs.add(CompletableFuture.supplyAsync(() -> {
                    StringBuilder seen = new StringBuilder();
                    for (int i = 0; i < 10; i++) {
                        seen.append((n % 2 == 0 ? a : b).exec("echo", n + "-" + i).stdoutText());
                    }
                    return seen.toString();
                }, threads));
            }
            for (int t = 0; t < runs.size(); t++) {
                StringBuilder want = new StringBuilder();
                for (int i = 0; i < 10; i++) {
                    want.append(t).append('-').append(i).append('\n');
                }
                assertThat(runs.get(t).get()).isEqualTo(want.toString());
            }
            threads.shutdown();
            assertThat(http.channelsOpened() - before).isLessThanOrEqualTo(6);
        }
    }

    private static SandboxException thrown(Runnable r) {
        try {
            r.run();
        } catch (SandboxException e) {
            return e;
        }
        throw new AssertionError("no SandboxException thrown");
    }

    // ---- connecting ----

    @Test
    void wrongTokenIsPermissionDeniedAndNeverEchoed() {
        SandboxException e = thrown(() -> Paddock.connect(daemon.url(), "wrong-token-0123456789"));
        assertThat(e.code()).isEqualTo(ErrorCode.PERMISSION_DENIED);
        assertThat(e.getMessage()).doesNotContain("wrong-token-0123456789").doesNotContain(daemon.token);
    }

    @Test
    void daemonNotRunningIsUnavailableNamingTheUrlButNotTheToken() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        URI url = URI.create("http://127.0.0.1:" + port);
        SandboxException e = thrown(() -> Paddock.connect(url, "secret-token-abcdef"));
        assertThat(e.code()).isEqualTo(ErrorCode.UNAVAILABLE);
        assertThat(e.getMessage()).contains("http://127.0.0.1:" + port).doesNotContain("secret-token-abcdef");
        assertThat(e.toString()).doesNotContain("secret-token-abcdef");
    }

    @Test
    void urlsWithCredentialsQueriesOrNoTokenAreRefusedBeforeConnecting() {
        assertThat(thrown(() -> Paddock.connect(URI.create("http://user:pw@127.0.0.1:1"), "t")).code())
                .isEqualTo(ErrorCode.INVALID_ARGUMENT);
        assertThat(thrown(() -> Paddock.connect(URI.create("http://127.0.0.1:1/?x=1"), "t")).code())
                .isEqualTo(ErrorCode.INVALID_ARGUMENT);
        assertThat(thrown(() -> Paddock.connect(URI.create("http://127.0.0.1:1"), "two words")).getMessage())
                .startsWith("token:").doesNotContain("two words");
        assertThat(thrown(() -> Paddock.connect(URI.create("ftp://127.0.0.1:1"), "t")).code())
                .isEqualTo(ErrorCode.INVALID_ARGUMENT);
    }

    @Test
    void theTokenAppearsInNoStringOrError() {
        try (Sandbox sb = paddock.create(small())) {
            assertThat(paddock.toString()).doesNotContain(daemon.token);
            assertThat(sb.toString()).doesNotContain(daemon.token);
            SandboxException e = thrown(() -> paddock.get("sb-" + "a".repeat(26)));
            assertThat(e.code()).isEqualTo(ErrorCode.NOT_FOUND);
            assertThat(e.getMessage()).doesNotContain(daemon.token);
        }
    }

    // ---- ownership ----

    @Test
    void closingTheClientLeavesSandboxesToTheDaemonAndRefusesFurtherCalls() {
        Paddock first = daemon.connect();
        Sandbox sb = first.create(small());
        first.close();
        assertThat(thrown(() -> first.create(small())).code()).isEqualTo(ErrorCode.FAILED_PRECONDITION);
        assertThat(thrown(sb::info).code()).isEqualTo(ErrorCode.FAILED_PRECONDITION);
        try (Paddock second = daemon.connect(); Sandbox again = second.get(sb.id())) {
            assertThat(again.state()).isEqualTo(SandboxState.RUNNING);
            assertThat(again.exec("echo", "still here").stdoutText()).isEqualTo("still here\n");
        }
    }

    // ---- the exec stream ----

    @Test
    void aConsumerThatDoesNotReadBlocksTheCommandInsteadOfBufferingWithoutLimit() throws Exception {
        long size = 64L << 20;
        try (Sandbox sb = paddock.create(small());
             ExecProcess p = sb.start(ExecRequest.builder().argv("head", "-c", Long.toString(size), "/dev/zero")
                     .outputLimit(ExecRequest.UNLIMITED).build())) {
            // Less than the daemon's idle timeout: a write stuck behind a consumer that does not read counts
            // as idle there, and the daemon then drops the stream (and kills the command).
            Thread.sleep(1000);
            assertThat(p.isAlive()).isTrue();
            assertThat(p.stdout().available()).isLessThanOrEqualTo(RemoteExecProcess.BUFFER_CAP + RemoteExecProcess.STDIN_CHUNK + 1);
            assertThat(sb.exec("sh", "-c", "ps -eo comm= | grep -c '^head$'").stdoutText().trim())
                    .as("the command is blocked writing, not finished").isEqualTo("1");
            long total = 0;
            byte[] buf = new byte[65536];
            int n;
            InputStream in = p.stdout();
            while ((n = in.read(buf)) > 0) {
                total += n;
            }
            assertThat(total).isEqualTo(size);
            assertThat(p.awaitExit(Duration.ofSeconds(10))).hasValueSatisfying(s -> assertThat(s.success()).isTrue());
        }
    }

    @Test
    void aQuietCommandOutlivesTheIdleTimeout() throws Exception {
        try (Sandbox sb = paddock.create(small());
             ExecProcess p = sb.start(ExecRequest.builder().argv("sh", "-c", "sleep 4; echo late").build())) {
            BufferedReader out = new BufferedReader(new InputStreamReader(p.stdout(), StandardCharsets.UTF_8));
            assertThat(out.readLine()).isEqualTo("late");
            assertThat(p.awaitExit().success()).isTrue();
        }
    }

    @Test
    void largeStdinIsStreamedInChunks() throws Exception {
        byte[] data = new byte[5 * 1024 * 1024 + 3];
        new Random(7).nextBytes(data);
        String expected = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
        try (Sandbox sb = paddock.create(small());
             ExecProcess p = sb.start(ExecRequest.builder().argv("sha256sum").build())) {
            CompletableFuture<byte[]> out = CompletableFuture.supplyAsync(() -> {
                try {
                    return p.stdout().readAllBytes();
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            p.stdin().write(data);
            p.stdin().close();
            assertThat(new String(out.get(), StandardCharsets.UTF_8)).startsWith(expected + " ");
            assertThat(p.awaitExit().success()).isTrue();
        }
    }

    @Test
    void execWithAnOutputCapOverTheDaemonsBufferLimitWorksAsLocally() {
        try (Sandbox sb = paddock.create(small())) {
            ExecResult r = sb.exec(ExecRequest.builder().argv("sh", "-c", "head -c 20000000 /dev/zero; echo e >&2; exit 3")
                    .outputLimit(ByteSize.mib(64)).build());
            assertThat(r.stdout()).hasSize(20_000_000);
            assertThat(r.stderrText()).isEqualTo("e\n");
            assertThat(r.exitCode()).isEqualTo(3);
            assertThat(r.status().truncated()).isFalse();
            ExecResult cat = sb.exec(ExecRequest.builder().argv("cat").stdin("in").outputLimit(ExecRequest.UNLIMITED).build());
            assertThat(cat.stdoutText()).isEqualTo("in");
        }
    }

    @Test
    void startingInAStoppedSandboxFailsAsLocally() {
        Sandbox sb = paddock.create(small());
        sb.destroy();
        assertThat(thrown(() -> sb.start(ExecRequest.of("true"))).code()).isEqualTo(ErrorCode.FAILED_PRECONDITION);
        assertThat(thrown(() -> sb.exec("true")).code()).isEqualTo(ErrorCode.FAILED_PRECONDITION);
    }

    @Test
    void aSandboxDestroyedUnderARunningStreamFailsItWithTheLocalCode() {
        ErrorCode local = destroyUnderStream(daemon.engine);
        ErrorCode remote = destroyUnderStream(paddock);
        assertThat(remote).isEqualTo(local);
    }

    private static ErrorCode destroyUnderStream(Paddock p) {
        Sandbox sb = p.create(small());
        try (ExecProcess e = sb.start(ExecRequest.of("sleep", "60"))) {
            sb.destroy();
            SandboxException x = thrown(() -> e.awaitExit(Duration.ofSeconds(20)));
            assertThat(x.getMessage()).doesNotStartWith("HTTP ");
            return x.code();
        } finally {
            sb.destroy();
        }
    }

    @Test
    void anInterruptedWaitRestoresTheFlagAndThrowsUnavailable() {
        try (Sandbox sb = paddock.create(small());
             ExecProcess p = sb.start(ExecRequest.of("sleep", "30"))) {
            Thread.currentThread().interrupt();
            SandboxException e = thrown(p::awaitExit);
            assertThat(Thread.interrupted()).as("interrupt flag restored").isTrue();
            assertThat(e.code()).isEqualTo(ErrorCode.UNAVAILABLE);
            assertThat(e.getMessage()).isEqualTo("interrupted");
        }
    }

    @Test
    void closingAStreamKillsItsCommand() {
        try (Sandbox sb = paddock.create(small())) {
            ExecProcess p = sb.start(ExecRequest.of("sleep", "60"));
            assertThat(p.id()).isPositive();
            p.close();
            assertThat(p.isAlive()).isFalse();
            assertThat(sb.exec("sh", "-c", "ps -eo comm= | grep -c '^sleep$' || true").stdoutText().trim()).isEqualTo("0");
            assertThatThrownBy(() -> p.stdin().write(1)).isInstanceOf(SandboxException.class);
        }
    }

    @Test
    void onExitCompletesWithTheStatus() throws Exception {
        try (Sandbox sb = paddock.create(small());
             ExecProcess p = sb.start(ExecRequest.of("sh", "-c", "exit 4"))) {
            assertThat(p.onExit().get().exitCode()).isEqualTo(4);
            assertThat(p.isAlive()).isFalse();
        }
    }
}
