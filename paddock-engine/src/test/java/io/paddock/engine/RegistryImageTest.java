package io.paddock.engine;

import io.paddock.ErrorCode;
import io.paddock.ExecResult;
import io.paddock.ImageInfo;
import io.paddock.ImageListener;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.RegistryAuth;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import io.paddock.image.internal.store.ImageStore;
import io.paddock.testkit.LeakCheckExtension;
import io.paddock.testkit.TestRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Images and a real OCI registry (Debian's {@code docker-registry} on a loopback port), through the engine:
 * an image made by tools we did not write ({@code umoci}, pushed by {@code skopeo}) pulled and run on both
 * tiers with its whiteout and environment; a Paddock-built image pushed and read back by {@code skopeo};
 * removal refused while a sandbox uses an image; clear errors for an unreachable registry and an unknown
 * image.
 */
class RegistryImageTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    static Path dir;
    static TestRegistry registry;
    static String reg;
    static Paddock paddock;

    @BeforeAll
    static void start() throws Exception {
        registry = TestRegistry.start(); // installs docker-registry, umoci and skopeo when missing (as root)
        reg = registry.host();
        dir = Files.createTempDirectory("paddock-registry-test");
        // A two-layer busybox made with umoci (the second layer deletes /gone.txt), pushed with skopeo.
        Path busybox = Path.of("/bin/busybox");
        sh("cd " + dir + " && umoci init --layout L && umoci new --image L:t && umoci unpack --rootless --image L:t B"
                + " && mkdir -p B/rootfs/bin B/rootfs/tmp && cp " + busybox + " B/rootfs/bin/"
                + " && for c in sh cat ls echo test; do ln -s busybox B/rootfs/bin/$c; done"
                + " && echo hello-from-umoci > B/rootfs/hello.txt && echo gone > B/rootfs/gone.txt"
                + " && umoci repack --refresh-bundle --image L:t B && rm B/rootfs/gone.txt"
                + " && echo two > B/rootfs/second.txt && umoci repack --image L:t B"
                + " && umoci config --image L:t --config.env GREETING=umoci"
                + " && skopeo copy -q --dest-tls-verify=false oci:L:t docker://" + reg + "/test/busy:2");
        paddock = Paddock.local();
    }

    @AfterAll
    static void stop() throws Exception {
        if (paddock != null) {
            for (String ref : List.of(reg + "/test/busy:2", "paddock-test/pushed:1")) {
                try {
                    paddock.images().remove(ref);
                } catch (SandboxException ignored) {
                    // a failed test did not get that far
                }
            }
            paddock.close();
        }
        if (registry != null) {
            registry.close();
        }
        if (dir != null) {
            ImageStore.deleteTree(dir);
        }
    }

    static String sh(String command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("sh", "-c", command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertThat(p.waitFor()).as("%s:%n%s", command, out).isZero();
        return out;
    }

    @ParameterizedTest
    @ValueSource(strings = {"runc", "runsc"})
    void anImageMadeByUmociRunsOnEveryTier(String tier) {
        ImageInfo info = paddock.images().pull(reg + "/test/busy:2", RegistryAuth.none().insecure(), ImageListener.NONE);
        assertThat(info.layers()).isEqualTo(2);
        assertThat(info.env()).contains("GREETING=umoci");
        try (Sandbox sb = paddock.create(SandboxSpec.builder().image(reg + "/test/busy:2").runtime(tier).build())) {
            ExecResult r = sb.exec("sh", "-c", "cat /hello.txt /second.txt; test -e /gone.txt && echo STILL; echo g=$GREETING");
            assertThat(r.stdoutText()).as(r.stderrText()).isEqualTo("hello-from-umoci\ntwo\ng=umoci\n");
        }
    }

    @Test
    void aPushedImageIsReadBackBySkopeo() throws Exception {
        paddock.images().pull(reg + "/test/busy:2", RegistryAuth.none().insecure(), ImageListener.NONE);
        Path ctx = Files.createDirectories(dir.resolve("ctx"));
        Files.writeString(ctx.resolve("Dockerfile"), "FROM " + reg + "/test/busy:2\nLABEL run=" + System.nanoTime()
                + "\nRUN echo pushed > /pushed.txt\n");
        ImageInfo built = paddock.images().build(ctx, null, java.util.Map.of(), List.of("paddock-test/pushed:1"),
                ImageListener.NONE);
        paddock.images().push("paddock-test/pushed:1", reg + "/test/pushed:1", RegistryAuth.none().insecure(), ImageListener.NONE);
        String inspect = sh("skopeo inspect --tls-verify=false docker://" + reg + "/test/pushed:1");
        assertThat(inspect).contains("\"Layers\"").contains("sha256:");
        String config = sh("skopeo inspect --config --tls-verify=false docker://" + reg + "/test/pushed:1");
        assertThat(config).contains("GREETING=umoci");
        assertThat("sha256:" + sh("skopeo inspect --config --raw --tls-verify=false docker://" + reg
                + "/test/pushed:1 | sha256sum | cut -d' ' -f1").trim()).as("the pushed config is the image").isEqualTo(built.id());
    }

    @Test
    void anImageInUseIsNotRemoved() {
        paddock.images().pull(reg + "/test/busy:2", RegistryAuth.none().insecure(), ImageListener.NONE);
        try (Sandbox sb = paddock.create(SandboxSpec.builder().image(reg + "/test/busy:2").build())) {
            assertThatThrownBy(() -> paddock.images().remove(reg + "/test/busy:2"))
                    .isInstanceOfSatisfying(SandboxException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.FAILED_PRECONDITION);
                        assertThat(e.getMessage()).contains("in use");
                    });
            assertThat(sb.exec("cat", "/hello.txt").stdoutText()).isEqualTo("hello-from-umoci\n");
        }
    }

    @Test
    void registryErrorsSayWhatIsWrong() throws IOException {
        int closed;
        try (ServerSocket s = new ServerSocket(0)) {
            closed = s.getLocalPort();
        }
        assertThatThrownBy(() -> paddock.images().pull("127.0.0.1:" + closed + "/x/y:1", RegistryAuth.none().insecure(),
                ImageListener.NONE)).isInstanceOfSatisfying(SandboxException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.UNAVAILABLE);
                    assertThat(e.getMessage()).contains("127.0.0.1:" + closed);
                });
        assertThatThrownBy(() -> paddock.images().pull(reg + "/test/nope:1", RegistryAuth.none().insecure(),
                ImageListener.NONE)).isInstanceOfSatisfying(SandboxException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.NOT_FOUND));
        assertThatThrownBy(() -> paddock.images().pull(reg + "/test/busy:2", RegistryAuth.none(), ImageListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.getMessage()).contains("--insecure"));
    }
}
