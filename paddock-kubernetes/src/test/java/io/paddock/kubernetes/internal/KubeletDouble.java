package io.paddock.kubernetes.internal;

import io.fabric8.kubernetes.api.model.ContainerStateBuilder;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.ContainerStatusBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.api.model.PodConditionBuilder;
import io.fabric8.kubernetes.api.model.PodStatus;
import io.fabric8.kubernetes.api.model.PodStatusBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.jdkhttp.JdkHttpClientFactory;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.http.ByteString;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import io.fabric8.mockwebserver.http.WebSocket;
import io.fabric8.mockwebserver.http.WebSocketListener;
import io.paddock.ByteSize;
import io.paddock.LocalOptions;
import io.paddock.SandboxId;
import io.paddock.SandboxSpec;
import io.paddock.init.internal.InitBinary;
import io.paddock.runtime.RuntimeSandbox;
import io.paddock.runtime.StartRequest;
import io.paddock.runtime.internal.runc.RuncRuntime;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * <b>A test double of Kubernetes, not part of Paddock.</b> fabric8's mock API server in CRUD mode stores objects
 * and runs nothing; this double adds what a node's kubelet and the API server's attach endpoint would do, so that
 * the Kubernetes tier's real code (pod rendering, create, wait, attach transport, destroy, records, recovery) can
 * be run end to end here, where no kube-apiserver or kubelet can be installed:
 * <ul>
 *   <li>a created pod whose sandbox image is {@link #IMAGE} is "run": its container becomes a real sandbox of
 *       Paddock's runc tier (the same init binary, started by runc with its own arguments), sized from the pod's
 *       limits (memory, cpu) and its emptyDir's {@code sizeLimit} (disk), with the pod's {@code --workdir};
 *       its status then says Running and Ready, as a kubelet's would;</li>
 *   <li>any other image fails to pull ({@code ErrImagePull}); in {@link Mode#UNSCHEDULABLE} no pod is scheduled
 *       (the scheduler's {@code Unschedulable} condition);</li>
 *   <li>{@code GET …/pods/NAME/attach} is upgraded to a WebSocket speaking {@code v4.channel.k8s.io}: channel 0
 *       bytes go to the init's stdin, its stdout comes back on channel 1; when the init exits the pod's container
 *       is terminated and attaches end;</li>
 *   <li>deleting a pod stops its sandbox first (a kubelet's kill), then the API object goes;</li>
 *   <li>{@link #forbid} answers a method on a path prefix with 403, as an API server whose RBAC lacks a rule.</li>
 * </ul>
 * What it does not do, and what therefore no test here proves: the pod's security context, RuntimeClass, user
 * namespaces, NetworkPolicy enforcement, the init container (the init is the runc tier's own copy), the image's
 * contents (every pod runs the host image), node pressure and eviction. Those are pinned by the golden pod specs
 * and documented in docs/KUBERNETES.md.
 */
final class KubeletDouble implements AutoCloseable {
    /** The one image this "node" can run: the runc tier's host image. */
    static final String IMAGE = "paddock.test/host:1";
    static final String NAMESPACE = "sandboxes";
    private static final Pattern POD_PATH = Pattern.compile("/api/v1/namespaces/([^/]+)/pods/([^/?]+)(/[a-z]+)?(\\?.*)?");
    private static final Pattern PODS_PATH = Pattern.compile("/api/v1/namespaces/([^/]+)/pods(\\?.*)?");

    enum Mode { RUN, UNSCHEDULABLE }

    private final KubernetesMockServer server;
    private final KubernetesClient client;
    private final RuncRuntime runc;
    private final String owner = "kubelet-double:" + ProcessHandle.current().pid();
    private final ExecutorService kubelet = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "kubelet-double");
        t.setDaemon(true);
        return t;
    });
    private final Map<String, Running> running = new ConcurrentHashMap<>();
    private final Map<String, String> forbidden = new ConcurrentHashMap<>();
    private volatile boolean dropHostUsers;
    private volatile boolean stuckTerminating;
    private volatile Mode mode = Mode.RUN;

    /** A pod's container, as this "node" runs it. */
    private final class Running {
        final String name;
        final SandboxId id;
        final RuntimeSandbox sandbox;
        final ExecutorService stdin = Executors.newSingleThreadExecutor();
        final List<WebSocket> attached = new CopyOnWriteArrayList<>();
        volatile boolean ended;

        Running(String name, SandboxId id, RuntimeSandbox sandbox) {
            this.name = name;
            this.id = id;
            this.sandbox = sandbox;
        }

        /** The container's stdout: to every attached client, as a kubelet streams it (and to nobody otherwise). */
        void pump() {
            ByteBuffer buf = ByteBuffer.allocate(64 * 1024);
            try {
                while (true) {
                    buf.clear();
                    buf.put((byte) 1);
                    int n = sandbox.fromInit().read(buf);
                    if (n < 0) {
                        break;
                    }
                    byte[] msg = new byte[buf.position()];
                    buf.flip();
                    buf.get(msg);
                    for (WebSocket ws : attached) {
                        ws.send(msg);
                    }
                }
            } catch (IOException | RuntimeException e) {
                // the sandbox was destroyed under us
            }
            if (Boolean.getBoolean("kubelet.debug")) {
                System.err.println("kubelet-double: stdout of " + name + " ended");
            }
            ended = true;
            for (WebSocket ws : attached) {
                ws.close(1000, "container exited");
            }
            if (running.remove(name, this)) {
                terminated(name);
            }
        }
    }

    KubeletDouble() {
        Dispatcher dispatcher = new Dispatcher();
        this.server = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(), dispatcher, false);
        server.init();
        this.client = server.createClient(new JdkHttpClientFactory());
        this.runc = RuncRuntime.open(LocalOptions.DEFAULT_STATE_DIR,
                InitBinary.load().extractTo(LocalOptions.DEFAULT_STATE_DIR.resolve("bin")));
    }

    KubernetesClient client() {
        return client;
    }

    /** The mock API server's URL. */
    String url() {
        return client.getMasterUrl().toString();
    }

    void mode(Mode m) {
        this.mode = m;
    }

    /** Answers {@code method} on paths starting with {@code pathPrefix} with 403 Forbidden from now on. */
    void forbid(String method, String pathPrefix) {
        forbidden.put(method + " " + pathPrefix, pathPrefix);
    }

    /**
     * Answers {@code method} on paths starting with {@code pathPrefix} with 401 Unauthorized from now on, as a real
     * API server answers a bad or expired token (over HTTP/1.1; over HTTP/2 it then sends GOAWAY).
     */
    void unauthorized(String method, String pathPrefix) {
        forbidden.put(method + " " + pathPrefix, "401");
    }

    void allowAll() {
        forbidden.clear();
        dropHostUsers = false;
        stuckTerminating = false;
    }

    /**
     * From now on a new pod, once deleted, stays Terminating, as a real API server keeps a pod bound to a node whose
     * kubelet never confirms it (a node dying mid-start): the DELETE answers 200 and the pod only gets a
     * deletionTimestamp. Modelled with a finalizer, which the mock server honours as a real one does.
     */
    void stuckTerminating(boolean stuck) {
        stuckTerminating = stuck;
    }

    /** What holds a pod made while {@link #stuckTerminating}: the confirmation its node never sends. */
    static final String NODE_GONE = "test.paddock.io/node-never-confirms";

    /** The node confirms at last: the pod's hold goes, and the API server removes a deleted pod. */
    void confirmDeletion(String pod) {
        client.pods().inNamespace(NAMESPACE).withName(pod).edit(p -> {
            p.getMetadata().setFinalizers(List.of());
            return p;
        });
    }

    /**
     * Stores pods without {@code spec.hostUsers} from now on, as a real API server whose UserNamespacesSupport gate
     * is off does (it drops the field, answers 201, and says nothing).
     */
    void dropHostUsers() {
        dropHostUsers = true;
    }

    /** How many pods this node runs now. */
    int runningPods() {
        return running.size();
    }

    /** Kills a pod's init as an OOM kill would (its container then reads OOMKilled). */
    void killInit(String pod) {
        Running r = running.get(pod);
        if (r != null) {
            runc.destroy(r.id);
        }
    }

    private final class Dispatcher extends KubernetesCrudDispatcher {
        @Override
        public MockResponse dispatch(RecordedRequest request) {
            String path = request.getPath();
            for (String key : forbidden.keySet()) {
                String[] mp = key.split(" ", 2);
                if (request.getMethod().equals(mp[0]) && path.startsWith(mp[1]) && "401".equals(forbidden.get(key))) {
                    return new MockResponse().setResponseCode(401).setBody("{\"kind\":\"Status\",\"apiVersion\":\"v1\","
                            + "\"status\":\"Failure\",\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}");
                }
                if (request.getMethod().equals(mp[0]) && path.startsWith(mp[1])) {
                    return new MockResponse().setResponseCode(403).setBody("{\"kind\":\"Status\",\"apiVersion\":\"v1\","
                            + "\"status\":\"Failure\",\"message\":\"" + request.getMethod().toLowerCase() + " " + path
                            + " is forbidden: User \\\"system:serviceaccount:paddock:paddock\\\" cannot do that\","
                            + "\"reason\":\"Forbidden\",\"code\":403}");
                }
            }
            if ((dropHostUsers || stuckTerminating) && PODS_PATH.matcher(path).matches() && "POST".equals(request.getMethod())) {
                Pod sent = Serialization.unmarshal(request.getUtf8Body(), Pod.class);
                if (dropHostUsers) {
                    sent.getSpec().setHostUsers(null);
                }
                if (stuckTerminating) {
                    // Held by a finalizer the test removes (the mock server then deletes it), bound to a node.
                    sent.getMetadata().setFinalizers(List.of(NODE_GONE));
                    sent.getSpec().setNodeName("node-gone");
                }
                request = new RecordedRequest(request.getHttpVersion(), request.method(), path, request.getHeaders(),
                        new io.fabric8.mockwebserver.http.Buffer().writeUtf8(Serialization.asJson(sent)));
            }
            Matcher m = POD_PATH.matcher(path);
            if (m.matches() && "/attach".equals(m.group(3)) && "GET".equals(request.getMethod())) {
                return attach(m.group(2));
            }
            if (m.matches() && m.group(3) == null && "DELETE".equals(request.getMethod())) {
                Running r = running.remove(m.group(2));
                if (r != null) {
                    stop(r);
                }
                return super.dispatch(request);
            }
            MockResponse response = super.dispatch(request);
            if (Boolean.getBoolean("kubelet.debug")) {
                System.err.println("kubelet-double: " + request.getMethod() + " " + path + " -> " + response.code());
            }
            if (PODS_PATH.matcher(path).matches() && "POST".equals(request.getMethod()) && response.code() == 201) {
                Pod pod = Serialization.unmarshal(new String(response.getBody().getBytes(), java.nio.charset.StandardCharsets.UTF_8), Pod.class);
                kubelet.execute(() -> schedule(pod));
            }
            return response;
        }
    }

    private MockResponse attach(String pod) {
        Running r = running.get(pod);
        if (r == null || r.ended) {
            return new MockResponse().setResponseCode(400).setBody("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":"
                    + "\"Failure\",\"message\":\"container sandbox is not running\",\"code\":400}");
        }
        return new MockResponse().withWebSocketUpgrade(new WebSocketListener() {
            @Override
            public void onOpen(WebSocket ws, io.fabric8.mockwebserver.http.Response response) {
                r.attached.add(ws);
            }

            @Override
            public void onMessage(WebSocket ws, ByteString bytes) {
                onMessage(ws, bytes.toByteArray());
            }

            @Override
            public void onMessage(WebSocket ws, byte[] bytes) {
                if (bytes.length > 1 && bytes[0] == 0) {
                    byte[] data = java.util.Arrays.copyOfRange(bytes, 1, bytes.length);
                    r.stdin.execute(() -> {
                        try {
                            r.sandbox.toInit().write(ByteBuffer.wrap(data));
                        } catch (IOException | RuntimeException e) {
                            // the container is gone
                        }
                    });
                }
            }

            @Override
            public void onClosing(WebSocket ws, int code, String reason) {
                if (Boolean.getBoolean("kubelet.debug")) {
                    System.err.println("kubelet-double: attach closing " + code + " " + reason);
                }
                r.attached.remove(ws);
            }

            @Override
            public void onClosed(WebSocket ws, int code, String reason) {
                r.attached.remove(ws);
            }

            @Override
            public void onFailure(WebSocket ws, Throwable t, io.fabric8.mockwebserver.http.Response response) {
                if (Boolean.getBoolean("kubelet.debug")) {
                    System.err.println("kubelet-double: attach failed " + t);
                    t.printStackTrace();
                }
                r.attached.remove(ws);
            }
        });
    }

    /** What a scheduler and a kubelet do with a new pod, in this double's terms. */
    private void schedule(Pod pod) {
        String name = pod.getMetadata().getName();
        String ns = pod.getMetadata().getNamespace();
        try {
            if (mode == Mode.UNSCHEDULABLE) {
                status(ns, name, new PodStatusBuilder().withPhase("Pending").withConditions(condition("PodScheduled", "False",
                        "Unschedulable", "0/3 nodes are available: 3 Insufficient memory.")).build());
                return;
            }
            var main = pod.getSpec().getContainers().get(0);
            if (!IMAGE.equals(main.getImage())) {
                status(ns, name, new PodStatusBuilder().withPhase("Pending")
                        .withConditions(condition("PodScheduled", "True", null, null))
                        .withInitContainerStatuses(container(PodRenderer.INIT_CONTAINER, pod.getSpec().getInitContainers().get(0).getImage(), "terminated"))
                        .withContainerStatuses(new ContainerStatusBuilder().withName(main.getName()).withImage(main.getImage())
                                .withReady(false).withNewState().withNewWaiting().withReason("ErrImagePull")
                                .withMessage("failed to pull and unpack image \"" + main.getImage() + "\": not found")
                                .endWaiting().endState().build()).build());
                return;
            }
            SandboxId id = new SandboxId(pod.getMetadata().getLabels().get(PodRenderer.LABEL_ID));
            Map<String, Quantity> limits = main.getResources().getLimits();
            ByteSize disk = pod.getSpec().getVolumes().stream().filter(v -> v.getName().equals("tmp")).findFirst()
                    .map(Volume::getEmptyDir).map(e -> ByteSize.bytes(e.getSizeLimit().getNumericalAmount().longValueExact()))
                    .orElse(SandboxSpec.DEFAULT_DISK);
            String workdir = main.getCommand().stream().filter(a -> a.startsWith("--workdir=")).findFirst()
                    .map(a -> a.substring("--workdir=".length())).orElse("/");
            // A node's defaults for what a pod does not say: a pids limit (the kubelet's podPidsLimit) and open files.
            SandboxSpec node = SandboxSpec.builder()
                    .memory(ByteSize.bytes(limits.get("memory").getNumericalAmount().longValueExact()))
                    .cpus(limits.get("cpu").getNumericalAmount().doubleValue())
                    .disk(disk).pids(4096).openFiles(65536).workdir(workdir).timeout(SandboxSpec.MAX_TIMEOUT)
                    .runtime("runc").build();
            RuntimeSandbox sb = runc.start(new StartRequest(id, node, owner, new byte[0]));
            Running r = new Running(name, id, sb);
            running.put(name, r);
            // A pod deleted while its sandbox started (the tier refused it at once): a kubelet stops it.
            if (client.pods().inNamespace(ns).withName(name).get() == null) {
                if (running.remove(name, r)) {
                    stop(r);
                }
                return;
            }
            Thread pump = new Thread(r::pump, "kubelet-double-stdout-" + name);
            pump.setDaemon(true);
            pump.start();
            String now = Instant.now().toString();
            status(ns, name, new PodStatusBuilder().withPhase("Running").withPodIP("10.244.0.9").withStartTime(now)
                    .withConditions(condition("PodScheduled", "True", null, null), condition("Initialized", "True", null, null),
                            condition("ContainersReady", "True", null, null), condition("Ready", "True", null, null))
                    .withInitContainerStatuses(container(PodRenderer.INIT_CONTAINER, pod.getSpec().getInitContainers().get(0).getImage(), "terminated"))
                    .withContainerStatuses(container(main.getName(), main.getImage(), "running")).build());
        } catch (RuntimeException e) {
            e.printStackTrace();
            status(ns, name, new PodStatusBuilder().withPhase("Failed").withMessage("kubelet double: " + e).build());
        }
    }

    private void terminated(String name) {
        try {
            Pod pod = client.pods().inNamespace(NAMESPACE).withName(name).get();
            if (pod == null) {
                return;
            }
            status(NAMESPACE, name, new PodStatusBuilder(pod.getStatus()).withPhase("Failed")
                    .withContainerStatuses(new ContainerStatusBuilder().withName(PodRenderer.CONTAINER).withReady(false)
                            .withState(new ContainerStateBuilder().withNewTerminated().withExitCode(137).withReason("Error")
                                    .endTerminated().build()).build()).build());
        } catch (RuntimeException e) {
            // deleted meanwhile
        }
    }

    private void stop(Running r) {
        r.sandbox.closeChannel();
        try {
            runc.destroy(r.id);
        } finally {
            r.stdin.shutdownNow();
        }
    }

    private void status(String ns, String name, PodStatus status) {
        client.pods().inNamespace(ns).withName(name).editStatus(p -> {
            p.setStatus(status);
            return p;
        });
    }

    private static PodCondition condition(String type, String status, String reason, String message) {
        return new PodConditionBuilder().withType(type).withStatus(status).withReason(reason).withMessage(message)
                .withLastTransitionTime(Instant.now().toString()).build();
    }

    private static ContainerStatus container(String name, String image, String state) {
        ContainerStatusBuilder b = new ContainerStatusBuilder().withName(name).withImage(image)
                .withReady(state.equals("running")).withStarted(state.equals("running"));
        if (state.equals("running")) {
            b.withNewState().withNewRunning().withStartedAt(Instant.now().toString()).endRunning().endState();
        } else {
            b.withNewState().withNewTerminated().withExitCode(0).withReason("Completed").endTerminated().endState();
        }
        return b.build();
    }

    /** Pods and network policies left in the namespace. */
    Set<String> leftovers() {
        Set<String> left = new java.util.TreeSet<>();
        client.pods().inNamespace(NAMESPACE).list().getItems().forEach(p -> left.add("pod/" + p.getMetadata().getName()));
        client.network().v1().networkPolicies().inNamespace(NAMESPACE).list().getItems()
                .forEach(p -> left.add("networkpolicy/" + p.getMetadata().getName()));
        return left;
    }

    @Override
    public void close() {
        for (Running r : List.copyOf(running.values())) {
            running.remove(r.name);
            try {
                stop(r);
            } catch (RuntimeException e) {
                // best effort; the leak check says if anything stayed
            }
        }
        kubelet.shutdownNow();
        client.close();
        server.destroy();
    }

    static Duration shortly() {
        return Duration.ofSeconds(3);
    }
}
