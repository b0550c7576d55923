package io.paddock.server;

import io.paddock.LocalOptions;
import io.paddock.SandboxException;

import java.nio.file.Path;
import java.util.Objects;

/**
 * Options of {@code paddock serve} ({@link Daemon#run(DaemonOptions)}). Immutable; build one with
 * {@link #builder()}.
 */
public final class DaemonOptions {
    public static final String DEFAULT_LISTEN = "127.0.0.1:7070";
    public static final Path DEFAULT_DATA_DIR = Path.of("/var/lib/paddock");
    public static final int DEFAULT_MAX_SANDBOXES = 1000;

    private final String host;
    private final int port;
    private final Path dataDir;
    private final Path stateDir;
    private final int maxSandboxes;
    private final String defaultRuntime;
    private final java.util.List<io.paddock.PoolConfig> pools;
    private final Path tenantsFile;
    private final int maxSandboxesPerTenant;
    private final String dnsUpstream;
    private final java.util.List<String> allowPrivate;
    private final String buildAllow;
    private final Path egressTrust;
    private final String portDomain;
    private final String e2bListen;
    private final java.util.Map<String, String> runtimeOptions;
    private final long auditMaxBytes;
    private final int auditKeep;
    private final Integer egressConnectionsPerTenant;
    private final Integer dnsTcpPerTenant;
    private final Integer portConnectionsPerTenant;
    private final Integer execSocketsPerTenant;
    private final Integer registryConnectionsPerTenant;

    private DaemonOptions(Builder b) {
        this.portConnectionsPerTenant = b.portConnectionsPerTenant;
        this.execSocketsPerTenant = b.execSocketsPerTenant;
        this.registryConnectionsPerTenant = b.registryConnectionsPerTenant;
        this.egressConnectionsPerTenant = b.egressConnectionsPerTenant;
        this.dnsTcpPerTenant = b.dnsTcpPerTenant;
        this.runtimeOptions = java.util.Map.copyOf(b.runtimeOptions);
        this.host = b.host;
        this.port = b.port;
        this.dataDir = b.dataDir;
        this.stateDir = b.stateDir;
        this.maxSandboxes = b.maxSandboxes;
        this.defaultRuntime = b.defaultRuntime;
        this.pools = java.util.List.copyOf(b.pools);
        this.tenantsFile = b.tenantsFile;
        this.maxSandboxesPerTenant = b.maxSandboxesPerTenant;
        this.dnsUpstream = b.dnsUpstream;
        this.allowPrivate = java.util.List.copyOf(b.allowPrivate);
        this.buildAllow = b.buildAllow;
        this.egressTrust = b.egressTrust;
        this.portDomain = b.portDomain;
        this.e2bListen = b.e2bListen;
        this.auditMaxBytes = b.auditMaxBytes;
        this.auditKeep = b.auditKeep;
    }

    /** See {@link ServerOptions#auditMaxBytes()} ({@code paddock serve --audit-max-size}). */
    public long auditMaxBytes() {
        return auditMaxBytes;
    }

    /** See {@link ServerOptions#auditKeep()} ({@code paddock serve --audit-keep}). */
    public int auditKeep() {
        return auditKeep;
    }

    /** See {@link ServerOptions#e2bListen()} ({@code paddock serve --e2b-listen HOST:PORT}). */
    public java.util.Optional<String> e2bListen() {
        return java.util.Optional.ofNullable(e2bListen);
    }

    public static Builder builder() {
        return new Builder();
    }

    /** See {@link LocalOptions#runtimeOptions()} ({@code paddock serve --namespace …} and the other tier flags). */
    public java.util.Map<String, String> runtimeOptions() {
        return runtimeOptions;
    }

    public String host() {
        return host;
    }

    public int port() {
        return port;
    }

    /** {@code host:port}, as given to {@link Builder#listen(String)}. */
    public String listen() {
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
    }

    /** The daemon's records and its token file (default {@code /var/lib/paddock}). */
    public Path dataDir() {
        return dataDir;
    }

    /** The engine's state directory (default {@link LocalOptions#DEFAULT_STATE_DIR}). */
    public Path stateDir() {
        return stateDir;
    }

    public int maxSandboxes() {
        return maxSandboxes;
    }

    /** The isolation tier for specs that name none; empty lets the engine pick (see {@link LocalOptions#defaultRuntime()}). */
    public java.util.Optional<String> defaultRuntime() {
        return java.util.Optional.ofNullable(defaultRuntime);
    }

    /** The engine's warm pools (see {@link LocalOptions.Builder#warmPool}). */
    public java.util.List<io.paddock.PoolConfig> pools() {
        return pools;
    }

    /**
     * The tenants file given explicitly (it must then exist); empty means {@code <dataDir>/tenants}, used
     * if it exists. One {@code NAME TOKEN} per line, mode 0600; see {@link ServerOptions.Builder#tenant}.
     */
    public java.util.Optional<Path> tenantsFile() {
        return java.util.Optional.ofNullable(tenantsFile);
    }

    /** See {@link ServerOptions#maxSandboxesPerTenant()}. */
    public int maxSandboxesPerTenant() {
        return maxSandboxesPerTenant;
    }

    /** See {@link LocalOptions#dnsUpstream()}. */
    public java.util.Optional<String> dnsUpstream() {
        return java.util.Optional.ofNullable(dnsUpstream);
    }

    /** See {@link LocalOptions#allowPrivate()}. */
    public java.util.List<String> allowPrivate() {
        return allowPrivate;
    }

    /** Where build RUN steps may connect to, as given (see {@link LocalOptions#buildAllow()}); empty: the default. */
    public java.util.Optional<String> buildAllow() {
        return java.util.Optional.ofNullable(buildAllow);
    }

    /** See {@link LocalOptions#egressConnectionsPerTenant()}; empty: the engine's default. */
    public java.util.Optional<Integer> egressConnectionsPerTenant() {
        return java.util.Optional.ofNullable(egressConnectionsPerTenant);
    }

    /** See {@link ServerOptions#maxPortConnectionsPerTenant()}; empty: its default. */
    public java.util.Optional<Integer> portConnectionsPerTenant() {
        return java.util.Optional.ofNullable(portConnectionsPerTenant);
    }

    /** See {@link ServerOptions#maxExecSocketsPerTenant()}; empty: its default. */
    public java.util.Optional<Integer> execSocketsPerTenant() {
        return java.util.Optional.ofNullable(execSocketsPerTenant);
    }

    /** See {@link ServerOptions#maxRegistryConnectionsPerTenant()}; empty: its default. */
    public java.util.Optional<Integer> registryConnectionsPerTenant() {
        return java.util.Optional.ofNullable(registryConnectionsPerTenant);
    }

    /** See {@link LocalOptions#dnsTcpPerTenant()}; empty: the engine's default. */
    public java.util.Optional<Integer> dnsTcpPerTenant() {
        return java.util.Optional.ofNullable(dnsTcpPerTenant);
    }

    /** See {@link LocalOptions#egressTrust()}. */
    public java.util.Optional<Path> egressTrust() {
        return java.util.Optional.ofNullable(egressTrust);
    }

    /** See {@link ServerOptions#portDomain()} ({@code paddock serve --port-domain}). */
    public java.util.Optional<String> portDomain() {
        return java.util.Optional.ofNullable(portDomain);
    }

    @Override
    public String toString() {
        return "DaemonOptions{listen=" + listen() + ", dataDir=" + dataDir + ", stateDir=" + stateDir
                + ", maxSandboxes=" + maxSandboxes + (defaultRuntime == null ? "" : ", defaultRuntime=" + defaultRuntime)
                + (tenantsFile == null ? "" : ", tenantsFile=" + tenantsFile) + ", maxSandboxesPerTenant="
                + maxSandboxesPerTenant + (portDomain == null ? "" : ", portDomain=" + portDomain) + "}";
    }

    public static final class Builder {
        private String host = "127.0.0.1";
        private int port = 7070;
        private Path dataDir = DEFAULT_DATA_DIR;
        private Path stateDir = LocalOptions.DEFAULT_STATE_DIR;
        private int maxSandboxes = DEFAULT_MAX_SANDBOXES;
        private String defaultRuntime;
        private final java.util.List<io.paddock.PoolConfig> pools = new java.util.ArrayList<>();
        private Path tenantsFile;
        private int maxSandboxesPerTenant = ServerOptions.DEFAULT_MAX_SANDBOXES_PER_TENANT;
        private String portDomain;

        private Builder() {
        }

        /** {@code host:port}, {@code [v6]:port} or {@code :port} (loopback); port 0 picks a free one. */
        public Builder listen(String listen) {
            if (listen == null || listen.isBlank()) {
                throw SandboxException.invalid("listen", "host:port is expected");
            }
            String s = listen.trim();
            int colon = s.lastIndexOf(':');
            if (colon < 0) {
                throw SandboxException.invalid("listen", "host:port is expected, got '" + s + "'");
            }
            String h = s.substring(0, colon);
            if (h.startsWith("[") && h.endsWith("]")) {
                h = h.substring(1, h.length() - 1);
            } else if (h.contains(":")) {
                throw SandboxException.invalid("listen", "write an IPv6 address in brackets: [::1]:7070");
            }
            int p;
            try {
                p = Integer.parseInt(s.substring(colon + 1));
            } catch (NumberFormatException e) {
                throw SandboxException.invalid("listen", "the port must be a number, got '" + s.substring(colon + 1) + "'");
            }
            if (p < 0 || p > 65535) {
                throw SandboxException.invalid("listen", "the port must be between 0 and 65535, got " + p);
            }
            this.host = h.isEmpty() ? "127.0.0.1" : h;
            this.port = p;
            return this;
        }

        public Builder dataDir(Path dir) {
            Objects.requireNonNull(dir, "dataDir");
            if (!dir.isAbsolute()) {
                throw SandboxException.invalid("dataDir", "must be an absolute path, got " + dir);
            }
            this.dataDir = dir.normalize();
            return this;
        }

        public Builder stateDir(Path dir) {
            Objects.requireNonNull(dir, "stateDir");
            if (!dir.isAbsolute()) {
                throw SandboxException.invalid("stateDir", "must be an absolute path, got " + dir);
            }
            this.stateDir = dir.normalize();
            return this;
        }

        public Builder maxSandboxes(int max) {
            if (max < 1) {
                throw SandboxException.invalid("maxSandboxes", "must be at least 1, got " + max);
            }
            this.maxSandboxes = max;
            return this;
        }

        private final java.util.Map<String, String> runtimeOptions = new java.util.TreeMap<>();

        /** See {@link LocalOptions.Builder#runtimeOption}; null values are skipped. */
        public Builder runtimeOption(String key, String value) {
            if (value != null) {
                LocalOptions.builder().runtimeOption(key, value); // validates, naming the field
                runtimeOptions.put(key, value);
            }
            return this;
        }

        /** {@code runc}, {@code runsc} or {@code kubernetes}; {@code null} lets the engine pick. */
        public Builder defaultRuntime(String runtime) {
            LocalOptions.builder().defaultRuntime(runtime); // validates, naming the field
            this.defaultRuntime = runtime;
            return this;
        }

        /** Adds a warm pool to the daemon's engine. */
        public Builder pool(io.paddock.PoolConfig pool) {
            pools.add(java.util.Objects.requireNonNull(pool, "pool"));
            return this;
        }

        /** An explicit tenants file (absolute); {@code null} goes back to {@code <dataDir>/tenants} if it exists. */
        public Builder tenantsFile(Path file) {
            if (file != null && !file.isAbsolute()) {
                throw SandboxException.invalid("tenantsFile", "must be an absolute path, got " + file);
            }
            this.tenantsFile = file == null ? null : file.normalize();
            return this;
        }

        public Builder maxSandboxesPerTenant(int max) {
            if (max < 1) {
                throw SandboxException.invalid("maxSandboxesPerTenant", "must be at least 1, got " + max);
            }
            this.maxSandboxesPerTenant = max;
            return this;
        }

        private String dnsUpstream;
        private final java.util.List<String> allowPrivate = new java.util.ArrayList<>();
        private String buildAllow;

        /** See {@link LocalOptions.Builder#buildAllow(String)}; {@code null} or blank: the default. */
        public Builder buildAllow(String list) {
            LocalOptions.builder().buildAllow(list); // validates, naming the field
            this.buildAllow = list == null || list.isBlank() ? null : list;
            return this;
        }
        private Path egressTrust;
        private Integer egressConnectionsPerTenant;
        private Integer dnsTcpPerTenant;
        private Integer portConnectionsPerTenant;
        private Integer execSocketsPerTenant;
        private Integer registryConnectionsPerTenant;

        /** See {@link ServerOptions#maxPortConnectionsPerTenant()}; null: the default. */
        public Builder portConnectionsPerTenant(Integer max) {
            if (max != null) {
                ServerOptions.builder().maxPortConnectionsPerTenant(max); // validates, naming the field
            }
            this.portConnectionsPerTenant = max;
            return this;
        }

        /** See {@link ServerOptions#maxExecSocketsPerTenant()}; null: the default. */
        public Builder execSocketsPerTenant(Integer max) {
            if (max != null) {
                ServerOptions.builder().maxExecSocketsPerTenant(max); // validates, naming the field
            }
            this.execSocketsPerTenant = max;
            return this;
        }

        /** See {@link ServerOptions#maxRegistryConnectionsPerTenant()}; null: the default. */
        public Builder registryConnectionsPerTenant(Integer max) {
            if (max != null) {
                ServerOptions.builder().maxRegistryConnectionsPerTenant(max); // validates, naming the field
            }
            this.registryConnectionsPerTenant = max;
            return this;
        }

        /** See {@link LocalOptions#egressConnectionsPerTenant()}; null: the default. */
        public Builder egressConnectionsPerTenant(Integer max) {
            if (max != null) {
                LocalOptions.builder().egressConnectionsPerTenant(max); // validates, naming the field
            }
            this.egressConnectionsPerTenant = max;
            return this;
        }

        /** See {@link LocalOptions#dnsTcpPerTenant()}; null: the default. */
        public Builder dnsTcpPerTenant(Integer max) {
            if (max != null) {
                LocalOptions.builder().dnsTcpPerTenant(max); // validates, naming the field
            }
            this.dnsTcpPerTenant = max;
            return this;
        }

        /** See {@link LocalOptions#egressTrust()}. */
        public Builder egressTrust(Path pemFile) {
            LocalOptions.builder().egressTrust(pemFile); // validates, naming the field
            this.egressTrust = pemFile;
            return this;
        }

        /** Where sandboxes' allowlisted names are resolved (see {@link LocalOptions#dnsUpstream()}). */
        public Builder dnsUpstream(String upstream) {
            this.dnsUpstream = upstream;
            return this;
        }

        /** Opens a private range to sandboxes whose policy allows it (see {@link LocalOptions#allowPrivate()}). */
        public Builder allowPrivate(String cidr) {
            LocalOptions.builder().allowPrivate(cidr); // validates, naming the field
            this.allowPrivate.add(cidr);
            return this;
        }

        private String e2bListen;
        private long auditMaxBytes = ServerOptions.DEFAULT_AUDIT_MAX_BYTES;
        private int auditKeep = ServerOptions.DEFAULT_AUDIT_KEEP;

        /** See {@link ServerOptions.Builder#auditMaxBytes}. */
        public Builder auditMaxBytes(long bytes) {
            ServerOptions.builder().auditMaxBytes(bytes); // the same check, now rather than at start
            this.auditMaxBytes = bytes;
            return this;
        }

        /** See {@link ServerOptions.Builder#auditKeep}. */
        public Builder auditKeep(int files) {
            ServerOptions.builder().auditKeep(files);
            this.auditKeep = files;
            return this;
        }

        /** Also serves the E2B-compatible API on {@code host:port} (the forms of {@link #listen}); null for none. */
        public Builder e2bListen(String listen) {
            if (listen == null) {
                this.e2bListen = null;
                return this;
            }
            DaemonOptions parsed;
            try {
                parsed = builder().listen(listen).build();
            } catch (SandboxException e) {
                throw SandboxException.invalid("e2bListen", e.getMessage().replaceFirst("^listen: ", ""));
            }
            this.e2bListen = parsed.listen();
            return this;
        }

        /** See {@link ServerOptions.Builder#portDomain(String)}; null for none. */
        public Builder portDomain(String domain) {
            this.portDomain = domain == null ? null : ServerOptions.portDomain(domain);
            return this;
        }

        public DaemonOptions build() {
            return new DaemonOptions(this);
        }
    }
}
