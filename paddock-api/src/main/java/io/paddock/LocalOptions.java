package io.paddock;

import java.nio.file.Path;
import java.util.Objects;

/**
 * Options of the embedded engine started by {@link Paddock#local(LocalOptions)}.
 *
 * <p>All engines on one host must share one state directory: host uid ranges are allocated there.
 */
public final class LocalOptions {
    public static final Path DEFAULT_STATE_DIR = Path.of("/run/paddock");
    public static final Path DEFAULT_STORAGE_DIR = Path.of("/var/lib/paddock");

    private final Path stateDir;
    private final Path storageDir;
    private final Path dataDir;
    private final int maxSandboxes;
    private final String defaultRuntime;
    private final java.util.List<PoolConfig> warmPools;
    private final String dnsUpstream;
    private final java.util.List<String> allowPrivate;
    private final Path egressTrust;
    private final java.util.Map<String, String> runtimeOptions;
    private final int egressConnectionsPerTenant;
    private final int dnsTcpPerTenant;
    private final java.util.List<String> buildAllow;

    private LocalOptions(Builder b) {
        this.buildAllow = b.buildAllow == null ? java.util.List.of() : b.buildAllow;
        this.egressConnectionsPerTenant = b.egressConnectionsPerTenant;
        this.dnsTcpPerTenant = b.dnsTcpPerTenant;
        this.runtimeOptions = java.util.Collections.unmodifiableMap(new java.util.TreeMap<>(b.runtimeOptions));
        this.dnsUpstream = b.dnsUpstream;
        this.egressTrust = b.egressTrust;
        this.allowPrivate = java.util.List.copyOf(b.allowPrivate);
        this.stateDir = b.stateDir;
        this.storageDir = b.storageDir;
        this.dataDir = b.dataDir;
        this.maxSandboxes = b.maxSandboxes;
        this.defaultRuntime = b.defaultRuntime;
        this.warmPools = java.util.List.copyOf(b.warmPools);
    }

    public static LocalOptions defaults() {
        return builder().build();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Where bundles, runtime state and uid-range leases live (default {@code /run/paddock}). */
    public Path stateDir() {
        return stateDir;
    }

    /**
     * Where images (their layers, blobs and names) and the disk that sandboxes of images write to live
     * (default {@code /var/lib/paddock}); it persists across reboots, unlike the state directory. Engines
     * sharing it share their images.
     */
    public Path storageDir() {
        return storageDir;
    }

    /**
     * Where a long-lived engine (the daemon) keeps its records: one SQLite file and its identity. When set,
     * sandboxes survive a restart of the engine: a new engine with the same data directory adopts them.
     * When empty (the embedded default), sandboxes live and die with this engine's process.
     */
    public java.util.Optional<Path> dataDir() {
        return java.util.Optional.ofNullable(dataDir);
    }

    /** The most live sandboxes this engine keeps at once; creating more fails with {@code RESOURCE_EXHAUSTED}. */
    public int maxSandboxes() {
        return maxSandboxes;
    }

    /**
     * The tier ({@link SandboxSpec#RUNTIMES}) for specs that name none; empty (the default) lets the engine
     * pick: {@code runc}, the tier it can always run. An engine whose host lacks the tier named here fails
     * to start with {@code FAILED_PRECONDITION}.
     */
    public java.util.Optional<String> defaultRuntime() {
        return java.util.Optional.ofNullable(defaultRuntime);
    }

    /** The warm pools: sandboxes created ahead of time, one pool per shape (none by default). */
    public java.util.List<PoolConfig> warmPools() {
        return warmPools;
    }

    /**
     * The DNS server ({@code IP} or {@code IP:PORT}) that Paddock's resolver forwards sandboxes' allowlisted
     * names to; empty: {@code $PADDOCK_DNS_UPSTREAM}, else the first {@code nameserver} of the host's
     * {@code /etc/resolv.conf}.
     */
    public java.util.Optional<String> dnsUpstream() {
        return java.util.Optional.ofNullable(dnsUpstream);
    }

    /**
     * Private ranges (CIDRs) the operator opened: sandboxes whose policy allows an address in one may reach
     * it. Everything else in the deny list (metadata, RFC 1918, CGNAT, loopback, link-local, the host, other
     * sandboxes) stays denied whatever a sandbox's policy says.
     */
    public java.util.List<String> allowPrivate() {
        return allowPrivate;
    }

    /**
     * A PEM file of CA certificates the egress proxy trusts, besides the JDK's, when it connects to the hosts of
     * egress secrets (a private PKI, or a test's); empty: the JDK's trust store only.
     */
    public java.util.Optional<Path> egressTrust() {
        return java.util.Optional.ofNullable(egressTrust);
    }

    /**
     * How many connections one tenant's sandboxes (those labelled {@code paddock.io/tenant} with its name) may hold
     * at once in the egress proxy, together, of its 256 (default 64; each sandbox at most 32): one tenant's idle
     * connections never take every one from another's.
     */
    public int egressConnectionsPerTenant() {
        return egressConnectionsPerTenant;
    }

    /** How many TCP connections one tenant's sandboxes may hold at once in Paddock's resolver, of its 64 (default 16). */
    public int dnsTcpPerTenant() {
        return dnsTcpPerTenant;
    }

    /** The word of {@link #buildAllow()} that stands for the hosts of this host's own apt sources. */
    public static final String APT_SOURCES = "apt-sources";

    /**
     * Where image builds' RUN steps may connect to, as the words given ({@link Builder#buildAllow(String)}): {@code
     * none}; {@code open} (every public address); or allowlist entries as {@link NetworkPolicy#allow(String...)}
     * takes them, where {@value #APT_SOURCES} stands for the host names of this host's apt sources
     * ({@code /etc/apt/sources.list}, {@code sources.list.d/*.list} and {@code *.sources}). Empty (the default):
     * {@code $PADDOCK_BUILD_ALLOW}, else {@value #APT_SOURCES}. Whatever it says, RUN steps are sandboxes with
     * Paddock's network: the host, other sandboxes, loopback, private and link-local ranges stay denied unless
     * {@link #allowPrivate()} opened a range.
     */
    public java.util.List<String> buildAllow() {
        return buildAllow;
    }

    /**
     * Settings of tiers that live in their own modules, as {@code TIER.KEY} pairs: for the Kubernetes tier
     * {@code kubernetes.namespace}, {@code kubernetes.initImage}, {@code kubernetes.defaultImage},
     * {@code kubernetes.runtimeClass}, {@code kubernetes.startTimeout}, {@code kubernetes.kubeconfig},
     * {@code kubernetes.master}, {@code kubernetes.userNamespaces} (docs/KUBERNETES.md). A tier named here is opened
     * when the engine starts, so that a missing cluster is said at once.
     */
    public java.util.Map<String, String> runtimeOptions() {
        return runtimeOptions;
    }

    public static final class Builder {
        private Path egressTrust;
        private int egressConnectionsPerTenant = 64;
        private int dnsTcpPerTenant = 16;

        /** See {@link LocalOptions#egressConnectionsPerTenant()}: 1 to 256. */
        public Builder egressConnectionsPerTenant(int max) {
            if (max < 1 || max > 256) {
                throw SandboxException.invalid("egressConnectionsPerTenant", "must be 1 to 256 (the egress proxy's"
                        + " connections in all), got " + max);
            }
            this.egressConnectionsPerTenant = max;
            return this;
        }

        /** See {@link LocalOptions#dnsTcpPerTenant()}: 1 to 64. */
        public Builder dnsTcpPerTenant(int max) {
            if (max < 1 || max > 64) {
                throw SandboxException.invalid("dnsTcpPerTenant", "must be 1 to 64 (the resolver's TCP connections in"
                        + " all), got " + max);
            }
            this.dnsTcpPerTenant = max;
            return this;
        }
        private final java.util.Map<String, String> runtimeOptions = new java.util.LinkedHashMap<>();

        /** Sets one of {@link LocalOptions#runtimeOptions()}; the tier checks the value when it opens. */
        public Builder runtimeOption(String key, String value) {
            Objects.requireNonNull(value, "value");
            int dot = key == null ? -1 : key.indexOf('.');
            if (dot <= 0 || !SandboxSpec.RUNTIMES.contains(key.substring(0, dot)) || dot == key.length() - 1) {
                throw SandboxException.invalid("runtimeOptions", "'" + key + "' is not TIER.KEY for a known tier ("
                        + String.join(", ", SandboxSpec.RUNTIMES) + ")");
            }
            runtimeOptions.put(key, value);
            return this;
        }

        /** See {@link LocalOptions#egressTrust()}. */
        public Builder egressTrust(Path pemFile) {
            if (pemFile != null && !java.nio.file.Files.isReadable(pemFile)) {
                throw SandboxException.invalid("egressTrust", pemFile + " is not a readable file");
            }
            this.egressTrust = pemFile;
            return this;
        }

        private java.util.List<String> buildAllow;

        /**
         * See {@link LocalOptions#buildAllow()}: {@code none}, {@code open}, or a comma-separated allowlist of
         * CIDRs, domain names, {@code *.} wildcards and {@value LocalOptions#APT_SOURCES}; {@code null} or blank:
         * the default.
         */
        public Builder buildAllow(String list) {
            this.buildAllow = list == null || list.isBlank() ? null : parseBuildAllow(list, "buildAllow");
            return this;
        }

        /** As {@link #buildAllow(String)}, from a policy ({@code none}, {@code open} or an allowlist). */
        public Builder buildNetwork(NetworkPolicy policy) {
            Objects.requireNonNull(policy, "buildNetwork");
            this.buildAllow = switch (policy.mode()) {
                case NONE -> java.util.List.of("none");
                case OPEN -> java.util.List.of("open");
                case ALLOW -> policy.entries();
            };
            return this;
        }

        /**
         * The words of a build allowlist, each checked; {@code setting} names where it came from in the error
         * (the option, or the environment variable).
         */
        public static java.util.List<String> parseBuildAllow(String list, String setting) {
            java.util.List<String> words = new java.util.ArrayList<>();
            for (String w : list.split(",", -1)) {
                String word = w.strip().toLowerCase(java.util.Locale.ROOT);
                if (word.equals(APT_SOURCES)) {
                    words.add(word);
                    continue;
                }
                if ((word.equals("none") || word.equals("open"))) {
                    if (list.split(",", -1).length != 1) {
                        throw SandboxException.invalid(setting, "'" + word + "' stands alone; give it or an allowlist,"
                                + " not both (got '" + list + "')");
                    }
                    return java.util.List.of(word);
                }
                try {
                    words.addAll(NetworkPolicy.allow(word).entries());
                } catch (SandboxException e) {
                    throw SandboxException.invalid(setting, "'" + w.strip() + "' is not none, open, " + APT_SOURCES
                            + ", a CIDR or a domain name (" + e.getMessage().replaceFirst("^[^:]*: ", "") + ")");
                }
            }
            return java.util.List.copyOf(new java.util.LinkedHashSet<>(words));
        }

        private String dnsUpstream;
        private final java.util.List<String> allowPrivate = new java.util.ArrayList<>();

        /** See {@link LocalOptions#dnsUpstream()}; checked when the engine opens its network layer. */
        public Builder dnsUpstream(String upstream) {
            this.dnsUpstream = upstream;
            return this;
        }

        /** Opens a private range (see {@link LocalOptions#allowPrivate()}). */
        public Builder allowPrivate(String cidr) {
            java.util.Objects.requireNonNull(cidr, "allowPrivate");
            java.util.Optional<String> normal;
            try {
                normal = NetworkPolicy.allow(cidr).cidrs().stream().findFirst();
            } catch (SandboxException e) {
                normal = java.util.Optional.empty();
            }
            this.allowPrivate.add(normal.orElseThrow(() -> SandboxException.invalid("allowPrivate", "'" + cidr
                    + "' is not a CIDR such as 192.168.5.0/24 (with its host bits zero)")));
            return this;
        }

        private Path stateDir = DEFAULT_STATE_DIR;
        private Path storageDir = DEFAULT_STORAGE_DIR;
        private Path dataDir;
        private int maxSandboxes = 1000;
        private String defaultRuntime;
        private final java.util.List<PoolConfig> warmPools = new java.util.ArrayList<>();

        private Builder() {
        }

        public Builder stateDir(Path dir) {
            Objects.requireNonNull(dir, "stateDir");
            if (!dir.isAbsolute()) {
                throw SandboxException.invalid("stateDir", "must be an absolute path, got " + dir);
            }
            this.stateDir = dir.normalize();
            return this;
        }

        public Builder storageDir(Path dir) {
            Objects.requireNonNull(dir, "storageDir");
            if (!dir.isAbsolute()) {
                throw SandboxException.invalid("storageDir", "must be an absolute path, got " + dir);
            }
            this.storageDir = dir.normalize();
            return this;
        }

        public Builder dataDir(Path dir) {
            if (dir != null && !dir.isAbsolute()) {
                throw SandboxException.invalid("dataDir", "must be an absolute path, got " + dir);
            }
            this.dataDir = dir == null ? null : dir.normalize();
            return this;
        }

        public Builder maxSandboxes(int max) {
            if (max < 1) {
                throw SandboxException.invalid("maxSandboxes", "must be at least 1, got " + max);
            }
            this.maxSandboxes = max;
            return this;
        }

        public Builder defaultRuntime(String runtime) {
            if (runtime != null && !SandboxSpec.RUNTIMES.contains(runtime)) {
                throw SandboxException.invalid("defaultRuntime", "unknown runtime '" + runtime + "'; known: "
                        + String.join(", ", SandboxSpec.RUNTIMES));
            }
            this.defaultRuntime = runtime;
            return this;
        }

        /**
         * Adds a warm pool ({@link PoolConfig}); creates whose spec has its shape are served from it. At most
         * one pool per shape; their sizes together must fit {@link #maxSandboxes(int)}.
         */
        public Builder warmPool(PoolConfig pool) {
            java.util.Objects.requireNonNull(pool, "warmPool");
            this.warmPools.add(pool);
            return this;
        }

        public LocalOptions build() {
            int pooled = warmPools.stream().mapToInt(PoolConfig::size).sum();
            if (pooled > maxSandboxes) {
                throw SandboxException.invalid("warmPool", "the pools hold " + pooled
                        + " sandboxes, more than maxSandboxes (" + maxSandboxes + ")");
            }
            return new LocalOptions(this);
        }
    }
}
