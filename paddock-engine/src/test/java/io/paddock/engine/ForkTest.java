package io.paddock.engine;

import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Fork: N gVisor sandboxes restored from one checkpoint of a source, each with its own id, uid range, cgroup and
 * channel and state of its own from then on; refused with the reason where it cannot be done. Real runsc and runc;
 * needs root.
 */
class ForkTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    private static Paddock paddock;

    @BeforeAll
    static void start() throws java.io.IOException {
        assertThat(Files.getAttribute(Path.of("/proc/self"), "unix:uid")).as("ForkTest needs root").isEqualTo(0);
        paddock = Paddock.local(LocalOptions.builder().build());
    }

    @AfterAll
    static void stop() {
        if (paddock != null) {
            paddock.close();
        }
    }

    private static SandboxSpec.Builder small(String runtime) {
        return SandboxSpec.builder().runtime(runtime).memory(ByteSize.mib(256)).pids(128).timeout(Duration.ofMinutes(3));
    }

    @Test
    void forksOfARunningSandboxHaveItsStateThenTheirOwn() throws Exception {
        try (Sandbox source = paddock.create(small("runsc").name("fork-source").label("k", "v").build())) {
            source.exec("sh", "-c", "echo source > /tmp/v; echo kept > /workspace/w");
            List<Sandbox> forks = source.fork(2);
            try {
                assertThat(forks).hasSize(2);
                assertThat(source.state()).as("resumed after the checkpoint").isEqualTo(SandboxState.RUNNING);
                Set<String> ids = new HashSet<>(List.of(source.id().value()));
                Set<String> uidMaps = new HashSet<>(List.of(uidMapping(source)));
                Set<Long> sentryUids = new HashSet<>(List.of(sentryUid(source)));
                for (Sandbox f : forks) {
                    assertThat(ids.add(f.id().value())).isTrue();
                    assertThat(uidMaps.add(uidMapping(f))).as("a uid range of its own").isTrue();
                    assertThat(sentryUids.add(sentryUid(f))).as("a Sentry uid of its own").isTrue();
                    assertThat(f.state()).isEqualTo(SandboxState.RUNNING);
                    assertThat(f.info().name()).isEmpty();
                    assertThat(f.info().labels()).containsEntry("k", "v");
                    assertThat(f.exec("cat", "/tmp/v", "/workspace/w").stdoutText()).isEqualTo("source\nkept\n");
                    assertThat(cgroupExists(f)).as("a cgroup of its own").isTrue();
                }
                forks.get(0).exec("sh", "-c", "echo zero > /tmp/v");
                source.exec("sh", "-c", "echo changed > /workspace/w");
                assertThat(forks.get(0).exec("cat", "/tmp/v", "/workspace/w").stdoutText()).isEqualTo("zero\nkept\n");
                assertThat(forks.get(1).exec("cat", "/tmp/v", "/workspace/w").stdoutText()).isEqualTo("source\nkept\n");
                assertThat(source.exec("cat", "/tmp/v", "/workspace/w").stdoutText()).isEqualTo("source\nchanged\n");
                // a fork is a sandbox like any other: it pauses, resumes, forks and dies alone
                long before = sentryUid(forks.get(1));
                forks.get(1).pause();
                forks.get(1).resume();
                assertThat(sentryUid(forks.get(1))).as("the resumed Sentry's uid").isEqualTo(before);
                List<Sandbox> grandchildren = forks.get(1).fork(1);
                assertThat(grandchildren.get(0).exec("cat", "/tmp/v").stdoutText()).isEqualTo("source\n");
                grandchildren.get(0).destroy();
                forks.get(0).destroy();
                assertThat(forks.get(1).exec("echo", "alive").stdoutText()).isEqualTo("alive\n");
                assertThat(source.exec("echo", "alive").stdoutText()).isEqualTo("alive\n");
            } finally {
                forks.forEach(Sandbox::destroy);
            }
        }
    }

    @Test
    void aPausedSourceStaysPaused() {
        try (Sandbox source = paddock.create(small("runsc").build())) {
            source.exec("sh", "-c", "echo 7 > /tmp/n");
            source.pause();
            List<Sandbox> forks = source.fork(1);
            try {
                assertThat(source.state()).isEqualTo(SandboxState.PAUSED);
                assertThat(forks.get(0).exec("cat", "/tmp/n").stdoutText()).isEqualTo("7\n");
                source.resume();
                assertThat(source.exec("cat", "/tmp/n").stdoutText()).isEqualTo("7\n");
            } finally {
                forks.forEach(Sandbox::destroy);
            }
        }
    }

    /**
     * A fork gets a copy of the source's writable files on disk (its root's layer, its codebase's layer) moved to
     * its own uid range, and the same volumes: a file the source wrote in its root and codebase is there, the
     * fork's own writes stay its own, its codebase diff is the source's plus its own, and the volume is shared.
     */
    @Test
    void aForkHasACopyOfTheSourcesDiskLayersAndSharesItsVolumes() throws Exception {
        ImageFixtures.busybox();
        String cb = "fork-cb-" + java.util.UUID.randomUUID().toString().substring(0, 8);
        String vol = "fork-vol-" + java.util.UUID.randomUUID().toString().substring(0, 8);
        Path dir = Files.createTempDirectory("paddock-fork-cb");
        Files.writeString(dir.resolve("a.txt"), "a");
        paddock.codebases().create(cb, dir);
        paddock.volumes().create(vol, ByteSize.mib(16));
        try {
            for (String image : List.of("host", ImageFixtures.BUSYBOX)) {
                String t = image.equals("host") ? "h" : "i";
                try (Sandbox source = paddock.create(small("runsc").image(image)
                        .codebase(new io.paddock.CodebaseMount(cb, "/workspace", io.paddock.PermissionPreset.FULL_ACCESS, List.of()))
                        .volume(io.paddock.VolumeMount.parse(vol + ":/data")).build())) {
                    io.paddock.ExecResult w = source.exec("sh", "-c", "mkdir -p /opt && echo root > /opt/r && echo cb > /workspace/s.txt && echo v > /data/v" + t + "");
                    assertThat(w.exitCode()).as(image + ": " + w.stderrText()).isZero();
                    Sandbox fork = source.fork(1).get(0);
                    try {
                        assertThat(fork.exec("sh", "-c", "cat /opt/r /workspace/s.txt /data/v" + t + "; id -u").stdoutText())
                                .as(image).isEqualTo("root\ncb\nv\n" + (image.equals("host") ? "1000" : "0") + "\n");
                        assertThat(fork.exec("sh", "-c", "echo mine > /opt/r && echo f > /workspace/f.txt && echo w > /data/w" + t + "")
                                .exitCode()).as(image + ": the fork writes its copy").isZero();
                        assertThat(source.exec("sh", "-c", "cat /opt/r /data/w" + t + "; ls /workspace").stdoutText())
                                .isEqualTo("root\nw\na.txt\ns.txt\n");
                        assertThat(paddock.codebases().diff(fork.id())).extracting(io.paddock.CodebaseChange::path)
                                .containsExactly("f.txt", "s.txt");
                        assertThat(paddock.codebases().diff(source.id())).extracting(io.paddock.CodebaseChange::path)
                                .containsExactly("s.txt");
                    } finally {
                        fork.destroy();
                    }
                }
            }
        } finally {
            paddock.volumes().remove(vol);
            paddock.codebases().remove(cb);
            io.paddock.image.internal.store.ImageStore.deleteTree(dir);
        }
    }

    /** runc: no memory checkpoint; networked gVisor: its netstack holds its address. Neither is paused by the try. */
    @Test
    void refusedWithTheReasonAndTheSourceRunsOn() {
        try (Sandbox r = paddock.create(small("runc").build());
             Sandbox g = paddock.create(small("runsc").network(io.paddock.NetworkPolicy.allow("198.18.13.2/32")).build())) {
            assertThatThrownBy(() -> r.fork(1)).isInstanceOfSatisfying(SandboxException.class, e -> {
                assertThat(e.code()).isEqualTo(ErrorCode.FAILED_PRECONDITION);
                assertThat(e.getMessage()).contains("gVisor");
            });
            assertThatThrownBy(() -> g.fork(1)).isInstanceOfSatisfying(SandboxException.class, e -> {
                assertThat(e.code()).isEqualTo(ErrorCode.FAILED_PRECONDITION);
                assertThat(e.getMessage()).contains("network");
            });
            assertThatThrownBy(() -> g.fork(0)).isInstanceOfSatisfying(SandboxException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
            assertThat(r.state()).isEqualTo(SandboxState.RUNNING);
            assertThat(g.state()).isEqualTo(SandboxState.RUNNING);
        }
    }

    private static String uidMapping(Sandbox sb) throws Exception {
        String config = Files.readString(LocalOptions.DEFAULT_STATE_DIR.resolve("sandboxes").resolve(sb.id().value())
                .resolve("config.json"));
        int at = config.indexOf("\"hostID\"");
        return config.substring(at, config.indexOf('}', at));
    }

    /** The host uid of the sandbox's Sentry: its own, never the 65534 runsc gives a Sentry it starts as the host's root. */
    private static long sentryUid(Sandbox sb) {
        RuncHostView host = new RuncHostView(LocalOptions.DEFAULT_STATE_DIR);
        long uid = host.hostUid(host.initPid(sb.id())).orElseThrow();
        assertThat(uid).as("host uid of the Sentry of %s", sb.id()).isNotIn(0L, 65534L);
        return uid;
    }

    private static boolean cgroupExists(Sandbox sb) {
        return Files.isDirectory(Path.of("/sys/fs/cgroup/pids/paddock", sb.id().value()));
    }
}
