package io.paddock.kubernetes.internal;

import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.testkit.LeakCheckExtension;
import io.paddock.testkit.SandboxContractTest;
import io.paddock.testkit.Tier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The contract suite every tier runs, on the Kubernetes tier: the embedded engine with {@code kubernetes} as its
 * default tier, found by {@link java.util.ServiceLoader}, against fabric8's mock API server in CRUD mode with
 * {@link KubeletDouble} (a test double of a kubelet, not part of Paddock) running each pod as a runc sandbox.
 * Everything between the engine and that double is the tier's production code: pod and policy rendering, the
 * pod's wait, the init protocol over the attach WebSocket, destroy. Needs root and runc, as RuncContractTest.
 */
class KubernetesContractTest extends SandboxContractTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    private static KubeletDouble kube;
    private static Paddock paddock;

    @BeforeAll
    static void start() {
        kube = new KubeletDouble();
        paddock = Paddock.local(LocalOptions.builder().defaultRuntime("kubernetes")
                .runtimeOption("kubernetes.master", kube.url())
                .runtimeOption("kubernetes.namespace", KubeletDouble.NAMESPACE)
                .runtimeOption("kubernetes.defaultImage", KubeletDouble.IMAGE)
                .runtimeOption("kubernetes.startTimeout", "60")
                .build());
    }

    @AfterAll
    static void stop() {
        if (paddock != null) {
            paddock.close();
        }
        if (kube != null) {
            assertThat(kube.leftovers()).as("pods and policies left in the cluster").isEmpty();
            kube.close();
        }
    }

    @Override
    protected Paddock paddock() {
        return paddock;
    }

    @Override
    protected Tier tier() {
        return Tier.KUBERNETES;
    }

    @Test
    void sandboxesRunOnTheKubernetesTier() {
        try (var sb = paddock.create(small().build())) {
            assertThat(sb.info().runtime()).isEqualTo("kubernetes");
            assertThat(kube.client().pods().inNamespace(KubeletDouble.NAMESPACE).withName(sb.id().value()).get()).isNotNull();
        }
    }
}
