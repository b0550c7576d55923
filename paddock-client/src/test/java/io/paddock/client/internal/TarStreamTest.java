package io.paddock.client.internal;

import io.paddock.testkit.TestRegistry;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The tar a remote build sends, read back by a standard reader (commons-compress). */
class TarStreamTest {
    @TempDir
    Path dir;

    /** An entry as read back: type, mode, link target, content. */
    record Read(char type, int mode, String link, String content) {
    }

    private static Map<String, Read> read(InputStream tar) throws IOException {
        Map<String, Read> out = new LinkedHashMap<>();
        try (TarArchiveInputStream in = new TarArchiveInputStream(tar)) {
            for (TarArchiveEntry e; (e = in.getNextEntry()) != null; ) {
                char type = e.isSymbolicLink() ? 'l' : e.isDirectory() ? 'd' : e.isFile() ? 'f' : '?';
                assertThat(e.getLongUserId()).isZero();
                out.put(e.getName(), new Read(type, e.getMode() & 07777, e.getLinkName(),
                        new String(in.readAllBytes(), StandardCharsets.UTF_8)));
            }
        }
        return out;
    }

    @Test
    void aTreeGoesInWithModesAndLinksAsLinks() throws IOException {
        Path ctx = Files.createDirectory(dir.resolve("ctx"));
        Files.writeString(ctx.resolve("b.txt"), "bee");
        Path script = Files.writeString(ctx.resolve("a.sh"), "#!/bin/sh\n");
        Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwxr-x---"));
        Files.createDirectories(ctx.resolve("sub/deeper"));
        Files.writeString(ctx.resolve("sub/deeper/c.txt"), "c".repeat(1000));
        Files.createSymbolicLink(ctx.resolve("sub/out"), Path.of("/etc/shadow"));
        Files.createSymbolicLink(ctx.resolve("sub/dirlink"), Path.of("deeper"));
        String longName = "n".repeat(150) + "-é.txt";
        Files.writeString(ctx.resolve("sub").resolve(longName), "long");
        List<String> skipped = new ArrayList<>();
        TestRegistry.run(ctx, "mkfifo", "pipe");

        Map<String, Read> tar = read(TarStream.builder().tree("", ctx).onSkipped(skipped::add).open());
        assertThat(tar.keySet()).containsExactly("a.sh", "b.txt", "sub/", "sub/deeper/", "sub/deeper/c.txt", "sub/dirlink",
                "sub/" + longName, "sub/out");
        assertThat(tar.get("a.sh")).isEqualTo(new Read('f', 0750, "", "#!/bin/sh\n"));
        assertThat(tar.get("sub/deeper/c.txt").content()).hasSize(1000);
        assertThat(tar.get("sub/out")).isEqualTo(new Read('l', 0777, "/etc/shadow", ""));
        assertThat(tar.get("sub/dirlink").link()).isEqualTo("deeper"); // not followed: nothing of deeper/ twice
        assertThat(tar.get("sub/" + longName).content()).isEqualTo("long");
        assertThat(tar.get("sub/").type()).isEqualTo('d');
        assertThat(skipped).containsExactly("pipe");
    }

    @Test
    void bytesAndNamedSourcesGoUnderTheirNames() throws IOException {
        Path file = Files.writeString(dir.resolve("app.py"), "print(1)\n");
        Path data = Files.createDirectories(dir.resolve("data"));
        Files.writeString(data.resolve("x"), "x");
        Map<String, Read> tar = read(TarStream.builder().bytes("image.json", "{}".getBytes(StandardCharsets.UTF_8))
                .tree("local-0/app.py", file).tree("local-1/data", data).open());
        assertThat(tar.keySet()).containsExactly("image.json", "local-0/app.py", "local-1/data/", "local-1/data/x");
        assertThat(tar.get("image.json").content()).isEqualTo("{}");
        assertThat(tar.get("local-0/app.py").content()).isEqualTo("print(1)\n");
    }

    @Test
    void eachOpenReadsTheDiskAnewAndAReadFailureNamesTheFile() throws IOException {
        Path ctx = Files.createDirectory(dir.resolve("ctx"));
        Files.writeString(ctx.resolve("a"), "1");
        TarStream.Builder b = TarStream.builder().tree("", ctx);
        assertThat(read(b.open()).get("a").content()).isEqualTo("1");
        Files.writeString(ctx.resolve("a"), "22");
        assertThat(read(b.open()).get("a").content()).isEqualTo("22");

        // a directory that cannot be listed (gone by the time the walk reaches it)
        Files.createDirectory(ctx.resolve("z"));
        TarStream s = b.open();
        byte[] first = s.readNBytes(512); // the header of 'a'
        assertThat(first).isNotEmpty();
        Files.delete(ctx.resolve("z"));
        Files.delete(ctx.resolve("a"));
        assertThatThrownBy(s::readAllBytes).isInstanceOf(IOException.class).hasMessageContaining("'z'");
        assertThat(s.failure()).isNotNull();
    }

    @Test
    void paxRecordsCountTheirOwnLength() {
        for (String v : List.of("", "x", "x".repeat(90), "x".repeat(94), "x".repeat(95), "é".repeat(500))) {
            String r = TarStream.record("path", v);
            int declared = Integer.parseInt(r.substring(0, r.indexOf(' ')));
            assertThat(r.getBytes(StandardCharsets.UTF_8)).hasSize(declared);
        }
    }
}
