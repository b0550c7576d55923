package io.paddock.client.internal;

import io.paddock.testkit.TestRegistry;
import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.ExecResult;
import io.paddock.Image;
import io.paddock.ImageInfo;
import io.paddock.ImageListener;
import io.paddock.Images;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.RegistryAuth;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import io.paddock.server.ServerOptions;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code Paddock.connect(...).images()} against a real daemon and engine on loopback and a real registry
 * ({@code docker-registry}) holding a busybox image made by umoci: the same calls and error codes as the
 * embedded engine. Pull with progress, list, inspect, a sandbox of the image, remove refused while it is in
 * use, a Dockerfile build of a local directory (symlinks sent as symlinks, special files left out) and a build
 * of an {@link Image} with local files, both with streamed progress, push, credentials from a Docker config
 * file, and the tenants' rules.
 */
class RemoteImagesTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    private static final String RUN = UUID.randomUUID().toString().substring(0, 8);
    private static final String ALICE = "alice-" + HexFormat.of().formatHex(new SecureRandom().generateSeed(20));
    private static TestRegistry registry;
    private static LoopbackDaemon daemon;
    private static Paddock paddock;
    private static Images images;
    private static String base;
    private static final List<String> made = Collections.synchronizedList(new ArrayList<>());

    @BeforeAll
    static void start() {
        registry = TestRegistry.start();
        registry.pushBusybox("paddock-test/busybox-" + RUN + ":1");
        base = registry.host() + "/paddock-test/busybox-" + RUN + ":1";
        daemon = LoopbackDaemon.start(ServerOptions.builder().tenant("alice", ALICE).maxFailedAuthPerMinutePerIp(100_000));
        paddock = daemon.connect();
        images = paddock.images();
        images.pull(base, RegistryAuth.none().insecure(), ImageListener.NONE);
        made.add(base);
    }

    @AfterAll
    static void stop() {
        try {
            for (String ref : made) {
                try {
                    daemon.engine.images().remove(ref);
                } catch (RuntimeException gone) {
                    // removed by the test, or never made
                }
            }
            if (paddock != null) {
                paddock.close();
            }
        } finally {
            try {
                if (daemon != null) {
                    daemon.close();
                }
            } finally {
                if (registry != null) {
                    registry.close();
                }
            }
        }
    }

    /** Everything a listener hears, as lines. */
    static final class Heard implements ImageListener {
        final List<String> lines = Collections.synchronizedList(new ArrayList<>());
        final List<Thread> threads = Collections.synchronizedList(new ArrayList<>());

        @Override
        public void log(String line) {
            lines.add("log " + line);
            threads.add(Thread.currentThread());
        }

        @Override
        public void step(int index, int count, String description, boolean cached) {
            lines.add("step " + index + "/" + count + " " + description);
            threads.add(Thread.currentThread());
        }

        @Override
        public void layer(String digest, long done, long total, boolean complete, boolean cached) {
            lines.add("layer " + digest + (complete ? " complete" : ""));
            threads.add(Thread.currentThread());
        }
    }

    private static SandboxSpec.Builder spec(String image) {
        return SandboxSpec.builder().image(image).memory(ByteSize.mib(128)).disk(ByteSize.mib(64)).pids(64);
    }

    private static void assertCode(Runnable r, ErrorCode code, String... inMessage) {
        assertThatThrownBy(r::run).isInstanceOfSatisfying(SandboxException.class, e -> {
            assertThat(e.code()).as(e.getMessage()).isEqualTo(code);
            if (inMessage.length > 0) {
                assertThat(e.getMessage()).contains(inMessage);
            }
        });
    }

    @Test
    void pullListInspectAndAnImageInUseIsNotRemoved() {
        Heard heard = new Heard();
        ImageInfo info = images.pull(base, RegistryAuth.none().insecure(), heard);
        assertThat(info.names()).contains(base);
        assertThat(info.env()).contains("GREETING=umoci");
        assertThat(heard.lines).anySatisfy(l -> assertThat(l).startsWith("layer sha256:").endsWith("complete"));
        assertThat(heard.threads).containsOnly(Thread.currentThread());

        assertThat(images.list()).extracting(ImageInfo::id).contains(info.id());
        assertThat(images.inspect(base)).isEqualTo(info);
        assertThat(images.inspect(info.shortId()).id()).isEqualTo(info.id());
        assertCode(() -> images.inspect("paddock-test/none-" + RUN + ":1"), ErrorCode.NOT_FOUND);
        assertCode(() -> images.pull(registry.host() + "/paddock-test/none-" + RUN + ":1", RegistryAuth.none().insecure(),
                ImageListener.NONE), ErrorCode.NOT_FOUND);
        assertCode(() -> images.remove("paddock-test/none-" + RUN + ":1"), ErrorCode.NOT_FOUND);

        try (Sandbox sb = paddock.create(spec(base).build())) {
            assertThat(sb.info().image()).isEqualTo(base);
            ExecResult r = sb.exec("sh", "-c", "cat /hello.txt; echo $GREETING");
            assertThat(r.stdoutText()).as(r.stderrText()).isEqualTo("hello-from-umoci\numoci\n");
            assertCode(() -> images.remove(base), ErrorCode.FAILED_PRECONDITION, "in use");
        }
        assertThat(images.inspect(base).id()).isEqualTo(info.id());
    }

    @Test
    void aDockerfileBuildOfALocalDirectoryStreamsItsProgress() throws Exception {
        Path secret = Files.writeString(Files.createTempFile("paddock-secret-", ".txt"), "SECRET-" + RUN);
        Path ctx = Files.createTempDirectory("paddock-ctx-");
        try {
            Files.writeString(ctx.resolve("hello.txt"), "copied-" + RUN + "\n");
            Files.createDirectories(ctx.resolve("dir"));
            Files.writeString(ctx.resolve("dir/a.txt"), "a\n");
            Files.createSymbolicLink(ctx.resolve("dir/link"), secret); // points out of the context: sent as a link
            TestRegistry.run(ctx, "mkfifo", ctx.resolve("fifo").toString()); // left out, and said so
            Files.createDirectories(ctx.resolve("docker"));
            Files.writeString(ctx.resolve("docker/Dockerfile"), "FROM " + base + "\n"
                    + "COPY hello.txt /opt/hello.txt\n"
                    + "COPY dir /dir\n"
                    + "ARG WHO\n"
                    + "RUN echo remote-$WHO-" + RUN + " && echo hi > /x\n");
            String tag = "paddock-test/remote-built-" + RUN + ":1";
            made.add(tag);
            Heard heard = new Heard();
            ImageInfo built = images.build(ctx, "docker/Dockerfile", Map.of("WHO", "sdk"), List.of(tag), heard);
            assertThat(built.names()).contains(tag);
            assertThat(heard.lines).contains("log remote-sdk-" + RUN, "log context: left out 'fifo', a special file (FIFO, socket or device)")
                    .anySatisfy(l -> assertThat(l).startsWith("step 2/5 COPY hello.txt"));
            assertThat(heard.threads).containsOnly(Thread.currentThread());

            try (Sandbox sb = paddock.create(spec(tag).build())) {
                ExecResult r = sb.exec("sh", "-c", "cat /x /opt/hello.txt /dir/a.txt; ls -l /dir/link; cat /dir/link; true");
                assertThat(r.stdoutText()).startsWith("hi\ncopied-" + RUN + "\na\n").contains("/dir/link -> " + secret)
                        .doesNotContain("SECRET");
            }
            // the Dockerfile must be in the context: a remote build sends nothing else
            assertCode(() -> images.build(ctx.resolve("dir"), "../docker/Dockerfile", Map.of(), List.of(tag), ImageListener.NONE),
                    ErrorCode.INVALID_ARGUMENT, "outside the build context");
            assertCode(() -> images.build(ctx.resolve("none"), null, Map.of(), List.of(tag), ImageListener.NONE),
                    ErrorCode.INVALID_ARGUMENT, "context");
            assertCode(() -> images.build(ctx, "docker/Dockerfile", Map.of(), List.of(), ImageListener.NONE),
                    ErrorCode.INVALID_ARGUMENT, "tag");
            // a context the daemon refuses part-way (a whiteout name comes first, 8 MiB follow): its answer still arrives
            Path odd = Files.createDirectory(ctx.resolve("odd"));
            Files.writeString(odd.resolve(".wh.first"), "");
            Files.write(odd.resolve("zz-big"), new byte[8 << 20]);
            Files.writeString(odd.resolve("Dockerfile"), "FROM " + base + "\n");
            assertCode(() -> images.build(odd, null, Map.of(), List.of(tag), ImageListener.NONE),
                    ErrorCode.INVALID_ARGUMENT, "whiteout");

            // push it, and the registry has it
            ImageInfo pushed = images.push(tag, registry.host() + "/paddock-test/pushed-" + RUN + ":1",
                    RegistryAuth.none().insecure(), new Heard());
            assertThat(pushed.id()).isEqualTo(built.id());
            assertThat(registry.has("paddock-test/pushed-" + RUN, "1")).isTrue();

            images.remove(tag);
            assertCode(() -> images.inspect(tag), ErrorCode.NOT_FOUND);
        } finally {
            TestRegistry.deleteTree(ctx);
            Files.deleteIfExists(secret);
        }
    }

    @Test
    void anImageDescribedInJavaIsBuiltRemotelyWithItsLocalFiles() throws Exception {
        Path local = Files.createTempDirectory("paddock-local-");
        try {
            Path file = Files.writeString(local.resolve("f.txt"), "from-java-" + RUN + "\n");
            Files.createDirectories(local.resolve("data/sub"));
            Files.writeString(local.resolve("data/sub/b.txt"), "b\n");
            Path link = Files.createSymbolicLink(local.resolve("named-link.txt"), file); // the caller names it: followed
            String tag = "paddock-test/java-built-" + RUN + ":1";
            made.add(tag);
            Image image = Image.from(base)
                    .copy(file, "/app/")
                    .copy(local.resolve("data"), "/data")
                    .copy(link, "/app/linked.txt")
                    .workdir("/app")
                    .env("MODE", "remote")
                    .run("cat f.txt /data/sub/b.txt linked.txt > /y && echo java-step-$MODE");
            Heard heard = new Heard();
            ImageInfo built = images.build(image, List.of(tag), heard);
            assertThat(built.workdir()).isEqualTo("/app");
            assertThat(built.env()).contains("MODE=remote");
            assertThat(heard.lines).contains("log java-step-remote");
            try (Sandbox sb = paddock.create(spec(tag).build())) {
                ExecResult r = sb.exec("cat", "/y");
                assertThat(r.stdoutText()).as(r.stderrText()).isEqualTo("from-java-" + RUN + "\nb\nfrom-java-" + RUN + "\n");
            }
            // the same image again: every step from the cache, the same image
            assertThat(images.build(image, List.of(tag), ImageListener.NONE).id()).isEqualTo(built.id());
            images.remove(tag);
        } finally {
            TestRegistry.deleteTree(local);
        }
    }

    @Test
    void credentialsComeFromADockerConfigFileForTheirRegistryOnly() throws IOException {
        try (TestRegistry locked = TestRegistry.startWithHtpasswd("puller", "s3cret-" + RUN)) {
            locked.pushBusybox("paddock-test/locked-" + RUN + ":1");
            String ref = locked.host() + "/paddock-test/locked-" + RUN + ":1";
            made.add(ref);
            Path dir = Files.createTempDirectory("paddock-docker-config-");
            try {
                assertCode(() -> images.pull(ref, RegistryAuth.none().insecure(), ImageListener.NONE), ErrorCode.PERMISSION_DENIED);
                // an entry for another registry only: nothing is sent
                Path other = Files.writeString(dir.resolve("other.json"), "{\"auths\":{\"registry.example:5000\":{\"auth\":\""
                        + Base64.getEncoder().encodeToString(("puller:s3cret-" + RUN).getBytes(StandardCharsets.UTF_8)) + "\"}}}");
                assertCode(() -> images.pull(ref, RegistryAuth.none().insecure().configFile(other), ImageListener.NONE),
                        ErrorCode.PERMISSION_DENIED);
                // the entry for this registry, keyed with a scheme as `docker login` may write it
                Path config = Files.writeString(dir.resolve("config.json"), "{\"auths\":{\"http://" + locked.host() + "/v2/\":{\"auth\":\""
                        + Base64.getEncoder().encodeToString(("puller:s3cret-" + RUN).getBytes(StandardCharsets.UTF_8)) + "\"}}}");
                ImageInfo info = images.pull(ref, RegistryAuth.none().insecure().configFile(config), ImageListener.NONE);
                assertThat(info.names()).contains(ref);
                // explicit credentials work the same, and a wrong password is refused
                assertThat(images.pull(ref, RegistryAuth.none().insecure().credentials("puller", "s3cret-" + RUN),
                        ImageListener.NONE).id()).isEqualTo(info.id());
                assertCode(() -> images.pull(ref, RegistryAuth.none().insecure().credentials("puller", "wrong"),
                        ImageListener.NONE), ErrorCode.PERMISSION_DENIED);
                images.remove(ref);
            } finally {
                TestRegistry.deleteTree(dir);
            }
        }
    }

    @Test
    void aTenantGetsTheSameCodesAsTheOperatorsRulesSay() throws IOException {
        try (Paddock alice = Paddock.connect(daemon.url(), ALICE)) {
            Images hers = alice.images();
            assertThat(hers.list()).extracting(ImageInfo::names).anySatisfy(n -> assertThat(n).contains(base));
            assertCode(hers::prune, ErrorCode.PERMISSION_DENIED, "operator");
            assertCode(() -> hers.remove(base), ErrorCode.PERMISSION_DENIED);
            Path ctx = Files.createTempDirectory("paddock-ctx-");
            try {
                Files.writeString(ctx.resolve("Dockerfile"), "FROM " + base + "\nENV WHO=alice\n");
                assertCode(() -> hers.build(ctx, null, Map.of(), List.of("app-" + RUN + ":1"), ImageListener.NONE),
                        ErrorCode.PERMISSION_DENIED, "alice/");
                String mine = "alice/app-" + RUN + ":1";
                made.add(mine);
                assertThat(hers.build(ctx, null, Map.of(), List.of(mine), ImageListener.NONE).env()).contains("WHO=alice");
                hers.remove(mine);
                assertCode(() -> hers.inspect(mine), ErrorCode.NOT_FOUND);
            } finally {
                TestRegistry.deleteTree(ctx);
            }
        }
    }
    /**
     * {@code POST /v1/sandboxes/{id}/snapshot} through the remote SDK: a tenant's host sandbox becomes an image
     * in the tenant's namespace (elsewhere: PERMISSION_DENIED), which the tenant's next sandbox starts from.
     */
    @Test
    void aSnapshotThroughTheDaemonIsAnImageInTheTenantsNamespace() {
        String tag = "alice/snap-" + RUN + ":1";
        made.add(tag);
        try (Paddock alice = Paddock.connect(daemon.url(), ALICE)) {
            SandboxSpec spec = SandboxSpec.builder().memory(ByteSize.mib(128)).pids(64).build();
            try (Sandbox sb = alice.create(spec)) {
                assertThat(sb.exec("sh", "-c", "echo snap-" + RUN + " > /opt/snap.txt").exitCode()).isZero();
                assertThatThrownBy(() -> sb.snapshot("snap-" + RUN + ":1")).isInstanceOfSatisfying(SandboxException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.PERMISSION_DENIED));
                assertThatThrownBy(() -> sb.snapshot("alice/Bad Tag")).isInstanceOfSatisfying(SandboxException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
                ImageInfo info = sb.snapshot(tag);
                assertThat(info.names()).containsExactly(tag);
                assertThat(info.labels()).containsEntry("io.paddock.image.base", "host");
            }
            try (Sandbox sb = alice.create(spec.toBuilder().image(tag).build())) {
                ExecResult r = sb.exec("cat", "/opt/snap.txt");
                assertThat(r.stdoutText()).as(r.stderrText()).isEqualTo("snap-" + RUN + "\n");
            }
        }
    }
}
