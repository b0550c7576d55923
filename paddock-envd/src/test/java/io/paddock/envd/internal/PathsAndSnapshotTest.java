package io.paddock.envd.internal;

import io.paddock.FileInfo;
import io.paddock.FileType;
import io.paddock.envd.internal.proto.FilesystemProto.EventType;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Base64;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The pure parts: path cleaning, snapshot differences, envelopes, error JSON and the user header. */
class PathsAndSnapshotTest {
    @Test
    void pathsAreCleanedLikeGo() {
        assertThat(Paths.clean("/a/./b/../c/", "p")).isEqualTo("/a/c");
        assertThat(Paths.clean("/../..", "p")).isEqualTo("/");
        assertThat(Paths.clean("x//y", "p")).isEqualTo("x/y");
        assertThat(Paths.clean("~/notes/a.txt", "p")).isEqualTo("notes/a.txt");
        assertThatThrownBy(() -> Paths.clean("../etc", "path")).hasMessageContaining("path");
        assertThatThrownBy(() -> Paths.clean("", "path")).hasMessageContaining("empty");
        assertThatThrownBy(() -> Paths.clean("~", "path")).isInstanceOf(ConnectException.class);
    }

    private static FileInfo f(String name, FileType type, long size, long mtime, int mode) {
        return new FileInfo(name, name, type, size, mode, Instant.ofEpochSecond(mtime), Optional.empty());
    }

    @Test
    void snapshotsDifferAsEvents() {
        DirSnapshot before = new DirSnapshot(Map.of(
                "a", f("a", FileType.FILE, 1, 10, 0644),
                "b", f("b", FileType.FILE, 1, 10, 0644),
                "c", f("c", FileType.FILE, 1, 10, 0644),
                "d", f("d", FileType.DIRECTORY, 0, 10, 0755)));
        DirSnapshot after = new DirSnapshot(Map.of(
                "a", f("a", FileType.FILE, 2, 11, 0644),
                "c", f("c", FileType.FILE, 1, 10, 0600),
                "d", f("d", FileType.DIRECTORY, 0, 12, 0755),
                "e", f("e", FileType.FILE, 0, 12, 0644)));
        assertThat(after.since(before)).extracting(DirSnapshot.Change::name, DirSnapshot.Change::type).containsExactly(
                org.assertj.core.groups.Tuple.tuple("b", EventType.EVENT_TYPE_REMOVE),
                org.assertj.core.groups.Tuple.tuple("a", EventType.EVENT_TYPE_WRITE),
                org.assertj.core.groups.Tuple.tuple("c", EventType.EVENT_TYPE_CHMOD),
                org.assertj.core.groups.Tuple.tuple("e", EventType.EVENT_TYPE_CREATE));
        assertThat(after.since(after)).isEmpty();
    }

    @Test
    void envelopesAndErrors() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Wire.writeEnvelope(out, 0, "{}".getBytes(StandardCharsets.UTF_8));
        byte[] framed = out.toByteArray();
        assertThat(framed).containsExactly(0, 0, 0, 0, 2, '{', '}');
        assertThat(Wire.readSingleEnvelope(new ByteArrayInputStream(framed), null)).containsExactly('{', '}');
        assertThat(new String(Wire.endStreamJson(null), StandardCharsets.UTF_8)).isEqualTo("{}");
        assertThat(new String(Wire.endStreamJson(new ConnectException(ConnectCode.NOT_FOUND, "no \"x\"")),
                StandardCharsets.UTF_8)).isEqualTo("{\"error\":{\"code\":\"not_found\",\"message\":\"no \\\"x\\\"\"}}");
        assertThatThrownBy(() -> Wire.readSingleEnvelope(new ByteArrayInputStream(new byte[]{0, 0x7F, 0, 0, 0}), null))
                .isInstanceOfSatisfying(ConnectException.class, e -> assertThat(e.code()).isEqualTo(ConnectCode.RESOURCE_EXHAUSTED));
        assertThatThrownBy(() -> Wire.readUnary(new ByteArrayInputStream(new byte[1]), "br"))
                .isInstanceOfSatisfying(ConnectException.class, e -> assertThat(e.code()).isEqualTo(ConnectCode.UNIMPLEMENTED));
        ByteArrayOutputStream gz = new ByteArrayOutputStream();
        try (var z = new java.util.zip.GZIPOutputStream(gz)) {
            z.write("{\"path\":\"/x\"}".getBytes(StandardCharsets.UTF_8));
        }
        assertThat(new String(Wire.readUnary(new ByteArrayInputStream(gz.toByteArray()), "gzip"), StandardCharsets.UTF_8))
                .isEqualTo("{\"path\":\"/x\"}");
    }

    @Test
    void usersMapOntoTheSandboxUser() {
        assertThat(call(null)).isNull();
        assertThat(call("user")).isNull();
        assertThat(call("sandbox")).isNull();
        assertThat(call("root").code()).isEqualTo(ConnectCode.PERMISSION_DENIED);
        assertThat(call("bob").code()).isEqualTo(ConnectCode.INVALID_ARGUMENT);
        assertThat(Call.of(null, Map.of("keepalive-ping-interval", "50"), Codec.JSON).keepalive())
                .isEqualTo(Call.MAX_KEEPALIVE);
        assertThat(Call.of(null, Map.of("keepalive-ping-interval", "2"), Codec.JSON).keepalive().toSeconds()).isEqualTo(2);
        assertThatThrownBy(() -> Call.of(null, Map.of("connect-timeout-ms", "soon"), Codec.JSON))
                .isInstanceOf(ConnectException.class);
    }

    private static ConnectException call(String user) {
        Map<String, String> h = user == null ? Map.of() : Map.of("authorization", "Basic "
                + Base64.getEncoder().encodeToString((user + ":").getBytes(StandardCharsets.UTF_8)));
        try {
            Call.of(null, h, Codec.JSON).checkUser();
            return null;
        } catch (ConnectException e) {
            return e;
        }
    }
}
