package io.paddock.image.internal;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.image.internal.oci.ImageConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The image store on a full disk (a 4 MiB tmpfs, so the test needs root, as CI has): importing a layer
 * bigger than the space fails with a clear error and leaves no half-unpacked layer, no temporary file and
 * no image; the store works again once there is room.
 */
class FullDiskTest {
    @TempDir
    Path tmp;
    Path mount;

    @BeforeEach
    void mountSmallDisk() throws Exception {
        mount = Files.createDirectories(tmp.resolve("disk"));
        Process p = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mount.toString()).inheritIO().start();
        assertThat(p.waitFor()).as("mounting a tmpfs needs root (CI runs as root)").isZero();
    }

    @AfterEach
    void unmount() throws Exception {
        new ProcessBuilder("umount", "-l", mount.toString()).inheritIO().start().waitFor();
    }

    static Path tarOf(Path dir, Path out) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("tar", "--numeric-owner", "-C", dir.toString(), "-cf", out.toString(), ".")
                .inheritIO().start();
        assertThat(p.waitFor()).isZero();
        return out;
    }

    @Test
    void aLayerBiggerThanTheDiskFailsCleanly() throws Exception {
        Path src = Files.createDirectories(tmp.resolve("src"));
        byte[] noise = new byte[1 << 20];
        new Random(1).nextBytes(noise);
        for (int i = 0; i < 8; i++) {
            Files.write(src.resolve("f" + i), noise);
        }
        Path big = tarOf(src, tmp.resolve("big.tar"));
        ImageService images = new ImageService(mount.resolve("images"));
        assertThatThrownBy(() -> images.importLayers(List.of(big), ImageConfig.empty(), List.of("full:1")))
                .isInstanceOfSatisfying(SandboxException.class, e -> {
                    assertThat(e.code()).isIn(ErrorCode.RESOURCE_EXHAUSTED, ErrorCode.UNAVAILABLE);
                    assertThat(e.getMessage()).containsIgnoringCase("space");
                });
        try (Stream<Path> layers = Files.list(images.store().layersDir())) {
            assertThat(layers).as("no half-unpacked layer").isEmpty();
        }
        try (Stream<Path> w = Files.walk(images.store().root())) {
            assertThat(w.filter(Files::isRegularFile).map(p -> p.getFileName().toString()))
                    .as("no temporary file or blob left").noneMatch(n -> n.startsWith(".tmp-") || n.startsWith(".layer-"));
        }
        assertThat(images.store().find("full:1")).isEmpty();

        Path small = Files.createDirectories(tmp.resolve("small"));
        Files.writeString(small.resolve("ok.txt"), "fits\n");
        assertThat(images.importLayers(List.of(tarOf(small, tmp.resolve("small.tar"))), ImageConfig.empty(),
                List.of("fits:1")).config().diffIds()).hasSize(1);
    }
}
