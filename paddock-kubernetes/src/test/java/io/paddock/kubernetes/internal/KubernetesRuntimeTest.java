package io.paddock.kubernetes.internal;

import io.paddock.ErrorCode;
import io.paddock.ExecResult;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.SandboxSpec;
import io.paddock.init.internal.InitClient;
import io.paddock.init.internal.SpawnRequest;
import io.paddock.runtime.RuntimeRecord;
import io.paddock.runtime.RuntimeSandbox;
import io.paddock.runtime.StartRequest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.nio.channels.Channels;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The Kubernetes tier's lifecycle against fabric8's mock API server in CRUD mode, with {@link KubeletDouble} (a
 * test double of a kubelet, not part of Paddock) running pods as runc sandboxes: create, attach and speak the init
 * protocol over the attach WebSocket, re-attach after the engine lost its channel, records from labels, destroy,
 * and the failures (unschedulable, unpullable image, RBAC 403, no cluster) leaving nothing behind. Needs root and
 * runc, as the runc tier's own tests.
 */
class KubernetesRuntimeTest {
    private static KubeletDouble kube;
    private static KubernetesRuntime tier;
    private static final SecureRandom RANDOM = new SecureRandom();

    @BeforeAll
    static void start() {
        kube = new KubeletDouble();
        tier = KubernetesRuntime.open(kube.client(), settings(Map.of()));
    }

    static KubernetesSettings settings(Map<String, String> more) {
        Map<String, String> o = new java.util.HashMap<>(Map.of("kubernetes.namespace", KubeletDouble.NAMESPACE,
                "kubernetes.defaultImage", KubeletDouble.IMAGE, "kubernetes.startTimeout", "30"));
        o.putAll(more);
        return KubernetesSettings.from(o);
    }

    @AfterEach
    void nothingLeft() {
        kube.allowAll();
        kube.mode(KubeletDouble.Mode.RUN);
        for (RuntimeRecord r : tier.records()) {
            tier.destroy(r.id());
        }
    }

    @AfterAll
    static void stop() {
        if (kube != null) {
            kube.close();
        }
    }

    @Test
    void aSandboxIsAPodWhoseInitSpeaksOverTheAttachStream() {
        SandboxId id = newId();
        byte[] nonce = nonce();
        RuntimeSandbox rt = tier.start(request(id, SandboxSpec.builder().label("team", "ml").build(), nonce, false));
        InitClient init = InitClient.attach(rt.fromInit(), rt.toInit(), nonce, Duration.ofSeconds(20), id.value());
        try {
            ExecResult r = init.run(SpawnRequest.builder(java.util.List.of("sh", "-c", "echo hello; id -u; echo err >&2"))
                    .user(1000, 1000).cwd("/workspace").timeout(Duration.ofSeconds(20)).build(), null);
            assertThat(r.stdoutText()).isEqualTo("hello\n1000\n");
            assertThat(r.stderrText()).isEqualTo("err\n");
            init.files().writeString("/workspace/f.txt", "through the attach stream");
            assertThat(init.files().readString("/workspace/f.txt")).isEqualTo("through the attach stream");
            var pod = kube.client().pods().inNamespace(KubeletDouble.NAMESPACE).withName(id.value()).get();
            assertThat(pod.getMetadata().getLabels()).containsEntry("paddock.io/sandbox-id", id.value())
                    .containsEntry("team", "ml");
            assertThat(tier.records()).contains(new RuntimeRecord(id, "daemon:test"));
        } finally {
            init.close();
            rt.closeChannel();
        }
        tier.destroy(id);
        assertThat(kube.leftovers()).isEmpty();
        assertThat(kube.runningPods()).isZero();
        tier.destroy(id); // idempotent
    }

    @Test
    void aRestartedEngineReattachesWithAFreshHello() {
        SandboxId id = newId();
        byte[] nonce = nonce();
        RuntimeSandbox rt = tier.start(request(id, SandboxSpec.builder().build(), nonce, false));
        InitClient first = InitClient.attach(rt.fromInit(), rt.toInit(), nonce, Duration.ofSeconds(20), id.value());
        first.run(SpawnRequest.builder(java.util.List.of("sh", "-c", "echo kept > /workspace/state")).user(1000, 1000)
                .cwd("/workspace").build(), null);
        // The engine goes away: its attach ends, the pod and its init stay.
        first.close();
        rt.closeChannel();
        byte[] again = nonce();
        RuntimeSandbox rt2 = tier.reattach(id, hello(again, false));
        InitClient second = InitClient.attach(rt2.fromInit(), rt2.toInit(), again, Duration.ofSeconds(20), id.value());
        try {
            assertThat(second.run(SpawnRequest.builder(java.util.List.of("cat", "/workspace/state")).user(1000, 1000)
                    .cwd("/workspace").build(), null).stdoutText()).isEqualTo("kept\n");
        } finally {
            second.close();
            rt2.closeChannel();
        }
        tier.destroy(id);
        assertCode(() -> tier.reattach(id, hello(nonce(), false)), ErrorCode.NOT_FOUND);
    }

    @Test
    void theInitsEndIsTheStreamsEnd() throws Exception {
        SandboxId id = newId();
        byte[] nonce = nonce();
        RuntimeSandbox rt = tier.start(request(id, SandboxSpec.builder().build(), nonce, false));
        InitClient init = InitClient.attach(rt.fromInit(), rt.toInit(), nonce, Duration.ofSeconds(20), id.value());
        kube.killInit(id.value());
        init.closed().get(20, java.util.concurrent.TimeUnit.SECONDS);
        assertThat(init.isOpen()).isFalse();
        rt.closeChannel();
        tier.destroy(id);
        assertThat(kube.leftovers()).isEmpty();
    }

    @Test
    void aNewNetworkPolicyReplacesThePodsOwn() {
        SandboxId id = newId();
        RuntimeSandbox rt = tier.start(request(id, SandboxSpec.builder().build(), nonce(), false));
        rt.closeChannel();
        var policies = kube.client().network().v1().networkPolicies().inNamespace(KubeletDouble.NAMESPACE).withName(id.value());
        assertThat(policies.get().getSpec().getEgress()).isEmpty();
        tier.updateNetwork(id, io.paddock.NetworkPolicy.allow("198.18.0.0/24"));
        assertThat(policies.get().getSpec().getEgress().get(0).getTo().get(0).getIpBlock().getCidr()).isEqualTo("198.18.0.0/24");
        assertThat(kube.client().pods().inNamespace(KubeletDouble.NAMESPACE).withName(id.value()).get().getMetadata()
                .getAnnotations().get(PodRenderer.ANNOTATION_SPEC)).contains("198.18.0.0/24");
        // A domain cannot be a NetworkPolicy rule: refused, and the policy stays as it was.
        assertThatThrownBy(() -> tier.updateNetwork(id, io.paddock.NetworkPolicy.allow("api.example.com")))
                .hasMessageStartingWith("network: ");
        assertThat(policies.get().getSpec().getEgress().get(0).getTo().get(0).getIpBlock().getCidr()).isEqualTo("198.18.0.0/24");
        tier.destroy(id);
    }

    @Test
    void anUnschedulablePodFailsAtTheStartTimeoutAndIsRemoved() {
        KubernetesRuntime quick = KubernetesRuntime.open(kube.client(), settings(Map.of("kubernetes.startTimeout", "2")));
        kube.mode(KubeletDouble.Mode.UNSCHEDULABLE);
        long t0 = System.nanoTime();
        assertThatThrownBy(() -> quick.start(request(newId(), SandboxSpec.builder().build(), nonce(), false)))
                .isInstanceOf(SandboxException.class)
                .hasMessageContaining("was not scheduled within 2 s")
                .hasMessageContaining("Insufficient memory")
                .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.RESOURCE_EXHAUSTED));
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(10));
        assertThat(kube.leftovers()).isEmpty();
    }

    /**
     * A pod whose node never confirms its deletion stays Terminating (issue 37, defect 4): the failed create must not
     * say "it was removed"; the pod and its policy stay recorded in the cluster (records() lists the sandbox) and the
     * tier keeps deleting them in the background, the policy only once the API confirms the pod gone.
     */
    @Test
    void aPodLeftTerminatingIsNotSaidRemovedAndIsSweptOnceGone() throws Exception {
        KubernetesRuntime quick = KubernetesRuntime.open(kube.client(), settings(Map.of("kubernetes.startTimeout", "2",
                "kubernetes.deleteTimeout", "1")));
        kube.mode(KubeletDouble.Mode.UNSCHEDULABLE);
        kube.stuckTerminating(true);
        SandboxId id = newId();
        try {
            assertThatThrownBy(() -> quick.start(request(id, SandboxSpec.builder().build(), nonce(), false)))
                    .isInstanceOf(SandboxException.class)
                    .hasMessageContaining("was not scheduled within 2 s")
                    .hasMessageContaining("its removal is not confirmed")
                    .hasMessageContaining("Terminating (deleted at")
                    .hasMessageNotContaining("removed;").hasMessageNotContaining("it was removed")
                    .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.RESOURCE_EXHAUSTED));
            assertThat(kube.leftovers()).containsExactlyInAnyOrder("pod/" + id.value(), "networkpolicy/" + id.value());
            assertThat(quick.records()).extracting(RuntimeRecord::id).contains(id);
            assertThat(quick.unconfirmed()).containsExactly(id);
            Thread.sleep(2500);
            assertThat(kube.leftovers()).as("the policy stays while the pod does").contains("networkpolicy/" + id.value());
            // The node confirms at last: the pod goes, and the sweep removes the policy.
            kube.stuckTerminating(false);
            kube.confirmDeletion(id.value());
            long until = System.nanoTime() + Duration.ofSeconds(15).toNanos();
            while (!kube.leftovers().isEmpty() && System.nanoTime() < until) {
                Thread.sleep(200);
            }
            assertThat(kube.leftovers()).isEmpty();
            assertThat(quick.unconfirmed()).isEmpty();
        } finally {
            kube.stuckTerminating(false);
            if (kube.leftovers().contains("pod/" + id.value())) {
                kube.confirmDeletion(id.value());
            }
        }
    }

    /** The pod's labels follow the spec's (a claim, a label update), so {@code kubectl get pods -l} finds sandboxes. */
    @Test
    void podLabelsFollowTheSpec() {
        SandboxId id = newId();
        RuntimeSandbox rt = tier.start(request(id, SandboxSpec.builder().label("team", "ml").label("stage", "dev").build(),
                nonce(), false));
        rt.closeChannel();
        kube.client().pods().inNamespace(KubeletDouble.NAMESPACE).withName(id.value()).edit(p -> {
            p.getMetadata().getLabels().put("operator.example/keep", "yes");
            return p;
        });
        tier.respecified(id, SandboxSpec.builder().name("web").label("team", "ai").build(), java.time.Instant.now());
        var labels = kube.client().pods().inNamespace(KubeletDouble.NAMESPACE).withName(id.value()).get().getMetadata().getLabels();
        assertThat(labels).containsEntry("team", "ai").containsEntry(PodRenderer.LABEL_NAME, "web")
                .containsEntry(PodRenderer.LABEL_ID, id.value()).containsEntry("operator.example/keep", "yes")
                .doesNotContainKey("stage");
        assertThat(kube.client().pods().inNamespace(KubeletDouble.NAMESPACE).withLabel("team", "ai").list().getItems())
                .extracting(p -> p.getMetadata().getName()).containsExactly(id.value());
        tier.destroy(id);
    }

    @Test
    void anImageTheClusterCannotPullIsABadSpec() {
        assertThatThrownBy(() -> tier.start(request(newId(), SandboxSpec.builder().image("no-such-image").build(), nonce(), false)))
                .isInstanceOf(SandboxException.class)
                .hasMessageStartingWith("image: the cluster cannot pull 'no-such-image': ErrImagePull")
                .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
        assertThat(kube.leftovers()).isEmpty();
    }

    @Test
    void forbiddenRbacIsSaidAndNothingIsLeft() {
        kube.forbid("POST", "/api/v1/namespaces/" + KubeletDouble.NAMESPACE + "/pods");
        assertThatThrownBy(() -> tier.start(request(newId(), SandboxSpec.builder().build(), nonce(), false)))
                .isInstanceOf(SandboxException.class)
                .hasMessageContaining("403 Forbidden")
                .hasMessageContaining("deploy/kubernetes/10-rbac.yaml")
                .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.FAILED_PRECONDITION));
        // The network policy made before the refused pod is gone too.
        assertThat(kube.leftovers()).isEmpty();
        kube.allowAll();
        kube.forbid("POST", "/apis/networking.k8s.io/v1/namespaces/" + KubeletDouble.NAMESPACE + "/networkpolicies");
        assertThatThrownBy(() -> tier.start(request(newId(), SandboxSpec.builder().build(), nonce(), false)))
                .hasMessageContaining("create the network policy").hasMessageContaining("403");
        assertThat(kube.leftovers()).isEmpty();
    }

    @Test
    void anUnreachableClusterIsSaidNamingWhereItWasLookedFor() {
        assertThatThrownBy(() -> KubernetesRuntime.open(settings(Map.of("kubernetes.master", "http://127.0.0.1:1"))))
                .isInstanceOf(SandboxException.class)
                .hasMessageContaining("cannot reach the Kubernetes API server at http://127.0.0.1:1")
                .hasMessageContaining("--kube-master")
                .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.UNAVAILABLE));
        assertThatThrownBy(() -> KubernetesRuntime.open(settings(Map.of("kubernetes.kubeconfig", "/nonexistent/kubeconfig"))))
                .isInstanceOf(SandboxException.class)
                .hasMessageContaining("/nonexistent/kubeconfig");
    }

    /**
     * A bad or expired token (issue 37, defect 3): the API server answers 401, which the tier reports as the
     * credentials refused, naming where they came from and the status, at open and on a later call; never as an
     * unreachable server. The tier's client speaks HTTP/1.1, over which a real server's 401 arrives as such (over
     * HTTP/2 the JDK 17 client reported only the GOAWAY that follows it).
     */
    @Test
    void aBadTokenIsSaidAsRefusedCredentials(@org.junit.jupiter.api.io.TempDir java.nio.file.Path tmp) throws Exception {
        KubeletDouble refusing = new KubeletDouble();
        try {
            java.nio.file.Path kubeconfig = tmp.resolve("kubeconfig");
            java.nio.file.Files.writeString(kubeconfig, """
                    apiVersion: v1
                    kind: Config
                    clusters: [{name: c, cluster: {server: "%s"}}]
                    users: [{name: u, user: {token: expired-token}}]
                    contexts: [{name: x, context: {cluster: c, user: u, namespace: %s}}]
                    current-context: x
                    """.formatted(refusing.url(), KubeletDouble.NAMESPACE));
            KubernetesRuntime t = KubernetesRuntime.open(settings(Map.of("kubernetes.kubeconfig", kubeconfig.toString())));
            refusing.unauthorized("GET", "/api/v1/namespaces/");
            assertThatThrownBy(t::records).isInstanceOf(SandboxException.class)
                    .hasMessageContaining("refused the credentials in kubeconfig " + kubeconfig)
                    .hasMessageContaining("401 Unauthorized")
                    .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.FAILED_PRECONDITION));
            t.close();
            refusing.unauthorized("GET", "/version");
            assertThatThrownBy(() -> KubernetesRuntime.open(settings(Map.of("kubernetes.kubeconfig", kubeconfig.toString()))))
                    .isInstanceOf(SandboxException.class)
                    .hasMessageStartingWith("the API server at " + refusing.url())
                    .hasMessageContaining("refused the credentials in kubeconfig " + kubeconfig + " (401 Unauthorized")
                    .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.FAILED_PRECONDITION));
        } finally {
            refusing.close();
        }
    }

    /**
     * kubernetes.userNamespaces on a cluster without user-namespace support (issue 37, defect 5): the API server
     * stores the pod without {@code hostUsers}; the tier reads the stored pod back, refuses by name and leaves
     * nothing, instead of running the pod in the node's user namespace.
     */
    @Test
    void aDroppedHostUsersIsRefusedAndNothingIsLeft() {
        KubernetesRuntime userns = KubernetesRuntime.open(kube.client(), settings(Map.of("kubernetes.userNamespaces", "true")));
        kube.dropHostUsers();
        assertThatThrownBy(() -> userns.start(request(newId(), SandboxSpec.builder().build(), nonce(), false)))
                .isInstanceOf(SandboxException.class)
                .hasMessageContaining("without hostUsers: false")
                .hasMessageContaining("kubernetes.userNamespaces")
                .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.FAILED_PRECONDITION));
        assertThat(kube.leftovers()).isEmpty();
    }

    @Test
    void aServerThatGoesAwayMidwayIsUnavailable() {
        KubeletDouble gone = new KubeletDouble();
        // Opened from settings as the daemon opens it: the version call must succeed against the live server.
        KubernetesRuntime t = KubernetesRuntime.open(settings(Map.of("kubernetes.master", gone.url())));
        assertThat(t.records()).isEmpty();
        gone.close();
        assertThatThrownBy(t::records).isInstanceOf(SandboxException.class)
                .hasMessageContaining("is unreachable or failing")
                .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.UNAVAILABLE));
        t.close();
    }

    @Test
    void recordsJudgeOwnersOnlyWhereTheyCan() {
        SandboxId id = newId();
        byte[] nonce = nonce();
        RuntimeSandbox rt = tier.start(new StartRequest(id, SandboxSpec.builder().build(), "12345.999.abcdef", hello(nonce, true)));
        rt.closeChannel();
        // A process token is judged on its own host only: edit the pod as if another host's engine made it.
        assertThat(tier.records()).contains(new RuntimeRecord(id, "12345.999.abcdef"));
        kube.client().pods().inNamespace(KubeletDouble.NAMESPACE).withName(id.value())
                .edit(p -> {
                    p.getMetadata().getAnnotations().put(PodRenderer.ANNOTATION_OWNER_HOST, "another-host");
                    return p;
                });
        assertThat(tier.records()).contains(new RuntimeRecord(id, ""));
        tier.destroy(id);
    }

    private static StartRequest request(SandboxId id, SandboxSpec spec, byte[] nonce, boolean orphanDie) {
        return new StartRequest(id, spec, "daemon:test", hello(nonce, orphanDie));
    }

    static byte[] hello(byte[] nonce, boolean orphanDie) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        InitClient.writeHello(Channels.newChannel(out), nonce, orphanDie);
        return out.toByteArray();
    }

    static byte[] nonce() {
        byte[] n = new byte[16];
        RANDOM.nextBytes(n);
        return n;
    }

    static SandboxId newId() {
        String alphabet = "abcdefghijklmnopqrstuvwxyz234567";
        StringBuilder b = new StringBuilder("sb-");
        for (int i = 0; i < 26; i++) {
            b.append(alphabet.charAt(RANDOM.nextInt(32)));
        }
        return new SandboxId(b.toString());
    }

    static void assertCode(Runnable r, ErrorCode code) {
        assertThatThrownBy(r::run).isInstanceOf(SandboxException.class)
                .satisfies(e -> assertThat(((SandboxException) e).code()).as(e.getMessage()).isEqualTo(code));
    }
}
