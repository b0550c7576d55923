package io.paddock.image.internal.layer;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.image.internal.oci.MediaTypes;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.assertj.core.api.AbstractThrowableAssert;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.stream.Stream;
import java.util.zip.GZIPOutputStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Layers built to attack the host: each must be refused (or made harmless) and must leave nothing outside
 * the target. Every test runs with a sibling directory holding a secret, which must come out unchanged.
 */
class HostileLayerTest {
    private static final LayerExtractor.Limits SMALL = new LayerExtractor.Limits(10L << 20, 1000);

    @TempDir
    Path base;

    private Path target;
    private Path outside;
    private TreeMap<String, String> outsideBefore;
    private long outsideMtime;

    @BeforeEach
    void setUp() throws IOException {
        target = Files.createDirectory(base.resolve("layer"));
        outside = Files.createDirectory(base.resolve("outside"));
        Files.writeString(outside.resolve("secret"), "secret");
        Files.createDirectory(outside.resolve("dir"));
        Trees.chmod(outside.resolve("dir"), 0700);
        Trees.setMtime(outside.resolve("dir"), 1_000_000_000L);
        Trees.setMtime(outside, 1_000_000_000L);
        outsideBefore = Trees.snapshot(outside);
        outsideMtime = Files.getLastModifiedTime(outside).toMillis();
    }

    @AfterEach
    void nothingOutsideTheTarget() throws IOException {
        try (Stream<Path> s = Files.list(base)) {
            assertThat(s.map(p -> p.getFileName().toString())).containsExactlyInAnyOrder("layer", "outside");
        }
        assertThat(Trees.snapshot(outside)).isEqualTo(outsideBefore);
        assertThat(Files.getLastModifiedTime(outside).toMillis()).isEqualTo(outsideMtime);
        assertThat(Trees.xattrs(outside)).isEmpty();
        assertThat(Trees.xattrs(outside.resolve("dir"))).isEmpty();
    }

    private LayerResult extract(byte[] blob, String mediaType, LayerExtractor.Limits limits) {
        return new LayerExtractor(Whiteouts.MKNOD).extract(new ByteArrayInputStream(blob), mediaType, target, limits);
    }

    private LayerResult extract(byte[] tar) {
        return extract(tar, MediaTypes.OCI_LAYER, LayerExtractor.Limits.DEFAULT);
    }

    private AbstractThrowableAssert<?, ? extends Throwable> refused(byte[] tar, ErrorCode code) {
        return refused(tar, MediaTypes.OCI_LAYER, LayerExtractor.Limits.DEFAULT, code);
    }

    private AbstractThrowableAssert<?, ? extends Throwable> refused(byte[] blob, String mediaType,
                                                                  LayerExtractor.Limits limits, ErrorCode code) {
        AbstractThrowableAssert<?, ? extends Throwable> a = assertThatThrownBy(() -> extract(blob, mediaType, limits))
                .isInstanceOf(SandboxException.class);
        a.extracting(e -> ((SandboxException) e).code()).isEqualTo(code);
        return a;
    }

    // ---- escapes by name ----

    @Test
    void dotDotEscapesAreRefused() {
        for (String name : List.of("../outside/planted", "../../x", "a/../../outside/x", "./../outside/x",
                "/../outside/x", "a/b/../../../outside/x")) {
            refused(new TarBuilder().file("ok", "fine").file(name, "pwned").build(), ErrorCode.INVALID_ARGUMENT)
                    .hasMessageContaining("escapes the root")
                    .hasMessageContaining(name);
        }
    }

    @Test
    void dotDotInADirectoryOrSymlinkNameIsRefusedToo() {
        refused(new TarBuilder().dir("../outside/newdir").build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("escapes the root");
        refused(new TarBuilder().symlink("../outside/link", "/etc").build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("escapes the root");
    }

    @Test
    void absoluteNamesLandInsideTheTarget() throws IOException {
        String name = "/tmp/paddock-escape-" + UUID.randomUUID();
        extract(new TarBuilder().file(name, "inside").build());
        assertThat(Path.of(name)).doesNotExist();
        assertThat(target.resolve(name.substring(1))).hasContent("inside");
    }

    // ---- escapes through symlinks ----

    @Test
    void fileThroughAnAbsoluteSymlinkIsRefused() {
        refused(new TarBuilder()
                .symlink("esc", outside.toString())
                .file("esc/planted", "pwned")
                .build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("esc/planted")
                .hasMessageContaining("through a symlink");
    }

    @Test
    void fileThroughARelativeSymlinkIsRefused() {
        refused(new TarBuilder()
                .symlink("esc", "../outside")
                .file("esc/secret", "overwritten")
                .build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("through a symlink");
    }

    @Test
    void fileThroughASymlinkDeeperDownIsRefused() {
        refused(new TarBuilder()
                .dir("a")
                .symlink("a/b", "../../outside")
                .file("a/b/c/d", "pwned")
                .build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("through a symlink ('a/b')");
    }

    @Test
    void directoryThroughASymlinkIsRefused() {
        refused(new TarBuilder()
                .symlink("esc", outside.toString())
                .dir("esc/dir", 0777)
                .build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("through a symlink");
    }

    @Test
    void symlinkThroughASymlinkIsRefused() {
        refused(new TarBuilder()
                .symlink("esc", outside.toString())
                .symlink("esc/link", "/etc/shadow")
                .build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("through a symlink");
    }

    @Test
    void aSymlinkReplacedByAFileIsReplacedNotWrittenThrough() throws IOException {
        extract(new TarBuilder()
                .symlink("s", outside.resolve("secret").toString())
                .file("s", "replaced")
                .build());
        assertThat(Files.isSymbolicLink(target.resolve("s"))).isFalse();
        assertThat(target.resolve("s")).hasContent("replaced");
    }

    @Test
    void aSymlinkReplacedByADirectoryIsReplacedNotChmodded() throws IOException {
        extract(new TarBuilder()
                .symlink("s", outside.resolve("dir").toString())
                .dir("s", 0777)
                .build());
        assertThat(target.resolve("s")).isDirectory();
        assertThat(Files.isSymbolicLink(target.resolve("s"))).isFalse();
    }

    @Test
    void aDirectoryLaterReplacedBySymlinkDoesNotGetItsModeAppliedThroughIt() throws IOException {
        // the directory's mode and time are applied at the end: by then "d" points outside
        extract(new TarBuilder()
                .dir("d", 0777)
                .dir("d/sub", 0777)
                .symlink("d", outside.resolve("dir").toString())
                .build());
        assertThat(Files.isSymbolicLink(target.resolve("d"))).isTrue();
    }

    @Test
    void entryUnderARegularFileIsRefused() {
        refused(new TarBuilder().file("f", "x").file("f/g", "y").build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("goes through 'f', which is not a directory");
    }

    @Test
    void hardLinkThroughASymlinkIsRefused() {
        refused(new TarBuilder()
                .symlink("esc", outside.toString())
                .hardlink("h", "esc/secret")
                .build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("layer entry 'h' links to 'esc/secret', which goes through a symlink ('esc')");
    }

    @Test
    void hardLinkCreatedThroughASymlinkIsRefused() {
        refused(new TarBuilder()
                .file("f", "x")
                .symlink("esc", outside.toString())
                .hardlink("esc/h", "f")
                .build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("through a symlink");
    }

    // ---- hard links ----

    @Test
    void hardLinkToAnAbsoluteHostPathIsRefused() throws IOException {
        long passwd = Trees.inode(Path.of("/etc/passwd"));
        refused(new TarBuilder().file("ok", "x").hardlink("h", "/etc/passwd").build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("'/etc/passwd'")
                .hasMessageContaining("not a regular file extracted earlier in this layer");
        try (Stream<Path> s = Files.walk(target)) {
            for (Path p : (Iterable<Path>) s::iterator) {
                assertThat(Trees.inode(p)).isNotEqualTo(passwd);
            }
        }
    }

    @Test
    void hardLinkEscapingTheRootIsRefused() {
        refused(new TarBuilder().hardlink("h", "../outside/secret").build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("links to '../outside/secret', which escapes the root");
        refused(new TarBuilder().hardlink("h", "../x").build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("escapes the root");
    }

    @Test
    void hardLinkToASymlinkOrDirectoryIsRefused() {
        refused(new TarBuilder()
                .symlink("s", "/etc/passwd")
                .hardlink("h", "s")
                .build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("not a regular file");
        refused(new TarBuilder()
                .dir("d")
                .hardlink("h", "d")
                .build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("not a regular file");
    }

    @Test
    void hardLinkToItselfOrIntoWhatItReplacesIsRefused() {
        refused(new TarBuilder().file("f", "x").hardlink("f", "f").build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("to itself");
        refused(new TarBuilder().dir("d").file("d/f", "x").hardlink("d", "d/f").build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("not a regular file");
    }

    // ---- whiteouts and overlay metadata ----

    @Test
    void escapingWhiteoutsAreRefused() throws IOException {
        Path victim = base.resolve("victim");
        Files.writeString(victim, "v");
        try {
            refused(new TarBuilder().file("../.wh.victim", new byte[0], 0, 0, 0).build(), ErrorCode.INVALID_ARGUMENT)
                    .hasMessageContaining("escapes the root");
            refused(new TarBuilder().file("a/../../.wh.victim", new byte[0], 0, 0, 0).build(), ErrorCode.INVALID_ARGUMENT)
                    .hasMessageContaining("escapes the root");
            for (String name : List.of(".wh..", ".wh...", "a/.wh..", "a/.wh...", ".wh.")) {
                refused(new TarBuilder().dir("a").file(name, new byte[0], 0, 0, 0).build(), ErrorCode.INVALID_ARGUMENT)
                        .hasMessageContaining("is not a valid whiteout");
            }
            assertThat(victim).hasContent("v");
        } finally {
            Files.delete(victim);
        }
    }

    @Test
    void whiteoutThroughASymlinkIsRefused() {
        refused(new TarBuilder()
                .symlink("esc", outside.toString())
                .file("esc/.wh.secret", new byte[0], 0, 0, 0)
                .build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("through a symlink");
    }

    @Test
    void opaqueMarkerThroughASymlinkIsRefused() {
        refused(new TarBuilder()
                .symlink("esc", outside.toString())
                .file("esc/.wh..wh..opq", new byte[0], 0, 0, 0)
                .build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("through a symlink");
    }

    @Test
    void aWhiteoutOfASymlinkRemovesTheLinkNotItsTarget() throws IOException {
        extract(new TarBuilder()
                .symlink("s", outside.resolve("secret").toString())
                .file(".wh.s", new byte[0], 0, 0, 0)
                .symlink("d", outside.resolve("dir").toString())
                .file(".wh.d", new byte[0], 0, 0, 0)
                .build());
        assertThat((Integer) Files.getAttribute(target.resolve("s"), "unix:mode", LinkOption.NOFOLLOW_LINKS) & 0170000)
                .isEqualTo(0020000);
    }

    @Test
    void plantedOverlayXattrsAreIgnored() throws IOException {
        TarArchiveEntry dir = TarBuilder.entry("d/", TarConstants.LF_DIR);
        dir.setMode(040755);
        extract(new TarBuilder()
                .withPax(dir, Map.of("SCHILY.xattr.user.overlay.opaque", "y",
                        "SCHILY.xattr.user.overlay.redirect", "/etc", "SCHILY.xattr.trusted.overlay.opaque", "y"), null)
                .build());
        assertThat(Trees.xattrs(target.resolve("d"))).isEmpty();
    }

    @Test
    void plantedDeviceNodesAreSkipped() throws IOException {
        LayerResult r = extract(new TarBuilder()
                .device("kmem", TarConstants.LF_CHR, 1, 2)
                .device("sda", TarConstants.LF_BLK, 8, 0)
                .build());
        assertThat(r.skipped()).isEqualTo(2);
        assertThat(target).isEmptyDirectory();
    }

    @Test
    void theRootCannotBeReplaced() {
        refused(new TarBuilder().symlink("./", "/").build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("root");
        refused(new TarBuilder().file("a/..", "x").build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("root");
    }

    // ---- names the host cannot hold ----

    @Test
    void impossibleNamesAreRefusedAsInvalid() {
        refused(new TarBuilder().file("x".repeat(256), "x").build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("longer than 255 bytes");
        refused(new TarBuilder().file("a/".repeat(2100) + "f", "x").build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("longer than 4095 bytes");
        byte[] nulPath = "12 path=a\0b\n".getBytes(StandardCharsets.UTF_8);
        refused(new TarBuilder().raw("PaxHeaders/f", TarConstants.LF_PAX_EXTENDED_HEADER_LC, nulPath).file("f", "x").build(),
                ErrorCode.INVALID_ARGUMENT).hasMessageContaining("NUL");
        refused(new TarBuilder().symlink("s", "").build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("symlink");
    }

    // ---- resource limits ----

    @Test
    @Timeout(20)
    void gzipBombStopsAtTheLimit() throws IOException {
        long start = System.nanoTime();
        byte[] bomb = gzipOfZeros("bomb", 50 << 20);
        assertThat(bomb.length).isLessThan(1 << 20);

        refused(bomb, MediaTypes.OCI_LAYER_GZIP, SMALL, ErrorCode.RESOURCE_EXHAUSTED)
                .hasMessageContaining("larger than " + (10L << 20) + " bytes uncompressed");

        assertThat(target.resolve("bomb")).exists();
        assertThat(Files.size(target.resolve("bomb"))).isLessThanOrEqualTo(10L << 20);
        assertThat((System.nanoTime() - start) / 1_000_000).isLessThan(10_000);
    }

    @Test
    @Timeout(20)
    void zstdBombStopsAtTheLimit() throws IOException {
        byte[] tar = tarOfZeros("bomb", 50 << 20);
        refused(TarBuilder.zstd(tar), MediaTypes.OCI_LAYER_ZSTD, SMALL, ErrorCode.RESOURCE_EXHAUSTED)
                .hasMessageContaining("larger than");
        assertThat(Files.size(target.resolve("bomb"))).isLessThanOrEqualTo(10L << 20);
    }

    @Test
    void byteLimitIsExact() throws IOException {
        byte[] tar = new TarBuilder().file("f", "x").build();
        extract(tar, MediaTypes.OCI_LAYER, new LayerExtractor.Limits(tar.length, 10));
        Files.delete(target.resolve("f"));
        refused(tar, MediaTypes.OCI_LAYER, new LayerExtractor.Limits(tar.length - 1, 10), ErrorCode.RESOURCE_EXHAUSTED);
    }

    @Test
    void entryCountIsCapped() throws IOException {
        TarBuilder b = new TarBuilder();
        for (int i = 0; i < 100; i++) {
            b.file("f" + i, "");
        }
        byte[] hundred = b.build();
        LayerResult r = extract(hundred, MediaTypes.OCI_LAYER, new LayerExtractor.Limits(1 << 30, 100));
        assertThat(r.entries()).isEqualTo(100);

        deleteContents(target);
        TarBuilder c = new TarBuilder();
        for (int i = 0; i < 101; i++) {
            c.file("f" + i, "");
        }
        refused(c.build(), MediaTypes.OCI_LAYER, new LayerExtractor.Limits(1 << 30, 100), ErrorCode.RESOURCE_EXHAUSTED)
                .hasMessageContaining("more than 100 entries");
    }

    @Test
    void hugeGnuLongNameIsRefusedWithoutBeingBuffered() {
        // 64 MiB of name, which the reader would hold in memory; the header budget stops it at 1 MiB
        byte[] name = new byte[64 << 20];
        Arrays.fill(name, (byte) 'n');
        byte[] tar = new TarBuilder()
                .raw("././@LongLink", TarConstants.LF_GNUTYPE_LONGNAME, name)
                .file("nnnn", "x")
                .build();
        refused(tar, ErrorCode.INVALID_ARGUMENT).hasMessageContaining("headers");
    }

    @Test
    void hugePaxHeaderIsRefusedWithoutBeingBuffered() {
        TarArchiveEntry e = TarBuilder.entry("f", TarConstants.LF_NORMAL);
        byte[] tar = new TarBuilder().withPax(e, Map.of("comment", "c".repeat(16 << 20)), new byte[0]).build();
        refused(tar, ErrorCode.INVALID_ARGUMENT).hasMessageContaining("headers");
    }

    @Test
    void endlessChainOfPaxHeadersIsRefused() {
        TarBuilder b = new TarBuilder();
        byte[] record = "12 path=abc\n".getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < 5000; i++) {
            b.raw("PaxHeaders/x" + i, TarConstants.LF_PAX_EXTENDED_HEADER_LC, record);
        }
        refused(b.file("f", "x").build(), ErrorCode.INVALID_ARGUMENT)
                .hasMessageContaining("header entries");
    }

    @Test
    void sparseFilesAreRefused() throws IOException {
        // their written size is not bounded by the stream's: a few bytes of map could ask for a terabyte
        Path scratch = Files.createTempDirectory("paddock-sparse");
        try {
            Path sparse = scratch.resolve("sparse");
            try (var ch = java.nio.channels.FileChannel.open(sparse, java.nio.file.StandardOpenOption.CREATE_NEW,
                    java.nio.file.StandardOpenOption.WRITE)) {
                ch.write(java.nio.ByteBuffer.wrap(new byte[] {1}), 64L << 20);
            }
            for (String format : List.of("gnu", "pax")) {
                Path tar = scratch.resolve(format + ".tar");
                Trees.run(scratch, "tar", "--format=" + format, "-S", "-cf", tar.toString(), "sparse");
                refused(Files.readAllBytes(tar), ErrorCode.INVALID_ARGUMENT).hasMessageContaining("is a sparse file");
            }
        } finally {
            deleteTree(scratch);
        }
        assertThat(target).isEmptyDirectory();
    }

    // ---- broken streams ----

    @Test
    void corruptGzipIsInvalid() {
        byte[] gz = TarBuilder.gzip(new TarBuilder().file("f", "some content ".repeat(1000)).file("g", "x").build());
        for (int i = 20; i < gz.length - 20; i += 7) {
            gz[i] ^= (byte) 0x5a;
        }
        refused(gz, MediaTypes.OCI_LAYER_GZIP, LayerExtractor.Limits.DEFAULT, ErrorCode.INVALID_ARGUMENT)
                .hasMessageStartingWith("corrupt layer: ");
    }

    @Test
    void notGzipAtAllIsInvalid() {
        refused(new TarBuilder().file("f", "x").build(), MediaTypes.OCI_LAYER_GZIP, LayerExtractor.Limits.DEFAULT,
                ErrorCode.INVALID_ARGUMENT).hasMessageStartingWith("corrupt layer: ");
        refused(new byte[0], MediaTypes.OCI_LAYER_ZSTD, LayerExtractor.Limits.DEFAULT, ErrorCode.INVALID_ARGUMENT)
                .hasMessageStartingWith("corrupt layer: ");
    }

    @Test
    void truncatedStreamsAreInvalid() throws IOException {
        byte[] tar = new TarBuilder().file("a", "x".repeat(3000)).file("b", "y".repeat(3000)).build();
        // in the middle of a file's data
        refused(Arrays.copyOf(tar, 2000), ErrorCode.INVALID_ARGUMENT).hasMessageStartingWith("corrupt layer: ");
        deleteContents(target);
        // in the middle of a header
        refused(Arrays.copyOf(tar, 512 + 3072 + 100), ErrorCode.INVALID_ARGUMENT).hasMessageStartingWith("corrupt layer: ");
        deleteContents(target);
        // exactly after an entry: no end-of-archive block
        refused(Arrays.copyOf(tar, 512 + 3072), ErrorCode.INVALID_ARGUMENT).hasMessageContaining("truncated");
        deleteContents(target);
        // compressed streams cut short, after the whole tar or within it
        byte[] gz = TarBuilder.gzip(tar);
        refused(Arrays.copyOf(gz, gz.length - 4), MediaTypes.OCI_LAYER_GZIP, LayerExtractor.Limits.DEFAULT,
                ErrorCode.INVALID_ARGUMENT).hasMessageStartingWith("corrupt layer: ");
        deleteContents(target);
        byte[] zst = TarBuilder.zstd(tar);
        refused(Arrays.copyOf(zst, zst.length / 2), MediaTypes.OCI_LAYER_ZSTD, LayerExtractor.Limits.DEFAULT,
                ErrorCode.INVALID_ARGUMENT).hasMessageStartingWith("corrupt layer: ");
    }

    @Test
    void badHeaderChecksumIsInvalid() {
        byte[] tar = new TarBuilder().file("abc", "x").build();
        tar[1] = 'X'; // in the name; the checksum no longer matches
        refused(tar, ErrorCode.INVALID_ARGUMENT).hasMessageContaining("checksum");
    }

    @Test
    void unreadableBlobIsUnavailable() {
        byte[] tar = new TarBuilder().file("a", "x".repeat(100_000)).build();
        InputStream failing = new InputStream() {
            private final InputStream in = new ByteArrayInputStream(tar);
            private int read;

            @Override
            public int read() throws IOException {
                if (++read > 50_000) {
                    throw new IOException("connection reset");
                }
                return in.read();
            }
        };
        assertThatThrownBy(() -> new LayerExtractor(Whiteouts.MKNOD)
                .extract(failing, MediaTypes.OCI_LAYER, target, LayerExtractor.Limits.DEFAULT))
                .isInstanceOf(SandboxException.class)
                .hasMessageContaining("connection reset")
                .extracting(e -> ((SandboxException) e).code()).isEqualTo(ErrorCode.UNAVAILABLE);
    }

    // ---- helpers ----

    private static byte[] tarOfZeros(String name, int size) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        writeTarOfZeros(out, name, size);
        return out.toByteArray();
    }

    private static byte[] gzipOfZeros(String name, int size) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (GZIPOutputStream gz = new GZIPOutputStream(out)) {
            writeTarOfZeros(gz, name, size);
        }
        return out.toByteArray();
    }

    private static void writeTarOfZeros(java.io.OutputStream out, String name, int size) throws IOException {
        TarArchiveOutputStream tar = new TarArchiveOutputStream(out);
        TarArchiveEntry e = TarBuilder.entry(name, TarConstants.LF_NORMAL);
        e.setSize(size);
        tar.putArchiveEntry(e);
        byte[] zeros = new byte[1 << 20];
        for (int left = size; left > 0; left -= zeros.length) {
            tar.write(zeros, 0, Math.min(left, zeros.length));
        }
        tar.closeArchiveEntry();
        tar.finish();
        tar.flush();
    }

    private static void deleteContents(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            for (Path p : (Iterable<Path>) s::iterator) {
                deleteTree(p);
            }
        }
    }

    private static void deleteTree(Path p) throws IOException {
        if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
            try (Stream<Path> s = Files.list(p)) {
                for (Path c : (Iterable<Path>) s::iterator) {
                    deleteTree(c);
                }
            }
        }
        Files.delete(p);
    }
}
