package io.paddock.workspace.internal;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.UserDefinedFileAttributeView;

import static org.assertj.core.api.Assertions.assertThat;

class UpperDiffTest {
    @TempDir
    Path tmp;

    /** Below an opaque directory the base is hidden at every depth: what a directory there lacks is deleted. */
    @Test
    void anOpaqueDirectoryHidesTheBaseAtEveryDepth() throws IOException {
        Path base = tmp.resolve("base");
        Files.createDirectories(base.resolve("out/sub"));
        Files.writeString(base.resolve("out/sub/old.txt"), "old");
        Files.writeString(base.resolve("out/top.txt"), "top");
        Path upper = tmp.resolve("upper");
        Files.createDirectories(upper.resolve("out/sub"));
        Files.writeString(upper.resolve("out/sub/new.txt"), "new");
        Files.getFileAttributeView(upper.resolve("out"), UserDefinedFileAttributeView.class)
                .write("overlay.opaque", ByteBuffer.wrap("y".getBytes(StandardCharsets.US_ASCII)));
        assertThat(UpperDiff.of(upper, base, Revisions.list(base)).stream().map(c -> c.kind() + " " + c.path()))
                .containsExactly("ADDED out/sub/new.txt", "DELETED out/sub/old.txt", "DELETED out/top.txt");
    }
}
