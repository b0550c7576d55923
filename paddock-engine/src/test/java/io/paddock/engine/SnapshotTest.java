package io.paddock.engine;

import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.ExecResult;
import io.paddock.ImageInfo;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Snapshots on both tiers: a {@code host} sandbox's and a stored image's sandbox's writes (deletions too) become
 * an image whose sandboxes start with them, on the same base, as the same user; the sandbox snapshotted goes on
 * unchanged; Paddock's own files never enter the layer; bad tags and stopped sandboxes are refused; nothing is
 * left on the host (the leak check).
 */
class SnapshotTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    @BeforeAll
    static void images() throws IOException, InterruptedException {
        ImageFixtures.busybox();
    }

    @TestInstance(TestInstance.Lifecycle.PER_CLASS)
    abstract static class OnTier {
        Paddock paddock;
        final List<String> tags = new ArrayList<>();

        abstract String tier();

        @BeforeAll
        void start() {
            paddock = Paddock.local(LocalOptions.builder().defaultRuntime(tier()).build());
        }

        @AfterAll
        void stop() {
            if (paddock != null) {
                for (String t : tags) {
                    try {
                        paddock.images().remove(t);
                    } catch (SandboxException e) {
                        // already gone
                    }
                }
                paddock.close();
            }
        }

        String tag(String what) {
            String t = "paddock-test/snap-" + what + "-" + tier() + "-" + ProcessHandle.current().pid() + ":"
                    + tags.size();
            tags.add(t);
            return t;
        }

        SandboxSpec.Builder small() {
            return SandboxSpec.builder().memory(ByteSize.mib(128)).disk(ByteSize.mib(64)).pids(64);
        }

        @Test
        void aHostSandboxBecomesAnImageBasedOnTheHostImage() {
            String first = tag("host");
            String second = tag("host2");
            try (Sandbox sb = paddock.create(small().build())) {
                ExecResult w = sb.exec("sh", "-c", "echo snap-1 > /opt/snap.txt && echo bye > /opt/gone.txt"
                        + " && echo mem > /workspace/w.txt");
                assertThat(w.exitCode()).as(w.stderrText()).isZero();
                ImageInfo info = sb.snapshot(first);
                assertThat(info.names()).containsExactly(first);
                assertThat(info.layers()).isEqualTo(1);
                assertThat(info.user()).isEqualTo("1000:1000");
                assertThat(info.labels()).containsEntry("io.paddock.image.base", "host");
                // The original goes on, writable, with its files.
                assertThat(sb.exec("sh", "-c", "cat /opt/snap.txt && echo more > /opt/after.txt && cat /opt/after.txt")
                        .stdoutText()).isEqualTo("snap-1\nmore\n");
            }
            try (Sandbox sb = paddock.create(small().image(first).build())) {
                ExecResult r = sb.exec("sh", "-c", "cat /opt/snap.txt /opt/gone.txt; id -u; pwd;"
                        + " ls /opt; test -e /workspace/w.txt && echo WORKSPACE-KEPT; touch /usr/x 2>&1; cat /etc/hostname");
                assertThat(r.stdoutText()).as(r.stderrText()).startsWith("snap-1\nbye\n1000\n/workspace\ngone.txt\nsnap.txt\n")
                        .doesNotContain("after.txt").doesNotContain("WORKSPACE-KEPT")
                        .contains("touch: cannot touch '/usr/x'").endsWith("sandbox\n");
                // A snapshot of a sandbox of that image stacks another layer; a deletion is a whiteout in it.
                assertThat(sb.exec("rm", "/opt/gone.txt").success()).isTrue();
                assertThat(sb.snapshot(second).layers()).isEqualTo(2);
            }
            try (Sandbox sb = paddock.create(small().image(second).build())) {
                assertThat(sb.exec("sh", "-c", "ls -A /opt").stdoutText()).isEqualTo("snap.txt\n");
            }
        }

        @Test
        void aStoredImagesSandboxBecomesAnImageOnItsLayers() {
            String t = tag("busybox");
            try (Sandbox sb = paddock.create(small().image(ImageFixtures.BUSYBOX).build())) {
                ExecResult w = sb.exec("sh", "-c", "echo new > /new.txt && rm /hello.txt && mkdir -p /data"
                        + " && echo d > /data/d.txt && echo 10.9.9.9 evil >> /etc/hosts");
                assertThat(w.exitCode()).as(w.stderrText()).isZero();
                ImageInfo info = sb.snapshot(t);
                assertThat(info.layers()).isEqualTo(ImageFixtures.service().inspect(ImageFixtures.BUSYBOX).layers() + 1);
                assertThat(info.env()).contains("GREETING=fixture");
                assertThat(sb.exec("sh", "-c", "cat /new.txt; test -e /hello.txt || echo no-hello").stdoutText())
                        .isEqualTo("new\nno-hello\n");
            }
            try (Sandbox sb = paddock.create(small().image(t).build())) {
                ExecResult r = sb.exec("sh", "-c", "cat /new.txt /data/d.txt /second.txt; test -e /hello.txt && echo HELLO-BACK;"
                        + " echo g=$GREETING; id -u; grep -c evil /etc/hosts; ls -A /.paddock");
                assertThat(r.stdoutText()).as(r.stderrText()).startsWith("new\nd\ntwo\ng=fixture\n0\n0\n")
                        .doesNotContain("HELLO-BACK").doesNotContain("gone");
            }
        }

        @Test
        void badTagsAndStoppedSandboxesAreRefused() {
            Sandbox sb = paddock.create(small().build());
            try {
                for (String bad : List.of("", "host", "host:latest", "Bad Name:1", "app@sha256:" + "0".repeat(64))) {
                    assertThatThrownBy(() -> sb.snapshot(bad)).as(bad).isInstanceOfSatisfying(SandboxException.class,
                            e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
                }
            } finally {
                sb.destroy();
            }
            assertThatThrownBy(() -> sb.snapshot(tag("stopped"))).isInstanceOfSatisfying(SandboxException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.FAILED_PRECONDITION));
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
