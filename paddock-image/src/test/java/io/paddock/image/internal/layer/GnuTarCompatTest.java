package io.paddock.image.internal.layer;

import io.paddock.image.internal.oci.Digest;
import io.paddock.image.internal.oci.MediaTypes;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.UserDefinedFileAttributeView;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;

import static org.assertj.core.api.Assertions.assertThat;

/** Layers made by a tar we did not write (GNU tar, with gzip and zstd) extract to the tree they came from. */
class GnuTarCompatTest {
    @TempDir
    Path tmp;

    private Path src;

    @BeforeEach
    void makeTree() throws IOException {
        src = Files.createDirectory(tmp.resolve("src"));
        Path usr = Files.createDirectories(src.resolve("usr/bin"));
        Files.writeString(usr.resolve("su"), "#!/bin/sh\n");
        Files.createLink(usr.resolve("su-again"), usr.resolve("su"));
        Files.createSymbolicLink(usr.resolve("sh"), Path.of("/bin/bash"));
        Files.createSymbolicLink(src.resolve("dangling"), Path.of("../nowhere/at/all"));
        Path home = Files.createDirectories(src.resolve("home/user"));
        Files.write(home.resolve("data.bin"), new byte[100_000]);
        Files.writeString(home.resolve("ünïcødé"), "u");
        Path deep = Files.createDirectories(src.resolve("deep/" + "d".repeat(120) + "/" + "e".repeat(120)));
        Files.writeString(deep.resolve("f".repeat(200)), "deep");
        Files.createDirectory(src.resolve("empty"));
        Path tmpDir = Files.createDirectory(src.resolve("tmp"));
        Path ro = Files.createDirectory(src.resolve("ro"));
        Files.writeString(ro.resolve("inside"), "i");
        Trees.run(src, "mkfifo", "fifo");
        Path xattrDir = Files.createDirectory(src.resolve("xattr"));
        Files.getFileAttributeView(xattrDir, UserDefinedFileAttributeView.class)
                .write("overlay.opaque", ByteBuffer.wrap("y".getBytes(StandardCharsets.US_ASCII)));

        Trees.chown(home, 1000, 1000);
        Trees.chown(home.resolve("data.bin"), 1000, 100);
        Trees.chown(src.resolve("dangling"), 7, 8);
        Trees.chmod(usr.resolve("su"), 04755);
        Trees.chmod(tmpDir, 01777);
        Trees.chmod(ro, 0555);

        List<Path> all = new ArrayList<>();
        try (Stream<Path> w = Files.walk(src)) {
            w.forEach(all::add);
        }
        all.sort((a, b) -> b.getNameCount() - a.getNameCount());
        long t = 1_400_000_000L;
        for (Path p : all) {
            if (!p.endsWith("fifo")) {
                Trees.setMtime(p, t++);
            }
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({
            "gnu, none", "gnu, gzip", "gnu, zstd",
            "pax, none", "pax, gzip", "pax, zstd"})
    void extractsWhatGnuTarArchived(String format, String compression) throws IOException {
        Path tar = tmp.resolve("layer.tar");
        List<String> command = new ArrayList<>(List.of("tar", "--numeric-owner", "-c", "--format=" + format));
        if (format.equals("pax")) {
            command.add("--xattrs"); // records user.overlay.opaque, which must not be written back
        }
        switch (compression) {
            case "gzip":
                command.add("-z");
                break;
            case "zstd":
                command.add("--zstd");
                break;
            default:
                break;
        }
        command.addAll(List.of("-f", tar.toString(), "."));
        Trees.run(src, command.toArray(String[]::new));
        String mediaType = compression.equals("gzip") ? MediaTypes.OCI_LAYER_GZIP
                : compression.equals("zstd") ? MediaTypes.OCI_LAYER_ZSTD : MediaTypes.OCI_LAYER;
        Path target = Files.createDirectory(tmp.resolve("target"));

        LayerResult r;
        try (InputStream in = Files.newInputStream(tar)) {
            r = new LayerExtractor(Whiteouts.MKNOD).extract(in, mediaType, target, LayerExtractor.Limits.DEFAULT);
        }

        TreeMap<String, String> expected = Trees.snapshot(src);
        expected.remove("fifo");
        expected.put("xattr", expected.get("xattr").replace(" opaque", "")); // xattrs from a tar are never written
        assertThat(Trees.snapshot(target)).isEqualTo(expected);
        assertThat(r.skipped()).isEqualTo(1); // the FIFO
        assertThat(Trees.inode(target.resolve("usr/bin/su-again"))).isEqualTo(Trees.inode(target.resolve("usr/bin/su")));
        assertThat(Trees.describe(target, 0)).isEqualTo(Trees.describe(src, 0)); // "./" applies to the root
        byte[] plain = uncompressed(tar, compression);
        assertThat(r.diffId()).isEqualTo(Digest.of(plain));
        assertThat(r.uncompressedBytes()).isEqualTo(plain.length);
        if (format.equals("pax")) {
            assertThat(new String(plain, StandardCharsets.ISO_8859_1)).contains("SCHILY.xattr.user.overlay.opaque=y");
        }
    }

    private static byte[] uncompressed(Path file, String compression) throws IOException {
        switch (compression) {
            case "gzip":
                try (InputStream in = new GZIPInputStream(Files.newInputStream(file))) {
                    return in.readAllBytes();
                }
            case "zstd":
                return Trees.runBytes("zstd", "-dc", file.toString());
            default:
                return Files.readAllBytes(file);
        }
    }
}
