package io.paddock.kubernetes.internal;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.NetworkPolicy;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.SandboxSpec;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The objects a sandbox becomes, pinned in golden files (regenerate with -Dpaddock.golden.update=true and read the
 * diff): restricted pod security, limits, volumes, labels and annotations, and the network policy per mode.
 */
class PodRendererTest {
    static final SandboxId ID = new SandboxId("sb-aaaaaaaaaaaaaaaaaaaaaaaaaa");
    static final KubernetesSettings SETTINGS = KubernetesSettings.from(Map.of());

    static PodRenderer.Plan plan(SandboxSpec spec, KubernetesSettings settings) {
        return new PodRenderer.Plan(ID, spec, spec.image().equals("host") ? settings.defaultImage() : spec.image(),
                settings, "sandboxes", "daemon:0123456789abcdef", "paddock-0", "2025-01-01T00:00:00Z");
    }

    @Test
    void typicalPodMatchesGolden() throws Exception {
        golden("pod-typical.yaml", Serialization.asYaml(PodRenderer.pod(plan(SandboxSpec.builder().build(), SETTINGS))));
    }

    @Test
    void podWithRuntimeClassLabelsAndLimitsMatchesGolden() throws Exception {
        SandboxSpec spec = SandboxSpec.builder().image("python:3.12-slim").name("web").memory(ByteSize.mib(300))
                .cpus(0.25).disk(ByteSize.mib(64)).workdir("/home/work").timeout(Duration.ofMinutes(30))
                .label("paddock.io/tenant", "acme").label("team", "ml").label("example.com/tier", "gold")
                .label("kubernetes.io/spoof", "x").label("paddock.io/sandbox-id", "spoof")
                .env("MODE", "test").secret("API_TOKEN", "tok-never-in-the-pod").network(NetworkPolicy.open()).build();
        KubernetesSettings settings = KubernetesSettings.from(Map.of("kubernetes.runtimeClass", "gvisor",
                "kubernetes.userNamespaces", "true", "kubernetes.initImage", "registry.example/paddock-init:1"));
        String yaml = Serialization.asYaml(PodRenderer.pod(plan(spec, settings)));
        assertThat(yaml).doesNotContain("tok-never-in-the-pod").doesNotContain("spoof\n");
        golden("pod-gvisor-labels.yaml", yaml);
    }

    /**
     * /tmp and the working directory are tmpfs charged to the container's memory limit: filled, they must end as
     * ENOSPC, not as an OOM kill, so their sizes plus the spec's memory fit inside the limit (issue 37; the defaults
     * had 2 x 1 GiB of tmpfs against a 512 MiB limit).
     */
    @Test
    void theWritablePlacesFitInsideTheMemoryLimit() {
        for (SandboxSpec spec : List.of(SandboxSpec.builder().build(),
                SandboxSpec.builder().workdir("/tmp/w").build(),
                SandboxSpec.builder().memory(ByteSize.mib(128)).disk(ByteSize.gib(4)).build(),
                SandboxSpec.builder().memory(ByteSize.gib(4)).disk(ByteSize.mib(256)).build())) {
            Pod pod = PodRenderer.pod(plan(spec, SETTINGS));
            long places = pod.getSpec().getVolumes().stream().filter(v -> v.getEmptyDir() != null)
                    .filter(v -> "Memory".equals(v.getEmptyDir().getMedium()))
                    .mapToLong(v -> v.getEmptyDir().getSizeLimit().getNumericalAmount().longValueExact()).sum();
            Container main = pod.getSpec().getContainers().get(0);
            long limit = main.getResources().getLimits().get("memory").getNumericalAmount().longValueExact();
            assertThat(limit).as("the limit is the spec's memory").isEqualTo(spec.memory().bytes());
            assertThat(places).as(spec.workdir() + ": the places fit inside the memory limit, with room for processes")
                    .isLessThanOrEqualTo(limit / 2).isPositive();
            assertThat(places).as(spec.workdir() + ": the places are the disk where the memory allows")
                    .isEqualTo(Math.min(spec.disk().bytes(), spec.memory().bytes() / 2));
        }
    }

    @Test
    void everyContainerIsRestricted() {
        Pod pod = PodRenderer.pod(plan(SandboxSpec.builder().build(), SETTINGS));
        assertThat(pod.getSpec().getAutomountServiceAccountToken()).isFalse();
        assertThat(pod.getSpec().getEnableServiceLinks()).isFalse();
        assertThat(pod.getSpec().getSecurityContext().getRunAsNonRoot()).isTrue();
        assertThat(pod.getSpec().getSecurityContext().getSeccompProfile().getType()).isEqualTo("RuntimeDefault");
        for (Container c : concat(pod)) {
            assertThat(c.getSecurityContext().getAllowPrivilegeEscalation()).as(c.getName()).isFalse();
            assertThat(c.getSecurityContext().getPrivileged()).as(c.getName()).isFalse();
            assertThat(c.getSecurityContext().getReadOnlyRootFilesystem()).as(c.getName()).isTrue();
            assertThat(c.getSecurityContext().getCapabilities().getDrop()).as(c.getName()).containsExactly("ALL");
            assertThat(c.getSecurityContext().getCapabilities().getAdd()).as(c.getName()).isNullOrEmpty();
            assertThat(c.getSecurityContext().getRunAsUser()).as(c.getName()).isEqualTo(1000L);
            assertThat(c.getResources().getLimits()).as(c.getName()).containsKeys("cpu", "memory");
        }
        Container main = pod.getSpec().getContainers().get(0);
        assertThat(main.getStdin()).isTrue();
        assertThat(main.getStdinOnce()).isFalse();
        assertThat(main.getTty()).isFalse();
        assertThat(main.getCommand()).containsExactly("/.paddock/paddock-init", "--uid=1000", "--gid=1000",
                "--workdir=/workspace");
        assertThat(main.getEnv()).isNullOrEmpty();
    }

    @Test
    void networkPoliciesMatchGoldens() throws Exception {
        golden("netpol-none.yaml", Serialization.asYaml(PodRenderer.networkPolicy(plan(SandboxSpec.builder().build(), SETTINGS))));
        golden("netpol-allow.yaml", Serialization.asYaml(PodRenderer.networkPolicy(plan(SandboxSpec.builder()
                .network(NetworkPolicy.allow("198.18.0.0/24", "203.0.113.7")).build(), SETTINGS))));
        golden("netpol-open.yaml", Serialization.asYaml(PodRenderer.networkPolicy(plan(SandboxSpec.builder()
                .network(NetworkPolicy.open()).build(), SETTINGS))));
    }

    @Test
    void whatAPodCannotHaveIsRefusedNamingTheField() {
        assertThatThrownBy(() -> PodRenderer.check(SandboxSpec.builder().network(NetworkPolicy.allow("api.example.com")).build()))
                .isInstanceOf(SandboxException.class).hasMessageStartingWith("network: ")
                .hasMessageContaining("holds IP blocks only")
                .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.FAILED_PRECONDITION));
        assertThatThrownBy(() -> PodRenderer.check(SandboxSpec.builder().port(8080).build()))
                .hasMessageStartingWith("ports: ");
        assertThatThrownBy(() -> PodRenderer.check(SandboxSpec.builder().workdir("/usr/lib").build()))
                .hasMessageStartingWith("workdir: ")
                .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
        assertThatThrownBy(() -> PodRenderer.check(SandboxSpec.builder().workdir("/etc/x").build()))
                .hasMessageStartingWith("workdir: ");
    }

    @Test
    void aWorkdirUnderTmpSharesTmpsVolume() {
        Pod pod = PodRenderer.pod(plan(SandboxSpec.builder().workdir("/tmp/w").build(), SETTINGS));
        assertThat(pod.getSpec().getVolumes()).extracting(v -> v.getName()).containsExactly("paddock", "tmp");
    }

    @Test
    void quantities() {
        assertThat(PodRenderer.bytes(ByteSize.gib(2)).toString()).isEqualTo("2Gi");
        assertThat(PodRenderer.bytes(ByteSize.mib(300)).toString()).isEqualTo("300Mi");
        assertThat(PodRenderer.bytes(ByteSize.kib(3)).toString()).isEqualTo("3072");
        assertThat(PodRenderer.cpu(1.0).toString()).isEqualTo("1");
        assertThat(PodRenderer.cpu(0.25).toString()).isEqualTo("250m");
        assertThat(PodRenderer.cpu(2.5).toString()).isEqualTo("2500m");
    }

    @Test
    void settingsAreCheckedNamingTheOption() {
        assertThatThrownBy(() -> KubernetesSettings.from(Map.of("kubernetes.namespace", "Bad_NS")))
                .hasMessageContaining("kubernetes.namespace");
        assertThatThrownBy(() -> KubernetesSettings.from(Map.of("kubernetes.nope", "x")))
                .hasMessageContaining("unknown option kubernetes.nope");
        assertThatThrownBy(() -> KubernetesSettings.from(Map.of("kubernetes.startTimeout", "soon")))
                .hasMessageContaining("kubernetes.startTimeout");
        assertThat(KubernetesSettings.from(Map.of("kubernetes.startTimeout", "90")).startTimeout()).isEqualTo(Duration.ofSeconds(90));
        assertThat(KubernetesSettings.from(Map.of()).namespace()).isEqualTo(Optional.empty());
    }

    private static java.util.List<Container> concat(Pod pod) {
        java.util.List<Container> all = new java.util.ArrayList<>(pod.getSpec().getInitContainers());
        all.addAll(pod.getSpec().getContainers());
        return all;
    }

    static void golden(String name, String actual) throws Exception {
        Path golden = Path.of("src/test/resources/golden", name);
        if (Boolean.getBoolean("paddock.golden.update") || !Files.exists(golden)) {
            Files.writeString(golden, actual, StandardCharsets.UTF_8);
        }
        assertThat(actual).isEqualTo(Files.readString(golden, StandardCharsets.UTF_8));
    }
}
