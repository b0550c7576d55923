package io.paddock.kubernetes.internal;

import io.paddock.ByteSize;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.PoolConfig;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;
import io.paddock.engine.internal.LocalPaddock;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The engine's own features on the Kubernetes tier, against the mock API server and {@link KubeletDouble} (a test
 * double of a kubelet, not part of Paddock): a persistent engine (the daemon's) that stops and starts again adopts
 * its pods by re-attaching with a fresh HELLO; a warm pool of pods serves creates. Needs root and runc.
 */
class KubernetesEngineTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    private static KubeletDouble kube;

    @BeforeAll
    static void start() {
        kube = new KubeletDouble();
    }

    @AfterAll
    static void stop() {
        if (kube != null) {
            assertThat(kube.leftovers()).as("pods and policies left in the cluster").isEmpty();
            kube.close();
        }
    }

    static LocalOptions.Builder options() {
        return LocalOptions.builder().defaultRuntime("kubernetes")
                .runtimeOption("kubernetes.master", kube.url())
                .runtimeOption("kubernetes.namespace", KubeletDouble.NAMESPACE)
                .runtimeOption("kubernetes.defaultImage", KubeletDouble.IMAGE);
    }

    @Test
    void aRestartedDaemonEngineAdoptsItsPods(@TempDir Path data) throws Exception {
        String id;
        try (Paddock first = Paddock.local(options().dataDir(data).build())) {
            Sandbox sb = first.create(SandboxSpec.builder().memory(ByteSize.mib(128)).secret("TOKEN", "s3cret")
                    .timeout(Duration.ofMinutes(2)).build());
            id = sb.id().value();
            sb.exec("sh", "-c", "echo before > /workspace/state");
        }
        // The engine is gone; its pod is not (a daemon's sandboxes outlive it).
        assertThat(kube.client().pods().inNamespace(KubeletDouble.NAMESPACE).withName(id).get()).isNotNull();
        try (Paddock second = Paddock.local(options().dataDir(data).build())) {
            Sandbox sb = second.get(id);
            assertThat(sb.state()).isEqualTo(SandboxState.RUNNING);
            assertThat(sb.exec("cat", "/workspace/state").stdoutText()).isEqualTo("before\n");
            // Its secret came back from the store, not from the cluster (the pod never held it).
            assertThat(sb.exec("sh", "-c", "echo $TOKEN").stdoutText()).isEqualTo("s3cret\n");
            sb.destroy();
        }
        assertThat(kube.leftovers()).isEmpty();
    }

    /**
     * A daemon that lost its data directory (a new store, a new identity) takes its predecessor's running pods back
     * from their annotations with {@code kubernetes.adopt}: their spec (labels, name, a claimed pooled pod's own),
     * lifetime and files; not their secrets, which the cluster never held. Without the option they are left alone.
     */
    @Test
    void aDaemonThatLostItsStoreTakesItsPodsBackFromTheCluster(@TempDir Path first, @TempDir Path second,
                                                                @TempDir Path third) throws Exception {
        SandboxSpec shape = SandboxSpec.builder().memory(ByteSize.mib(128)).runtime("kubernetes").build();
        String plain;
        String pooled;
        try (LocalPaddock paddock = (LocalPaddock) Paddock.local(options().dataDir(first)
                .warmPool(PoolConfig.builder().shape(shape).size(1).build()).build())) {
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (paddock.poolStats().get(0).idle() < 1 && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
            Sandbox a = paddock.create(SandboxSpec.builder().memory(ByteSize.mib(64)).name("kept").label("team", "ml")
                    .secret("TOKEN", "s3cret").timeout(Duration.ofMinutes(3)).build());
            a.exec("sh", "-c", "echo before > /workspace/state");
            a.updateLabels(java.util.Map.of("stage", "two"));
            plain = a.id().value();
            Sandbox b = paddock.create(shape.toBuilder().label("from", "pool").build());
            assertThat(paddock.poolStats().get(0).hits()).isEqualTo(1);
            pooled = b.id().value();
        }
        // Not set to adopt: another daemon leaves them running and does not list them.
        try (Paddock other = Paddock.local(options().dataDir(third).build())) {
            assertThat(other.list(io.paddock.SandboxQuery.all())).extracting(i -> i.id().value()).doesNotContain(plain, pooled);
        }
        assertThat(kube.client().pods().inNamespace(KubeletDouble.NAMESPACE).withName(plain).get()).isNotNull();
        try (Paddock next = Paddock.local(options().dataDir(second).runtimeOption("kubernetes.adopt", "true").build())) {
            Sandbox a = next.get(plain);
            assertThat(a.state()).isEqualTo(SandboxState.RUNNING);
            assertThat(a.info().name()).contains("kept");
            assertThat(a.info().labels()).containsEntry("team", "ml").containsEntry("stage", "two");
            assertThat(a.exec("cat", "/workspace/state").stdoutText()).isEqualTo("before\n");
            assertThat(a.exec("sh", "-c", "echo \"[$TOKEN]\"").stdoutText()).as("secrets stay with the lost store")
                    .isEqualTo("[]\n");
            assertThat(a.info().expiresAt()).isBefore(java.time.Instant.now().plus(Duration.ofMinutes(3)))
                    .isAfter(java.time.Instant.now().plus(Duration.ofMinutes(2)));
            assertThat(next.getByName("kept").id().value()).isEqualTo(plain);
            Sandbox b = next.get(pooled);
            assertThat(b.info().labels()).containsEntry("from", "pool");
            assertThat(b.exec("echo", "pooled").stdoutText()).isEqualTo("pooled\n");
            a.destroy();
            b.destroy();
        }
        assertThat(kube.leftovers()).isEmpty();
    }

    @Test
    void aWarmPoolOfPodsServesCreates() throws Exception {
        SandboxSpec shape = SandboxSpec.builder().memory(ByteSize.mib(128)).runtime("kubernetes").build();
        try (LocalPaddock paddock = (LocalPaddock) Paddock.local(options()
                .warmPool(PoolConfig.builder().shape(shape).size(1).build()).build())) {
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (paddock.poolStats().get(0).idle() < 1 && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
            assertThat(paddock.poolStats().get(0).idle()).isEqualTo(1);
            try (Sandbox sb = paddock.create(shape.toBuilder().label("team", "ml").build())) {
                assertThat(paddock.poolStats().get(0).hits()).isEqualTo(1);
                assertThat(sb.exec("echo", "warm").stdoutText()).isEqualTo("warm\n");
            }
        }
    }
}
