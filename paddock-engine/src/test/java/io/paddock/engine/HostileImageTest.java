package io.paddock.engine;

import io.paddock.ErrorCode;
import io.paddock.ExecResult;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import io.paddock.image.internal.ImageService;
import io.paddock.image.internal.oci.ImageConfig;
import io.paddock.image.internal.store.ImageStore;
import io.paddock.testkit.LeakCheckExtension;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Hostile images (ATTACKS.md A66, A64, A33) on both tiers, with the leak check after each: layers that try
 * to write outside the store are refused whole and leave nothing behind; an image whose {@code /proc},
 * {@code /dev} and {@code /sys} are symbolic links to {@code /} is refused or contained; links in an image
 * resolve inside the sandbox; setuid binaries in an image give nothing.
 */
class HostileImageTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);
    static final String LINKS = "paddock-test/links:1";
    static final String SETUID = "paddock-test/setuid:1";
    static final String EVIL = "paddock-test/evil-" + ProcessHandle.current().pid() + ":1";

    static ImageService images;

    @BeforeAll
    static void fixtures() throws Exception {
        ImageFixtures.busybox();
        images = ImageFixtures.service();
        Path work = Files.createTempDirectory("paddock-hostile");
        try {
            // symlinked pseudo-filesystems and a link to the host's shadow file, on top of busybox
            Path links = work.resolve("links.tar");
            try (TarArchiveOutputStream t = tar(links)) {
                symlink(t, "proc", "/");
                symlink(t, "sys", "/");
                symlink(t, "dev", "/");
                directory(t, "etc/");
                symlink(t, "etc/host-shadow", "/etc/shadow");
                symlink(t, "up", "../../../../../../..");
            }
            ImageStore.StoredImage base = ImageFixtures.busybox();
            List<Path> baseTars = exportBusybox(work);
            images.importLayers(List.of(baseTars.get(0), links), base.config().withUser(""), List.of(LINKS));
            // a setuid-root copy of busybox, for the app user to try
            Path setuid = work.resolve("setuid.tar");
            try (TarArchiveOutputStream t = tar(setuid)) {
                directory(t, "suid/");
                TarArchiveEntry e = new TarArchiveEntry("suid/busybox");
                byte[] bin = Files.readAllBytes(Path.of("/bin/busybox"));
                e.setSize(bin.length);
                e.setMode(04755);
                e.setIds(0, 0);
                t.putArchiveEntry(e);
                t.write(bin);
                t.closeArchiveEntry();
            }
            images.importLayers(List.of(baseTars.get(0), setuid), base.config().withUser("app"), List.of(SETUID));
        } finally {
            ImageStore.deleteTree(work);
        }
    }

    /** The busybox fixture's first layer as a tar again (GNU tar of its unpacked directory). */
    static List<Path> exportBusybox(Path work) throws Exception {
        ImageStore.StoredImage base = ImageFixtures.busybox();
        Path layer = images.store().layerPath(base.config().diffIds().get(0));
        return List.of(ImageFixtures.tar(layer, work.resolve("busybox.tar")));
    }

    static TarArchiveOutputStream tar(Path file) throws IOException {
        OutputStream out = Files.newOutputStream(file);
        TarArchiveOutputStream t = new TarArchiveOutputStream(out, StandardCharsets.UTF_8.name());
        t.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
        return t;
    }

    static void symlink(TarArchiveOutputStream t, String name, String target) throws IOException {
        TarArchiveEntry e = new TarArchiveEntry(name, TarArchiveEntry.LF_SYMLINK);
        e.setLinkName(target);
        t.putArchiveEntry(e);
        t.closeArchiveEntry();
    }

    static void directory(TarArchiveOutputStream t, String name) throws IOException {
        TarArchiveEntry e = new TarArchiveEntry(name);
        e.setMode(040755);
        t.putArchiveEntry(e);
        t.closeArchiveEntry();
    }

    static void file(TarArchiveOutputStream t, String name, String content) throws IOException {
        TarArchiveEntry e = new TarArchiveEntry(name, true);
        byte[] b = content.getBytes(StandardCharsets.UTF_8);
        e.setSize(b.length);
        t.putArchiveEntry(e);
        t.write(b);
        t.closeArchiveEntry();
    }

    @Test
    void aLayerThatWritesOutsideIsRefusedWholeAndLeavesNothing(@TempDir Path dir) throws IOException {
        String marker = "paddock-evil-" + ProcessHandle.current().pid();
        Path outside = Path.of("/tmp");
        Path slip = dir.resolve("slip.tar");
        try (TarArchiveOutputStream t = tar(slip)) {
            file(t, "ok.txt", "fine\n");
            file(t, "../../../../../../tmp/" + marker + "-slip", "escaped\n");
        }
        assertRefused(slip);
        // An absolute name is neutralised: it lands inside the layer, as Docker unpacks it.
        Path abs = dir.resolve("abs.tar");
        try (TarArchiveOutputStream t = tar(abs)) {
            file(t, "/tmp/" + marker + "-abs", "inside\n");
        }
        ImageStore.StoredImage neutral = images.importLayers(List.of(abs), ImageConfig.empty(), List.of("paddock-test/abs:1"));
        assertThat(images.store().layerPath(neutral.config().diffIds().get(0)).resolve("tmp/" + marker + "-abs")).exists();
        images.store().remove("paddock-test/abs:1", id -> false);
        Path linkThrough = dir.resolve("link-through.tar");
        try (TarArchiveOutputStream t = tar(linkThrough)) {
            symlink(t, "esc", "/tmp");
            file(t, "esc/" + marker + "-link", "escaped\n");
        }
        assertRefused(linkThrough);
        Path hardlink = dir.resolve("hardlink.tar");
        try (TarArchiveOutputStream t = tar(hardlink)) {
            TarArchiveEntry e = new TarArchiveEntry("passwd-link", TarArchiveEntry.LF_LINK);
            e.setLinkName("/etc/passwd");
            t.putArchiveEntry(e);
            t.closeArchiveEntry();
        }
        assertRefused(hardlink);
        try (Stream<Path> s = Files.list(outside)) {
            assertThat(s.map(p -> p.getFileName().toString())).noneMatch(n -> n.startsWith(marker));
        }
        try (Stream<Path> s = Files.list(images.store().layersDir())) {
            assertThat(s.map(p -> p.getFileName().toString())).as("no half-unpacked layer").noneMatch(n -> n.startsWith(".tmp-"));
        }
        assertThat(Files.readString(Path.of("/etc/passwd"))).contains("root:");
    }

    static void assertRefused(Path tar) {
        assertThatThrownBy(() -> images.importLayers(List.of(tar), ImageConfig.empty(), List.of(EVIL)))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
        assertThat(images.store().find(EVIL)).isEmpty();
    }

    @TestInstance(TestInstance.Lifecycle.PER_CLASS)
    abstract static class OnTier {
        Paddock paddock;

        abstract String tier();

        @BeforeAll
        void start() {
            paddock = Paddock.local(LocalOptions.builder().defaultRuntime(tier()).build());
        }

        @AfterAll
        void stop() {
            if (paddock != null) {
                paddock.close();
            }
        }

        @Test
        void symlinkedPseudoFilesystemsAreRefusedOrContained() {
            Sandbox sb;
            try {
                sb = paddock.create(SandboxSpec.builder().image(LINKS).build());
            } catch (SandboxException refused) {
                return; // runc refuses a symlinked /proc: contained by refusal
            }
            try (sb) {
                ExecResult r = sb.exec("sh", "-c", "grep -c '^Pid:' /proc/self/status; cat /etc/host-shadow 2>&1;"
                        + " ls /up/ | head -3; cat /up/etc/shadow 2>&1; echo done");
                assertThat(r.stdoutText()).as("a real /proc, links resolved inside the sandbox")
                        .startsWith("1\n").doesNotContain("root:$").doesNotContain("root:*").contains("done");
            }
        }

        @Test
        void aSetuidBinaryInTheImageGivesNothing() {
            try (Sandbox sb = paddock.create(SandboxSpec.builder().image(SETUID).build())) {
                ExecResult r = sb.exec("sh", "-c", "set -- $(ls -l /suid/busybox); echo $1; /suid/busybox id -u;"
                        + " grep NoNewPrivs /proc/self/status");
                assertThat(r.stdoutText()).as(r.stderrText()).contains("-rwsr-xr-x").contains("\n1234\n");
                if (tier().equals("runc")) { // gVisor's /proc/self/status has no NoNewPrivs line; the uid above is the proof
                    assertThat(r.stdoutText()).containsPattern("NoNewPrivs:\\s+1");
                }
            }
        }
    }

    @Nested
    class Runc extends OnTier {
        @Override
        String tier() {
            return "runc";
        }
    }

    @Nested
    class Runsc extends OnTier {
        @Override
        String tier() {
            return "runsc";
        }
    }
}
