package io.paddock.engine;

import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.ExecResult;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import io.paddock.image.internal.store.ImageStore;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Sandboxes of stored images, on both tiers: the image's layers (a whiteout in the upper one), its
 * configuration (environment, user, working directory), a writable root whose writes land on disk under the
 * sandbox's disk quota and never in the shared layers, and nothing left after destroy (the leak check).
 * The image is a two-layer busybox made by GNU tar, imported through the image store.
 */
class ImageSandboxTest {
    static final String IMAGE = ImageFixtures.BUSYBOX;
    static final String USER_IMAGE = ImageFixtures.BUSYBOX_USER;

    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    static ImageStore.StoredImage base;

    @BeforeAll
    static void images() throws IOException, InterruptedException {
        base = ImageFixtures.busybox();
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

        SandboxSpec.Builder spec() {
            return SandboxSpec.builder().image(IMAGE).memory(ByteSize.mib(128)).disk(ByteSize.mib(64)).pids(64);
        }

        @Test
        void runsOnTheImagesLayersWithItsConfiguration() {
            try (Sandbox sb = paddock.create(spec().build())) {
                ExecResult r = sb.exec("sh", "-c", "cat /hello.txt /second.txt; test -e /gone.txt && echo STILL-THERE;"
                        + " echo g=$GREETING; pwd; id -u; grep CapEff /proc/self/status");
                assertThat(r.exitCode()).as(r.stderrText()).isZero();
                assertThat(r.stdoutText()).contains("hello-from-layer-1\ntwo\n").doesNotContain("STILL-THERE")
                        .contains("g=fixture\n/workspace\n0\n").containsPattern("CapEff:\\s+0000000000000000");
            }
        }

        @Test
        void theImagesUserAndWorkdirAreUsed() {
            try (Sandbox sb = paddock.create(spec().image(USER_IMAGE).build())) {
                ExecResult r = sb.exec("sh", "-c", "id -u; id -g; pwd; touch /workspace/mine && echo wrote");
                assertThat(r.stdoutText()).as(r.stderrText()).isEqualTo("1234\n1235\n/home/app\nwrote\n");
            }
        }

        @Test
        void writesStayInTheSandboxNotInTheSharedLayers() throws IOException {
            Path layer = LocalOptions.DEFAULT_STORAGE_DIR.resolve("images/layers")
                    .resolve(ImageStore.layerName(base.config().diffIds().get(0)));
            try (Sandbox a = paddock.create(spec().build()); Sandbox b = paddock.create(spec().build())) {
                ExecResult w = a.exec("sh", "-c", "echo changed > /hello.txt; rm /etc/passwd; echo new > /etc/new; cat /hello.txt");
                assertThat(w.stdoutText()).as(w.stderrText()).isEqualTo("changed\n");
                ExecResult r = b.exec("sh", "-c", "cat /hello.txt; test -e /etc/new && echo LEAKED; test -e /etc/passwd && echo passwd");
                assertThat(r.stdoutText()).isEqualTo("hello-from-layer-1\npasswd\n");
            }
            assertThat(Files.readString(layer.resolve("hello.txt"))).isEqualTo("hello-from-layer-1\n");
            assertThat(layer.resolve("etc/passwd")).exists();
        }

        @Test
        void theDiskLimitHoldsOnTheWholeRoot() {
            try (Sandbox sb = paddock.create(spec().disk(ByteSize.mib(16)).build())) {
                ExecResult r = sb.exec("sh", "-c", "dd if=/dev/zero of=/big bs=1M count=64 2>&1; echo rc=$?");
                assertThat(r.stdoutText()).containsIgnoringCase("quota exceeded").doesNotContain("rc=0");
            }
        }

        @Test
        void filesAreDiskNotMemory() {
            try (Sandbox sb = paddock.create(spec().memory(ByteSize.mib(48)).disk(ByteSize.mib(512)).build())) {
                ExecResult r = sb.exec("sh", "-c", "dd if=/dev/zero of=/workspace/big bs=1M count=200 2>&1 && sync && echo wrote");
                assertThat(r.stdoutText()).as(r.stderrText()).endsWith("wrote\n");
                assertThat(r.status().outcome()).isEqualTo(io.paddock.ExitStatus.Outcome.EXITED);
            }
        }

        @Test
        void anotherEnginesSandboxKeepsItsImageAndLayersFromRemoveAndPrune() throws Exception {
            String name = "paddock-test/only-name-" + tier() + ":1";
            java.nio.file.Path layer = LocalOptions.DEFAULT_STORAGE_DIR.resolve("images/layers")
                    .resolve(ImageStore.layerName(base.config().diffIds().get(0)));
            ImageFixtures.service().store().put(ImageFixtures.service().store().blobs()
                    .put(base.config().withEnv(java.util.List.of("PATH=/bin", "GREETING=" + name)).toJson()), java.util.List.of(),
                    java.util.List.of(name));
            try (Sandbox sb = paddock.create(spec().image(name).build()); Paddock other = Paddock.local()) {
                assertThatThrownBy(() -> other.images().remove(name)).as("mounted by this engine's sandbox")
                        .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.FAILED_PRECONDITION));
                other.images().prune();
                assertThat(layer).as("a mounted layer survives another engine's prune").isDirectory();
                assertThat(sb.exec("cat", "/hello.txt").stdoutText()).isEqualTo("hello-from-layer-1\n");
            }
            paddock.images().remove(name);
        }

        @Test
        void anUnknownImageSaysHowToGetIt() {
            assertThatThrownBy(() -> paddock.create(spec().image("paddock-test/nope:1").build()))
                    .isInstanceOfSatisfying(SandboxException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
                        assertThat(e.getMessage()).startsWith("image:").contains("paddock image pull");
                    });
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
