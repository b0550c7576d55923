package io.paddock.kubernetes.internal;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.fabric8.kubernetes.api.model.Capabilities;
import io.fabric8.kubernetes.api.model.CapabilitiesBuilder;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.SecurityContextBuilder;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeBuilder;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.VolumeMountBuilder;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyBuilder;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyEgressRule;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyEgressRuleBuilder;
import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.NetworkMode;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.SandboxSpec;
import io.paddock.wire.Wire;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Describes a sandbox as Kubernetes objects, with no I/O: its pod and its network policy. What the pod promises
 * (restricted pod security, limits, labels) is all here and pinned by golden files ({@code PodRendererTest});
 * {@link KubernetesRuntime} only creates what this returns.
 */
public final class PodRenderer {
    /** The container whose PID 1 is Paddock's init, and whose stdio is the init's channel. */
    public static final String CONTAINER = "sandbox";
    public static final String INIT_CONTAINER = "paddock-init";
    /** Where the init binary lies in the pod (an emptyDir the init container fills, read-only in the sandbox). */
    public static final String INIT_DIR = "/.paddock";
    public static final String INIT_PATH = INIT_DIR + "/paddock-init";
    public static final int UID = 1000;
    public static final int GID = 1000;
    public static final String HOSTNAME = "sandbox";

    public static final String LABEL_MANAGED_BY = "app.kubernetes.io/managed-by";
    public static final String MANAGED_BY = "paddock";
    public static final String LABEL_ID = "paddock.io/sandbox-id";
    public static final String LABEL_TENANT = "paddock.io/tenant";
    public static final String LABEL_NAME = "paddock.io/name";
    public static final String ANNOTATION_OWNER = "paddock.io/owner";
    public static final String ANNOTATION_OWNER_HOST = "paddock.io/owner-host";
    public static final String ANNOTATION_SPEC = "paddock.io/spec";
    public static final String ANNOTATION_CREATED = "paddock.io/created-at";

    /**
     * The most a pod lives, whatever happens to every Paddock process: the longest lifetime a spec may have, plus
     * the init's grace. A sandbox's own lifetime is enforced by the engine's timer and the init's DEADLINE_IN, as on
     * every tier, because it can be extended ({@code setTimeout}, a warm pod's claim) and Kubernetes only lets
     * {@code activeDeadlineSeconds} decrease.
     */
    public static final long ACTIVE_DEADLINE_SECONDS = SandboxSpec.MAX_TIMEOUT.plus(Duration.ofMinutes(1)).toSeconds();

    /** Directories a sandbox's working directory may not shadow: the image's programs would be gone. */
    private static final List<String> SYSTEM_DIRS = List.of("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
            "/libx32", "/proc", "/sys", "/dev", "/etc", INIT_DIR);
    /** Private, link-local, carrier-grade NAT and loopback ranges: never reachable under OPEN, as on the other tiers. */
    static final List<String> DENIED_UNDER_OPEN = List.of("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
            "169.254.0.0/16", "100.64.0.0/10", "127.0.0.0/8");

    private PodRenderer() {
    }

    /**
     * Everything that decides a sandbox's objects.
     *
     * @param image     the image the pod runs (the spec's, or the tier's default for {@code host})
     * @param owner     the engine's owner token
     * @param ownerHost the host the owning engine runs on (its tokens name processes there)
     * @param createdAt when, for the annotation (ISO-8601)
     */
    public record Plan(SandboxId id, SandboxSpec spec, String image, KubernetesSettings settings, String namespace,
                       String owner, String ownerHost, String createdAt) {
        public Plan {
            Objects.requireNonNull(id, "id");
            Objects.requireNonNull(spec, "spec");
            Objects.requireNonNull(image, "image");
            Objects.requireNonNull(settings, "settings");
            Objects.requireNonNull(namespace, "namespace");
            Objects.requireNonNull(owner, "owner");
            Objects.requireNonNull(ownerHost, "ownerHost");
            Objects.requireNonNull(createdAt, "createdAt");
        }
    }

    /**
     * Refuses what a pod cannot give this spec, naming the field: mounts of the host's directories, ports the
     * daemon would proxy to a host address, egress secrets (they need the host's egress proxy), domain allowlists
     * (a NetworkPolicy holds IP blocks only), a working directory over the image's system directories.
     */
    public static void check(SandboxSpec spec) {
        if (spec.codebase().isPresent() || !spec.volumes().isEmpty()) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "codebase/volumes: the kubernetes tier cannot"
                    + " mount codebases or volumes (they are directories on the daemon's host); use runc or runsc");
        }
        if (!spec.ports().isEmpty()) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "ports: the kubernetes tier does not proxy"
                    + " sandbox ports yet; use runc or runsc");
        }
        if (!spec.egressSecrets().isEmpty()) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "egressSecrets: the kubernetes tier has no"
                    + " egress proxy to add them; use runc or runsc");
        }
        if (spec.network().mode() == NetworkMode.ALLOW && !spec.network().domains().isEmpty()) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "network: the kubernetes tier renders the policy"
                    + " as a NetworkPolicy, which holds IP blocks only, so it cannot allow domains ("
                    + String.join(", ", spec.network().domains()) + "); allow CIDRs, or use runc or runsc");
        }
        String w = spec.workdir();
        for (String d : SYSTEM_DIRS) {
            if (w.equals("/") || w.equals(d) || w.startsWith(d + "/")) {
                throw SandboxException.invalid("workdir", "'" + w + "' is under " + (w.equals("/") ? "/" : d)
                        + ", which a pod's working directory (an emptyDir) may not cover; use /workspace, /tmp or another directory");
            }
        }
    }

    /** The sandbox's pod. */
    public static Pod pod(Plan plan) {
        check(plan.spec());
        SandboxSpec spec = plan.spec();
        Map<String, Quantity> resources = new LinkedHashMap<>();
        resources.put("cpu", cpu(spec.cpus()));
        // The writable places are tmpfs (memory-backed emptyDirs), whose pages count against the container's memory
        // limit (the spec's memory, which the contract holds the tenant to): together they are sized inside it, at
        // most half of it (or the disk, if smaller), so a full place ends as ENOSPC, not as an OOM kill. Sized each to
        // disk, the defaults' 2 x 1 GiB of files met a 512 MiB limit as an OOM kill (issue 37).
        resources.put("memory", bytes(spec.memory()));
        List<VolumeMount> mounts = new ArrayList<>();
        mounts.add(new VolumeMountBuilder().withName("paddock").withMountPath(INIT_DIR).withReadOnly(true).build());
        mounts.add(new VolumeMountBuilder().withName("tmp").withMountPath("/tmp").build());
        List<Volume> volumes = new ArrayList<>();
        volumes.add(new VolumeBuilder().withName("paddock").withNewEmptyDir().withSizeLimit(new Quantity("16Mi")).endEmptyDir().build());
        boolean underTmp = underTmp(spec);
        volumes.add(memoryDir("tmp", placeSize(spec)));
        if (!underTmp) {
            mounts.add(new VolumeMountBuilder().withName("workdir").withMountPath(spec.workdir()).build());
            volumes.add(memoryDir("workdir", placeSize(spec)));
        }
        Container init = new ContainerBuilder()
                .withName(INIT_CONTAINER)
                .withImage(plan.settings().initImage())
                .withCommand("cp", "/paddock-init", INIT_PATH)
                .withSecurityContext(restricted())
                .withNewResources().addToLimits("cpu", new Quantity("100m")).addToLimits("memory", new Quantity("32Mi"))
                .addToRequests("cpu", new Quantity("100m")).addToRequests("memory", new Quantity("32Mi")).endResources()
                .withVolumeMounts(new VolumeMountBuilder().withName("paddock").withMountPath(INIT_DIR).build())
                .build();
        Container main = new ContainerBuilder()
                .withName(CONTAINER)
                .withImage(plan.image())
                .withCommand(INIT_PATH, "--uid=" + UID, "--gid=" + GID, "--workdir=" + spec.workdir())
                // The init's channel: stdin held open across attaches (stdinOnce false), no terminal.
                .withStdin(true)
                .withStdinOnce(false)
                .withTty(false)
                .withWorkingDir("/")
                .withSecurityContext(restricted())
                .withNewResources().withLimits(resources).withRequests(new LinkedHashMap<>(resources)).endResources()
                .withVolumeMounts(mounts)
                .withTerminationMessagePolicy("FallbackToLogsOnError")
                .build();
        PodBuilder b = new PodBuilder()
                .withNewMetadata()
                .withName(podName(plan.id()))
                .withNamespace(plan.namespace())
                .withLabels(labels(plan.id(), spec))
                .withAnnotations(annotations(plan))
                .endMetadata()
                .withNewSpec()
                .withRestartPolicy("Never")
                .withAutomountServiceAccountToken(false)
                .withEnableServiceLinks(false)
                .withHostname(HOSTNAME)
                .withTerminationGracePeriodSeconds(1L)
                .withActiveDeadlineSeconds(ACTIVE_DEADLINE_SECONDS)
                .withNewSecurityContext()
                .withRunAsNonRoot(true)
                .withRunAsUser((long) UID)
                .withRunAsGroup((long) GID)
                .withFsGroup((long) GID)
                .withNewSeccompProfile().withType("RuntimeDefault").endSeccompProfile()
                .endSecurityContext()
                .withInitContainers(init)
                .withContainers(main)
                .withVolumes(volumes)
                .endSpec();
        if (spec.network().mode() != NetworkMode.OPEN) {
            // No name resolves in a sandbox without network or with IP blocks only: no cluster DNS either.
            b.editSpec().withDnsPolicy("None").withNewDnsConfig().withNameservers("127.0.0.1").endDnsConfig().endSpec();
        }
        plan.settings().runtimeClass().ifPresent(rc -> b.editSpec().withRuntimeClassName(rc).endSpec());
        if (plan.settings().userNamespaces()) {
            b.editSpec().withHostUsers(false).endSpec();
        }
        return b.build();
    }

    /**
     * The sandbox's network policy, selecting its pod alone: no ingress at all; egress none (the default), to the
     * allowlist's IP blocks, or (OPEN) to every address but the private, link-local and loopback ranges plus the
     * cluster's DNS. Needs a CNI that enforces NetworkPolicy; docs/KUBERNETES.md says which.
     */
    public static io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy networkPolicy(Plan plan) {
        check(plan.spec());
        List<NetworkPolicyEgressRule> egress = new ArrayList<>();
        switch (plan.spec().network().mode()) {
            case NONE -> {
            }
            case ALLOW -> {
                NetworkPolicyEgressRuleBuilder rule = new NetworkPolicyEgressRuleBuilder();
                for (String cidr : plan.spec().network().cidrs()) {
                    String c = cidr.contains("/") ? cidr : cidr + "/32";
                    rule.addNewTo().withNewIpBlock().withCidr(c).endIpBlock().endTo();
                }
                if (!plan.spec().network().cidrs().isEmpty()) {
                    egress.add(rule.build());
                }
            }
            case OPEN -> {
                egress.add(new NetworkPolicyEgressRuleBuilder().addNewTo().withNewIpBlock().withCidr("0.0.0.0/0")
                        .withExcept(DENIED_UNDER_OPEN).endIpBlock().endTo().build());
                egress.add(new NetworkPolicyEgressRuleBuilder()
                        .addNewTo().withNewNamespaceSelector().addToMatchLabels("kubernetes.io/metadata.name", "kube-system")
                        .endNamespaceSelector().withNewPodSelector().addToMatchLabels("k8s-app", "kube-dns").endPodSelector().endTo()
                        .addNewPort().withProtocol("UDP").withNewPort(53).endPort()
                        .addNewPort().withProtocol("TCP").withNewPort(53).endPort()
                        .build());
            }
        }
        return new NetworkPolicyBuilder()
                .withNewMetadata()
                .withName(podName(plan.id()))
                .withNamespace(plan.namespace())
                .withLabels(new LinkedHashMap<>(Map.of(LABEL_MANAGED_BY, MANAGED_BY)))
                .addToLabels(LABEL_ID, plan.id().value())
                .endMetadata()
                .withNewSpec()
                .withNewPodSelector().addToMatchLabels(LABEL_ID, plan.id().value()).endPodSelector()
                .withPolicyTypes("Ingress", "Egress")
                .withEgress(egress)
                .endSpec()
                .build();
    }

    /** A sandbox's pod (and network policy) is named by its id, already a DNS label: {@code sb-…}. */
    public static String podName(SandboxId id) {
        return id.value();
    }

    /**
     * Paddock's labels, then the spec's own (already valid Kubernetes labels: the API checks them with the same
     * rules), except keys under prefixes that Kubernetes or Paddock reserve, which could otherwise spoof a selector.
     */
    static Map<String, String> labels(SandboxId id, SandboxSpec spec) {
        Map<String, String> l = new LinkedHashMap<>();
        l.put(LABEL_MANAGED_BY, MANAGED_BY);
        l.put(LABEL_ID, id.value());
        spec.name().ifPresent(n -> l.put(LABEL_NAME, n));
        String tenant = spec.labels().get(LABEL_TENANT);
        if (tenant != null) {
            l.put(LABEL_TENANT, tenant);
        }
        spec.labels().forEach((k, v) -> {
            if (!reserved(k)) {
                l.putIfAbsent(k, v);
            }
        });
        return l;
    }

    static boolean reserved(String key) {
        int slash = key.indexOf('/');
        if (slash < 0) {
            return false;
        }
        String prefix = key.substring(0, slash);
        for (String r : List.of("paddock.io", "kubernetes.io", "k8s.io")) {
            if (prefix.equals(r) || prefix.endsWith("." + r)) {
                return true;
            }
        }
        return false;
    }

    private static Map<String, String> annotations(Plan plan) {
        ObjectNode spec = Wire.json(plan.spec());
        // Anyone who may read pods in the namespace reads annotations: secrets travel only in the init's SPAWN.
        spec.remove("secrets");
        spec.remove("egress_secrets");
        Map<String, String> a = new LinkedHashMap<>();
        a.put(ANNOTATION_OWNER, plan.owner());
        a.put(ANNOTATION_OWNER_HOST, plan.ownerHost());
        a.put(ANNOTATION_CREATED, plan.createdAt());
        a.put(ANNOTATION_SPEC, spec.toString());
        return a;
    }

    private static boolean underTmp(SandboxSpec spec) {
        return spec.workdir().equals("/tmp") || spec.workdir().startsWith("/tmp/");
    }

    /**
     * What the writable places hold together: the spec's disk, but at most half its memory, so that the tmpfs pages
     * and the tenant's processes fit the one memory limit.
     */
    static ByteSize placesSize(SandboxSpec spec) {
        return ByteSize.bytes(Math.min(spec.disk().bytes(), spec.memory().bytes() / 2));
    }

    /** Each writable place's tmpfs size: {@link #placesSize}, halved between /tmp and a working directory outside it. */
    static ByteSize placeSize(SandboxSpec spec) {
        long all = placesSize(spec).bytes();
        return ByteSize.bytes(underTmp(spec) ? all : all / 2);
    }

    private static Volume memoryDir(String name, ByteSize size) {
        // Memory-backed, as the host image's /tmp and /workspace: a tmpfs of its size (ENOSPC past it), charged to
        // the pod's memory limit (inside which placesSize keeps it), never on the node's disk.
        return new VolumeBuilder().withName(name).withNewEmptyDir().withMedium("Memory").withSizeLimit(bytes(size))
                .endEmptyDir().build();
    }

    private static SecurityContext restricted() {
        Capabilities none = new CapabilitiesBuilder().withDrop("ALL").build();
        return new SecurityContextBuilder()
                .withAllowPrivilegeEscalation(false)
                .withPrivileged(false)
                .withCapabilities(none)
                .withReadOnlyRootFilesystem(true)
                .withRunAsNonRoot(true)
                .withRunAsUser((long) UID)
                .withRunAsGroup((long) GID)
                .withNewSeccompProfile().withType("RuntimeDefault").endSeccompProfile()
                .build();
    }

    /** Bytes as a quantity: whole MiB or GiB where they are, else bytes. */
    static Quantity bytes(ByteSize size) {
        long b = size.bytes();
        if (b % (1L << 30) == 0) {
            return new Quantity((b >> 30) + "Gi");
        }
        if (b % (1L << 20) == 0) {
            return new Quantity((b >> 20) + "Mi");
        }
        return new Quantity(Long.toString(b));
    }

    /** CPUs in millicores (the API's own granularity). */
    static Quantity cpu(double cpus) {
        long milli = Math.max(1, Math.round(cpus * 1000));
        return new Quantity(milli % 1000 == 0 ? Long.toString(milli / 1000) : milli + "m");
    }
}
