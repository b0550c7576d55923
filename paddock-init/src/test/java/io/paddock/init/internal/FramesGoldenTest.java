package io.paddock.init.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

import io.paddock.TerminalSize;
import org.junit.jupiter.api.Test;

/** The Java codec against the golden vectors shared with the C test (src/test/resources/golden). */
class FramesGoldenTest {
    private static final byte[] NONCE = new byte[16];

    static {
        for (int i = 0; i < 16; i++) {
            NONCE[i] = (byte) i;
        }
    }

    static List<byte[]> frames(String name) {
        try (InputStream in = FramesGoldenTest.class.getResourceAsStream("/golden/" + name + ".hex")) {
            assertThat(in).as(name).isNotNull();
            List<byte[]> out = new ArrayList<>();
            for (String line : new String(in.readAllBytes(), StandardCharsets.US_ASCII).split("\n")) {
                if (!line.isBlank()) {
                    out.add(HexFormat.of().parseHex(line.trim()));
                }
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static byte[] all(String name) {
        List<byte[]> f = frames(name);
        int n = f.stream().mapToInt(b -> b.length).sum();
        ByteBuffer b = ByteBuffer.allocate(n);
        f.forEach(b::put);
        return b.array();
    }

    /** The single frame's payload, checking type and channel. */
    static ByteBuffer payload(String name, int type, int channel) {
        byte[] f = frames(name).get(0);
        ByteBuffer b = ByteBuffer.wrap(f);
        assertThat(b.getInt()).isEqualTo(f.length - 4);
        assertThat(b.get() & 0xFF).isEqualTo(type);
        assertThat(b.getInt()).isEqualTo(channel);
        return b.slice();
    }

    @Test
    void encodesEveryEngineMessage() {
        assertThat(Frames.hello(NONCE, true)).isEqualTo(all("hello"));
        SpawnRequest spawn = SpawnRequest.builder("sh", "-c", "echo hi")
                .env(List.of("PATH=/usr/bin:/bin", "HOME=/workspace")).cwd("/workspace").user(1000, 1000)
                .timeout(Duration.ofSeconds(5)).stdoutCap(Long.MAX_VALUE).stderrCap(1048576).stdinPipe(true)
                .windows(262144, 65536).rlimit(7, 1024, 2048).build();
        assertThat(Frames.spawn(7, spawn)).isEqualTo(all("spawn"));
        SpawnRequest big = SpawnRequest.builder("true").env(List.of("X=" + "a".repeat(5000))).cwd("/").build();
        assertThat(frames("spawn_fragmented")).hasSize(2);
        assertThat(Frames.spawn(9, big)).isEqualTo(all("spawn_fragmented"));
        SpawnRequest pty = SpawnRequest.builder("bash", "-i").env(List.of("TERM=xterm-256color")).cwd("/workspace")
                .user(1000, 1000).stdinPipe(true).terminal(new TerminalSize(80, 24)).build();
        assertThat(Frames.spawn(11, pty)).isEqualTo(all("spawn_pty"));
        assertThat(Frames.resize(11, new TerminalSize(132, 50))).isEqualTo(all("resize"));
        byte[] hello = "hello\n".getBytes(StandardCharsets.US_ASCII);
        assertThat(Frames.stdin(7, hello, 0, hello.length)).isEqualTo(all("stdin"));
        assertThat(Frames.stdinClose(7)).isEqualTo(all("stdin_close"));
        assertThat(Frames.signal(7, 15, 0)).isEqualTo(all("signal"));
        assertThat(Frames.signal(7, 9, 1)).isEqualTo(all("kill"));
        assertThat(Frames.window(7, 1, 65536)).isEqualTo(all("window"));
        assertThat(Frames.deadline(123456789000L)).isEqualTo(all("deadline"));
        assertThat(Frames.deadlineIn(30_000_000_000L)).isEqualTo(all("deadline_in"));
        assertThat(Frames.ping("12345678".getBytes(StandardCharsets.US_ASCII))).isEqualTo(all("ping"));
        assertThat(Frames.release(7)).isEqualTo(all("release"));
        assertThat(Frames.shutdown()).isEqualTo(all("shutdown"));
        assertThat(Frames.fRead(100, b("/workspace/a.txt"), 0, Frames.U64_NONE, 262144)).isEqualTo(all("f_read"));
        assertThat(Frames.fWriteOpen(101, b("out/b.bin"), 0644, 3)).isEqualTo(all("f_write_open"));
        assertThat(Frames.fWriteData(101, new byte[] {1, 2, 3}, 0, 3)).isEqualTo(all("f_write_data"));
        assertThat(Frames.fWriteEnd(101)).isEqualTo(all("f_write_end"));
        assertThat(Frames.fWriteAbort(101)).isEqualTo(all("f_write_abort"));
        assertThat(Frames.fList(102, b("/workspace"))).isEqualTo(all("f_list"));
        assertThat(Frames.fStat(103, b("x"))).isEqualTo(all("f_stat"));
        assertThat(Frames.fMkdir(104, b("/workspace/d"), 0755, true)).isEqualTo(all("f_mkdir"));
        assertThat(Frames.fRemove(105, b("/workspace/d"), true)).isEqualTo(all("f_remove"));
        assertThat(Frames.fMove(106, b("/a"), b("/b"))).isEqualTo(all("f_move"));
    }

    @Test
    void fragmentsLargeMessagesIntoAtomicFrames() {
        byte[] data = new byte[10_000];
        byte[] enc = Frames.stdin(3, data, 0, data.length);
        ByteBuffer b = ByteBuffer.wrap(enc);
        int frames = 0;
        int payload = 0;
        while (b.hasRemaining()) {
            int l = b.getInt();
            assertThat(l + 4).isLessThanOrEqualTo(4096);
            int type = b.get() & 0xFF;
            assertThat(type & 0x7F).isEqualTo(Frames.STDIN);
            b.getInt();
            b.position(b.position() + l - 5);
            payload += l - 5;
            frames++;
            assertThat((type & Frames.MORE) != 0).isEqualTo(b.hasRemaining());
        }
        assertThat(frames).isEqualTo(3);
        assertThat(payload).isEqualTo(10_000);
        assertThat(Frames.stdin(3, data, 0, 0)).hasSize(9);
    }

    @Test
    void decodesEveryInitMessage() {
        Frames.HelloAck ack = Frames.decodeHelloAck(payload("hello_ack", Frames.HELLO_ACK, 0));
        assertThat(ack.magic()).isEqualTo(Frames.MAGIC);
        assertThat(ack.nonce()).isEqualTo(NONCE);
        assertThat(ack.version()).isEqualTo(1);
        assertThat(ack.buildId()).isEqualTo("test");

        Frames.Spawned sp = Frames.decodeSpawned(payload("spawned", Frames.SPAWNED, 7));
        assertThat(sp.pid()).isEqualTo(42);
        assertThat(sp.stdinWindow()).isEqualTo(262144);

        ByteBuffer data = payload("data", Frames.DATA, 7);
        assertThat(Frames.stream(data)).isEqualTo(2);
        data.position(data.position() + 1);
        assertThat(StandardCharsets.US_ASCII.decode(data).toString()).isEqualTo("err\n");

        ExitReport x = Frames.decodeExit(payload("exit", Frames.EXIT, 7));
        assertThat(x).isEqualTo(new ExitReport(ExitReport.Kind.SIGNALED, 9, true, false, false, true,
                Duration.ofMillis(1500), 1000, 2000, 4096, ""));
        ExitReport f = Frames.decodeExit(payload("exit_failed", Frames.EXIT, 8));
        assertThat(f.kind()).isEqualTo(ExitReport.Kind.FAILED_TO_START);
        assertThat(f.code()).isEqualTo(2);
        assertThat(f.message()).isEqualTo("No such file or directory");
        assertThat(ExitClassifier.DEFAULT.classify(f).exitCode()).isEqualTo(127);
        assertThat(ExitClassifier.DEFAULT.classify(x).exitCode()).isEqualTo(124);

        Frames.Window w = Frames.decodeWindow(payload("window_ack", Frames.WINDOW_ACK, 7));
        assertThat(w).isEqualTo(new Frames.Window(0, 4096));
        ByteBuffer pong = payload("pong", Frames.PONG, 0);
        assertThat(StandardCharsets.US_ASCII.decode(pong).toString()).isEqualTo("12345678");
        assertThat(Frames.decodeLog(payload("log", Frames.LOG, 0))).isEqualTo(new Frames.Log(2, "hello"));

        Frames.WireFileInfo info = Frames.decodeInfo(payload("f_info", Frames.F_INFO, 100));
        assertThat(info.type()).isEqualTo(3);
        assertThat(info.mode()).isEqualTo(0777);
        assertThat(info.size()).isEqualTo(11);
        assertThat(info.mtimeNanos()).isEqualTo(1700000000123456789L);
        assertThat(info.nameString()).isEqualTo("link");
        assertThat(info.linkString()).isEqualTo("/etc/passwd");
        io.paddock.FileInfo fi = InitFiles.toFileInfo("/w/link", info);
        assertThat(fi.symlinkTarget()).contains("/etc/passwd");
        assertThat(fi.modifiedAt().getNano()).isEqualTo(123456789);

        assertThat(payload("f_data", Frames.F_DATA, 100).remaining()).isEqualTo(3);
        assertThat(payload("f_end", Frames.F_END, 100).remaining()).isZero();
        assertThat(Frames.decodeOk(payload("f_ok", Frames.F_OK, 101))).isEqualTo(262144);
        assertThat(Frames.decodeFileError(payload("f_error", Frames.F_ERROR, 103)))
                .isEqualTo(new Frames.FileError(2, "No such file or directory"));
        List<Frames.WireFileInfo> entries = Frames.decodeEntries(payload("f_entries", Frames.F_ENTRIES, 102));
        assertThat(entries).hasSize(2);
        assertThat(entries.get(0).nameString()).isEqualTo("a");
        assertThat(entries.get(0).mode()).isEqualTo(0644);
        assertThat(entries.get(1).type()).isEqualTo(2);
        assertThat(entries.get(1).mtimeNanos()).isEqualTo(-1);
        assertThat(InitFiles.toFileInfo("/d", entries.get(1)).modifiedAt().getEpochSecond()).isEqualTo(-1);
    }

    @Test
    void rejectsMalformedPayloads() {
        ByteBuffer exit = payload("exit", Frames.EXIT, 7);
        for (int cut = 0; cut < exit.remaining(); cut++) {
            ByteBuffer t = exit.duplicate().limit(cut);
            assertThatThrownBy(() -> Frames.decodeExit(t)).isInstanceOf(Frames.MalformedException.class);
        }
        ByteBuffer lying = ByteBuffer.allocate(8).putInt(Integer.MAX_VALUE).putInt(0).flip();
        assertThatThrownBy(() -> Frames.decodeEntries(lying)).isInstanceOf(Frames.MalformedException.class);
        ByteBuffer longStr = ByteBuffer.allocate(6).put((byte) 1).putInt(1000).put((byte) 0).flip();
        assertThatThrownBy(() -> Frames.decodeLog(longStr)).isInstanceOf(Frames.MalformedException.class);
        assertThatThrownBy(() -> Frames.window(1, 1, 0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Frames.window(1, 1, 1L << 32)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void mapsErrnosAsTheProtocolSays() {
        assertThat(InitFiles.codeFor(2)).isEqualTo(io.paddock.ErrorCode.NOT_FOUND);
        assertThat(InitFiles.codeFor(17)).isEqualTo(io.paddock.ErrorCode.ALREADY_EXISTS);
        assertThat(InitFiles.codeFor(13)).isEqualTo(io.paddock.ErrorCode.PERMISSION_DENIED);
        assertThat(InitFiles.codeFor(1)).isEqualTo(io.paddock.ErrorCode.PERMISSION_DENIED);
        assertThat(InitFiles.codeFor(28)).isEqualTo(io.paddock.ErrorCode.RESOURCE_EXHAUSTED);
        assertThat(InitFiles.codeFor(122)).isEqualTo(io.paddock.ErrorCode.RESOURCE_EXHAUSTED);
        assertThat(InitFiles.codeFor(27)).isEqualTo(io.paddock.ErrorCode.RESOURCE_EXHAUSTED);
        for (int e : new int[] {39, 21, 20, 22}) {
            assertThat(InitFiles.codeFor(e)).isEqualTo(io.paddock.ErrorCode.FAILED_PRECONDITION);
        }
        assertThat(InitFiles.codeFor(5)).isEqualTo(io.paddock.ErrorCode.INTERNAL);
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
