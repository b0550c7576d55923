package io.paddock.engine;

import io.paddock.LocalOptions;
import io.paddock.image.internal.ImageService;
import io.paddock.image.internal.oci.ImageConfig;
import io.paddock.image.internal.store.ImageStore;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Small images for tests, made by GNU tar from the host's busybox-static and imported through the image
 * store: {@value #BUSYBOX} (two layers: the second deletes {@code /gone.txt} and adds {@code /second.txt};
 * root; an {@code app} user 1234:1235) and {@value #BUSYBOX_USER} (the same, running as {@code app} in
 * {@code /home/app}). Imported once per JVM; importing again finds the same layers.
 */
final class ImageFixtures {
    static final String BUSYBOX = "paddock-test/busybox:1";
    static final String BUSYBOX_USER = "paddock-test/busybox-user:1";
    static final List<String> APPLETS = List.of("sh", "cat", "ls", "echo", "dd", "id", "test", "sync", "touch", "grep",
            "rm", "head", "pwd", "stat", "env", "wget", "mkdir", "sleep", "chmod", "ln", "find");
    private static ImageStore.StoredImage base;

    private ImageFixtures() {
    }

    static ImageService service() {
        return new ImageService(LocalOptions.DEFAULT_STORAGE_DIR.resolve("images"));
    }

    static synchronized ImageStore.StoredImage busybox() throws IOException, InterruptedException {
        if (base != null) {
            return base;
        }
        ImageService images = service();
        Path work = Files.createTempDirectory("paddock-image-test");
        try {
            Path l1 = work.resolve("l1");
            Files.createDirectories(l1.resolve("bin"));
            Files.createDirectories(l1.resolve("etc"));
            Files.createDirectories(l1.resolve("tmp"));
            Path busybox = Path.of("/bin/busybox");
            assertThat(busybox).as("busybox-static is needed: apt-get install -y busybox-static").exists();
            Files.copy(busybox, l1.resolve("bin/busybox"));
            for (String c : APPLETS) {
                Files.createSymbolicLink(l1.resolve("bin/" + c), Path.of("busybox"));
            }
            Files.writeString(l1.resolve("hello.txt"), "hello-from-layer-1\n");
            Files.writeString(l1.resolve("gone.txt"), "gone\n");
            Files.writeString(l1.resolve("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\napp:x:1234:1235:app:/home/app:/bin/sh\n");
            Files.writeString(l1.resolve("etc/group"), "root:x:0:\napp:x:1235:\n");
            Path l2 = work.resolve("l2");
            Files.createDirectories(l2);
            Files.writeString(l2.resolve("second.txt"), "two\n");
            Files.createFile(l2.resolve(".wh.gone.txt"));
            Path t1 = tar(l1, work.resolve("l1.tar"));
            Path t2 = tar(l2, work.resolve("l2.tar"));
            ImageConfig config = ImageConfig.empty().withEnv(List.of("PATH=/bin", "GREETING=fixture"));
            base = images.importLayers(List.of(t1, t2), config, List.of(BUSYBOX));
            images.importLayers(List.of(t1, t2), config.withUser("app").withWorkingDir("/home/app"), List.of(BUSYBOX_USER));
            return base;
        } finally {
            ImageStore.deleteTree(work);
        }
    }

    static Path tar(Path dir, Path out) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("tar", "--numeric-owner", "--owner=0", "--group=0", "-C", dir.toString(),
                "-cf", out.toString(), ".").inheritIO().start();
        assertThat(p.waitFor()).isZero();
        return out;
    }
}
