package io.paddock.envd;

import com.google.protobuf.ByteString;
import io.paddock.ByteSize;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.envd.ConnectClient.CallFailed;
import io.paddock.envd.internal.proto.FilesystemProto.CreateWatcherRequest;
import io.paddock.envd.internal.proto.FilesystemProto.CreateWatcherResponse;
import io.paddock.envd.internal.proto.FilesystemProto.EntryInfo;
import io.paddock.envd.internal.proto.FilesystemProto.EventType;
import io.paddock.envd.internal.proto.FilesystemProto.FileType;
import io.paddock.envd.internal.proto.FilesystemProto.FilesystemEvent;
import io.paddock.envd.internal.proto.FilesystemProto.GetWatcherEventsRequest;
import io.paddock.envd.internal.proto.FilesystemProto.GetWatcherEventsResponse;
import io.paddock.envd.internal.proto.FilesystemProto.ListDirRequest;
import io.paddock.envd.internal.proto.FilesystemProto.ListDirResponse;
import io.paddock.envd.internal.proto.FilesystemProto.MakeDirRequest;
import io.paddock.envd.internal.proto.FilesystemProto.MakeDirResponse;
import io.paddock.envd.internal.proto.FilesystemProto.MoveRequest;
import io.paddock.envd.internal.proto.FilesystemProto.MoveResponse;
import io.paddock.envd.internal.proto.FilesystemProto.RemoveRequest;
import io.paddock.envd.internal.proto.FilesystemProto.RemoveResponse;
import io.paddock.envd.internal.proto.FilesystemProto.RemoveWatcherRequest;
import io.paddock.envd.internal.proto.FilesystemProto.RemoveWatcherResponse;
import io.paddock.envd.internal.proto.FilesystemProto.StatRequest;
import io.paddock.envd.internal.proto.FilesystemProto.StatResponse;
import io.paddock.envd.internal.proto.FilesystemProto.WatchDirRequest;
import io.paddock.envd.internal.proto.FilesystemProto.WatchDirResponse;
import io.paddock.envd.internal.proto.ProcessProto.CloseStdinRequest;
import io.paddock.envd.internal.proto.ProcessProto.CloseStdinResponse;
import io.paddock.envd.internal.proto.ProcessProto.ConnectRequest;
import io.paddock.envd.internal.proto.ProcessProto.ConnectResponse;
import io.paddock.envd.internal.proto.ProcessProto.ListRequest;
import io.paddock.envd.internal.proto.ProcessProto.ListResponse;
import io.paddock.envd.internal.proto.ProcessProto.PTY;
import io.paddock.envd.internal.proto.ProcessProto.ProcessConfig;
import io.paddock.envd.internal.proto.ProcessProto.ProcessEvent;
import io.paddock.envd.internal.proto.ProcessProto.ProcessInput;
import io.paddock.envd.internal.proto.ProcessProto.ProcessSelector;
import io.paddock.envd.internal.proto.ProcessProto.SendInputRequest;
import io.paddock.envd.internal.proto.ProcessProto.SendInputResponse;
import io.paddock.envd.internal.proto.ProcessProto.SendSignalRequest;
import io.paddock.envd.internal.proto.ProcessProto.SendSignalResponse;
import io.paddock.envd.internal.proto.ProcessProto.Signal;
import io.paddock.envd.internal.proto.ProcessProto.StartRequest;
import io.paddock.envd.internal.proto.ProcessProto.StartResponse;
import io.paddock.envd.internal.proto.ProcessProto.StreamInputRequest;
import io.paddock.envd.internal.proto.ProcessProto.StreamInputResponse;
import io.paddock.envd.internal.proto.ProcessProto.UpdateRequest;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * envd's process and filesystem services on real sandboxes, called as E2B's SDK calls them, in both of Connect's
 * codecs. Subclasses pick the tier; the leak check after each test proves nothing is left on the host.
 */
abstract class EnvdContractTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    static final String PROCESS = "/process.Process/";
    static final String FS = "/filesystem.Filesystem/";
    static final long WAIT = 30;

    static Paddock paddock;
    static Sandbox sb;
    static Envd envd;

    static void startTier(String runtime) {
        paddock = Paddock.local();
        envd = new Envd();
    }

    static Sandbox create(String runtime) {
        return paddock.create(SandboxSpec.builder().runtime(runtime).memory(ByteSize.mib(512))
                .timeout(Duration.ofMinutes(10)).build());
    }

    /** A sandbox per test: gVisor's host processes grow with use, so a shared one would read as a leak. */
    @BeforeEach
    void createSandbox() {
        sb = create(runtime());
    }

    @AfterEach
    void destroySandbox() {
        if (sb != null) {
            sb.destroy();
            sb = null;
        }
    }

    @AfterAll
    static void stop() {
        if (paddock != null) {
            paddock.close();
            paddock = null;
        }
    }

    abstract String runtime();

    static ConnectClient client(ConnectClient.Codec codec) {
        return new ConnectClient(envd, sb, codec);
    }

    static StartRequest bash(String script) {
        return StartRequest.newBuilder().setProcess(ProcessConfig.newBuilder().setCmd("/bin/bash")
                .addArgs("-l").addArgs("-c").addArgs(script)).setStdin(false).build();
    }

    /** Everything a process stream carried: output, keepalives, the end event, the end-of-stream JSON. */
    record Run(int pid, String stdout, String stderr, String pty, ProcessEvent.EndEvent end, int keepalives, String endJson) {
    }

    static Run drain(ConnectClient.Stream s, boolean start) {
        StringBuilder out = new StringBuilder();
        StringBuilder err = new StringBuilder();
        StringBuilder pty = new StringBuilder();
        int pid = -1;
        int keepalives = 0;
        ProcessEvent.EndEvent end = null;
        while (true) {
            ConnectClient.Frame f = s.frame(WAIT);
            if (f.end()) {
                return new Run(pid, out.toString(), err.toString(), pty.toString(), end, keepalives, f.text());
            }
            ProcessEvent ev = start ? s.next0(f, StartResponse.getDefaultInstance()).getEvent()
                    : s.next0(f, ConnectResponse.getDefaultInstance()).getEvent();
            switch (ev.getEventCase()) {
                case START -> pid = ev.getStart().getPid();
                case DATA -> {
                    switch (ev.getData().getOutputCase()) {
                        case STDOUT -> out.append(ev.getData().getStdout().toStringUtf8());
                        case STDERR -> err.append(ev.getData().getStderr().toStringUtf8());
                        case PTY -> pty.append(ev.getData().getPty().toStringUtf8());
                        default -> throw new AssertionError("a data event without output: " + ev);
                    }
                }
                case KEEPALIVE -> keepalives++;
                case END -> end = ev.getEnd();
                default -> throw new AssertionError("unexpected event " + ev);
            }
        }
    }

    static int startEvent(ConnectClient.Stream s) {
        ProcessEvent ev = s.next(StartResponse.getDefaultInstance(), WAIT).getEvent();
        assertThat(ev.getEventCase()).isEqualTo(ProcessEvent.EventCase.START);
        return ev.getStart().getPid();
    }

    static ProcessSelector pid(int pid) {
        return ProcessSelector.newBuilder().setPid(pid).build();
    }

    static SendInputRequest input(int pid, String text) {
        return SendInputRequest.newBuilder().setProcess(pid(pid))
                .setInput(ProcessInput.newBuilder().setStdin(ByteString.copyFromUtf8(text))).build();
    }

    /** The next data event's text on a stream, skipping keepalives. */
    static String nextData(ConnectClient.Stream s, boolean start) {
        while (true) {
            ConnectClient.Frame f = s.frame(WAIT);
            assertThat(f.end()).as("stream ended: %s", f.text()).isFalse();
            ProcessEvent ev = start ? s.next0(f, StartResponse.getDefaultInstance()).getEvent()
                    : s.next0(f, ConnectResponse.getDefaultInstance()).getEvent();
            if (ev.hasData()) {
                assertThat(ev.getData().hasPty()).as("pty data from a process without a pty").isFalse();
                return ev.getData().getStdout().toStringUtf8() + ev.getData().getStderr().toStringUtf8();
            }
            assertThat(ev.getEventCase()).isEqualTo(ProcessEvent.EventCase.KEEPALIVE);
        }
    }

    // ------------------------------------------------------------------ process

    @ParameterizedTest
    @EnumSource(ConnectClient.Codec.class)
    void startStreamsOutputAndTheExitCode(ConnectClient.Codec codec) {
        ConnectClient c = client(codec);
        ConnectClient.Stream s = c.stream(PROCESS + "Start", bash("echo out; echo err >&2; exit 3"),
                Map.of("keepalive-ping-interval", "50"));
        Run r = drain(s, true);
        assertThat(s.status()).isEqualTo(200);
        assertThat(s.contentType()).isEqualTo(c.streamType());
        assertThat(r.pid()).isPositive();
        assertThat(r.stdout()).isEqualTo("out\n");
        assertThat(r.stderr()).isEqualTo("err\n");
        assertThat(r.end().getExitCode()).isEqualTo(3);
        assertThat(r.end().getExited()).isTrue();
        assertThat(r.end().getStatus()).isEqualTo("exit status 3");
        assertThat(r.end().getError()).isEqualTo("exit status 3");
        assertThat(r.endJson()).isEqualTo("{}");

        Run ok = drain(c.stream(PROCESS + "Start", bash("printf 'a\\0b'"), Map.of()), true);
        assertThat(ok.end().getExitCode()).isZero();
        assertThat(ok.end().hasError()).isFalse();
        assertThat(ok.stdout()).isEqualTo("a\0b");
        assertThat(c.unary(PROCESS + "List", ListRequest.getDefaultInstance(), ListResponse.getDefaultInstance())
                .getProcessesList()).isEmpty();
    }

    @ParameterizedTest
    @EnumSource(ConnectClient.Codec.class)
    void stdinListConnectAndCloseStdin(ConnectClient.Codec codec) throws Exception {
        ConnectClient c = client(codec);
        StartRequest cat = StartRequest.newBuilder().setProcess(ProcessConfig.newBuilder().setCmd("cat")
                .putEnvs("K", "v").setCwd("/tmp")).setTag("my-cat").setStdin(true).build();
        ConnectClient.Stream s = c.stream(PROCESS + "Start", cat, Map.of());
        int pid = startEvent(s);

        ListResponse list = c.unary(PROCESS + "List", ListRequest.getDefaultInstance(), ListResponse.getDefaultInstance());
        assertThat(list.getProcessesList()).singleElement().satisfies(p -> {
            assertThat(p.getPid()).isEqualTo(pid);
            assertThat(p.getTag()).isEqualTo("my-cat");
            assertThat(p.getConfig().getCmd()).isEqualTo("cat");
            assertThat(p.getConfig().getEnvsMap()).containsEntry("K", "v");
            assertThat(p.getConfig().getCwd()).isEqualTo("/tmp");
        });

        assertThat(c.unary(PROCESS + "SendInput", input(pid, "hello\n"), SendInputResponse.getDefaultInstance())).isNotNull();
        assertThat(nextData(s, true)).isEqualTo("hello\n");

        ConnectClient.Stream attached = c.stream(PROCESS + "Connect", ConnectRequest.newBuilder()
                .setProcess(ProcessSelector.newBuilder().setTag("my-cat")).build(), Map.of());
        ProcessEvent first = attached.next(ConnectResponse.getDefaultInstance(), WAIT).getEvent();
        assertThat(first.getStart().getPid()).isEqualTo(pid);
        c.unary(PROCESS + "SendInput", input(pid, "again\n"), SendInputResponse.getDefaultInstance());
        assertThat(nextData(s, true)).isEqualTo("again\n");
        assertThat(nextData(attached, false)).isEqualTo("again\n");

        c.unary(PROCESS + "CloseStdin", CloseStdinRequest.newBuilder().setProcess(pid(pid)).build(),
                CloseStdinResponse.getDefaultInstance());
        Run end = drain(s, true);
        assertThat(end.end().getExitCode()).isZero();
        assertThat(end.end().getExited()).isTrue();
        assertThat(drain(attached, false).end().getExitCode()).isZero();
        s.awaitDone(WAIT);
        attached.awaitDone(WAIT);

        assertThatThrownBy(() -> c.unary(PROCESS + "SendInput", input(pid, "late"), SendInputResponse.getDefaultInstance()))
                .isInstanceOfSatisfying(CallFailed.class, e -> {
                    assertThat(e.code).isEqualTo("not_found");
                    assertThat(e.httpStatus).isEqualTo(404);
                });
        String gone = c.stream(PROCESS + "Connect", ConnectRequest.newBuilder().setProcess(pid(pid)).build(), Map.of())
                .end(WAIT);
        assertThat(gone).contains("\"not_found\"").contains("pid " + pid);
    }

    @ParameterizedTest
    @EnumSource(ConnectClient.Codec.class)
    void streamInputWritesItsEnvelopesInOrder(ConnectClient.Codec codec) {
        ConnectClient c = client(codec);
        ConnectClient.Stream s = c.stream(PROCESS + "Start", StartRequest.newBuilder()
                .setProcess(ProcessConfig.newBuilder().setCmd("cat")).build(), Map.of());
        int pid = startEvent(s);
        java.io.ByteArrayOutputStream body = new java.io.ByteArrayOutputStream();
        body.writeBytes(ConnectClient.envelope(0, c.encode(StreamInputRequest.newBuilder().setStart(
                StreamInputRequest.StartEvent.newBuilder().setProcess(pid(pid))).build())));
        for (String line : List.of("one\n", "two\n")) {
            body.writeBytes(ConnectClient.envelope(0, c.encode(StreamInputRequest.newBuilder().setData(
                    StreamInputRequest.DataEvent.newBuilder().setInput(ProcessInput.newBuilder()
                            .setStdin(ByteString.copyFromUtf8(line)))).build())));
        }
        ConnectClient.Stream in = c.streamRaw(PROCESS + "StreamInput", body.toByteArray(), Map.of());
        assertThat(in.next(StreamInputResponse.getDefaultInstance(), WAIT)).isNotNull();
        assertThat(in.end(WAIT)).isEqualTo("{}");
        StringBuilder seen = new StringBuilder();
        while (seen.length() < "one\ntwo\n".length()) {
            seen.append(nextData(s, true));
        }
        assertThat(seen.toString()).isEqualTo("one\ntwo\n");
        c.unary(PROCESS + "SendSignal", SendSignalRequest.newBuilder().setProcess(pid(pid)).setSignal(Signal.SIGNAL_SIGKILL)
                .build(), SendSignalResponse.getDefaultInstance());
        assertThat(drain(s, true).end().getStatus()).isEqualTo("signal: killed");
    }

    @ParameterizedTest
    @EnumSource(ConnectClient.Codec.class)
    void sendSignalKillsAndAnUnknownPidIsNotFound(ConnectClient.Codec codec) {
        ConnectClient c = client(codec);
        ConnectClient.Stream s = c.stream(PROCESS + "Start", bash("echo ready; sleep 300"), Map.of());
        int pid = startEvent(s);
        assertThat(nextData(s, true)).isEqualTo("ready\n");
        c.unary(PROCESS + "SendSignal", SendSignalRequest.newBuilder().setProcess(pid(pid)).setSignal(Signal.SIGNAL_SIGKILL)
                .build(), SendSignalResponse.getDefaultInstance());
        Run r = drain(s, true);
        assertThat(r.end().getExited()).isFalse();
        assertThat(r.end().getStatus()).isEqualTo("signal: killed");
        assertThat(r.end().getExitCode()).isEqualTo(-1);
        assertThatThrownBy(() -> c.unary(PROCESS + "SendSignal", SendSignalRequest.newBuilder().setProcess(pid(pid))
                .setSignal(Signal.SIGNAL_SIGKILL).build(), SendSignalResponse.getDefaultInstance()))
                .isInstanceOfSatisfying(CallFailed.class, e -> assertThat(e.code).isEqualTo("not_found"));

        ConnectClient.Stream term = c.stream(PROCESS + "Start", bash("echo ready; sleep 300"), Map.of());
        int pid2 = startEvent(term);
        assertThat(nextData(term, true)).isEqualTo("ready\n");
        c.unary(PROCESS + "SendSignal", SendSignalRequest.newBuilder().setProcess(pid(pid2)).setSignal(Signal.SIGNAL_SIGTERM)
                .build(), SendSignalResponse.getDefaultInstance());
        Run t = drain(term, true);
        assertThat(t.end().getExited()).isFalse();
        assertThat(t.end().getStatus()).isEqualTo("signal: terminated");
    }

    @ParameterizedTest
    @EnumSource(ConnectClient.Codec.class)
    void cwdEnvsAndUsers(ConnectClient.Codec codec) {
        ConnectClient c = client(codec);
        StartRequest req = StartRequest.newBuilder().setProcess(ProcessConfig.newBuilder().setCmd("/bin/sh")
                .addArgs("-c").addArgs("pwd; echo \"$FOO\"; id -un").setCwd("/tmp").putEnvs("FOO", "bar baz")).build();
        Run r = drain(c.stream(PROCESS + "Start", req, ConnectClient.user("user")), true);
        assertThat(r.stdout()).isEqualTo("/tmp\nbar baz\nsandbox\n");

        String missingCwd = c.stream(PROCESS + "Start", req.toBuilder().setProcess(req.getProcess().toBuilder()
                .setCwd("/no/such/dir")).build(), Map.of()).end(WAIT);
        assertThat(missingCwd).contains("invalid_argument").contains("/no/such/dir");
        assertThat(c.stream(PROCESS + "Start", req, ConnectClient.user("root")).end(WAIT))
                .contains("permission_denied").contains("root");
        assertThat(c.stream(PROCESS + "Start", req, ConnectClient.user("bob")).end(WAIT))
                .contains("invalid_argument").contains("bob");
        assertThatThrownBy(() -> c.unary(FS + "Stat", StatRequest.newBuilder().setPath("/tmp").build(),
                StatResponse.getDefaultInstance(), ConnectClient.user("root")))
                .isInstanceOfSatisfying(CallFailed.class, e -> assertThat(e.httpStatus).isEqualTo(403));
    }

    @ParameterizedTest
    @EnumSource(ConnectClient.Codec.class)
    void theCallsTimeoutKillsTheCommandAndKeepalivesFlow(ConnectClient.Codec codec) throws Exception {
        ConnectClient c = client(codec);
        long t0 = System.nanoTime();
        Run r = drain(c.stream(PROCESS + "Start", bash("sleep 60"), Map.of("connect-timeout-ms", "1500",
                "keepalive-ping-interval", "1")), true);
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(10));
        assertThat(r.endJson()).contains("deadline_exceeded");
        assertThat(r.keepalives()).isPositive();
        assertThat(c.unary(PROCESS + "List", ListRequest.getDefaultInstance(), ListResponse.getDefaultInstance())
                .getProcessesList()).isEmpty();
    }

    @ParameterizedTest
    @EnumSource(ConnectClient.Codec.class)
    void aClientThatGoesAwayLeavesTheProcessRunning(ConnectClient.Codec codec) throws Exception {
        ConnectClient c = client(codec);
        // a stream whose writes fail: the client disconnected after the start event
        Map<String, String> h = new HashMap<>(Map.of("content-type", c.streamType()));
        ConnectClient.Captured first = new ConnectClient.Captured();
        Envd.Response failing = new Envd.Response() {
            int frames;

            @Override
            public void start(int status, Map<String, String> headers) {
                first.start(status, headers);
            }

            @Override
            public java.io.OutputStream body() {
                return new java.io.OutputStream() {
                    @Override
                    public void write(int b) throws java.io.IOException {
                        write(new byte[]{(byte) b}, 0, 1);
                    }

                    @Override
                    public void write(byte[] b, int off, int len) throws java.io.IOException {
                        if (frames++ >= 2) {
                            throw new java.io.IOException("client went away");
                        }
                    }
                };
            }
        };
        assertThatThrownBy(() -> envd.serve(sb, PROCESS + "Start", h, new java.io.ByteArrayInputStream(
                ConnectClient.envelope(0, c.encode(bash("echo tick; sleep 300")))), failing))
                .isInstanceOf(java.io.IOException.class);
        ListResponse list = c.unary(PROCESS + "List", ListRequest.getDefaultInstance(), ListResponse.getDefaultInstance());
        assertThat(list.getProcessesList()).hasSize(1);
        int pid = list.getProcesses(0).getPid();
        c.unary(PROCESS + "SendSignal", SendSignalRequest.newBuilder().setProcess(pid(pid)).setSignal(Signal.SIGNAL_SIGKILL)
                .build(), SendSignalResponse.getDefaultInstance());
        long deadline = System.nanoTime() + Duration.ofSeconds(WAIT).toNanos();
        while (!c.unary(PROCESS + "List", ListRequest.getDefaultInstance(), ListResponse.getDefaultInstance())
                .getProcessesList().isEmpty()) {
            assertThat(System.nanoTime()).isLessThan(deadline);
            Thread.sleep(50);
        }
    }

    static StartRequest pty(int cols, int rows, String cmd, String... args) {
        return StartRequest.newBuilder().setProcess(ProcessConfig.newBuilder().setCmd(cmd).addAllArgs(List.of(args)))
                .setPty(PTY.newBuilder().setSize(PTY.Size.newBuilder().setCols(cols).setRows(rows))).build();
    }

    static SendInputRequest typed(int pid, String text) {
        return SendInputRequest.newBuilder().setProcess(pid(pid))
                .setInput(ProcessInput.newBuilder().setPty(ByteString.copyFromUtf8(text))).build();
    }

    static UpdateRequest resize(int pid, int cols, int rows) {
        return UpdateRequest.newBuilder().setProcess(pid(pid))
                .setPty(PTY.newBuilder().setSize(PTY.Size.newBuilder().setCols(cols).setRows(rows))).build();
    }

    /**
     * The output of a pty process as one stream of text: {@link #until} reads the process's stream until the text
     * not yet consumed matches, and consumes it up to the end of the match (the rest, such as the next prompt that
     * came in the same chunk, stays for the next call). Every data event must be {@code pty} data: a terminal has no
     * separate stdout and stderr.
     */
    static final class Term {
        final ConnectClient.Stream stream;
        final boolean start;
        final StringBuilder pending = new StringBuilder();

        Term(ConnectClient.Stream stream, boolean start) {
            this.stream = stream;
            this.start = start;
        }

        /** The text up to the end of the first match of {@code regex}, waiting at most WAIT seconds. */
        String until(String regex) {
            Matcher m = Pattern.compile(regex).matcher(pending);
            long deadline = System.nanoTime() + Duration.ofSeconds(WAIT).toNanos();
            while (!m.find(0)) {
                ProcessEvent.EndEvent end = next(deadline, regex);
                assertThat(end).as("the process ended (%s) before %s; the terminal showed %s", end, regex, pending).isNull();
                m = Pattern.compile(regex).matcher(pending);
            }
            String upTo = pending.substring(0, m.end());
            pending.delete(0, m.end());
            return upTo;
        }

        /** The end event, after the rest of the output. */
        ProcessEvent.EndEvent end() {
            long deadline = System.nanoTime() + Duration.ofSeconds(WAIT).toNanos();
            while (true) {
                ProcessEvent.EndEvent end = next(deadline, "the end");
                if (end != null) {
                    assertThat(stream.end(WAIT)).isEqualTo("{}");
                    return end;
                }
            }
        }

        /** One event: output is appended; the end event is returned; null otherwise. */
        private ProcessEvent.EndEvent next(long deadline, String what) {
            // keepalives keep a stream busy, so each frame's own wait is not enough
            assertThat(System.nanoTime() - deadline).as("waited %d s for %s; the terminal showed %s", WAIT, what, pending)
                    .isNegative();
            ConnectClient.Frame f = stream.frame(WAIT);
            assertThat(f.end()).as("stream ended (%s) before %s; the terminal showed %s", f.text(), what, pending).isFalse();
            ProcessEvent ev = start ? stream.next0(f, StartResponse.getDefaultInstance()).getEvent()
                    : stream.next0(f, ConnectResponse.getDefaultInstance()).getEvent();
            switch (ev.getEventCase()) {
                case DATA -> {
                    assertThat(ev.getData().getOutputCase()).isEqualTo(ProcessEvent.DataEvent.OutputCase.PTY);
                    pending.append(ev.getData().getPty().toStringUtf8());
                }
                case END -> {
                    return ev.getEnd();
                }
                default -> assertThat(ev.getEventCase()).isEqualTo(ProcessEvent.EventCase.KEEPALIVE);
            }
            return null;
        }
    }

    /** The prompt of an interactive shell: type only after it, as a person would (typed-ahead Ctrl-D may be lost). */
    static final String PROMPT = "\\$ ";

    @ParameterizedTest
    @EnumSource(ConnectClient.Codec.class)
    void aPtyIsATerminalThatTakesInputAndResizes(ConnectClient.Codec codec) {
        ConnectClient c = client(codec);
        ConnectClient.Stream s = c.stream(PROCESS + "Start", pty(80, 24, "/bin/bash", "-i", "-l"),
                Map.of("keepalive-ping-interval", "50"));
        int pid = startEvent(s);
        Term t = new Term(s, true);
        assertThat(c.unary(PROCESS + "List", ListRequest.getDefaultInstance(), ListResponse.getDefaultInstance())
                .getProcessesList()).singleElement().satisfies(p -> {
                    assertThat(p.getPid()).isEqualTo(pid);
                    assertThat(p.getConfig().getArgsList()).containsExactly("-i", "-l");
                });
        t.until(PROMPT);

        c.unary(PROCESS + "SendInput", typed(pid, "echo T=$TERM; tty; stty size\n"), SendInputResponse.getDefaultInstance());
        String out = t.until("T=xterm-256color\r\n/dev/pts/\\d+\r\n24 80\r\n");
        assertThat(out).contains("echo T=$TERM"); // the terminal echoes what is typed
        t.until(PROMPT);

        c.unary(PROCESS + "Update", resize(pid, 132, 50), io.paddock.envd.internal.proto.ProcessProto.UpdateResponse
                .getDefaultInstance());
        c.unary(PROCESS + "SendInput", typed(pid, "stty size\n"), SendInputResponse.getDefaultInstance());
        t.until("50 132\r\n");
        t.until(PROMPT);

        // a terminal takes pty input only; end of file is Ctrl-D typed, not a closed stdin; sizes stay in range
        assertThatThrownBy(() -> c.unary(PROCESS + "SendInput", input(pid, "x"), SendInputResponse.getDefaultInstance()))
                .isInstanceOfSatisfying(CallFailed.class, e -> {
                    assertThat(e.code).isEqualTo("failed_precondition");
                    assertThat(e).hasMessageContaining("pty");
                });
        assertThatThrownBy(() -> c.unary(PROCESS + "CloseStdin", CloseStdinRequest.newBuilder().setProcess(pid(pid)).build(),
                CloseStdinResponse.getDefaultInstance()))
                .isInstanceOfSatisfying(CallFailed.class, e -> {
                    assertThat(e.code).isEqualTo("failed_precondition");
                    assertThat(e).hasMessageContaining("Ctrl+D");
                });
        for (int[] bad : new int[][]{{0, 24}, {80, 0}, {5000, 24}}) {
            assertThatThrownBy(() -> c.unary(PROCESS + "Update", resize(pid, bad[0], bad[1]),
                    io.paddock.envd.internal.proto.ProcessProto.UpdateResponse.getDefaultInstance()))
                    .isInstanceOfSatisfying(CallFailed.class, e -> assertThat(e.code).isEqualTo("invalid_argument"));
        }

        c.unary(PROCESS + "SendInput", typed(pid, "exit 7\n"), SendInputResponse.getDefaultInstance());
        ProcessEvent.EndEvent end = t.end();
        assertThat(end.getExitCode()).isEqualTo(7);
        assertThat(end.getExited()).isTrue();
        assertThat(end.getStatus()).isEqualTo("exit status 7");

        // Ctrl-D at the prompt ends a shell; a bad size at the start is refused before anything runs
        ConnectClient.Stream eof = c.stream(PROCESS + "Start", pty(40, 10, "/bin/bash", "-i"), Map.of());
        int eofPid = startEvent(eof);
        Term e = new Term(eof, true);
        e.until(PROMPT);
        c.unary(PROCESS + "SendInput", typed(eofPid, "\u0004"), SendInputResponse.getDefaultInstance());
        assertThat(e.end().getExitCode()).isZero();
        assertThat(c.stream(PROCESS + "Start", pty(0, 24, "/bin/bash"), Map.of()).end(WAIT))
                .contains("invalid_argument").contains("cols");
    }

    @ParameterizedTest
    @EnumSource(ConnectClient.Codec.class)
    void aKilledPtyEndsKilledAndItsStdinFlagIsIgnored(ConnectClient.Codec codec) {
        ConnectClient c = client(codec);
        // stdin false would close a pipe; a terminal stays the shell's input (closing it would type Ctrl-D)
        ConnectClient.Stream s = c.stream(PROCESS + "Start", pty(80, 24, "/bin/bash", "-i").toBuilder().setStdin(false)
                .build(), Map.of());
        int pid = startEvent(s);
        Term t = new Term(s, true);
        t.until(PROMPT);
        c.unary(PROCESS + "SendInput", typed(pid, "echo al''ive\n"), SendInputResponse.getDefaultInstance());
        t.until("alive\r\n");

        // a second stream on it sees the same terminal output
        ConnectClient.Stream attached = c.stream(PROCESS + "Connect", ConnectRequest.newBuilder().setProcess(pid(pid))
                .build(), Map.of());
        assertThat(attached.next(ConnectResponse.getDefaultInstance(), WAIT).getEvent().getStart().getPid()).isEqualTo(pid);
        Term a = new Term(attached, false);
        c.unary(PROCESS + "SendInput", typed(pid, "echo ag''ain\n"), SendInputResponse.getDefaultInstance());
        t.until("again\r\n");
        a.until("again\r\n");

        c.unary(PROCESS + "SendSignal", SendSignalRequest.newBuilder().setProcess(pid(pid)).setSignal(Signal.SIGNAL_SIGKILL)
                .build(), SendSignalResponse.getDefaultInstance());
        ProcessEvent.EndEvent end = t.end();
        assertThat(end.getExited()).isFalse();
        assertThat(end.getExitCode()).isEqualTo(-1);
        assertThat(end.getStatus()).isEqualTo("signal: killed");
        assertThat(a.end().getStatus()).isEqualTo("signal: killed");
    }

    @ParameterizedTest
    @EnumSource(ConnectClient.Codec.class)
    void aProcessWithoutAPtyRefusesPtyInputAndResizing(ConnectClient.Codec codec) {
        ConnectClient c = client(codec);
        ConnectClient.Stream s = c.stream(PROCESS + "Start", StartRequest.newBuilder()
                .setProcess(ProcessConfig.newBuilder().setCmd("cat")).build(), Map.of());
        int pid = startEvent(s);
        assertThatThrownBy(() -> c.unary(PROCESS + "Update", resize(pid, 100, 30),
                io.paddock.envd.internal.proto.ProcessProto.UpdateResponse.getDefaultInstance()))
                .isInstanceOfSatisfying(CallFailed.class, e -> {
                    assertThat(e.code).isEqualTo("failed_precondition");
                    assertThat(e.httpStatus).isEqualTo(400);
                    assertThat(e).hasMessageContaining("tty not assigned");
                });
        assertThatThrownBy(() -> c.unary(PROCESS + "SendInput", typed(pid, "x\n"), SendInputResponse.getDefaultInstance()))
                .isInstanceOfSatisfying(CallFailed.class, e -> {
                    assertThat(e.code).isEqualTo("failed_precondition");
                    assertThat(e).hasMessageContaining("tty not assigned");
                });
        // an Update without a pty changes nothing, as envd's; an unknown pid is not_found
        c.unary(PROCESS + "Update", UpdateRequest.newBuilder().setProcess(pid(pid)).build(),
                io.paddock.envd.internal.proto.ProcessProto.UpdateResponse.getDefaultInstance());
        assertThatThrownBy(() -> c.unary(PROCESS + "Update", resize(pid + 1000, 100, 30),
                io.paddock.envd.internal.proto.ProcessProto.UpdateResponse.getDefaultInstance()))
                .isInstanceOfSatisfying(CallFailed.class, e -> assertThat(e.code).isEqualTo("not_found"));
        c.unary(PROCESS + "SendInput", input(pid, "still a pipe\n"), SendInputResponse.getDefaultInstance());
        assertThat(nextData(s, true)).isEqualTo("still a pipe\n");
        c.unary(PROCESS + "CloseStdin", CloseStdinRequest.newBuilder().setProcess(pid(pid)).build(),
                CloseStdinResponse.getDefaultInstance());
        assertThat(drain(s, true).end().getExitCode()).isZero();
    }

    // ------------------------------------------------------------------ filesystem

    @ParameterizedTest
    @EnumSource(ConnectClient.Codec.class)
    void statMakeDirListMoveRemove(ConnectClient.Codec codec) {
        ConnectClient c = client(codec);
        String root = "/tmp/fs-" + codec.name().toLowerCase();
        MakeDirResponse made = c.unary(FS + "MakeDir", MakeDirRequest.newBuilder().setPath(root + "/a/b").build(),
                MakeDirResponse.getDefaultInstance());
        assertThat(made.getEntry().getType()).isEqualTo(FileType.FILE_TYPE_DIRECTORY);
        assertThat(made.getEntry().getName()).isEqualTo("b");
        assertThat(made.getEntry().getPath()).isEqualTo(root + "/a/b");
        assertThatThrownBy(() -> c.unary(FS + "MakeDir", MakeDirRequest.newBuilder().setPath(root + "/a/b").build(),
                MakeDirResponse.getDefaultInstance()))
                .isInstanceOfSatisfying(CallFailed.class, e -> {
                    assertThat(e.code).isEqualTo("already_exists");
                    assertThat(e.httpStatus).isEqualTo(409);
                });

        sb.files().writeString(root + "/a/f.txt", "hello");
        EntryInfo f = c.unary(FS + "Stat", StatRequest.newBuilder().setPath(root + "/a/./b/../f.txt").build(),
                StatResponse.getDefaultInstance()).getEntry();
        assertThat(f.getType()).isEqualTo(FileType.FILE_TYPE_FILE);
        assertThat(f.getSize()).isEqualTo(5);
        assertThat(f.getName()).isEqualTo("f.txt");
        assertThat(f.getPath()).isEqualTo(root + "/a/f.txt");
        assertThat(f.getPermissions()).matches("-[r-][w-][x-][r-][w-][x-][r-][w-][x-]");
        assertThat(f.getModifiedTime().getSeconds()).isPositive();

        assertThatThrownBy(() -> c.unary(FS + "Stat", StatRequest.newBuilder().setPath(root + "/missing").build(),
                StatResponse.getDefaultInstance()))
                .isInstanceOfSatisfying(CallFailed.class, e -> {
                    assertThat(e.code).isEqualTo("not_found");
                    assertThat(e.httpStatus).isEqualTo(404);
                });

        List<String> depth1 = names(c.unary(FS + "ListDir", ListDirRequest.newBuilder().setPath(root).setDepth(1).build(),
                ListDirResponse.getDefaultInstance()));
        assertThat(depth1).containsExactly(root + "/a");
        List<String> depth3 = names(c.unary(FS + "ListDir", ListDirRequest.newBuilder().setPath(root).setDepth(3).build(),
                ListDirResponse.getDefaultInstance()));
        assertThat(depth3).containsExactlyInAnyOrder(root + "/a", root + "/a/b", root + "/a/f.txt");
        assertThatThrownBy(() -> c.unary(FS + "ListDir", ListDirRequest.newBuilder().setPath(root + "/a/f.txt").build(),
                ListDirResponse.getDefaultInstance()))
                .isInstanceOfSatisfying(CallFailed.class, e -> assertThat(e.code).isEqualTo("invalid_argument"));
        assertThatThrownBy(() -> c.unary(FS + "ListDir", ListDirRequest.newBuilder().setPath(root + "/nope").build(),
                ListDirResponse.getDefaultInstance()))
                .isInstanceOfSatisfying(CallFailed.class, e -> assertThat(e.code).isEqualTo("not_found"));

        EntryInfo moved = c.unary(FS + "Move", MoveRequest.newBuilder().setSource(root + "/a/f.txt")
                .setDestination(root + "/g.txt").build(), MoveResponse.getDefaultInstance()).getEntry();
        assertThat(moved.getPath()).isEqualTo(root + "/g.txt");
        assertThat(moved.getSize()).isEqualTo(5);
        assertThat(sb.files().readString(root + "/g.txt")).isEqualTo("hello");
        assertThatThrownBy(() -> c.unary(FS + "Move", MoveRequest.newBuilder().setSource(root + "/a/f.txt")
                .setDestination(root + "/h.txt").build(), MoveResponse.getDefaultInstance()))
                .isInstanceOfSatisfying(CallFailed.class, e -> assertThat(e.code).isEqualTo("not_found"));

        c.unary(FS + "Remove", RemoveRequest.newBuilder().setPath(root + "/a").build(), RemoveResponse.getDefaultInstance());
        assertThat(sb.files().exists(root + "/a")).isFalse();
        c.unary(FS + "Remove", RemoveRequest.newBuilder().setPath(root + "/a").build(), RemoveResponse.getDefaultInstance());
        c.unary(FS + "Remove", RemoveRequest.newBuilder().setPath(root).build(), RemoveResponse.getDefaultInstance());
        assertThat(sb.files().exists(root)).isFalse();
    }

    private static List<String> names(ListDirResponse r) {
        List<String> out = new ArrayList<>();
        for (EntryInfo e : r.getEntriesList()) {
            out.add(e.getPath());
        }
        return out;
    }

    @ParameterizedTest
    @EnumSource(ConnectClient.Codec.class)
    void watchDirStreamsChangesAndWatchersPoll(ConnectClient.Codec codec) throws Exception {
        ConnectClient c = client(codec);
        String dir = "/tmp/watch-" + codec.name().toLowerCase();
        sb.files().mkdir(dir);
        ConnectClient.Stream w = c.stream(FS + "WatchDir", WatchDirRequest.newBuilder().setPath(dir).setRecursive(true)
                .setIncludeEntry(true).build(), Map.of("connect-timeout-ms", "20000"));
        assertThat(w.next(WatchDirResponse.getDefaultInstance(), WAIT).hasStart()).isTrue();
        String watcher = c.unary(FS + "CreateWatcher", CreateWatcherRequest.newBuilder().setPath(dir).build(),
                CreateWatcherResponse.getDefaultInstance()).getWatcherId();

        sb.files().writeString(dir + "/new.txt", "x");
        FilesystemEvent created = nextFsEvent(w);
        assertThat(created.getName()).isEqualTo("new.txt");
        assertThat(created.getType()).isEqualTo(EventType.EVENT_TYPE_CREATE);
        assertThat(created.getEntry().getPath()).isEqualTo(dir + "/new.txt");

        sb.files().mkdir(dir + "/sub");
        sb.files().writeString(dir + "/sub/deep.txt", "y");
        List<String> seen = new ArrayList<>();
        while (seen.size() < 2) {
            FilesystemEvent e = nextFsEvent(w);
            assertThat(e.getType()).isEqualTo(EventType.EVENT_TYPE_CREATE);
            seen.add(e.getName());
        }
        assertThat(seen).containsExactlyInAnyOrder("sub", "sub/deep.txt");

        sb.files().remove(dir + "/new.txt");
        FilesystemEvent removed = nextFsEvent(w);
        assertThat(removed.getName()).isEqualTo("new.txt");
        assertThat(removed.getType()).isEqualTo(EventType.EVENT_TYPE_REMOVE);
        assertThat(removed.hasEntry()).isFalse();

        GetWatcherEventsResponse polled = c.unary(FS + "GetWatcherEvents", GetWatcherEventsRequest.newBuilder()
                .setWatcherId(watcher).build(), GetWatcherEventsResponse.getDefaultInstance());
        assertThat(polled.getEventsList()).extracting(FilesystemEvent::getName, FilesystemEvent::getType)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("sub", EventType.EVENT_TYPE_CREATE));
        assertThat(c.unary(FS + "GetWatcherEvents", GetWatcherEventsRequest.newBuilder().setWatcherId(watcher).build(),
                GetWatcherEventsResponse.getDefaultInstance()).getEventsList()).isEmpty();
        c.unary(FS + "RemoveWatcher", RemoveWatcherRequest.newBuilder().setWatcherId(watcher).build(),
                RemoveWatcherResponse.getDefaultInstance());
        assertThatThrownBy(() -> c.unary(FS + "GetWatcherEvents", GetWatcherEventsRequest.newBuilder().setWatcherId(watcher)
                .build(), GetWatcherEventsResponse.getDefaultInstance()))
                .isInstanceOfSatisfying(CallFailed.class, e -> assertThat(e.code).isEqualTo("not_found"));

        sb.files().removeRecursive(dir);
        String end = drainWatch(w);
        assertThat(end).contains("not_found");
        w.awaitDone(WAIT);

        assertThat(c.stream(FS + "WatchDir", WatchDirRequest.newBuilder().setPath(dir).build(), Map.of()).end(WAIT))
                .contains("not_found");
    }

    private static FilesystemEvent nextFsEvent(ConnectClient.Stream w) {
        while (true) {
            WatchDirResponse r = w.next(WatchDirResponse.getDefaultInstance(), WAIT);
            if (r.hasFilesystem()) {
                return r.getFilesystem();
            }
            assertThat(r.hasKeepalive()).isTrue();
        }
    }

    private static String drainWatch(ConnectClient.Stream w) {
        while (true) {
            ConnectClient.Frame f = w.frame(WAIT);
            if (f.end()) {
                return f.text();
            }
        }
    }

    // ------------------------------------------------------------------ bad input

    @ParameterizedTest
    @EnumSource(ConnectClient.Codec.class)
    void badInputIsInvalidArgumentAndUnknownMethodsAreUnimplemented(ConnectClient.Codec codec) throws Exception {
        ConnectClient c = client(codec);
        Map<String, String> unary = Map.of("content-type", c.unaryType());
        byte[] garbage = codec == ConnectClient.Codec.JSON ? "{\"path\": ".getBytes(StandardCharsets.UTF_8)
                : new byte[]{(byte) 0x0A, (byte) 0xFF, 0x01};
        ConnectClient.Raw bad = c.raw(FS + "Stat", unary, garbage);
        assertThat(bad.status()).isEqualTo(400);
        assertThat(bad.text()).contains("\"invalid_argument\"");

        ConnectClient.Raw unknown = c.raw(FS + "Chmod", unary, new byte[0]);
        assertThat(unknown.status()).isEqualTo(501);
        assertThat(unknown.text()).contains("\"unimplemented\"").contains("/filesystem.Filesystem/Chmod");
        ConnectClient.Raw service = c.raw("/envd.Other/Do", unary, new byte[0]);
        assertThat(service.text()).contains("unimplemented").contains("/envd.Other/Do");

        ConnectClient.Raw media = c.raw(FS + "Stat", Map.of("content-type", "text/plain"), new byte[0]);
        assertThat(media.status()).isEqualTo(415);

        // streaming: a truncated envelope, a message with trailing bytes, garbage inside a good envelope
        byte[] good = ConnectClient.envelope(0, c.encode(bash("true")));
        assertThat(c.streamRaw(PROCESS + "Start", java.util.Arrays.copyOf(good, good.length - 1), Map.of()).end(WAIT))
                .contains("invalid_argument").contains("truncated");
        assertThat(c.streamRaw(PROCESS + "Start", new byte[]{0, 0}, Map.of()).end(WAIT)).contains("invalid_argument");
        assertThat(c.streamRaw(PROCESS + "Start", ConnectClient.envelope(0, garbage), Map.of()).end(WAIT))
                .contains("invalid_argument");
        assertThat(c.streamRaw(PROCESS + "Start", ConnectClient.envelope(2, new byte[0]), Map.of()).end(WAIT))
                .contains("invalid_argument");
        assertThat(c.streamRaw(PROCESS + "Start", new byte[0], Map.of()).end(WAIT)).contains("invalid_argument");
        assertThat(c.streamRaw(PROCESS + "Nope", good, Map.of()).end(WAIT)).contains("unimplemented");
        // a unary method called as a stream, and the other way round
        assertThat(c.streamRaw(FS + "Stat", good, Map.of()).end(WAIT)).contains("invalid_argument");
        assertThat(c.raw(PROCESS + "Start", unary, c.encode(bash("true"))).status()).isEqualTo(400);
        // an empty Start command
        assertThat(c.stream(PROCESS + "Start", StartRequest.getDefaultInstance(), Map.of()).end(WAIT))
                .contains("invalid_argument");
    }

    @ParameterizedTest
    @EnumSource(ConnectClient.Codec.class)
    void aDestroyedSandboxEndsItsStreamsAndLeavesNoProcesses(ConnectClient.Codec codec) throws Exception {
        Sandbox other = create(runtime());
        try {
            ConnectClient c = new ConnectClient(envd, other, codec);
            ConnectClient.Stream s = c.stream(PROCESS + "Start", bash("echo up; sleep 300"), Map.of());
            startEvent(s);
            assertThat(nextData(s, true)).isEqualTo("up\n");
            other.destroy();
            Run r = drain(s, true);
            assertThat(r.end()).isNull();
            assertThat(r.endJson()).contains("\"error\"");
            s.awaitDone(WAIT);
            assertThat(c.unary(PROCESS + "List", ListRequest.getDefaultInstance(), ListResponse.getDefaultInstance())
                    .getProcessesList()).isEmpty();
        } finally {
            other.destroy();
        }
    }
}
