package io.paddock;

import io.paddock.internal.Validate;

import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What a sandbox is made of: its image, entrypoint, environment, identity and limits. Immutable and
 * thread-safe; build one with {@link #builder()} and derive variants with {@link #toBuilder()}.
 *
 * <p>Every limit has a secure default, so {@code SandboxSpec.builder().build()} is a valid sandbox: the
 * {@code host} image, 512 MiB of memory, one CPU, 256 processes, 1 GiB of writable space, 1024 open files,
 * no network and a five-minute lifetime.
 *
 * <p>Secrets are given to every process as environment variables, like {@link #env()}, but their values
 * never appear in {@link #toString()}, logs or error messages.
 */
public final class SandboxSpec {
    public static final String DEFAULT_IMAGE = "host";
    public static final String DEFAULT_WORKDIR = "/workspace";
    public static final ByteSize DEFAULT_MEMORY = ByteSize.mib(512);
    public static final double DEFAULT_CPUS = 1.0;
    public static final int DEFAULT_PIDS = 256;
    public static final ByteSize DEFAULT_DISK = ByteSize.gib(1);
    public static final int DEFAULT_OPEN_FILES = 1024;
    public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(5);

    public static final ByteSize MIN_MEMORY = ByteSize.mib(16);
    public static final ByteSize MIN_DISK = ByteSize.mib(1);
    public static final Duration MAX_TIMEOUT = Duration.ofDays(7);
    /**
     * How long a sandbox paused at its deadline ({@link TimeoutAction#PAUSE}) is kept before it is destroyed,
     * unless {@link Sandbox#setTimeout} moves it: paused, it holds disk (gVisor's checkpoint) or memory (runc's
     * frozen processes), a uid range and a name, so it is bounded too.
     */
    public static final Duration PAUSED_RETENTION = Duration.ofDays(1);
    /**
     * The isolation tiers a spec may name: {@code runc} (namespaces, cgroups, seccomp), {@code runsc} (gVisor) and
     * {@code kubernetes} (a pod in a cluster; docs/KUBERNETES.md).
     */
    public static final List<String> RUNTIMES = List.of("runc", "runsc", "kubernetes");

    private final String image;
    private final List<String> entrypoint;
    private final Map<String, String> env;
    private final Map<String, String> secrets;
    private final String workdir;
    private final String name;
    private final Map<String, String> labels;
    private final ByteSize memory;
    private final double cpus;
    private final int pids;
    private final ByteSize disk;
    private final int openFiles;
    private final NetworkPolicy network;
    private final List<Integer> ports;
    private final List<EgressSecret> egressSecrets;
    private final CodebaseMount codebase;
    private final List<VolumeMount> volumes;
    private final Duration timeout;
    private final String runtime;
    private final TimeoutAction onTimeout;
    private final Duration idleTimeout;

    private SandboxSpec(Builder b) {
        this.image = b.image;
        this.entrypoint = List.copyOf(b.entrypoint);
        this.env = Collections.unmodifiableMap(new LinkedHashMap<>(b.env));
        this.secrets = Collections.unmodifiableMap(new LinkedHashMap<>(b.secrets));
        this.workdir = b.workdir;
        this.name = b.name;
        this.labels = Collections.unmodifiableMap(new LinkedHashMap<>(b.labels));
        this.memory = b.memory;
        this.cpus = b.cpus;
        this.pids = b.pids;
        this.disk = b.disk;
        this.openFiles = b.openFiles;
        this.network = b.network;
        this.ports = List.copyOf(b.ports);
        this.egressSecrets = List.copyOf(b.egressSecrets.values());
        this.codebase = b.codebase;
        this.volumes = List.copyOf(b.volumes);
        this.timeout = b.timeout;
        this.idleTimeout = b.idleTimeout;
        this.runtime = b.runtime;
        this.onTimeout = b.onTimeout;
    }

    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        Builder b = new Builder();
        b.image = image;
        b.entrypoint = entrypoint;
        b.env.putAll(env);
        b.secrets.putAll(secrets);
        b.workdir = workdir;
        b.name = name;
        b.labels.putAll(labels);
        b.memory = memory;
        b.cpus = cpus;
        b.pids = pids;
        b.disk = disk;
        b.openFiles = openFiles;
        b.network = network;
        b.ports.addAll(ports);
        egressSecrets.forEach(e -> b.egressSecrets.put(e.key(), e));
        b.codebase = codebase;
        b.volumes.addAll(volumes);
        b.timeout = timeout;
        b.idleTimeout = idleTimeout;
        b.runtime = runtime;
        b.onTimeout = onTimeout;
        return b;
    }

    /** The image reference; {@code host} is the host's {@code /usr} read-only with a generated {@code /etc}. */
    public String image() {
        return image;
    }

    /** A command that runs for the sandbox's life; empty for none. When it exits, the sandbox stops. */
    public List<String> entrypoint() {
        return entrypoint;
    }

    public Map<String, String> env() {
        return env;
    }

    /** Secret variables; their values are never logged or echoed. */
    public Map<String, String> secrets() {
        return secrets;
    }

    public String workdir() {
        return workdir;
    }

    public Optional<String> name() {
        return Optional.ofNullable(name);
    }

    public Map<String, String> labels() {
        return labels;
    }

    public ByteSize memory() {
        return memory;
    }

    public double cpus() {
        return cpus;
    }

    public int pids() {
        return pids;
    }

    /** The size of the writable area ({@code /workspace} and {@code /tmp} each). */
    public ByteSize disk() {
        return disk;
    }

    public int openFiles() {
        return openFiles;
    }

    /** Where the sandbox may connect to; {@link NetworkPolicy#none()} unless set. */
    public NetworkPolicy network() {
        return network;
    }

    /**
     * The ports (in the sandbox) that the daemon proxies HTTP and WebSocket to, at
     * {@code /v1/sandboxes/{id}/ports/{port}/}; nothing is published on the host's interfaces. A sandbox with
     * ports gets an interface even under {@link NetworkPolicy#none()}, which then allows no egress.
     */
    public List<Integer> ports() {
        return ports;
    }

    /** Secrets added at egress (see {@link EgressSecret}); their keys hold only placeholders inside. */
    public List<EgressSecret> egressSecrets() {
        return egressSecrets;
    }

    /** The codebase the sandbox works on, under its permission rules; empty for none. */
    public Optional<CodebaseMount> codebase() {
        return Optional.ofNullable(codebase);
    }

    /** The volumes the sandbox mounts, in order. */
    public List<VolumeMount> volumes() {
        return volumes;
    }

    /** Whether the sandbox gets a network interface (a policy other than none, or a port). */
    public boolean hasNetwork() {
        return !network.isNone() || !ports.isEmpty();
    }

    /**
     * How long the sandbox may go without a command, a file operation or code running before the same happens to
     * it as at its deadline ({@link #onTimeout()}); empty for no idle limit (the deadline alone).
     */
    public Optional<Duration> idleTimeout() {
        return Optional.ofNullable(idleTimeout);
    }

    public Duration timeout() {
        return timeout;
    }

    /**
     * The isolation tier ({@link #RUNTIMES}) this sandbox runs on; empty for the engine's default tier. A
     * created sandbox reports the tier it got in {@link SandboxInfo#runtime()}.
     */
    public Optional<String> runtime() {
        return Optional.ofNullable(runtime);
    }

    /** What happens when the lifetime deadline passes: destroyed (the default) or paused. */
    public TimeoutAction onTimeout() {
        return onTimeout;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof SandboxSpec s)) {
            return false;
        }
        return image.equals(s.image) && entrypoint.equals(s.entrypoint) && env.equals(s.env)
                && secrets.equals(s.secrets) && workdir.equals(s.workdir) && Objects.equals(name, s.name)
                && labels.equals(s.labels) && memory.equals(s.memory) && Double.compare(cpus, s.cpus) == 0
                && pids == s.pids && disk.equals(s.disk) && openFiles == s.openFiles && network.equals(s.network)
                && ports.equals(s.ports) && egressSecrets.equals(s.egressSecrets)
                && Objects.equals(codebase, s.codebase) && volumes.equals(s.volumes)
                && timeout.equals(s.timeout) && Objects.equals(runtime, s.runtime) && onTimeout == s.onTimeout
                && Objects.equals(idleTimeout, s.idleTimeout);
    }

    @Override
    public int hashCode() {
        return Objects.hash(image, entrypoint, env, secrets, workdir, name, labels, memory, cpus, pids, disk,
                openFiles, network, ports, egressSecrets, codebase, volumes, timeout, runtime, onTimeout, idleTimeout);
    }

    @Override
    public String toString() {
        return "SandboxSpec{image=" + image + ", name=" + name + ", labels=" + labels + ", entrypoint=" + entrypoint
                + ", env=" + env.keySet() + ", secrets=" + secrets.keySet() + " (values redacted), workdir=" + workdir
                + ", memory=" + memory + ", cpus=" + cpus + ", pids=" + pids + ", disk=" + disk
                + ", openFiles=" + openFiles + ", network=" + network
                + (ports.isEmpty() ? "" : ", ports=" + ports)
                + (egressSecrets.isEmpty() ? "" : ", egressSecrets=" + egressSecrets)
                + (codebase == null ? "" : ", codebase=" + codebase) + (volumes.isEmpty() ? "" : ", volumes=" + volumes)
                + ", timeout=" + timeout
                + (runtime == null ? "" : ", runtime=" + runtime)
                + (onTimeout == TimeoutAction.DESTROY ? "" : ", onTimeout=" + onTimeout)
                + (idleTimeout == null ? "" : ", idleTimeout=" + idleTimeout) + "}";
    }

    /** Builds a {@link SandboxSpec}; every setter validates at once and names the field it rejects. */
    public static final class Builder {
        private String image = DEFAULT_IMAGE;
        private List<String> entrypoint = List.of();
        private final Map<String, String> env = new LinkedHashMap<>();
        private final Map<String, String> secrets = new LinkedHashMap<>();
        private String workdir = DEFAULT_WORKDIR;
        private String name;
        private final Map<String, String> labels = new LinkedHashMap<>();
        private ByteSize memory = DEFAULT_MEMORY;
        private double cpus = DEFAULT_CPUS;
        private int pids = DEFAULT_PIDS;
        private ByteSize disk = DEFAULT_DISK;
        private int openFiles = DEFAULT_OPEN_FILES;
        private NetworkPolicy network = NetworkPolicy.none();
        private final java.util.LinkedHashSet<Integer> ports = new java.util.LinkedHashSet<>();
        private final Map<String, EgressSecret> egressSecrets = new LinkedHashMap<>();
        private CodebaseMount codebase;
        private final List<VolumeMount> volumes = new java.util.ArrayList<>();
        private Duration timeout = DEFAULT_TIMEOUT;
        private String runtime;
        private TimeoutAction onTimeout = TimeoutAction.DESTROY;
        private Duration idleTimeout;

        private Builder() {
        }

        public Builder image(String image) {
            if (image == null || image.isBlank() || image.length() > 512 || image.chars().anyMatch(c -> c < 0x21)) {
                throw SandboxException.invalid("image", "'" + Validate.shorten(image) + "' is not an image reference");
            }
            this.image = image;
            return this;
        }

        public Builder entrypoint(String... argv) {
            return entrypoint(List.of(argv));
        }

        public Builder entrypoint(List<String> argv) {
            List<String> copy = List.copyOf(Objects.requireNonNull(argv, "entrypoint"));
            if (!copy.isEmpty()) {
                Validate.argv("entrypoint", copy);
            }
            this.entrypoint = copy;
            return this;
        }

        public Builder env(String key, String value) {
            Validate.env("env", Map.of(Validate.envKey("env", key), Objects.requireNonNull(value, "value")));
            env.put(key, value);
            Validate.env("env", env);
            return this;
        }

        public Builder env(Map<String, String> vars) {
            vars.forEach(this::env);
            return this;
        }

        public Builder secret(String key, String value) {
            Validate.envKey("secrets", key);
            if (value == null || value.indexOf('\0') >= 0) {
                throw SandboxException.invalid("secrets", "secret " + key + " has no value or contains a NUL byte");
            }
            secrets.put(key, value);
            return this;
        }

        public Builder secrets(Map<String, String> vars) {
            vars.forEach(this::secret);
            return this;
        }

        public Builder workdir(String dir) {
            this.workdir = Validate.absoluteDir("workdir", dir);
            return this;
        }

        public Builder name(String name) {
            this.name = name == null ? null : Validate.name("name", name);
            return this;
        }

        public Builder label(String key, String value) {
            Validate.label("labels", key, value);
            labels.put(key, value);
            Validate.labels("labels", labels);
            return this;
        }

        public Builder labels(Map<String, String> all) {
            all.forEach(this::label);
            return this;
        }

        public Builder memory(ByteSize memory) {
            if (memory == null || memory.compareTo(MIN_MEMORY) < 0) {
                throw SandboxException.invalid("memory", "must be at least " + MIN_MEMORY + ", got " + memory);
            }
            this.memory = memory;
            return this;
        }

        public Builder cpus(double cpus) {
            if (!(cpus >= 0.01 && cpus <= 1024)) {
                throw SandboxException.invalid("cpus", "must be between 0.01 and 1024, got " + cpus);
            }
            this.cpus = cpus;
            return this;
        }

        public Builder pids(int pids) {
            if (pids < 8 || pids > 1_000_000) {
                throw SandboxException.invalid("pids", "must be between 8 and 1000000, got " + pids);
            }
            this.pids = pids;
            return this;
        }

        public Builder disk(ByteSize disk) {
            if (disk == null || disk.compareTo(MIN_DISK) < 0) {
                throw SandboxException.invalid("disk", "must be at least " + MIN_DISK + ", got " + disk);
            }
            this.disk = disk;
            return this;
        }

        public Builder openFiles(int openFiles) {
            if (openFiles < 16 || openFiles > 1 << 20) {
                throw SandboxException.invalid("openFiles", "must be between 16 and 1048576, got " + openFiles);
            }
            this.openFiles = openFiles;
            return this;
        }

        public Builder network(NetworkPolicy network) {
            this.network = Objects.requireNonNull(network, "network");
            return this;
        }

        /** A policy of {@code mode} without entries; see {@link NetworkPolicy#of(NetworkMode)}. */
        public Builder network(NetworkMode mode) {
            return network(NetworkPolicy.of(mode));
        }

        /** The most ports a sandbox may expose. */
        public static final int MAX_PORTS = 32;

        /** Exposes {@code port} (1-65535) through the daemon; see {@link SandboxSpec#ports()}. */
        public Builder port(int port) {
            if (port < 1 || port > 65535) {
                throw SandboxException.invalid("ports", "a port is from 1 to 65535, got " + port);
            }
            if (!ports.contains(port) && ports.size() >= MAX_PORTS) {
                throw SandboxException.invalid("ports", "at most " + MAX_PORTS + " ports");
            }
            ports.add(port);
            return this;
        }

        /**
         * Adds a secret given at egress: inside, {@code key} holds a random placeholder; requests bound for
         * {@code host} get {@code value} in its place (see {@link EgressSecret}). The policy must allow the host.
         */
        public Builder egressSecret(String key, String host, String value) {
            return egressSecret(EgressSecret.of(key, host, value));
        }

        /** Adds a declared egress secret (keeps its placeholder). */
        public Builder egressSecret(EgressSecret secret) {
            Objects.requireNonNull(secret, "egressSecret");
            if (!egressSecrets.containsKey(secret.key()) && egressSecrets.size() >= 64) {
                throw SandboxException.invalid("egressSecrets", "at most 64");
            }
            egressSecrets.put(secret.key(), secret);
            return this;
        }

        /** The codebase the sandbox works on ({@link SandboxSpec#codebase()}); null for none. */
        public Builder codebase(CodebaseMount codebase) {
            this.codebase = codebase;
            return this;
        }

        /** The most volumes a sandbox may mount. */
        public static final int MAX_VOLUMES = 16;

        /** Adds a volume ({@link SandboxSpec#volumes()}). */
        public Builder volume(VolumeMount volume) {
            Objects.requireNonNull(volume, "volume");
            if (volumes.size() >= MAX_VOLUMES) {
                throw SandboxException.invalid("volumes", "at most " + MAX_VOLUMES);
            }
            volumes.add(volume);
            return this;
        }

        /** Replaces the volumes. */
        public Builder volumes(List<VolumeMount> all) {
            volumes.clear();
            all.forEach(this::volume);
            return this;
        }

        /** Replaces the exposed ports. */
        public Builder ports(List<Integer> all) {
            ports.clear();
            all.forEach(this::port);
            return this;
        }

        /** See {@link SandboxSpec#idleTimeout()}; null for none. At least 1 s, at most the longest timeout. */
        public Builder idleTimeout(Duration idleTimeout) {
            if (idleTimeout != null && (idleTimeout.compareTo(Duration.ofSeconds(1)) < 0
                    || idleTimeout.compareTo(MAX_TIMEOUT) > 0)) {
                throw SandboxException.invalid("idleTimeout", "must be between 1s and " + MAX_TIMEOUT.toDays()
                        + " days, got " + idleTimeout);
            }
            this.idleTimeout = idleTimeout;
            return this;
        }

        public Builder timeout(Duration timeout) {
            if (timeout == null || timeout.compareTo(Duration.ofSeconds(1)) < 0 || timeout.compareTo(MAX_TIMEOUT) > 0) {
                throw SandboxException.invalid("timeout", "must be between 1s and " + MAX_TIMEOUT.toDays()
                        + " days, got " + timeout);
            }
            this.timeout = timeout;
            return this;
        }

        /**
         * The isolation tier: {@code runc} or {@code runsc} (gVisor); {@code null} for the engine's default.
         * An engine whose host lacks the tier refuses the spec with {@code FAILED_PRECONDITION}.
         */
        public Builder runtime(String runtime) {
            if (runtime != null && !RUNTIMES.contains(runtime)) {
                throw SandboxException.invalid("runtime", "unknown runtime '" + Validate.shorten(runtime) + "'; known: "
                        + String.join(", ", RUNTIMES));
            }
            this.runtime = runtime;
            return this;
        }

        /**
         * What happens when the lifetime deadline passes: {@link TimeoutAction#DESTROY} (the default) or
         * {@link TimeoutAction#PAUSE} (paused and kept for {@link SandboxSpec#PAUSED_RETENTION}; a resume gives it a fresh
         * {@code timeout}).
         */
        public Builder onTimeout(TimeoutAction action) {
            if (action == null) {
                throw SandboxException.invalid("onTimeout", "must be DESTROY or PAUSE, got null");
            }
            this.onTimeout = action;
            return this;
        }

        public SandboxSpec build() {
            for (EgressSecret e : egressSecrets.values()) {
                if (!network.allowsName(e.host())) {
                    throw SandboxException.invalid("egressSecrets", e.key() + "@" + e.host() + ": the network policy ("
                            + network + ") does not allow " + e.host() + "; allow it too (--allow-net " + e.host() + ")");
                }
                if (env.containsKey(e.key()) || secrets.containsKey(e.key())) {
                    throw SandboxException.invalid("egressSecrets", e.key() + " is also an env variable or secret");
                }
            }
            List<String> paths = new java.util.ArrayList<>();
            if (codebase != null) {
                paths.add(codebase.path());
            }
            volumes.forEach(v -> paths.add(v.path()));
            for (int i = 0; i < paths.size(); i++) {
                for (int j = i + 1; j < paths.size(); j++) {
                    if (MountPaths.overlaps(paths.get(i), paths.get(j))) {
                        throw SandboxException.invalid("volumes", paths.get(i) + " and " + paths.get(j)
                                + " overlap; mount each at its own path");
                    }
                }
            }
            return new SandboxSpec(this);
        }
    }
}
