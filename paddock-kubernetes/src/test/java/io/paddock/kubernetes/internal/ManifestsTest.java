package io.paddock.kubernetes.internal;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.KubernetesResource;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.rbac.PolicyRule;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.api.model.rbac.RoleBinding;
import io.fabric8.kubernetes.client.utils.Serialization;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The deployment files, checked offline (no API server can run here, and {@code kubectl --dry-run=client} needs
 * one for discovery): every plain manifest parses into fabric8's typed model with no field the model does not know
 * (a misspelt or misplaced field lands in {@code additionalProperties}, which this refuses), the RBAC is exactly the
 * least privilege the tier needs, and the daemon runs the Kubernetes tier in the namespace the Role covers. Helm is
 * not installable here, so the chart is checked statically: every {@code .Values} path its templates use is in
 * values.yaml, and it makes the same kinds as the plain manifests.
 */
class ManifestsTest {
    static final Path DEPLOY = Path.of("..", "deploy");
    static final Path MANIFESTS = DEPLOY.resolve("kubernetes");
    static final Path CHART = DEPLOY.resolve("helm/paddock");

    static List<HasMetadata> load() throws IOException {
        List<HasMetadata> all = new ArrayList<>();
        try (Stream<Path> files = Files.list(MANIFESTS)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".yaml")).sorted().toList()) {
                Object parsed = Serialization.unmarshal(Files.readString(f));
                if (parsed instanceof List<?> list) {
                    list.forEach(o -> all.add((HasMetadata) o));
                } else {
                    all.add((HasMetadata) parsed);
                }
            }
        }
        return all;
    }

    @Test
    void everyManifestIsAKnownKindWithOnlyKnownFields() throws Exception {
        List<HasMetadata> all = load();
        Set<String> kinds = new TreeSet<>();
        for (HasMetadata o : all) {
            assertThat(o.getClass().getPackageName()).as(o.getKind() + " " + o.getMetadata().getName() + " is a typed kind")
                    .startsWith("io.fabric8.kubernetes.api.model");
            List<String> unknown = new ArrayList<>();
            unknownFields(o, o.getKind() + "/" + o.getMetadata().getName(), unknown);
            assertThat(unknown).as("fields the Kubernetes model does not know").isEmpty();
            kinds.add(o.getKind());
        }
        assertThat(kinds).contains("Namespace", "ServiceAccount", "Role", "RoleBinding", "Deployment", "Service",
                "NetworkPolicy", "RuntimeClass", "PersistentVolumeClaim");
    }

    @Test
    void rbacIsLeastPrivilegeAndCoversTheDaemonsNamespace() throws Exception {
        List<HasMetadata> all = load();
        Role role = (Role) all.stream().filter(o -> o instanceof Role).findFirst().orElseThrow();
        Map<String, Set<String>> rules = new java.util.TreeMap<>();
        for (PolicyRule r : role.getRules()) {
            for (String res : r.getResources()) {
                rules.put(r.getApiGroups().get(0) + "/" + res, new TreeSet<>(r.getVerbs()));
            }
            assertThat(r.getResourceNames()).isNullOrEmpty();
        }
        assertThat(rules).isEqualTo(Map.of(
                "/pods", Set.of("create", "delete", "get", "list", "patch", "update", "watch"),
                "/pods/attach", Set.of("create", "get"),
                "networking.k8s.io/networkpolicies", Set.of("create", "delete", "get", "list", "patch", "update")));
        assertThat(all).noneMatch(o -> o.getKind().startsWith("Cluster"));
        RoleBinding binding = (RoleBinding) all.stream().filter(o -> o instanceof RoleBinding).findFirst().orElseThrow();
        Deployment daemon = (Deployment) all.stream().filter(o -> o instanceof Deployment).findFirst().orElseThrow();
        List<String> args = daemon.getSpec().getTemplate().getSpec().getContainers().get(0).getArgs();
        assertThat(args).containsSubsequence("serve", "--runtime", "kubernetes");
        String ns = args.get(args.indexOf("--namespace") + 1);
        assertThat(role.getMetadata().getNamespace()).isEqualTo(ns);
        assertThat(binding.getMetadata().getNamespace()).isEqualTo(ns);
        assertThat(binding.getSubjects().get(0).getName()).isEqualTo(daemon.getSpec().getTemplate().getSpec().getServiceAccountName());
        assertThat(binding.getSubjects().get(0).getNamespace()).isEqualTo(daemon.getMetadata().getNamespace());
        var sc = daemon.getSpec().getTemplate().getSpec().getContainers().get(0).getSecurityContext();
        assertThat(sc.getAllowPrivilegeEscalation()).isFalse();
        assertThat(sc.getReadOnlyRootFilesystem()).isTrue();
        assertThat(sc.getCapabilities().getDrop()).containsExactly("ALL");
        assertThat(daemon.getSpec().getTemplate().getSpec().getSecurityContext().getRunAsNonRoot()).isTrue();
    }

    /**
     * {@code kubectl apply -f deploy/kubernetes/} applies the files in name order, one object after another: each
     * namespaced object's namespace must have been made by then (issue 37, defect 6: {@code daemon.yaml} sorted
     * before {@code namespaces.yaml} and failed on a fresh cluster), and so must the ServiceAccount a pod runs as.
     */
    @Test
    void theDirectoryAppliesInOneCommandOnAFreshCluster() throws Exception {
        Set<String> made = new TreeSet<>();
        for (HasMetadata o : load()) {
            String ns = o.getMetadata().getNamespace();
            if (o instanceof io.fabric8.kubernetes.api.model.Namespaced) {
                assertThat(ns).as(o.getKind() + "/" + o.getMetadata().getName() + " names its namespace").isNotBlank();
                assertThat(made).as(o.getKind() + "/" + o.getMetadata().getName() + "'s namespace, made before it")
                        .contains("Namespace/" + ns);
            }
            if (o instanceof Deployment d) {
                String sa = d.getSpec().getTemplate().getSpec().getServiceAccountName();
                assertThat(made).as("the daemon's service account, made before it").contains("ServiceAccount/" + ns + "/" + sa);
            }
            made.add(o.getKind() + "/" + (ns == null || ns.isEmpty() ? "" : ns + "/") + o.getMetadata().getName());
        }
    }

    @Test
    void theChartUsesOnlyValuesItDefinesAndMakesTheSameKinds() throws Exception {
        assertThat(Serialization.unmarshal(Files.readString(CHART.resolve("Chart.yaml")), Map.class))
                .containsEntry("apiVersion", "v2").containsEntry("name", "paddock").containsKey("version");
        Map<?, ?> values = Serialization.unmarshal(Files.readString(CHART.resolve("values.yaml")), Map.class);
        Pattern ref = Pattern.compile("\\.Values((?:\\.[A-Za-z0-9_]+)+)");
        Pattern kind = Pattern.compile("(?m)^kind: ([A-Za-z]+)$");
        Set<String> missing = new TreeSet<>();
        Set<String> chartKinds = new TreeSet<>();
        try (Stream<Path> files = Files.list(CHART.resolve("templates"))) {
            for (Path f : files.toList()) {
                String text = Files.readString(f);
                Matcher m = ref.matcher(text);
                while (m.find()) {
                    Object node = values;
                    for (String key : m.group(1).substring(1).split("\\.")) {
                        node = node instanceof Map<?, ?> map ? map.get(key) : null;
                    }
                    if (node == null && !hasPath(values, m.group(1).substring(1).split("\\."))) {
                        missing.add(f.getFileName() + ": .Values" + m.group(1));
                    }
                }
                Matcher k = kind.matcher(text);
                while (k.find()) {
                    chartKinds.add(k.group(1));
                }
            }
        }
        assertThat(missing).as("values the templates use but values.yaml lacks").isEmpty();
        Set<String> plainKinds = new TreeSet<>();
        load().forEach(o -> plainKinds.add(o.getKind()));
        assertThat(chartKinds).isEqualTo(plainKinds);
    }

    private static boolean hasPath(Map<?, ?> values, String[] path) {
        Object node = values;
        for (String key : path) {
            if (!(node instanceof Map<?, ?> map) || !map.containsKey(key)) {
                return false;
            }
            node = map.get(key);
        }
        return true;
    }

    /** Walks the typed object graph: anything the model did not recognise sits in an additionalProperties map. */
    static void unknownFields(Object o, String path, List<String> out) throws Exception {
        if (o == null || o instanceof String || o instanceof Number || o instanceof Boolean || o instanceof Enum<?>) {
            return;
        }
        if (o instanceof Collection<?> c) {
            int i = 0;
            for (Object e : c) {
                unknownFields(e, path + "[" + i++ + "]", out);
            }
            return;
        }
        if (o instanceof Map<?, ?> m) {
            for (Map.Entry<?, ?> e : m.entrySet()) {
                unknownFields(e.getValue(), path + "." + e.getKey(), out);
            }
            return;
        }
        if (!(o instanceof KubernetesResource) && !o.getClass().getPackageName().startsWith("io.fabric8")) {
            return;
        }
        for (Method getter : o.getClass().getMethods()) {
            if (getter.getParameterCount() != 0 || !getter.getName().startsWith("get") || getter.getDeclaringClass() == Object.class) {
                continue;
            }
            Object v = getter.invoke(o);
            if (getter.getName().equals("getAdditionalProperties")) {
                if (v instanceof Map<?, ?> extra && !extra.isEmpty()) {
                    out.add(path + ": " + extra.keySet());
                }
                continue;
            }
            if (v != null && v != o && !(v instanceof Class<?>)) {
                unknownFields(v, path + "." + getter.getName().substring(3), out);
            }
        }
    }
}
