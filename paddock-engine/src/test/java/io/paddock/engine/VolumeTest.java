package io.paddock.engine;

import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.ExecResult;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import io.paddock.VolumeInfo;
import io.paddock.VolumeMount;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Volumes on both tiers, through the engine: files shared by concurrent sandboxes (of the host image and of a
 * stored image, which run as different users) and kept after they are destroyed, read-only mounts, the size
 * enforced by the filesystem (EDQUOT), removal refused while a sandbox mounts the volume, bad mounts refused,
 * and links a sandbox plants in a volume leading nowhere on the host (neither for another sandbox nor for the
 * engine's own walk). Nothing is left behind but the volumes, which each test removes (the leak check).
 */
class VolumeTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    @BeforeAll
    static void images() throws IOException, InterruptedException {
        ImageFixtures.busybox();
    }

    static String uniqueName(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    static void assertCode(Runnable call, ErrorCode code, String message) {
        assertThatThrownBy(call::run).isInstanceOfSatisfying(SandboxException.class, e -> {
            assertThat(e.code()).as(e.getMessage()).isEqualTo(code);
            assertThat(e.getMessage()).contains(message);
        });
    }

    @TestInstance(TestInstance.Lifecycle.PER_CLASS)
    abstract static class OnTier {
        Paddock paddock;
        final List<String> volumes = new ArrayList<>();

        abstract String tier();

        @BeforeAll
        void start() {
            paddock = Paddock.local(LocalOptions.builder().defaultRuntime(tier()).build());
        }

        @AfterEach
        void removeVolumes() {
            for (String v : volumes) {
                try {
                    paddock.volumes().remove(v);
                } catch (SandboxException e) {
                    if (e.code() != ErrorCode.NOT_FOUND) {
                        throw e;
                    }
                }
            }
            volumes.clear();
        }

        @AfterAll
        void stop() {
            if (paddock != null) {
                paddock.close();
            }
        }

        String volume(ByteSize size) {
            String name = uniqueName("vt-" + tier());
            volumes.add(name);
            VolumeInfo info = paddock.volumes().create(name, size);
            assertThat(info.name()).isEqualTo(name);
            assertThat(info.size()).isEqualTo(size);
            assertThat(info.sandboxes()).isEmpty();
            return name;
        }

        Sandbox host(String... volumes) {
            SandboxSpec.Builder b = SandboxSpec.builder().memory(ByteSize.mib(128)).pids(64);
            for (String v : volumes) {
                b.volume(VolumeMount.parse(v));
            }
            return paddock.create(b.build());
        }

        Sandbox image(String... volumes) {
            SandboxSpec.Builder b = SandboxSpec.builder().image(ImageFixtures.BUSYBOX).memory(ByteSize.mib(128))
                    .disk(ByteSize.mib(64)).pids(64);
            for (String v : volumes) {
                b.volume(VolumeMount.parse(v));
            }
            return paddock.create(b.build());
        }

        static ExecResult sh(Sandbox sb, String script) {
            return sb.exec("sh", "-c", script);
        }

        static String ok(Sandbox sb, String script) {
            ExecResult r = sh(sb, script);
            assertThat(r.exitCode()).as(script + ": " + r.stderrText()).isZero();
            return r.stdoutText();
        }

        @Test
        void concurrentSandboxesShareTheFilesWhichOutliveThem() {
            String v = volume(ByteSize.mib(64));
            try (Sandbox a = host(v + ":/data"); Sandbox b = image(v + ":/mnt/shared")) {
                ok(a, "echo from-a > /data/a.txt");
                assertThat(ok(b, "cat /mnt/shared/a.txt; echo from-b > /mnt/shared/b.txt")).isEqualTo("from-a\n");
                assertThat(ok(a, "cat /data/b.txt")).isEqualTo("from-b\n");
                // Each wrote as its own user; both see the same owners (the host image's 1000, the image's root).
                assertThat(ok(a, "stat -c '%u %n' /data/a.txt /data/b.txt")).isEqualTo("1000 /data/a.txt\n0 /data/b.txt\n");
                assertThat(paddock.volumes().get(v).sandboxes()).containsExactlyInAnyOrder(a.id(), b.id());
            }
            assertThat(paddock.volumes().get(v).sandboxes()).isEmpty();
            assertThat(paddock.volumes().get(v).used()).isEqualTo(14);
            try (Sandbox c = host(v + ":/data")) {
                assertThat(ok(c, "cat /data/a.txt /data/b.txt")).isEqualTo("from-a\nfrom-b\n");
            }
        }

        @Test
        void aReadOnlyMountCannotBeWritten() {
            String v = volume(ByteSize.mib(16));
            try (Sandbox w = host(v + ":/data")) {
                ok(w, "echo kept > /data/f");
            }
            try (Sandbox r = host(v + ":/data:ro")) {
                assertThat(ok(r, "cat /data/f")).isEqualTo("kept\n");
                ExecResult write = sh(r, "echo y > /data/g");
                assertThat(write.exitCode()).isNotZero();
                assertThat(write.stderrText()).containsIgnoringCase("read-only");
                assertThat(sh(r, "rm /data/f").exitCode()).isNotZero();
            }
        }

        @Test
        void writesPastTheSizeFailWithDiskQuotaExceeded() {
            String v = volume(ByteSize.mib(8));
            try (Sandbox sb = host(v + ":/data")) {
                ExecResult r = sh(sb, "dd if=/dev/zero of=/data/big bs=1M count=32 2>&1; sync");
                assertThat(r.stdoutText()).containsIgnoringCase("quota exceeded");
                // The sandbox's own disk and memory are not what stopped it: the volume's size is.
                long used = paddock.volumes().get(v).used();
                assertThat(used).isLessThanOrEqualTo(ByteSize.mib(8).bytes()).isGreaterThan(ByteSize.mib(4).bytes());
                ok(sb, "rm /data/big; echo again > /data/small");
            }
        }

        @Test
        void aMountedVolumeCannotBeRemoved() {
            String v = volume(ByteSize.mib(16));
            try (Sandbox sb = host(v + ":/data:ro")) {
                assertCode(() -> paddock.volumes().remove(v), ErrorCode.FAILED_PRECONDITION, sb.id().value());
                assertThat(paddock.volumes().list()).extracting(VolumeInfo::name).contains(v);
            }
            paddock.volumes().remove(v);
            assertThat(paddock.volumes().list()).extracting(VolumeInfo::name).doesNotContain(v);
            assertCode(() -> paddock.volumes().get(v), ErrorCode.NOT_FOUND, v);
            assertCode(() -> paddock.volumes().remove(v), ErrorCode.NOT_FOUND, v);
            assertCode(() -> host(v + ":/data"), ErrorCode.INVALID_ARGUMENT, "no volume named '" + v + "'");
        }

        @Test
        void linksPlantedInAVolumeLeadNowhereOnTheHost() throws IOException {
            Path marker = Files.createTempFile(Path.of("/root"), "paddock-volume-marker", ".txt");
            try {
                Files.writeString(marker, "HOST-SECRET");
                String v = volume(ByteSize.mib(16));
                try (Sandbox a = host(v + ":/data")) {
                    ok(a, "ln -s / /data/root; ln -s ../../../../../../.. /data/up; ln -s ../volume.properties /data/record;"
                            + " ln -s " + marker + " /data/marker; mkdir -p /data/d/e; ln -s ../../../../../../ /data/d/e/up");
                }
                try (Sandbox b = image(v + ":/data")) {
                    String name = marker.getFileName().toString();
                    for (String path : List.of("/data/root/root/" + name, "/data/up/root/" + name, "/data/marker",
                            "/data/d/e/up/root/" + name, "/data/record")) {
                        ExecResult r = sh(b, "cat " + path);
                        assertThat(r.exitCode()).as(path).isNotZero();
                        assertThat(r.stdoutText()).doesNotContain("HOST-SECRET").doesNotContain("size=");
                    }
                }
                // The engine's walk counts the links themselves, never what they point at.
                assertThat(paddock.volumes().get(v).used()).isLessThan(4096);
            } finally {
                Files.deleteIfExists(marker);
            }
        }

        @Test
        void aSandboxCannotMakeASubvolumeThatEscapesTheSizeOrPinsTheVolume() {
            String v = volume(ByteSize.mib(8));
            // The volume is the sandbox's btrfs subvolume, written straight through; a subvolume made in it would
            // have no limit and keep the volume from being deleted. The seccomp profile refuses btrfs's ioctls.
            try (Sandbox sb = host(v + ":/srv")) {
                ExecResult r = sh(sb, "btrfs subvolume create /srv/sub 2>&1; echo rc=$?;"
                        + " btrfs subvolume snapshot /srv /srv/snap 2>&1; echo rc=$?");
                assertThat(r.stdoutText()).doesNotContain("rc=0").contains("rc=1");
                assertThat(sh(sb, "dd if=/dev/zero of=/srv/sub/big bs=1M count=32 2>&1").exitCode()).isNotZero();
            }
            paddock.volumes().remove(v);
        }
    }

    @Nested
    class Runc extends OnTier {
        @Override
        String tier() {
            return "runc";
        }

        @Test
        void badNamesSizesAndMountsAreRefused() {
            assertCode(() -> paddock.volumes().create("../x", ByteSize.mib(16)), ErrorCode.INVALID_ARGUMENT, "not a valid name");
            assertCode(() -> paddock.volumes().create("Data", ByteSize.mib(16)), ErrorCode.INVALID_ARGUMENT, "not a valid name");
            assertCode(() -> paddock.volumes().create("tiny", ByteSize.kib(4)), ErrorCode.INVALID_ARGUMENT, "size");
            assertCode(() -> paddock.volumes().get(".new-x"), ErrorCode.NOT_FOUND, "no volume");
            String v = volume(ByteSize.mib(16));
            assertCode(() -> paddock.volumes().create(v, ByteSize.mib(16)), ErrorCode.ALREADY_EXISTS, v);
            for (String bad : List.of(v + ":data", v + ":/proc", v + ":/etc/x", v + ":/data/../tmp", v + ":/data:rx",
                    v + ":/", "../" + v + ":/data", v)) {
                assertCode(() -> VolumeMount.parse(bad), ErrorCode.INVALID_ARGUMENT, "");
            }
            assertCode(() -> host(v + ":/data", v + ":/data/sub"), ErrorCode.INVALID_ARGUMENT, "/data");
            // A83d: a reservation past the store's free space is refused; the loop file is sparse, so that is the
            // host disk's free space less its reserve, never the 1 TiB btrfs would say.
            String huge = uniqueName("vt-huge");
            volumes.add(huge);
            assertCode(() -> paddock.volumes().create(huge, ByteSize.gib(1024)), ErrorCode.RESOURCE_EXHAUSTED, "free");
            // ... and the store itself cannot grow past it: its size is what its loop file holds plus the host's free
            // space, less the reserve.
            try {
                Path storage = LocalOptions.DEFAULT_STORAGE_DIR;
                long size = Files.getFileStore(storage.resolve("writable")).getTotalSpace();
                long hostFree = Files.getFileStore(storage).getUsableSpace();
                Process stat = new ProcessBuilder("stat", "-c", "%b %B", storage.resolve("writable.btrfs").toString()).start();
                String[] f = new String(stat.getInputStream().readAllBytes()).strip().split("\\s+");
                long held = Long.parseLong(f[0]) * Long.parseLong(f[1]);
                long total = Files.getFileStore(storage).getTotalSpace(); // the reserve: 5%, 2-64 GiB
                long reserve = Math.min(64L << 30, Math.max(2L << 30, total / 20));
                assertThat(size).as("the store's size (host free %d, loop file holds %d, reserve %d)", hostFree, held, reserve)
                        .isLessThanOrEqualTo(held + hostFree - reserve + (1L << 30));
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            // The host image's root is writable (into the sandbox's own layer): a mount point is made there.
            try (io.paddock.Sandbox sb = host(v + ":/mnt/deeper")) {
                assertThat(sb.exec("sh", "-c", "touch /mnt/deeper/ok && ls /mnt/deeper").stdoutText()).isEqualTo("ok\n");
            }
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
