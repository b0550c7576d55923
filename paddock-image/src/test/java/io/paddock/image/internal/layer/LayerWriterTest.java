package io.paddock.image.internal.layer;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.image.internal.oci.Digest;
import io.paddock.image.internal.oci.MediaTypes;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.UserDefinedFileAttributeView;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LayerWriterTest {
    private static final long SHIFT = 100_000;
    private static final String LONG_NAME = "n".repeat(150);
    private static final String LONG_TARGET = "/" + "t".repeat(200);

    @TempDir
    Path tmp;

    private Path upper;

    /** An overlay upper directory as a build step leaves it, owned by the build's shifted ids. */
    @BeforeEach
    void makeUpperDir() throws IOException {
        upper = Files.createDirectory(tmp.resolve("upper"));
        Path bin = Files.createDirectory(upper.resolve("bin"));
        Files.writeString(bin.resolve("tool"), "#!/bin/sh\necho tool\n");
        Trees.chmod(bin.resolve("tool"), 04755);
        Files.createLink(bin.resolve("tool-link"), bin.resolve("tool"));
        Path etc = Files.createDirectory(upper.resolve("etc"));
        Files.writeString(etc.resolve("config"), "key=value\n");
        Trees.chmod(etc.resolve("config"), 0640);
        Trees.chown(etc.resolve("config"), (int) SHIFT + 1000, (int) SHIFT + 1001);
        Files.createSymbolicLink(etc.resolve("alias"), Path.of("config"));
        Files.createSymbolicLink(etc.resolve("abs"), Path.of("/etc/passwd"));
        Whiteouts.MKNOD.create(upper.resolve("gone"));
        Path opq = Files.createDirectory(upper.resolve("opq"));
        Files.getFileAttributeView(opq, UserDefinedFileAttributeView.class)
                .write("overlay.opaque", ByteBuffer.wrap("y".getBytes(StandardCharsets.US_ASCII)));
        Files.writeString(opq.resolve("new"), "new");
        Path notOpaque = Files.createDirectory(upper.resolve("impure"));
        Files.getFileAttributeView(notOpaque, UserDefinedFileAttributeView.class)
                .write("overlay.opaque", ByteBuffer.wrap("x".getBytes(StandardCharsets.US_ASCII)));
        Path tmpDir = Files.createDirectory(upper.resolve("tmp"));
        Trees.chmod(tmpDir, 01777);
        Files.writeString(upper.resolve("stranger"), "owned by an id outside the build's range");
        Trees.chown(upper.resolve("stranger"), 5, 5);
        Path longDir = Files.createDirectory(upper.resolve("long"));
        Files.writeString(longDir.resolve(LONG_NAME), "long");
        Files.createSymbolicLink(longDir.resolve("s"), Path.of(LONG_TARGET));
        Path ro = Files.createDirectory(upper.resolve("ro"));
        Files.writeString(ro.resolve("f"), "f");
        Trees.chmod(ro, 0555);
        Files.writeString(upper.resolve("héllo wörld"), "unicode");
        // not part of an image: skipped
        Trees.run(upper, "mkfifo", "fifo");
        Trees.run(upper, "mknod", "null", "c", "1", "3");
        try (ServerSocketChannel s = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            s.bind(UnixDomainSocketAddress.of(upper.resolve("sock")));
        }
        // build ids: everything but "stranger" belongs to the build's range
        List<Path> all = new ArrayList<>();
        try (Stream<Path> w = Files.walk(upper)) {
            w.forEach(all::add);
        }
        for (Path p : all) {
            int uid = (Integer) Files.getAttribute(p, "unix:uid", java.nio.file.LinkOption.NOFOLLOW_LINKS);
            int gid = (Integer) Files.getAttribute(p, "unix:gid", java.nio.file.LinkOption.NOFOLLOW_LINKS);
            if (uid == 0 && !p.endsWith("stranger")) {
                Trees.chown(p, (int) SHIFT + uid, (int) SHIFT + gid);
            }
        }
        Trees.chmod(bin.resolve("tool"), 04755); // chown cleared setuid
        // times last, deepest first, so that creating children does not move a directory's time
        all.sort((a, b) -> b.getNameCount() - a.getNameCount());
        long t = 1_500_000_000L;
        for (Path p : all) {
            if (!p.endsWith("fifo")) { // setting a time opens the file, which blocks on a FIFO
                Trees.setMtime(p, t++);
            }
        }
    }

    private LayerBlob write(ByteArrayOutputStream out, boolean gzip) {
        return new LayerWriter().write(upper, out, gzip, SHIFT);
    }

    private static List<TarArchiveEntry> entries(byte[] tar) throws IOException {
        List<TarArchiveEntry> out = new ArrayList<>();
        try (TarArchiveInputStream in = new TarArchiveInputStream(new ByteArrayInputStream(tar), "UTF-8")) {
            for (TarArchiveEntry e = in.getNextEntry(); e != null; e = in.getNextEntry()) {
                out.add(e);
            }
        }
        return out;
    }

    @Test
    void entriesAreSortedNumericAndInOciForm() throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        LayerBlob blob = write(out, false);
        byte[] tar = out.toByteArray();
        List<TarArchiveEntry> entries = entries(tar);

        assertThat(entries).extracting(TarArchiveEntry::getName).containsExactly(
                "bin/", "bin/tool", "bin/tool-link",
                "etc/", "etc/abs", "etc/alias", "etc/config",
                ".wh.gone",
                "héllo wörld",
                "impure/",
                "long/", "long/" + LONG_NAME, "long/s",
                "opq/", "opq/.wh..wh..opq", "opq/new",
                "ro/", "ro/f",
                "stranger",
                "tmp/");
        Map<String, TarArchiveEntry> byName = new TreeMap<>();
        entries.forEach(e -> byName.put(e.getName(), e));

        for (TarArchiveEntry e : entries) {
            assertThat(e.getUserName()).as(e.getName()).isEmpty();
            assertThat(e.getGroupName()).as(e.getName()).isEmpty();
            assertThat(e.getName()).doesNotStartWith("/");
            assertThat(e.getLastModifiedTime().toMillis() % 1000).isZero();
        }
        assertThat(byName.get("bin/tool").getMode() & 07777).isEqualTo(04755);
        assertThat(byName.get("bin/tool").getLongUserId()).isZero();
        assertThat(byName.get("bin/tool").getSize()).isEqualTo(20);
        assertThat(byName.get("bin/tool-link").isLink()).isTrue();
        assertThat(byName.get("bin/tool-link").getLinkName()).isEqualTo("bin/tool");
        assertThat(byName.get("etc/config").getLongUserId()).isEqualTo(1000);
        assertThat(byName.get("etc/config").getLongGroupId()).isEqualTo(1001);
        assertThat(byName.get("etc/config").getMode() & 07777).isEqualTo(0640);
        assertThat(byName.get("etc/alias").isSymbolicLink()).isTrue();
        assertThat(byName.get("etc/alias").getLinkName()).isEqualTo("config");
        assertThat(byName.get("long/s").getLinkName()).isEqualTo(LONG_TARGET);
        assertThat(byName.get(".wh.gone").isFile()).isTrue();
        assertThat(byName.get(".wh.gone").getSize()).isZero();
        assertThat(byName.get("opq/.wh..wh..opq").isFile()).isTrue();
        assertThat(byName.get("opq/.wh..wh..opq").getSize()).isZero();
        assertThat(byName.get("stranger").getLongUserId()).isEqualTo(65534);
        assertThat(byName.get("stranger").getLongGroupId()).isEqualTo(65534);
        assertThat(byName.get("tmp/").getMode() & 07777).isEqualTo(01777);
        assertThat(byName.get("ro/").getMode() & 07777).isEqualTo(0555);

        assertThat(blob.diffId()).isEqualTo(Digest.of(tar));
        assertThat(blob.digest()).isEqualTo(blob.diffId());
        assertThat(blob.size()).isEqualTo(tar.length);
    }

    @Test
    void sameTreeGivesTheSameBytes() {
        ByteArrayOutputStream a = new ByteArrayOutputStream();
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        LayerBlob first = write(a, true);
        LayerBlob second = write(b, true);
        assertThat(b.toByteArray()).isEqualTo(a.toByteArray());
        assertThat(second).isEqualTo(first);
    }

    @Test
    void gzipDigestsDescribeTheCompressedAndUncompressedBytes() throws IOException {
        ByteArrayOutputStream plain = new ByteArrayOutputStream();
        ByteArrayOutputStream gz = new ByteArrayOutputStream();
        LayerBlob plainBlob = write(plain, false);
        LayerBlob gzBlob = write(gz, true);

        byte[] unzipped;
        try (InputStream in = new GZIPInputStream(new ByteArrayInputStream(gz.toByteArray()))) {
            unzipped = in.readAllBytes();
        }
        assertThat(unzipped).isEqualTo(plain.toByteArray());
        assertThat(gzBlob.diffId()).isEqualTo(plainBlob.diffId());
        assertThat(gzBlob.digest()).isEqualTo(Digest.of(gz.toByteArray()));
        assertThat(gzBlob.size()).isEqualTo(gz.size());
        assertThat(gzBlob.digest()).isNotEqualTo(gzBlob.diffId());
    }

    @Test
    void roundTripsThroughTheExtractor() throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        LayerBlob blob = write(out, true);
        Path extracted = Files.createDirectory(tmp.resolve("extracted"));

        LayerResult r = new LayerExtractor(Whiteouts.MKNOD).extract(new ByteArrayInputStream(out.toByteArray()),
                MediaTypes.OCI_LAYER_GZIP, extracted, LayerExtractor.Limits.DEFAULT);

        assertThat(r.diffId()).isEqualTo(blob.diffId());
        assertThat(r.skipped()).isZero();
        TreeMap<String, String> expected = Trees.snapshot(upper, SHIFT);
        expected.keySet().removeAll(List.of("fifo", "null", "sock", "stranger"));
        TreeMap<String, String> actual = Trees.snapshot(extracted);
        assertThat(actual.remove("stranger")).startsWith("file 100644 65534:65534");
        assertThat(actual).isEqualTo(expected);
        assertThat(actual.get("gone")).isEqualTo("chr rdev=0");
        assertThat(actual.get("opq")).endsWith(" opaque");
        assertThat(Trees.inode(extracted.resolve("bin/tool-link"))).isEqualTo(Trees.inode(extracted.resolve("bin/tool")));

        // and writing the extracted tree again (ids now unshifted) gives the same layer
        ByteArrayOutputStream again = new ByteArrayOutputStream();
        assertThat(new LayerWriter().write(extracted, again, true, 0).diffId()).isEqualTo(blob.diffId());
    }

    @Test
    void gnuTarReadsTheLayer() throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        write(out, false);
        Path tar = Files.write(tmp.resolve("layer.tar"), out.toByteArray());
        List<String> ours = entries(out.toByteArray()).stream().map(TarArchiveEntry::getName).toList();

        String listing = Trees.run(tmp, "tar", "--quoting-style=literal", "-tf", tar.toString());
        assertThat(Arrays.asList(listing.split("\n"))).containsExactlyElementsOf(ours);

        Path x = Files.createDirectory(tmp.resolve("gnu"));
        Trees.run(x, "tar", "--numeric-owner", "-xpf", tar.toString());
        assertThat(x.resolve("long/" + LONG_NAME)).hasContent("long");
        assertThat(Files.readSymbolicLink(x.resolve("long/s"))).hasToString(LONG_TARGET);
        assertThat(x.resolve("héllo wörld")).hasContent("unicode");
        assertThat(Files.getAttribute(x.resolve("etc/config"), "unix:uid")).isEqualTo(1000);
        assertThat(Trees.inode(x.resolve("bin/tool-link"))).isEqualTo(Trees.inode(x.resolve("bin/tool")));
    }

    @Test
    void symlinkedDirectoriesAreWrittenAsLinksNotFollowed() throws IOException {
        Path dir = Files.createDirectory(tmp.resolve("links"));
        Files.createSymbolicLink(dir.resolve("escape"), Path.of("/etc"));
        Files.createSymbolicLink(dir.resolve("up"), Path.of(".."));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        new LayerWriter().write(dir, out, false, 0);
        assertThat(entries(out.toByteArray())).extracting(TarArchiveEntry::getName).containsExactly("escape", "up");
    }

    @Test
    void namesThatAreNotUtf8AreStillWritten() throws IOException {
        Path dir = Files.createDirectory(tmp.resolve("latin1"));
        Trees.run(dir, "sh", "-c", "printf data > \"$(printf 'caf\\351')\"");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        new LayerWriter().write(dir, out, false, 0);
        List<TarArchiveEntry> entries = entries(out.toByteArray());
        assertThat(entries).hasSize(1);
        assertThat(entries.get(0).getName()).startsWith("caf");
        assertThat(entries.get(0).getSize()).isEqualTo(4);
    }

    @Test
    void emptyDirectoryIsAnEmptyLayer() throws IOException {
        Path empty = Files.createDirectory(tmp.resolve("empty"));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        LayerBlob blob = new LayerWriter().write(empty, out, false, 0);
        assertThat(entries(out.toByteArray())).isEmpty();
        assertThat(blob.diffId()).isEqualTo(Digest.of(out.toByteArray()));
    }

    @Test
    void theOutputStreamIsLeftOpen() {
        class Tracking extends ByteArrayOutputStream {
            boolean closed;

            @Override
            public void close() {
                closed = true;
            }
        }
        Tracking out = new Tracking();
        write(out, true);
        assertThat(out.closed).isFalse();
    }

    @Test
    void notADirectoryIsInvalid() throws IOException {
        Path file = Files.writeString(tmp.resolve("file"), "x");
        assertThatThrownBy(() -> new LayerWriter().write(file, new ByteArrayOutputStream(), false, 0))
                .isInstanceOf(SandboxException.class)
                .extracting(e -> ((SandboxException) e).code()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
    }
}
