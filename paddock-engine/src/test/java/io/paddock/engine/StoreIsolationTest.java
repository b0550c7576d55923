package io.paddock.engine;

import io.paddock.ByteSize;
import io.paddock.CodebaseMount;
import io.paddock.ExecResult;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.PermissionPreset;
import io.paddock.PermissionRule;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.VolumeMount;
import io.paddock.testkit.HostView;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * ATTACKS.md A85 on both tiers: the shared btrfs store (every tenant's codebase revisions, volumes and sandboxes'
 * writable layers) is root's own, mode 0700, after mounting, so a host process with another sandbox's host uid and
 * no capabilities (A35's model of what a runc escape lands as) reads nothing of it: not a codebase's revision
 * (a {@code none} file included), not a volume, not another sandbox's writable layer. The sandbox that owns them
 * still reads and writes them through its mounts. Real btrfs, real sandboxes; the leak check runs after each.
 */
class StoreIsolationTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    static final String SECRET = "STORE-SECRET-" + UUID.randomUUID();
    static final Path WRITABLE = LocalOptions.DEFAULT_STORAGE_DIR.resolve("writable");

    @TestInstance(TestInstance.Lifecycle.PER_CLASS)
    abstract static class OnTier {
        Paddock paddock;
        Path source;

        abstract String tier();

        abstract HostView host();

        @BeforeAll
        void start() throws IOException, InterruptedException {
            ImageFixtures.busybox();
            paddock = Paddock.local(LocalOptions.builder().defaultRuntime(tier()).build());
            source = Files.createTempDirectory("paddock-store");
            Files.createDirectories(source.resolve("secrets"));
            Files.writeString(source.resolve("secrets/key.txt"), SECRET, StandardCharsets.UTF_8);
            Files.writeString(source.resolve("readme.md"), "hello", StandardCharsets.UTF_8);
        }

        @AfterAll
        void stop() throws IOException {
            io.paddock.image.internal.store.ImageStore.deleteTree(source);
            if (paddock != null) {
                paddock.close();
            }
        }

        @Test
        void a85_anotherSandboxsHostUidReadsNoRevisionVolumeOrWritableLayer() throws Exception {
            String codebase = "st-cb-" + UUID.randomUUID().toString().substring(0, 8);
            String volume = "st-vol-" + UUID.randomUUID().toString().substring(0, 8);
            paddock.codebases().create(codebase, source);
            paddock.volumes().create(volume, ByteSize.mib(16));
            try (Sandbox a = paddock.create(SandboxSpec.builder().image(ImageFixtures.BUSYBOX).memory(ByteSize.mib(128))
                    .disk(ByteSize.mib(64)).pids(64)
                    .codebase(new CodebaseMount(codebase, "/workspace", PermissionPreset.DEVELOPMENT,
                            List.of(PermissionRule.parse("secrets/**:none"))))
                    .volume(VolumeMount.parse(volume + ":/data")).build());
                 Sandbox b = paddock.create(SandboxSpec.builder().memory(ByteSize.mib(128)).pids(64).build())) {
                // A still uses its own: the volume and its root layer written, the codebase read, the none file hidden.
                assertThat(ok(a, "echo " + SECRET + " > /data/v.txt && echo " + SECRET
                        +  " > /layer.txt && cat /workspace/readme.md")).isEqualTo("hello");
                assertThat(a.exec("cat", "/workspace/secrets/key.txt").exitCode()).isNotZero();

                // What A's tenant has on the host, each checked to exist, so that a refusal below means something.
                List<Path> targets = new ArrayList<>();
                targets.add(WRITABLE.resolve("codebases").resolve(codebase).resolve("r1/secrets/key.txt"));
                targets.add(WRITABLE.resolve("volumes").resolve(volume).resolve("data/v.txt"));
                Path upper = WRITABLE.resolve(a.id().value()).resolve("upper");
                try (var found = Files.find(upper, 2, (p, attrs) -> p.getFileName().toString().equals("layer.txt"))) {
                    found.forEach(targets::add);
                }
                assertThat(targets).as("A's writable layer holds its file").hasSize(3);
                for (Path t : targets) {
                    assertThat(Files.readString(t)).as(t + " as root").contains(SECRET);
                }

                // B's host uids: its root's (what a runc escape, or runsc's gofer, is) and its user's.
                HostView.UidRange rb = host().uidRange(b.id());
                for (long uid : List.of(rb.base(), rb.base() + 1000)) {
                    for (Path t : targets) {
                        Result r = runAs(uid, "cat", t.toString());
                        assertThat(r.exit).as("uid %d: cat %s gave %s", uid, t, r.output).isNotZero();
                        assertThat(r.output).doesNotContain(SECRET);
                    }
                    assertThat(runAs(uid, "ls", WRITABLE.toString()).exit).as("uid %d lists the store", uid).isNotZero();
                    // Nor through A's live mounts on the host (its volume's and codebase's mount points).
                    Path mounts = LocalOptions.DEFAULT_STATE_DIR.resolve("mounts").resolve(a.id().value());
                    assertThat(Files.readString(mounts.resolve("1/v.txt"))).as("A's volume mount, as root").contains(SECRET);
                    for (String f : List.of("0/readme.md", "1/v.txt")) {
                        Result r = runAs(uid, "cat", mounts.resolve(f).toString());
                        assertThat(r.exit).as("uid %d: cat %s gave %s", uid, mounts.resolve(f), r.output).isNotZero();
                    }
                    // Nor through A's root, mounted on the host (the ids are no secret: mountinfo names them).
                    Path root = LocalOptions.DEFAULT_STATE_DIR.resolve("roots").resolve(a.id().value());
                    try (var found = Files.find(root, 2, (p, attrs) -> p.getFileName().toString().equals("layer.txt"))) {
                        List<Path> files = found.toList();
                        assertThat(files).as("A's root on the host holds its file").hasSize(1);
                        for (Path p : files) {
                            assertThat(Files.readString(p)).as(p + " as root").contains(SECRET);
                            Result r = runAs(uid, "cat", p.toString());
                            assertThat(r.exit).as("uid %d: cat %s gave %s", uid, p, r.output).isNotZero();
                        }
                    }
                    Result listing = runAs(uid, "sh", "-c", "cat " + root + "/layer.txt " + root + "/*/layer.txt");
                    assertThat(listing.output).doesNotContain(SECRET);
                }
                // The store's roots: root's own, 0700, after mounting.
                for (Path root : List.of(WRITABLE, WRITABLE.resolve("codebases"), WRITABLE.resolve("volumes"))) {
                    assertThat(Files.getAttribute(root, "unix:uid", LinkOption.NOFOLLOW_LINKS)).as(root + " owner").isEqualTo(0);
                    assertThat((Integer) Files.getAttribute(root, "unix:mode", LinkOption.NOFOLLOW_LINKS) & 0777)
                            .as(root + " mode").isEqualTo(0700);
                }
            } finally {
                paddock.codebases().remove(codebase);
                paddock.volumes().remove(volume);
            }
        }

        static String ok(Sandbox sb, String script) {
            ExecResult r = sb.exec("sh", "-c", script);
            assertThat(r.exitCode()).as(script + ": " + r.stderrText()).isZero();
            return r.stdoutText();
        }
    }

    record Result(int exit, String output) {
    }

    /** Runs a command on the host as {@code uid} (and gid), with no groups and no capabilities (A35's model). */
    static Result runAs(long uid, String... command) throws Exception {
        List<String> argv = new ArrayList<>(List.of("setpriv", "--reuid=" + uid, "--regid=" + uid, "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all"));
        argv.addAll(List.of(command));
        Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(10, TimeUnit.SECONDS)).as("%s ended", argv).isTrue();
        return new Result(p.exitValue(), out);
    }

    @Nested
    class Runc extends OnTier {
        @Override
        String tier() {
            return "runc";
        }

        @Override
        HostView host() {
            return new RuncHostView(LocalOptions.DEFAULT_STATE_DIR);
        }
    }

    @Nested
    class Runsc extends OnTier {
        @Override
        String tier() {
            return "runsc";
        }

        @Override
        HostView host() {
            return new RunscHostView(LocalOptions.DEFAULT_STATE_DIR);
        }
    }
}
