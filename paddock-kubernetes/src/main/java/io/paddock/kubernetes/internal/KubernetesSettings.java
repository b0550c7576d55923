package io.paddock.kubernetes.internal;

import io.paddock.SandboxException;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * How the Kubernetes tier runs its pods, from the engine's runtime options ({@code kubernetes.*} keys, which
 * {@code paddock serve --namespace …} and friends set). Every value is checked here, once, naming its option.
 *
 * @param namespace     where sandboxes' pods and network policies go; empty: the kubeconfig context's
 * @param initImage     the image holding the static {@code /paddock-init} (and {@code cp}), copied into each pod
 * @param defaultImage  what the {@code host} image means on this tier (a cluster has no host image)
 * @param runtimeClass  the pods' RuntimeClass (gVisor, Kata), empty for the cluster's default
 * @param startTimeout  how long a pod may take to be scheduled, pulled and started
 * @param master        the API server's URL, overriding the kubeconfig's (tests, in-cluster overrides)
 * @param kubeconfig    a kubeconfig file, overriding the standard places
 * @param userNamespaces whether pods run in their own user namespace ({@code hostUsers: false}); the spec's
 *                      {@code pids} is enforced per pod only then (RLIMIT_NPROC counts per user namespace)
 * @param deleteTimeout how long a destroy waits for the API to confirm a pod gone before it says it is not
 *                      (then the tier keeps deleting it in the background)
 * @param adopt         whether the namespace is this daemon's alone, so that it takes over running pods another
 *                      daemon started and it has no record of (one that lost its data directory), from their
 *                      labels and annotations
 */
public record KubernetesSettings(Optional<String> namespace, String initImage, String defaultImage,
                                 Optional<String> runtimeClass, Duration startTimeout, Optional<String> master,
                                 Optional<String> kubeconfig, boolean userNamespaces, boolean adopt,
                                 Duration deleteTimeout) {
    public static final String PREFIX = "kubernetes.";
    public static final String DEFAULT_INIT_IMAGE = "ghcr.io/paddock/paddock-init:0.1.0";
    public static final String DEFAULT_IMAGE = "python:3.12-slim-bookworm";
    public static final Duration DEFAULT_START_TIMEOUT = Duration.ofSeconds(120);
    public static final Duration DEFAULT_DELETE_TIMEOUT = Duration.ofSeconds(60);
    private static final Set<String> KEYS = Set.of("namespace", "initImage", "defaultImage", "runtimeClass",
            "startTimeout", "master", "kubeconfig", "userNamespaces", "adopt",
            "deleteTimeout");
    private static final Pattern DNS_LABEL = Pattern.compile("[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?");
    private static final Pattern DNS_SUBDOMAIN =
            Pattern.compile("[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*");

    public KubernetesSettings {
        namespace.ifPresent(n -> check(DNS_LABEL.matcher(n).matches(), "namespace", n + " is not a namespace name"));
        runtimeClass.ifPresent(n -> check(DNS_SUBDOMAIN.matcher(n).matches() && n.length() <= 253, "runtimeClass",
                n + " is not a RuntimeClass name"));
        check(!initImage.isBlank() && initImage.chars().noneMatch(c -> c < 0x21), "initImage", "'" + initImage + "' is not an image");
        check(!defaultImage.isBlank() && defaultImage.chars().noneMatch(c -> c < 0x21), "defaultImage",
                "'" + defaultImage + "' is not an image");
        check(!startTimeout.isNegative() && startTimeout.compareTo(Duration.ofSeconds(1)) >= 0
                && startTimeout.compareTo(Duration.ofHours(1)) <= 0, "startTimeout", "must be from 1s to 1h, got " + startTimeout);
        check(deleteTimeout.compareTo(Duration.ofSeconds(1)) >= 0 && deleteTimeout.compareTo(Duration.ofHours(1)) <= 0,
                "deleteTimeout", "must be from 1s to 1h, got " + deleteTimeout);
    }

    /** The settings in {@code options} (keys {@code kubernetes.NAME}); unknown keys are refused. */
    public static KubernetesSettings from(Map<String, String> options) {
        for (String key : options.keySet()) {
            if (key.startsWith(PREFIX) && !KEYS.contains(key.substring(PREFIX.length()))) {
                throw SandboxException.invalid("runtimeOptions", "unknown option " + key + "; known: kubernetes."
                        + String.join(", kubernetes.", new java.util.TreeSet<>(KEYS)));
            }
        }
        Duration start = duration(options, "startTimeout", DEFAULT_START_TIMEOUT);
        Duration delete = duration(options, "deleteTimeout", DEFAULT_DELETE_TIMEOUT);
        return new KubernetesSettings(opt(options, "namespace"), options.getOrDefault(PREFIX + "initImage", DEFAULT_INIT_IMAGE),
                options.getOrDefault(PREFIX + "defaultImage", DEFAULT_IMAGE), opt(options, "runtimeClass"), start,
                opt(options, "master"), opt(options, "kubeconfig"),
                Boolean.parseBoolean(options.getOrDefault(PREFIX + "userNamespaces", "false")),
                Boolean.parseBoolean(options.getOrDefault(PREFIX + "adopt", "false")), delete);
    }

    private static Duration duration(Map<String, String> options, String key, Duration otherwise) {
        String t = options.get(PREFIX + key);
        if (t == null) {
            return otherwise;
        }
        try {
            return t.startsWith("P") ? Duration.parse(t) : Duration.ofSeconds(Long.parseLong(t.replaceFirst("s$", "")));
        } catch (RuntimeException e) {
            throw SandboxException.invalid("runtimeOptions", PREFIX + key + ": '" + t
                    + "' is not a duration (seconds, or ISO-8601 such as PT2M)");
        }
    }

    /** The same settings in namespace {@code ns}. */
    public KubernetesSettings inNamespace(String ns) {
        return new KubernetesSettings(Optional.of(ns), initImage, defaultImage, runtimeClass, startTimeout, master,
                kubeconfig, userNamespaces, adopt, deleteTimeout);
    }

    private static Optional<String> opt(Map<String, String> options, String key) {
        return Optional.ofNullable(options.get(PREFIX + key)).filter(s -> !s.isBlank());
    }

    private static void check(boolean ok, String key, String message) {
        if (!ok) {
            throw SandboxException.invalid("runtimeOptions", PREFIX + key + ": " + message);
        }
    }
}
