package io.paddock.engine;

import io.paddock.ErrorCode;
import io.paddock.ExecResult;
import io.paddock.Image;
import io.paddock.ImageInfo;
import io.paddock.ImageListener;
import io.paddock.LocalOptions;
import io.paddock.NetworkPolicy;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Image builds on the embedded engine, from a Dockerfile and from the Java builder, on the busybox fixture
 * image: every instruction's effect in the result, the layer cache (an unchanged rebuild runs nothing and
 * gives the same image; a changed COPY input rebuilds from that step on), failures that leave no image and
 * no sandbox, hostile contexts (ATTACKS.md A69), and RUN's network behind the build's allowlist, against a test
 * world in a network namespace this test makes (198.18.17.0/24, A82d).
 */
class ImageBuildTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    static Paddock paddock;
    static TestWorld world;
    /** In every Dockerfile's first steps, so that a build never hits a cache entry an earlier run left. */
    static final String RUN_LABEL = "LABEL paddock.test.run=" + System.nanoTime() + "\n";

    @BeforeAll
    static void start() throws Exception {
        ImageFixtures.busybox();
        world = new TestWorld(17);
        world.startOnHostEnd();
        // Builds may reach one name, resolved by the world's DNS server: nothing of the host's own sources.
        paddock = Paddock.local(LocalOptions.builder().dnsUpstream(world.a)
                .buildNetwork(NetworkPolicy.allow("allowed.paddock.test")).build());
    }

    @AfterAll
    static void stop() throws Exception {
        if (paddock != null) {
            for (String t : List.of("paddock-test/built:1", "paddock-test/built:2", "paddock-test/java:1",
                    "paddock-test/net:1")) {
                try {
                    paddock.images().remove(t);
                } catch (SandboxException ignored) {
                    // not built by a failed test
                }
            }
            paddock.close();
        }
        if (world != null) {
            world.close();
        }
    }

    /** Records what a build reports. */
    static final class Recorder implements ImageListener {
        final List<String> steps = new ArrayList<>();
        final List<Boolean> cached = new ArrayList<>();
        final List<String> log = new ArrayList<>();

        @Override
        public void step(int index, int count, String description, boolean wasCached) {
            steps.add(description);
            cached.add(wasCached);
        }

        @Override
        public void log(String line) {
            log.add(line);
        }
    }

    static void context(Path dir, String dockerfile, Map<String, String> files) throws IOException {
        Files.writeString(dir.resolve("Dockerfile"), dockerfile);
        for (Map.Entry<String, String> f : files.entrySet()) {
            Path p = dir.resolve(f.getKey());
            Files.createDirectories(p.getParent());
            Files.writeString(p, f.getValue());
        }
    }

    static String run(String image, String script) {
        try (Sandbox sb = paddock.create(SandboxSpec.builder().image(image).build())) {
            ExecResult r = sb.exec("sh", "-c", script);
            assertThat(r.exitCode()).as(r.stderrText()).isZero();
            return r.stdoutText();
        }
    }

    @Test
    void aDockerfileBuildsCachesAndRebuildsFromTheChangedStep(@TempDir Path ctx) throws IOException {
        context(ctx, """
                FROM %s
                %s
                ARG WHO=builder
                COPY a.txt /app/
                ENV X=1
                WORKDIR /app
                RUN echo "built by $WHO" > out.txt && cat a.txt >> out.txt
                COPY b.txt .
                USER app
                RUN id -u > /tmp/uid-at-build
                LABEL purpose=test
                EXPOSE 8000
                CMD ["sh"]
                """.formatted(ImageFixtures.BUSYBOX, RUN_LABEL.trim()), Map.of("a.txt", "A1\n", "b.txt", "B\n", ".dockerignore", "ignored\n",
                "ignored/x", "never copied"));
        Recorder first = new Recorder();
        ImageInfo built = paddock.images().build(ctx, null, Map.of(), List.of("paddock-test/built:1"), first);
        assertThat(first.steps).hasSize(13);
        assertThat(first.cached).as("a fresh build runs every step").containsOnly(false);
        assertThat(built.env()).contains("X=1").noneMatch(e -> e.startsWith("WHO="));
        assertThat(built.user()).isEqualTo("app");
        assertThat(built.workdir()).isEqualTo("/app");
        assertThat(built.labels()).containsEntry("purpose", "test");
        assertThat(built.exposedPorts()).containsExactly("8000/tcp");
        assertThat(built.cmd()).containsExactly("sh");
        assertThat(run("paddock-test/built:1", "pwd; id -u; cat out.txt b.txt /tmp/uid-at-build; echo x=$X"))
                .isEqualTo("/app\n1234\nbuilt by builder\nA1\nB\n1234\nx=1\n");

        Recorder again = new Recorder();
        ImageInfo rebuilt = paddock.images().build(ctx, null, Map.of(), List.of("paddock-test/built:1"), again);
        assertThat(rebuilt.id()).as("an unchanged rebuild is the same image").isEqualTo(built.id());
        for (int i = 0; i < again.steps.size(); i++) {
            String s = again.steps.get(i);
            if (s.startsWith("RUN") || s.startsWith("COPY")) {
                assertThat(again.cached.get(i)).as(s).isTrue();
            }
        }

        Files.writeString(ctx.resolve("b.txt"), "B2\n");
        Recorder changed = new Recorder();
        ImageInfo second = paddock.images().build(ctx, null, Map.of(), List.of("paddock-test/built:2"), changed);
        assertThat(second.id()).isNotEqualTo(built.id());
        assertThat(changed.cached.get(3)).as("COPY a.txt").isTrue();
        assertThat(changed.cached.get(6)).as("the first RUN").isTrue();
        assertThat(changed.cached.get(7)).as("COPY b.txt, whose input changed").isFalse();
        assertThat(changed.cached.get(9)).as("the RUN after it").isFalse();
        assertThat(run("paddock-test/built:2", "cat b.txt")).isEqualTo("B2\n");
        assertThat(run("paddock-test/built:1", "cat b.txt")).as("the first image is unchanged").isEqualTo("B\n");
    }

    @Test
    void aFailingRunStepNamesItsLineAndLeavesNoImage(@TempDir Path ctx) throws IOException {
        context(ctx, "FROM " + ImageFixtures.BUSYBOX + "\nRUN echo fine\n" + RUN_LABEL + "RUN echo about to fail; exit 3\n", Map.of());
        Recorder r = new Recorder();
        assertThatThrownBy(() -> paddock.images().build(ctx, null, Map.of(), List.of("paddock-test/failed:1"), r))
                .isInstanceOfSatisfying(SandboxException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
                    assertThat(e.getMessage()).contains("line 4").contains("exit code 3");
                });
        assertThat(r.log).contains("about to fail");
        assertThatThrownBy(() -> paddock.images().inspect("paddock-test/failed:1"))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.NOT_FOUND));
    }

    @Test
    void copyIsConfinedToTheContext(@TempDir Path ctx) throws IOException {
        context(ctx, "FROM " + ImageFixtures.BUSYBOX + "\nCOPY ../outside /x\n", Map.of());
        assertThatThrownBy(() -> paddock.images().build(ctx, null, Map.of(), List.of("paddock-test/hostile:1"), ImageListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
        Files.createSymbolicLink(ctx.resolve("etc-link"), Path.of("/etc"));
        context(ctx, "FROM " + ImageFixtures.BUSYBOX + "\nCOPY etc-link/passwd /x\n", Map.of());
        assertThatThrownBy(() -> paddock.images().build(ctx, null, Map.of(), List.of("paddock-test/hostile:1"), ImageListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
        context(ctx, "FROM " + ImageFixtures.BUSYBOX + "\nHEALTHCHECK CMD true\n", Map.of());
        assertThatThrownBy(() -> paddock.images().build(ctx, null, Map.of(), List.of("paddock-test/hostile:1"), ImageListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.getMessage()).contains("line 2"));
    }

    @Test
    void theJavaBuilderMakesTheSameKindOfImage(@TempDir Path dir) throws IOException {
        Path local = dir.resolve("conf.ini");
        Files.writeString(local, "k=v\n");
        Image image = Image.from(ImageFixtures.BUSYBOX).label("paddock.test.run", RUN_LABEL.trim()).env("MODE", "java").workdir("/srv").copy(local, "/srv/conf.ini")
                .run("echo ran-in-$MODE > /srv/ran.txt");
        ImageInfo info = paddock.images().build(image, List.of("paddock-test/java:1"), ImageListener.NONE);
        assertThat(info.workdir()).isEqualTo("/srv");
        assertThat(run("paddock-test/java:1", "pwd; cat conf.ini ran.txt")).isEqualTo("/srv\nk=v\nran-in-java\n");
    }

    /**
     * ATTACKS.md A82d: a RUN step is behind the build's network policy like any sandbox (here the policy allows one
     * name): it reaches the allowlisted name, answered by the test world's DNS server through Paddock's resolver,
     * and never the host itself (the host's end of the link into the world, where a server of the host listens),
     * an address of the world outside the allowlist, or a name outside it. On slirp4netns the step read the host's
     * page and the other address's.
     */
    @Test
    void a82d_runStepsReachOnlyTheBuildAllowlistNeverTheHost(@TempDir Path ctx) throws Exception {
        // No ${...} in a RUN line: the Dockerfile's own substitution would take it. (This busybox's wget -T
        // crashes; timeout bounds a connection the rules drop.)
        StringBuilder probe = new StringBuilder("true");
        for (String[] t : List.of(new String[] {"host-self", "http://" + world.hostEnd + ":80/"},
                new String[] {"other-address", world.url(world.b)},
                new String[] {"other-name", "http://other.paddock.test:8080/"},
                new String[] {"allowed-name", "http://allowed.paddock.test:8080/"})) {
            probe.append("; echo ").append(t[0]).append(": $(timeout 5 wget -q -O - ").append(t[1])
                    .append(" 2>/dev/null || echo ERR) >> /probe.txt");
        }
        context(ctx, "FROM " + ImageFixtures.BUSYBOX + "\n" + RUN_LABEL + "RUN " + probe + "\n", Map.of());
        paddock.images().build(ctx, null, Map.of(), List.of("paddock-test/net:1"), ImageListener.NONE);
        assertThat(run("paddock-test/net:1", "cat /probe.txt").lines().toList()).as("what each target answered the RUN step")
                .containsExactly("host-self: ERR", "other-address: ERR", "other-name: ERR",
                        "allowed-name: world " + world.a);
        assertThat(world.dnsQueries()).as("what the world's DNS server was asked")
                .anyMatch(l -> l.contains("allowed.paddock.test")).noneMatch(l -> l.contains("other.paddock.test"));
        try (Sandbox sb = paddock.create(SandboxSpec.builder().image("paddock-test/net:1").build())) {
            ExecResult r = sb.exec("sh", "-c", "timeout 5 wget -q -O - " + world.url(world.a) + "; echo rc=$?");
            assertThat(r.stdoutText()).as("a sandbox of the image, unlike its build step, has no network")
                    .doesNotContain("world").doesNotContain("rc=0");
        }
    }

    @Test
    void anUnknownBaseSaysSoAndLeavesNothing(@TempDir Path ctx) throws IOException {
        context(ctx, "FROM paddock-test/no-such-base:1\nRUN true\n", Map.of());
        assertThatThrownBy(() -> paddock.images().build(ctx, null, Map.of(), List.of("paddock-test/orphan:1"), ImageListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.NOT_FOUND);
                    assertThat(e.getMessage()).contains("paddock-test/no-such-base:1");
                });
    }

    /**
     * Issue 32 round 3 (ATTACKS.md A83g): a build's time also bounds the commit of a step's layer, which runs on the
     * host after the step's sandbox has ended its command. The step makes a 4 GiB sparse file in no time; storing
     * it (tar, gzip, unpack into the store) takes far longer than the build's 6 s, so the build stops in the commit:
     * DEADLINE_EXCEEDED soon after its time, no image, no temporary layer left in the store. Before, the commit ran
     * to its end and the build succeeded long after its time.
     */
    @Test
    void a83g_buildTimeStopsALayerCommit(@TempDir Path ctx) throws IOException {
        String tag = "paddock-test/commit-deadline:1";
        context(ctx, "FROM " + ImageFixtures.BUSYBOX + "\n" + RUN_LABEL
                + "RUN dd if=/dev/zero of=/big bs=1048576 seek=4096 count=0 && echo made-" + System.nanoTime() + "\n",
                Map.of());
        Path store = LocalOptions.DEFAULT_STORAGE_DIR.resolve("images");
        long began = System.nanoTime();
        try {
            assertThatThrownBy(() -> paddock.images().build(ctx, null, Map.of(), List.of(tag),
                    new io.paddock.BuildLimits(java.util.Optional.empty(), io.paddock.ByteSize.mib(512),
                            java.time.Duration.ofSeconds(6)), new Recorder()))
                    .isInstanceOfSatisfying(SandboxException.class,
                            e -> assertThat(e.code()).as(e.getMessage()).isEqualTo(ErrorCode.DEADLINE_EXCEEDED))
                    .as("stopped in the commit").hasStackTraceContaining("layer was still being stored");
            assertThat(java.time.Duration.ofNanos(System.nanoTime() - began)).as("stopped soon after its 6 s")
                    .isLessThan(java.time.Duration.ofSeconds(14));
            assertThatThrownBy(() -> paddock.images().inspect(tag)).isInstanceOf(SandboxException.class);
            try (var left = Files.list(store)) {
                assertThat(left.map(f -> f.getFileName().toString()).filter(n -> n.startsWith(".layer-")))
                        .as("temporary layers left in the store").isEmpty();
            }
        } finally {
            try {
                paddock.images().remove(tag);
            } catch (SandboxException ignored) {
                // not built: the expected case
            }
        }
    }

    static void sh(String command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("sh", "-c", command).inheritIO().start();
        assertThat(p.waitFor()).as(command).isZero();
    }
}
