package io.paddock.image.internal.layer;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.image.internal.oci.Digest;
import io.paddock.image.internal.oci.MediaTypes;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LayerExtractorTest {
    private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;
    private static final long MTIME_S = TarBuilder.MTIME.toMillis() / 1000;

    @TempDir
    Path tmp;

    private final List<Path> whiteouts = new ArrayList<>();
    /** Records whiteouts and leaves a marker file, so tests can see where they went without mknod. */
    private final Whiteouts recording = path -> {
        whiteouts.add(path);
        try {
            Files.writeString(path, "whiteout");
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    };

    private Path target() throws IOException {
        return Files.createDirectory(tmp.resolve("layer-" + System.nanoTime()));
    }

    private LayerResult extract(byte[] blob, String mediaType, Path target) {
        return new LayerExtractor(recording).extract(new ByteArrayInputStream(blob), mediaType, target,
                LayerExtractor.Limits.DEFAULT);
    }

    private LayerResult extract(byte[] tar, Path target) {
        return extract(tar, MediaTypes.OCI_LAYER, target);
    }

    private static int mode(Path p) throws IOException {
        return (Integer) Files.getAttribute(p, "unix:mode", NOFOLLOW) & 07777;
    }

    private static int uid(Path p) throws IOException {
        return (Integer) Files.getAttribute(p, "unix:uid", NOFOLLOW);
    }

    private static int gid(Path p) throws IOException {
        return (Integer) Files.getAttribute(p, "unix:gid", NOFOLLOW);
    }

    private static long mtime(Path p) throws IOException {
        return Files.getLastModifiedTime(p, NOFOLLOW).toMillis() / 1000;
    }

    private static byte[] sampleTar() {
        return new TarBuilder()
                .dir("etc")
                .file("etc/hostname", "box\n".getBytes(StandardCharsets.UTF_8), 0644, 0, 0)
                .file("usr/bin/sudo", "#!".getBytes(StandardCharsets.UTF_8), 04755, 0, 0)
                .dir("tmp", 01777)
                .file("home/alice/notes", "hi".getBytes(StandardCharsets.UTF_8), 0600, 1000, 1001)
                .file("big-ids", new byte[0], 0644, 100_000, 4_000_000_000L)
                .symlink("etc/localtime", "/usr/share/zoneinfo/UTC")
                .symlink("rel", "../../..//escape-is-fine-inside-a-sandbox/")
                .hardlink("usr/bin/sudoedit", "usr/bin/sudo")
                .build();
    }

    @Test
    void extractsFilesDirectoriesLinksWithOwnersModesAndTimes() throws IOException {
        Path t = target();
        byte[] tar = sampleTar();
        LayerResult r = extract(tar, t);

        assertThat(r.diffId()).isEqualTo(Digest.of(tar));
        assertThat(r.uncompressedBytes()).isEqualTo(tar.length);
        assertThat(r.entries()).isEqualTo(9);
        assertThat(r.skipped()).isZero();

        assertThat(t.resolve("etc/hostname")).hasContent("box");
        assertThat(mode(t.resolve("usr/bin/sudo"))).isEqualTo(04755);
        assertThat(mode(t.resolve("tmp"))).isEqualTo(01777);
        assertThat(mode(t.resolve("home/alice/notes"))).isEqualTo(0600);
        assertThat(uid(t.resolve("home/alice/notes"))).isEqualTo(1000);
        assertThat(gid(t.resolve("home/alice/notes"))).isEqualTo(1001);
        assertThat(uid(t.resolve("big-ids"))).isEqualTo(65534);
        assertThat(gid(t.resolve("big-ids"))).isEqualTo(65534);
        // directories the layer implies but does not list
        assertThat(mode(t.resolve("usr"))).isEqualTo(0755);
        assertThat(mode(t.resolve("home/alice"))).isEqualTo(0755);
        assertThat(uid(t.resolve("home/alice"))).isZero();

        assertThat(Files.readSymbolicLink(t.resolve("etc/localtime"))).hasToString("/usr/share/zoneinfo/UTC");
        assertThat(Files.readSymbolicLink(t.resolve("rel")).toString()).startsWith("../../../escape-is-fine");
        assertThat(Trees.inode(t.resolve("usr/bin/sudoedit"))).isEqualTo(Trees.inode(t.resolve("usr/bin/sudo")));

        for (String p : List.of("etc", "etc/hostname", "tmp", "usr/bin/sudo", "etc/localtime", "home/alice/notes")) {
            assertThat(mtime(t.resolve(p))).as(p).isEqualTo(MTIME_S);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {MediaTypes.OCI_LAYER, MediaTypes.OCI_LAYER_GZIP, MediaTypes.DOCKER_LAYER_GZIP,
            MediaTypes.OCI_LAYER_ZSTD})
    void everyCompressionGivesTheSameTreeAndDiffId(String mediaType) throws IOException {
        byte[] tar = sampleTar();
        byte[] blob = mediaType.endsWith("zstd") ? TarBuilder.zstd(tar)
                : mediaType.endsWith("gzip") ? TarBuilder.gzip(tar) : tar;
        Path plain = target();
        extract(tar, plain);
        Path t = target();

        LayerResult r = extract(blob, mediaType, t);

        assertThat(r.diffId()).isEqualTo(Digest.of(tar));
        assertThat(r.uncompressedBytes()).isEqualTo(tar.length);
        assertThat(Trees.snapshot(t)).isEqualTo(Trees.snapshot(plain));
    }

    @Test
    void unknownMediaTypeIsRefusedBeforeReading() throws IOException {
        Path t = target();
        assertThatThrownBy(() -> extract(sampleTar(), "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip", t))
                .isInstanceOf(SandboxException.class)
                .hasMessageContaining("application/vnd.docker.image.rootfs.foreign.diff.tar.gzip")
                .extracting(e -> ((SandboxException) e).code()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
        assertThat(t).isEmptyDirectory();
    }

    @Test
    void diffIdCoversTrailingBytesAfterTheEndOfArchive() throws IOException {
        byte[] tar = sampleTar();
        byte[] padded = new byte[tar.length + 20_000];
        System.arraycopy(tar, 0, padded, 0, tar.length);
        padded[padded.length - 1] = 42; // not zero: still hashed, never interpreted

        LayerResult r = extract(TarBuilder.gzip(padded), MediaTypes.OCI_LAYER_GZIP, target());

        assertThat(r.diffId()).isEqualTo(Digest.of(padded));
        assertThat(r.uncompressedBytes()).isEqualTo(padded.length);
    }

    @Test
    void namesAreNormalisedInsideTheRoot() throws IOException {
        Path t = target();
        extract(new TarBuilder()
                .dir("./")
                .file("./a/./b", "1")
                .file("/abs/file", "2")
                .file("x/../y", "3")
                .file("//double//slash", "4")
                .build(), t);

        assertThat(t.resolve("a/b")).hasContent("1");
        assertThat(t.resolve("abs/file")).hasContent("2");
        assertThat(t.resolve("y")).hasContent("3");
        assertThat(t.resolve("double/slash")).hasContent("4");
        assertThat(t.resolve("x")).doesNotExist(); // resolved lexically, never created
    }

    @Test
    void rootEntryAppliesToTheTarget() throws IOException {
        Path t = target();
        extract(new TarBuilder().dir("./", 0750).file("f", "x").build(), t);
        assertThat(mode(t)).isEqualTo(0750);
        assertThat(mtime(t)).isEqualTo(MTIME_S);
    }

    @Test
    void readOnlyDirectoryIsFilledBeforeItsModeIsApplied() throws IOException {
        Path t = target();
        extract(new TarBuilder()
                .dir("ro", 0555)
                .file("ro/inside", "x")
                .dir("ro/sub", 0500)
                .file("ro/sub/deeper", "y")
                .build(), t);

        assertThat(t.resolve("ro/sub/deeper")).hasContent("y");
        assertThat(mode(t.resolve("ro"))).isEqualTo(0555);
        assertThat(mode(t.resolve("ro/sub"))).isEqualTo(0500);
        assertThat(mtime(t.resolve("ro"))).isEqualTo(MTIME_S);
    }

    @Test
    void laterEntriesReplaceEarlierOnesAndDirectoriesMerge() throws IOException {
        Path t = target();
        extract(new TarBuilder()
                .file("f", "first")
                .file("f", "second")
                .dir("d")
                .file("d/kept", "k")
                .dir("d", 0700) // merges, new mode
                .dir("gone")
                .file("gone/child", "c")
                .file("gone", "now a file")
                .file("was-file", "x")
                .dir("was-file")
                .symlink("s", "/somewhere")
                .file("s", "now a file too")
                .build(), t);

        assertThat(t.resolve("f")).hasContent("second");
        assertThat(t.resolve("d/kept")).hasContent("k");
        assertThat(mode(t.resolve("d"))).isEqualTo(0700);
        assertThat(t.resolve("gone")).isRegularFile().hasContent("now a file");
        assertThat(t.resolve("was-file")).isDirectory();
        assertThat(Files.isSymbolicLink(t.resolve("s"))).isFalse();
        assertThat(t.resolve("s")).hasContent("now a file too");
    }

    @Test
    void whiteoutRemovesWhatThisLayerMadeAndLeavesAWhiteout() throws IOException {
        Path t = target();
        LayerResult r = extract(new TarBuilder()
                .dir("d")
                .file("d/old", "x")
                .dir("d/olddir")
                .file("d/olddir/child", "y")
                .file("d/.wh.old", new byte[0], 0, 0, 0)
                .file("d/.wh.olddir", new byte[0], 0, 0, 0)
                .file(".wh.lower-only", new byte[0], 0, 0, 0)
                .build(), t);

        assertThat(whiteouts).containsExactly(t.resolve("d/old"), t.resolve("d/olddir"), t.resolve("lower-only"));
        assertThat(t.resolve("d/old")).hasContent("whiteout");
        assertThat(t.resolve("d/olddir")).isRegularFile();
        assertThat(t.resolve("d/.wh.old")).doesNotExist();
        assertThat(r.entries()).isEqualTo(7);
    }

    @Test
    void opaqueMarkerKeepsTheDirectorysEntriesFromThisLayer() throws IOException {
        Path t = target();
        extract(new TarBuilder()
                .dir("d")
                .file("d/before", "b")
                .file("d/.wh..wh..opq", new byte[0], 0, 0, 0)
                .file("d/after", "a")
                .file("marker-first/.wh..wh..opq", new byte[0], 0, 0, 0)
                .dir("marker-first", 0711)
                .file("plain/file", "p")
                .build(), t);

        assertThat(Trees.opaque(t.resolve("d"))).isTrue();
        assertThat(t.resolve("d/before")).hasContent("b");
        assertThat(t.resolve("d/after")).hasContent("a");
        assertThat(t.resolve("d/.wh..wh..opq")).doesNotExist();
        assertThat(Trees.opaque(t.resolve("marker-first"))).isTrue();
        assertThat(mode(t.resolve("marker-first"))).isEqualTo(0711);
        assertThat(Trees.opaque(t.resolve("plain"))).isFalse();
        assertThat(whiteouts).isEmpty();
    }

    @Test
    void devicesFifosAndAufsMetadataAreSkipped() throws IOException {
        Path t = target();
        LayerResult r = extract(new TarBuilder()
                .device("dev/null", TarConstants.LF_CHR, 1, 3)
                .device("dev/sda", TarConstants.LF_BLK, 8, 0)
                .device("fake-whiteout", TarConstants.LF_CHR, 0, 0)
                .device("fifo", TarConstants.LF_FIFO, 0, 0)
                .file(".wh..wh.plnk/123.456", new byte[0], 0, 0, 0)
                .file("ok", "ok")
                .build(), t);

        assertThat(r.skipped()).isEqualTo(5);
        assertThat(r.entries()).isEqualTo(6);
        assertThat(t.resolve("dev/null")).doesNotExist();
        assertThat(t.resolve("fake-whiteout")).doesNotExist();
        assertThat(t.resolve("fifo")).doesNotExist();
        assertThat(t.resolve("ok")).hasContent("ok");
    }

    @Test
    void xattrsFromTheTarAreNeverWritten() throws IOException {
        Path t = target();
        TarArchiveEntry dir = TarBuilder.entry("planted/", TarConstants.LF_DIR);
        dir.setMode(040755);
        TarArchiveEntry file = TarBuilder.entry("file", TarConstants.LF_NORMAL);
        file.setMode(0100644);
        extract(new TarBuilder()
                .withPax(dir, Map.of("SCHILY.xattr.user.overlay.opaque", "y",
                        "SCHILY.xattr.trusted.overlay.opaque", "y"), null)
                .withPax(file, Map.of("SCHILY.xattr.user.overlay.redirect", "/etc",
                        "SCHILY.xattr.user.anything", "v"), new byte[0])
                .build(), t);

        assertThat(Trees.xattrs(t.resolve("planted"))).isEmpty();
        assertThat(Trees.opaque(t.resolve("planted"))).isFalse();
        assertThat(Trees.xattrs(t.resolve("file"))).isEmpty();
    }

    @Test
    void longNamesInPaxAndGnuForm() throws IOException {
        String longName = "d/" + "n".repeat(150) + "/" + "f".repeat(200);
        String longTarget = "/" + "t".repeat(300);
        for (int mode : new int[] {TarArchiveOutputStream.LONGFILE_POSIX, TarArchiveOutputStream.LONGFILE_GNU}) {
            Path t = target();
            extract(new TarBuilder(mode).file(longName, "long").symlink("link", longTarget).build(), t);
            assertThat(t.resolve(longName)).hasContent("long");
            assertThat(Files.readSymbolicLink(t.resolve("link"))).hasToString(longTarget);
        }
    }

    @Test
    void emptyLayerHasADiffIdToo() throws IOException {
        byte[] tar = new TarBuilder().build();
        LayerResult r = extract(tar, target());
        assertThat(r.entries()).isZero();
        assertThat(r.diffId()).isEqualTo(Digest.of(tar));
    }

    @Test
    void mknodWhiteoutsAreCharacterDevicesZeroZero() throws IOException {
        Path t = target();
        new LayerExtractor(Whiteouts.MKNOD).extract(new ByteArrayInputStream(new TarBuilder()
                        .file("gone", "x")
                        .file(".wh.gone", new byte[0], 0, 0, 0)
                        .build()), MediaTypes.OCI_LAYER, t, LayerExtractor.Limits.DEFAULT);

        Map<String, Object> a = Files.readAttributes(t.resolve("gone"), "unix:mode,rdev", NOFOLLOW);
        assertThat((Integer) a.get("mode") & 0170000).isEqualTo(0020000);
        assertThat(a.get("rdev")).isEqualTo(0L);
    }

    @Test
    void mknodFailureIsInternal() throws IOException {
        Path existing = Files.createFile(tmp.resolve("exists"));
        assertThatThrownBy(() -> Whiteouts.MKNOD.create(existing))
                .isInstanceOf(SandboxException.class)
                .hasMessageContaining("mknod")
                .extracting(e -> ((SandboxException) e).code()).isEqualTo(ErrorCode.INTERNAL);
    }

    @Test
    void limitsMustBePositive() {
        assertThatThrownBy(() -> new LayerExtractor.Limits(0, 1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new LayerExtractor.Limits(1, 0)).isInstanceOf(IllegalArgumentException.class);
        assertThat(LayerExtractor.Limits.DEFAULT.maxUncompressedBytes()).isEqualTo(16L << 30);
        assertThat(LayerExtractor.Limits.DEFAULT.maxEntries()).isEqualTo(1_000_000);
    }
}
