package io.paddock.kubernetes.internal;

import io.fabric8.kubernetes.api.model.ContainerStateTerminated;
import io.fabric8.kubernetes.api.model.ContainerStateWaiting;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.ExecWatch;
import io.fabric8.kubernetes.client.jdkhttp.JdkHttpClientFactory;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.SandboxSpec;
import io.paddock.runtime.RuntimeRecord;
import io.paddock.runtime.RuntimeSandbox;
import io.paddock.runtime.SandboxRuntime;
import io.paddock.runtime.StartRequest;

import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The Kubernetes tier: each sandbox is a pod ({@link PodRenderer}) whose PID 1 is Paddock's init, and the engine
 * talks to that init over one attach to the pod's stdin and stdout ({@link AttachedSandbox}), so exec, streams,
 * files and code work as on every other tier. Its network policy is a NetworkPolicy of the same name. Everything
 * it creates carries the sandbox's id as a label, so it can find, recover and remove it from the cluster alone.
 */
public final class KubernetesRuntime implements SandboxRuntime {
    public static final String NAME = "kubernetes";
    private static final System.Logger LOG = System.getLogger("io.paddock.kubernetes");

    private final KubernetesClient client;
    private final KubernetesSettings settings;
    private final String namespace;
    private final String server;
    private final String version;
    private final String hostName;
    /**
     * Sandboxes whose removal the API has not confirmed (a pod left Terminating by a node that never confirms it):
     * deleted again in the background until their pod and then their network policy are gone.
     */
    private final Set<SandboxId> unconfirmed = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final java.util.concurrent.ScheduledExecutorService sweeper =
            java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "paddock-kubernetes-sweep");
                t.setDaemon(true);
                return t;
            });
    /** Where the credentials came from ({@link #source}), for a refusal's message. */
    private final String credentials;

    KubernetesRuntime(KubernetesClient client, KubernetesSettings settings, String namespace, String server,
                      String version, String hostName) {
        this.client = client;
        this.credentials = source(settings, client.getConfiguration());
        this.settings = settings;
        this.namespace = namespace;
        this.server = server;
        this.version = version;
        this.hostName = hostName;
    }

    /**
     * Connects to the cluster: the kubeconfig named in the settings, else the standard places (fabric8's
     * {@code Config.autoConfigure}: {@code $KUBECONFIG}, {@code ~/.kube/config}, or the pod's service account when
     * in a cluster), then asks the API server its version, so that a missing or unreachable cluster is said now,
     * naming what was tried.
     */
    public static KubernetesRuntime open(KubernetesSettings settings) {
        Config config = config(settings);
        String ns = settings.namespace().orElse(Optional.ofNullable(config.getNamespace()).orElse("default"));
        KubernetesClient client = new KubernetesClientBuilder().withConfig(config)
                .withHttpClientFactory(new Http11ClientFactory()).build();
        String version;
        try {
            version = client.getKubernetesVersion().getGitVersion();
        } catch (KubernetesClientException e) {
            client.close();
            if (e.getCode() == 401 || e.getCode() == 403) {
                throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "the API server at " + config.getMasterUrl()
                        + " refused the credentials in " + source(settings, config) + " (" + statusLine(e) + "): "
                        + (e.getCode() == 401 ? "a bad or expired token or certificate" : "they may not read the"
                        + " server's version") + "; give valid ones (a fresh token, --kubeconfig)");
            }
            throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot reach the Kubernetes API server at "
                    + config.getMasterUrl() + " (from " + source(settings, config) + "): " + rootMessage(e), e);
        }
        return new KubernetesRuntime(client, settings, ns, config.getMasterUrl(), version, localHostName());
    }

    /** {@code 401 Unauthorized: <the server's message>}, as the API server's Status says it. */
    static String statusLine(KubernetesClientException e) {
        String reason = e.getStatus() != null && e.getStatus().getReason() != null ? " " + e.getStatus().getReason() : "";
        String message = e.getStatus() != null && e.getStatus().getMessage() != null ? e.getStatus().getMessage() : rootMessage(e);
        return e.getCode() + reason + ": " + message;
    }

    /**
     * fabric8's JDK HTTP client, speaking HTTP/1.1 only. An API server answers a request with bad credentials 401 and
     * then closes an HTTP/2 connection with GOAWAY; the JDK 17 client reports the GOAWAY as a connection failure and
     * never the 401, so a bad or expired token read as "cannot reach the API server". Over HTTP/1.1 the 401 arrives.
     * The attach and watch streams are WebSockets, HTTP/1.1 upgrades either way; one connection per request stream
     * costs the tier nothing it uses.
     */
    static final class Http11ClientFactory extends JdkHttpClientFactory {
        @Override
        protected void additionalConfig(java.net.http.HttpClient.Builder builder) {
            builder.version(java.net.http.HttpClient.Version.HTTP_1_1);
        }
    }

    /** A tier on a client made elsewhere (tests hand it the mock API server's). */
    public static KubernetesRuntime open(KubernetesClient client, KubernetesSettings settings) {
        String ns = settings.namespace().orElse(Optional.ofNullable(client.getNamespace()).orElse("default"));
        return new KubernetesRuntime(client, settings, ns, client.getMasterUrl().toString(), "unknown", localHostName());
    }

    private static Config config(KubernetesSettings settings) {
        Config config;
        if (settings.kubeconfig().isPresent()) {
            Path file = Path.of(settings.kubeconfig().get());
            try {
                config = Config.fromKubeconfig(null, file.toFile());
            } catch (RuntimeException e) {
                throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "cannot read the kubeconfig " + file
                        + " (kubernetes.kubeconfig): " + rootMessage(e), e);
            }
        } else if (settings.master().isPresent()) {
            config = Config.empty();
        } else {
            config = Config.autoConfigure(null);
            boolean inCluster = System.getenv("KUBERNETES_SERVICE_HOST") != null;
            if (config.getFile() == null && !inCluster && System.getenv("KUBERNETES_MASTER") == null
                    && System.getProperty("kubernetes.master") == null) {
                throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "no Kubernetes cluster is configured: tried"
                        + " $KUBECONFIG (" + Optional.ofNullable(System.getenv("KUBECONFIG")).orElse("unset") + "), "
                        + Path.of(System.getProperty("user.home"), ".kube", "config") + " (absent) and the in-cluster"
                        + " service account (KUBERNETES_SERVICE_HOST unset); give a kubeconfig (--kubeconfig) or the API"
                        + " server (--kube-master)");
            }
        }
        settings.master().ifPresent(config::setMasterUrl);
        config.setConnectionTimeout(10_000);
        config.setRequestTimeout(30_000);
        // fabric8 retries a failed request ten times with exponential backoff by default (minutes against a dead
        // server); the engine has its own retries where they matter (destroy), so a call fails within seconds.
        config.setRequestRetryBackoffLimit(2);
        config.setRequestRetryBackoffInterval(200);
        return config;
    }

    private static String source(KubernetesSettings settings, Config config) {
        if (settings.kubeconfig().isPresent()) {
            return "kubeconfig " + settings.kubeconfig().get();
        }
        if (settings.master().isPresent()) {
            return "--kube-master";
        }
        File f = config.getFile();
        return f != null ? "kubeconfig " + f : "the in-cluster service account";
    }

    @Override
    public String name() {
        return NAME;
    }

    /** The namespace its pods go to. */
    public String namespace() {
        return namespace;
    }

    @Override
    public boolean pullsImages() {
        return true;
    }

    @Override
    public boolean ownsNetwork() {
        return true;
    }

    @Override
    public long tenantProcessLimit(SandboxSpec spec) {
        // A pod has no per-pod pids limit of its own (the kubelet's podPidsLimit is the node's setting), so the
        // spec's pids binds every tenant process as RLIMIT_NPROC; it counts per user namespace, so it holds per pod
        // with kubernetes.userNamespaces (hostUsers: false) and per node uid otherwise (docs/KUBERNETES.md).
        return spec.pids();
    }

    // ---- start ----

    @Override
    public RuntimeSandbox start(StartRequest request) {
        SandboxSpec spec = request.spec();
        String image = spec.image().equals(SandboxSpec.DEFAULT_IMAGE) ? settings.defaultImage() : spec.image();
        PodRenderer.Plan plan = new PodRenderer.Plan(request.id(), spec, image, settings, namespace, request.owner(),
                hostName, Instant.now().toString());
        Pod pod = PodRenderer.pod(plan);
        NetworkPolicy policy = PodRenderer.networkPolicy(plan);
        try {
            // The policy first: the pod never runs without it.
            call("create the network policy of " + request.id(), () -> client.network().v1().networkPolicies()
                    .inNamespace(namespace).resource(policy).create());
            Pod stored = call("create the pod of " + request.id(), () -> client.pods().inNamespace(namespace).resource(pod).create());
            checkKept(request.id(), pod, stored);
            awaitRunning(request.id(), image);
            return attach(request.id(), request.preamble());
        } catch (SandboxException e) {
            try {
                destroy(request.id());
            } catch (RuntimeException cleanup) {
                // Never "it was removed" unless the API said so: the pod (and its policy) may still be there.
                SandboxException said = new SandboxException(e.code(), e.getMessage() + "; its removal is not confirmed: "
                        + cleanup.getMessage(), e);
                said.addSuppressed(cleanup);
                throw said;
            }
            throw new SandboxException(e.code(), e.getMessage() + "; its pod and network policy were removed", e);
        } catch (RuntimeException e) {
            try {
                destroy(request.id());
            } catch (RuntimeException cleanup) {
                e.addSuppressed(cleanup);
            }
            throw e;
        }
    }

    /**
     * Refuses a pod the API server stored without a security setting Paddock sent: an API server drops the fields of
     * features its gates turn off, without an error, so {@code hostUsers: false} (kubernetes.userNamespaces) sent to
     * a server without user-namespace support came back absent, and the pod would have run in the node's user
     * namespace. The pod as stored (the create's answer) is read back; the caller removes it.
     */
    static void checkKept(SandboxId id, Pod sent, Pod stored) {
        Boolean want = sent.getSpec().getHostUsers();
        Boolean got = stored == null || stored.getSpec() == null ? null : stored.getSpec().getHostUsers();
        if (want != null && !want.equals(got)) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "the Kubernetes API server stored the pod of " + id
                    + " without hostUsers: " + want + " (it has " + (got == null ? "no hostUsers" : "hostUsers: " + got)
                    + "): it does not support user namespaces for pods (the UserNamespacesSupport feature gate is off, or"
                    + " the server predates it), so kubernetes.userNamespaces (--kube-user-namespaces) cannot hold;"
                    + " the pod was not run. Enable the gate on the API server and the kubelets, or turn the option off");
        }
    }

    /**
     * Waits for the sandbox container to run, failing at once on what will not get better (the image cannot be
     * pulled, the container cannot be created, the pod ended) and at the start timeout otherwise, saying why the
     * pod is not running (unschedulable: the scheduler's message).
     */
    private void awaitRunning(SandboxId id, String image) {
        long deadline = System.nanoTime() + settings.startTimeout().toNanos();
        long sleep = 50;
        Pod last = null;
        while (true) {
            Pod pod = call("read the pod of " + id, () -> client.pods().inNamespace(namespace).withName(PodRenderer.podName(id)).get());
            if (pod == null) {
                throw new SandboxException(ErrorCode.INTERNAL, "the pod of " + id + " disappeared while starting"
                        + " (deleted by someone else, or evicted)");
            }
            last = pod;
            if (running(pod)) {
                return;
            }
            failFast(id, pod, image);
            if (System.nanoTime() > deadline) {
                break;
            }
            sleep(sleep);
            sleep = Math.min(1000, sleep * 2);
        }
        Optional<PodCondition> unschedulable = condition(last, "PodScheduled")
                .filter(c -> "False".equals(c.getStatus()));
        if (unschedulable.isPresent()) {
            throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "the pod of " + id + " was not scheduled within "
                    + settings.startTimeout().toSeconds() + " s (kubernetes.startTimeout): "
                    + Optional.ofNullable(unschedulable.get().getMessage()).orElse(unschedulable.get().getReason()));
        }
        throw new SandboxException(ErrorCode.DEADLINE_EXCEEDED, "the pod of " + id + " did not start within "
                + settings.startTimeout().toSeconds() + " s (kubernetes.startTimeout): " + describe(last));
    }

    private static boolean running(Pod pod) {
        if (pod.getStatus() == null || !"Running".equals(pod.getStatus().getPhase())) {
            return false;
        }
        return main(pod).map(s -> s.getState() != null && s.getState().getRunning() != null).orElse(false);
    }

    private void failFast(SandboxId id, Pod pod, String image) {
        String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
        if ("Failed".equals(phase) || "Succeeded".equals(phase)) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "the pod of " + id + " ended before its init"
                    + " ran: " + describe(pod));
        }
        for (ContainerStatus s : statuses(pod)) {
            ContainerStateWaiting w = s.getState() == null ? null : s.getState().getWaiting();
            if (w == null || w.getReason() == null) {
                continue;
            }
            boolean init = PodRenderer.INIT_CONTAINER.equals(s.getName());
            switch (w.getReason()) {
                case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull" -> {
                    if (init) {
                        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "the cluster cannot pull Paddock's init"
                                + " image " + settings.initImage() + " (kubernetes.initImage): " + w.getReason()
                                + message(w.getMessage()));
                    }
                    throw SandboxException.invalid("image", "the cluster cannot pull '" + image + "': " + w.getReason()
                            + message(w.getMessage()));
                }
                case "CreateContainerConfigError", "CreateContainerError", "RunContainerError" ->
                        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "the " + s.getName() + " container of "
                                + id + " could not be started: " + w.getReason() + message(w.getMessage()));
                default -> {
                }
            }
        }
        for (ContainerStatus s : statuses(pod)) {
            ContainerStateTerminated t = s.getState() == null ? null : s.getState().getTerminated();
            if (t != null && t.getExitCode() != null && t.getExitCode() != 0) {
                throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "the " + s.getName() + " container of " + id
                        + " exited with " + t.getExitCode() + " (" + t.getReason() + ")" + message(t.getMessage()));
            }
        }
    }

    private static String describe(Pod pod) {
        if (pod == null || pod.getStatus() == null) {
            return "no status yet";
        }
        StringBuilder b = new StringBuilder("phase ").append(pod.getStatus().getPhase());
        for (PodCondition c : Optional.ofNullable(pod.getStatus().getConditions()).orElse(List.of())) {
            if ("False".equals(c.getStatus()) && c.getReason() != null) {
                b.append(", ").append(c.getType()).append(": ").append(c.getReason()).append(message(c.getMessage()));
            }
        }
        for (ContainerStatus s : statuses(pod)) {
            if (s.getState() != null && s.getState().getWaiting() != null) {
                b.append(", ").append(s.getName()).append(" waiting: ").append(s.getState().getWaiting().getReason())
                        .append(message(s.getState().getWaiting().getMessage()));
            }
            if (s.getState() != null && s.getState().getTerminated() != null) {
                b.append(", ").append(s.getName()).append(" terminated: ").append(s.getState().getTerminated().getReason());
            }
        }
        return b.toString();
    }

    private static String message(String m) {
        return m == null || m.isBlank() ? "" : " (" + m + ")";
    }

    private static List<ContainerStatus> statuses(Pod pod) {
        List<ContainerStatus> all = new ArrayList<>();
        if (pod.getStatus() != null) {
            Optional.ofNullable(pod.getStatus().getInitContainerStatuses()).ifPresent(all::addAll);
            Optional.ofNullable(pod.getStatus().getContainerStatuses()).ifPresent(all::addAll);
        }
        return all;
    }

    private static Optional<ContainerStatus> main(Pod pod) {
        return Optional.ofNullable(pod.getStatus()).map(s -> s.getContainerStatuses()).orElse(List.of()).stream()
                .filter(s -> PodRenderer.CONTAINER.equals(s.getName())).findFirst();
    }

    private static Optional<PodCondition> condition(Pod pod, String type) {
        if (pod == null || pod.getStatus() == null || pod.getStatus().getConditions() == null) {
            return Optional.empty();
        }
        return pod.getStatus().getConditions().stream().filter(c -> type.equals(c.getType())).findFirst();
    }

    // ---- the channel ----

    /**
     * One attach to the sandbox container (stdin and stdout, no terminal), with {@code preamble} written first.
     */
    private RuntimeSandbox attach(SandboxId id, byte[] preamble) {
        ExecWatch watch = call("attach to the pod of " + id, () -> client.pods().inNamespace(namespace)
                .withName(PodRenderer.podName(id)).inContainer(PodRenderer.CONTAINER)
                .redirectingInput().redirectingOutput().attach());
        AttachedSandbox sb = new AttachedSandbox(id, watch, () -> oomKilled(id) ? 1 : 0);
        try {
            sb.toInit().write(ByteBuffer.wrap(preamble));
        } catch (IOException e) {
            sb.closeChannel();
            throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot write to the init of " + id + " over the attach"
                    + " stream: " + e.getMessage(), e);
        }
        return sb;
    }

    private boolean oomKilled(SandboxId id) {
        Pod pod = client.pods().inNamespace(namespace).withName(PodRenderer.podName(id)).get();
        return pod != null && main(pod).map(s -> s.getState() != null && s.getState().getTerminated() != null
                && "OOMKilled".equals(s.getState().getTerminated().getReason())).orElse(false);
    }

    @Override
    public RuntimeSandbox reattach(SandboxId id, byte[] preamble) {
        Pod pod = call("read the pod of " + id, () -> client.pods().inNamespace(namespace).withName(PodRenderer.podName(id)).get());
        if (pod == null || !running(pod)) {
            throw new SandboxException(ErrorCode.NOT_FOUND, "sandbox " + id + " has no running pod in namespace "
                    + namespace + (pod == null ? "" : " (" + describe(pod) + ")"));
        }
        return attach(id, preamble);
    }

    @Override
    public void updateNetwork(SandboxId id, io.paddock.NetworkPolicy policy) {
        Pod pod = call("read the pod of " + id, () -> client.pods().inNamespace(namespace).withName(PodRenderer.podName(id)).get());
        if (pod == null) {
            throw new SandboxException(ErrorCode.NOT_FOUND, "sandbox " + id + " has no pod in namespace " + namespace);
        }
        SandboxSpec spec = io.paddock.wire.Wire.spec(readTree(pod.getMetadata().getAnnotations().get(PodRenderer.ANNOTATION_SPEC)))
                .toBuilder().network(policy).build();
        PodRenderer.Plan plan = new PodRenderer.Plan(id, spec, "unused", settings, namespace, "", "", "");
        NetworkPolicy np = PodRenderer.networkPolicy(plan);
        call("replace the network policy of " + id, () -> client.network().v1().networkPolicies().inNamespace(namespace)
                .resource(np).createOr(existing -> existing.update()));
        annotate(id, "record the network policy", Map.of(PodRenderer.ANNOTATION_SPEC, stripSecrets(spec)));
    }

    /**
     * Puts {@code changes} into the pod's annotations as the API has them when the edit applies, so that edits of
     * different keys (a new policy, a claim, a take-over) never undo each other.
     */
    private void annotate(SandboxId id, String what, Map<String, String> changes) {
        call(what + " of " + id, () -> client.pods().inNamespace(namespace).withName(PodRenderer.podName(id)).edit(p -> {
            Map<String, String> a = new LinkedHashMap<>(Optional.ofNullable(p.getMetadata().getAnnotations()).orElse(Map.of()));
            a.putAll(changes);
            p.getMetadata().setAnnotations(a);
            return p;
        }));
    }

    private static String stripSecrets(SandboxSpec spec) {
        com.fasterxml.jackson.databind.node.ObjectNode o = io.paddock.wire.Wire.json(spec);
        o.remove("secrets");
        o.remove("egress_secrets");
        return o.toString();
    }

    private static com.fasterxml.jackson.databind.JsonNode readTree(String json) {
        try {
            return io.paddock.wire.Wire.JSON.readTree(json == null ? "{}" : json);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "unreadable spec annotation: " + e.getMessage(), e);
        }
    }

    // ---- destroy and records ----

    /**
     * Deletes the sandbox's pod and network policy and waits until the pod is gone from the API (the kubelet has
     * stopped its containers), so that nothing of it runs when this returns. Idempotent.
     */
    @Override
    public void destroy(SandboxId id) {
        String name = PodRenderer.podName(id);
        call("delete the pod of " + id, () -> client.pods().inNamespace(namespace).withName(name)
                .withGracePeriod(1).delete());
        long deadline = System.nanoTime() + settings.deleteTimeout().toNanos();
        long sleep = 20;
        Pod pod;
        while ((pod = call("read the pod of " + id, () -> client.pods().inNamespace(namespace).withName(name).get())) != null) {
            if (System.nanoTime() > deadline) {
                // The policy stays while the pod may still run (on a node that is only unreachable): both are
                // deleted again in the background until the API confirms the pod gone.
                sweepLater(id);
                throw new SandboxException(ErrorCode.UNAVAILABLE, "the pod " + namespace + "/" + name + " is still "
                        + terminating(pod) + " after " + settings.deleteTimeout().toSeconds() + " s (kubernetes.deleteTimeout);"
                        + " the API has not confirmed it gone, so it and its network policy stay recorded in the cluster"
                        + " and Paddock keeps deleting them in the background (kubectl -n " + namespace
                        + " get pod,networkpolicy " + name + ")");
            }
            sleep(sleep);
            sleep = Math.min(500, sleep * 2);
        }
        call("delete the network policy of " + id, () -> client.network().v1().networkPolicies().inNamespace(namespace)
                .withName(name).delete());
        unconfirmed.remove(id);
    }

    /** What keeps a deleted pod: its deletion time, its node, its finalizers. */
    private static String terminating(Pod pod) {
        StringBuilder b = new StringBuilder("Terminating");
        if (pod.getMetadata().getDeletionTimestamp() != null) {
            b.append(" (deleted at ").append(pod.getMetadata().getDeletionTimestamp());
            if (pod.getSpec() != null && pod.getSpec().getNodeName() != null) {
                b.append(", on node ").append(pod.getSpec().getNodeName()).append(", whose kubelet has not confirmed it");
            }
            if (pod.getMetadata().getFinalizers() != null && !pod.getMetadata().getFinalizers().isEmpty()) {
                b.append(", finalizers ").append(pod.getMetadata().getFinalizers());
            }
            b.append(")");
        }
        return b.toString();
    }

    /** Deletes {@code id}'s pod and policy again, every period, until the API confirms them gone. */
    private void sweepLater(SandboxId id) {
        if (unconfirmed.add(id)) {
            long period = Math.max(1, Math.min(30, settings.deleteTimeout().toSeconds()));
            sweeper.schedule(() -> sweep(id, period), period, java.util.concurrent.TimeUnit.SECONDS);
        }
    }

    private void sweep(SandboxId id, long period) {
        if (!unconfirmed.contains(id)) {
            return;
        }
        try {
            destroy(id);
            LOG.log(System.Logger.Level.INFO, "the pod and network policy of " + id + " are gone at last");
        } catch (RuntimeException e) {
            if (unconfirmed.contains(id) && !sweeper.isShutdown()) {
                sweeper.schedule(() -> sweep(id, period), period, java.util.concurrent.TimeUnit.SECONDS);
            }
        }
    }

    /** Sandboxes whose pod or policy the API has not yet confirmed removed (the background sweep's). */
    Set<SandboxId> unconfirmed() {
        return Set.copyOf(unconfirmed);
    }

    /**
     * The sandboxes in the namespace, from their pods' (and leftover network policies') labels. The owner is the
     * token the engine created them with when it can be judged here: a daemon's, or a process's on this host; a
     * process token of another host reads as unknown (""), which no engine reaps.
     */
    @Override
    public List<RuntimeRecord> records() {
        Map<SandboxId, String> found = new LinkedHashMap<>();
        String selector = PodRenderer.LABEL_MANAGED_BY + "=" + PodRenderer.MANAGED_BY;
        for (Pod pod : call("list pods", () -> client.pods().inNamespace(namespace).withLabelSelector(selector).list().getItems())) {
            String id = pod.getMetadata().getLabels().get(PodRenderer.LABEL_ID);
            if (id != null && SandboxId.isValid(id)) {
                Map<String, String> a = Optional.ofNullable(pod.getMetadata().getAnnotations()).orElse(Map.of());
                found.put(new SandboxId(id), ownerSeenHere(a.getOrDefault(PodRenderer.ANNOTATION_OWNER, ""),
                        a.getOrDefault(PodRenderer.ANNOTATION_OWNER_HOST, "")));
            }
        }
        for (NetworkPolicy np : call("list network policies", () -> client.network().v1().networkPolicies().inNamespace(namespace)
                .withLabelSelector(selector).list().getItems())) {
            String id = np.getMetadata().getLabels().get(PodRenderer.LABEL_ID);
            if (id != null && SandboxId.isValid(id)) {
                // A policy without its pod: a create that died between the two. Nobody can adopt it.
                found.putIfAbsent(new SandboxId(id), "");
            }
        }
        List<RuntimeRecord> out = new ArrayList<>();
        found.forEach((id, owner) -> out.add(new RuntimeRecord(id, owner)));
        return out;
    }

    /**
     * With {@code kubernetes.adopt} (the namespace is one daemon's): a running pod another daemon started becomes
     * {@code owner}'s (its owner annotations are rewritten), and its spec and creation time come from its
     * annotations. A process's sandbox (an embedded engine's) is never taken: its engine takes it with it.
     */
    @Override
    public Optional<io.paddock.runtime.RecordedSandbox> handOver(SandboxId id, String owner) {
        if (!settings.adopt()) {
            return Optional.empty();
        }
        String name = PodRenderer.podName(id);
        Pod pod = call("read the pod of " + id, () -> client.pods().inNamespace(namespace).withName(name).get());
        if (pod == null || !running(pod)) {
            return Optional.empty();
        }
        Map<String, String> a = Optional.ofNullable(pod.getMetadata().getAnnotations()).orElse(Map.of());
        String previous = a.getOrDefault(PodRenderer.ANNOTATION_OWNER, "");
        if (!previous.startsWith("daemon:") || previous.equals(owner) || !a.containsKey(PodRenderer.ANNOTATION_SPEC)) {
            return Optional.empty();
        }
        SandboxSpec spec = io.paddock.wire.Wire.spec(readTree(a.get(PodRenderer.ANNOTATION_SPEC))).toBuilder()
                .runtime(NAME).build();
        Instant created;
        try {
            created = Instant.parse(a.getOrDefault(PodRenderer.ANNOTATION_CREATED, ""));
        } catch (java.time.format.DateTimeParseException e) {
            created = Instant.now();
        }
        annotate(id, "take over the pod", Map.of(PodRenderer.ANNOTATION_OWNER, owner, PodRenderer.ANNOTATION_OWNER_HOST, hostName));
        return Optional.of(new io.paddock.runtime.RecordedSandbox(spec, created));
    }

    /**
     * The pod's spec and creation annotations, and its labels, follow the engine's record (a claimed pooled pod, new
     * labels), so that {@code kubectl get pods -l} finds sandboxes as their users label them. Labels the previous
     * spec rendered and the new one does not are removed; labels someone else put on the pod stay.
     */
    @Override
    public void respecified(SandboxId id, SandboxSpec spec, Instant createdAt) {
        Map<String, String> rendered = PodRenderer.labels(id, spec);
        call("record the spec of " + id, () -> client.pods().inNamespace(namespace).withName(PodRenderer.podName(id)).edit(p -> {
            Map<String, String> a = new LinkedHashMap<>(Optional.ofNullable(p.getMetadata().getAnnotations()).orElse(Map.of()));
            Map<String, String> l = new LinkedHashMap<>(Optional.ofNullable(p.getMetadata().getLabels()).orElse(Map.of()));
            String before = a.get(PodRenderer.ANNOTATION_SPEC);
            if (before != null) {
                PodRenderer.labels(id, io.paddock.wire.Wire.spec(readTree(before))).keySet().forEach(l::remove);
            }
            l.putAll(rendered);
            a.put(PodRenderer.ANNOTATION_SPEC, stripSecrets(spec));
            a.put(PodRenderer.ANNOTATION_CREATED, createdAt.toString());
            p.getMetadata().setAnnotations(a);
            p.getMetadata().setLabels(l);
            return p;
        }));
    }

    private String ownerSeenHere(String owner, String host) {
        return owner.startsWith("daemon:") || host.equals(hostName) ? owner : "";
    }

    @Override
    public String describe() {
        return "kubernetes " + version + " at " + server + " namespace " + namespace
                + settings.runtimeClass().map(rc -> " runtimeClass " + rc).orElse("");
    }

    // ---- helpers ----

    private interface Call<T> {
        T run();
    }

    /**
     * Runs one API call, turning the API's refusals into Paddock's errors with what was being done: 403 names the
     * missing permission and where the least-privilege Role is, an unreachable server says so.
     */
    private <T> T call(String what, Call<T> call) {
        try {
            return call.run();
        } catch (KubernetesClientException e) {
            throw translate(what, e);
        }
    }

    SandboxException translate(String what, KubernetesClientException e) {
        int code = e.getCode();
        String status = e.getStatus() != null && e.getStatus().getMessage() != null ? e.getStatus().getMessage() : rootMessage(e);
        if (code == 403) {
            return new SandboxException(ErrorCode.FAILED_PRECONDITION, "the Kubernetes API refused to " + what
                    + " in namespace " + namespace + " (403 Forbidden: " + status + "); Paddock's service account needs"
                    + " the Role in deploy/kubernetes/10-rbac.yaml (pods, pods/attach, networkpolicies)");
        }
        if (code == 401) {
            return new SandboxException(ErrorCode.FAILED_PRECONDITION, "the API server at " + server + " refused the"
                    + " credentials in " + credentials + " to " + what + " (" + statusLine(e) + "): a bad or expired"
                    + " token or certificate");
        }
        if (code == 409) {
            return new SandboxException(ErrorCode.ALREADY_EXISTS, "cannot " + what + ": it exists already (" + status + ")");
        }
        if (code == 422 || code == 400) {
            return new SandboxException(ErrorCode.INVALID_ARGUMENT, "the Kubernetes API rejected the request to " + what
                    + " (" + code + "): " + status);
        }
        if (code <= 0 || code >= 500) {
            return new SandboxException(ErrorCode.UNAVAILABLE, "cannot " + what + ": the Kubernetes API server at "
                    + server + " is unreachable or failing (" + (code <= 0 ? "" : code + ": ") + status + ")", e);
        }
        return new SandboxException(ErrorCode.INTERNAL, "cannot " + what + " (" + code + "): " + status, e);
    }

    static String rootMessage(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        String m = t.getMessage();
        return t.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SandboxException(ErrorCode.UNAVAILABLE, "interrupted while waiting for the cluster");
        }
    }

    private static String localHostName() {
        try {
            return Files.readString(Path.of("/etc/hostname")).trim();
        } catch (IOException | RuntimeException e) {
            try {
                return InetAddress.getLocalHost().getHostName();
            } catch (IOException ex) {
                return "unknown";
            }
        }
    }

    /** Closes the client (its threads and connections). */
    public void close() {
        sweeper.shutdownNow();
        if (!unconfirmed.isEmpty()) {
            LOG.log(System.Logger.Level.WARNING, "closing with the removal of " + unconfirmed + " not confirmed by the API:"
                    + " their pods and network policies may remain in namespace " + namespace + "; the next start's"
                    + " reconcile removes them");
        }
        client.close();
    }
}
