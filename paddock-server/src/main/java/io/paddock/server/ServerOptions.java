package io.paddock.server;

import io.paddock.SandboxException;
import io.paddock.server.internal.AuthGuard;
import io.paddock.server.internal.Tenancy;

import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * Options of a {@link PaddockServer}. Immutable; build one with {@link #builder()}. Every limit has a
 * default that protects the daemon (ATTACKS.md A57–A61); only the token has none.
 *
 * <p>The token is the operator's: it sees and manages every sandbox. Each {@linkplain Builder#tenant tenant}
 * has a token of its own and sees only the sandboxes it created (ATTACKS.md A62); tenants' tokens are kept
 * only as SHA-256 digests.
 */
public final class ServerOptions {
    public static final String DEFAULT_HOST = "127.0.0.1";
    public static final int DEFAULT_PORT = 7070;
    public static final long DEFAULT_MAX_JSON_BYTES = 1L << 20;
    public static final long DEFAULT_MAX_UPLOAD_BYTES = 1L << 30;
    public static final int DEFAULT_MAX_CONNECTIONS = 512;
    public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(30);
    public static final int DEFAULT_MAX_FAILED_AUTH_PER_MINUTE_PER_IP = 30;
    public static final int DEFAULT_MAX_SANDBOXES_PER_TENANT = 100;
    private static final java.util.regex.Pattern PORT_DOMAIN = java.util.regex.Pattern.compile(
            "[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*");
    /** The shortest tenant token accepted. */
    public static final int MIN_TENANT_TOKEN_CHARS = 32;
    public static final long DEFAULT_AUDIT_MAX_BYTES = 16L << 20;
    public static final int DEFAULT_AUDIT_KEEP = 5;

    private final String host;
    private final int port;
    private final String token;
    private final long maxJsonBytes;
    private final long maxUploadBytes;
    private final int maxConnections;
    private final Duration idleTimeout;
    private final int maxFailedAuthPerMinutePerIp;
    private final Map<String, byte[]> tenantDigests;
    private final int maxSandboxesPerTenant;
    private final int maxPortConnectionsPerTenant;
    private final int maxExecSocketsPerTenant;
    private final int maxRegistryConnectionsPerTenant;
    private final Map<String, io.paddock.server.internal.TenantQuota> tenantQuotas;
    private final Path dataDir;
    private final String portDomain;
    private final String e2bHost;
    private final int e2bPort;
    private final Map<String, String> e2bTemplates;
    private final Map<String, io.paddock.Image> e2bRecipes;
    private final java.time.Duration e2bPrepareWait;
    private final long auditMaxBytes;
    private final int auditKeep;

    private ServerOptions(Builder b) {
        this.host = b.host;
        this.port = b.port;
        this.token = b.token;
        this.maxJsonBytes = b.maxJsonBytes;
        this.maxUploadBytes = b.maxUploadBytes;
        this.maxConnections = b.maxConnections;
        this.idleTimeout = b.idleTimeout;
        this.maxFailedAuthPerMinutePerIp = b.maxFailedAuthPerMinutePerIp;
        this.tenantDigests = Collections.unmodifiableMap(new LinkedHashMap<>(b.tenantDigests));
        this.maxSandboxesPerTenant = b.maxSandboxesPerTenant;
        this.maxPortConnectionsPerTenant = b.maxPortConnectionsPerTenant;
        this.maxExecSocketsPerTenant = b.maxExecSocketsPerTenant;
        this.maxRegistryConnectionsPerTenant = b.maxRegistryConnectionsPerTenant;
        this.tenantQuotas = Map.copyOf(b.tenantQuotas);
        this.dataDir = b.dataDir;
        this.portDomain = b.portDomain;
        this.e2bHost = b.e2bHost;
        this.e2bPort = b.e2bPort;
        this.e2bTemplates = Map.copyOf(b.e2bTemplates);
        this.e2bRecipes = Map.copyOf(b.e2bRecipes);
        this.e2bPrepareWait = b.e2bPrepareWait;
        this.auditMaxBytes = b.auditMaxBytes;
        this.auditKeep = b.auditKeep;
    }

    /** The audit log's size at which it is rotated ({@code <dataDir>/audit.log}; see {@link #dataDir()}). */
    public long auditMaxBytes() {
        return auditMaxBytes;
    }

    /** How many rotated audit logs are kept ({@code audit.log.1} … {@code audit.log.N}), the oldest dropped. */
    public int auditKeep() {
        return auditKeep;
    }

    /**
     * Where the E2B-compatible API listens ({@code paddock serve --e2b-listen}), as {@code host:port}; empty
     * for none. See paddock-e2b and docs/COMPAT.md.
     */
    public Optional<String> e2bListen() {
        return e2bHost == null ? Optional.empty()
                : Optional.of((e2bHost.contains(":") ? "[" + e2bHost + "]" : e2bHost) + ":" + e2bPort);
    }

    /** The E2B listener's host, when there is one. */
    public Optional<String> e2bHost() {
        return Optional.ofNullable(e2bHost);
    }

    /** The E2B listener's port (0: a free one), when there is one. */
    public int e2bPort() {
        return e2bPort;
    }

    /** E2B templates served besides the default ones ({@code base}: host; {@code code-interpreter-v1}: the code image). */
    public Map<String, String> e2bTemplates() {
        return e2bTemplates;
    }

    /** The recipes of {@link #e2bTemplates()} built on their first create when their image is not stored. */
    public Map<String, io.paddock.Image> e2bRecipes() {
        return e2bRecipes;
    }

    /** How long an E2B create waits for its template's first build (empty: the listener's default). */
    public Optional<java.time.Duration> e2bPrepareWait() {
        return Optional.ofNullable(e2bPrepareWait);
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The address to bind (default {@code 127.0.0.1}). */
    public String host() {
        return host;
    }

    /** The port to bind (default 7070); 0 picks a free one, see {@link PaddockServer#url()}. */
    public int port() {
        return port;
    }

    /** The bearer token every request but health must carry. Never logged or printed. */
    String token() {
        return token;
    }

    /** The largest JSON request body accepted; larger ones get 413 (default 1 MiB). */
    public long maxJsonBytes() {
        return maxJsonBytes;
    }

    /** The largest file upload accepted; larger ones get 413 and leave no file (default 1 GiB). */
    public long maxUploadBytes() {
        return maxUploadBytes;
    }

    /** The most TCP connections open at once; further clients wait in the accept backlog (default 512). */
    public int maxConnections() {
        return maxConnections;
    }

    /**
     * How long a connection may stay silent, and the deadline for receiving a request's headers and a JSON
     * body; uploads must keep up a minimum rate after it (default 30 s).
     */
    public Duration idleTimeout() {
        return idleTimeout;
    }

    /** Failed authentications one client IP may make per minute before it gets 429 (default 30). */
    public int maxFailedAuthPerMinutePerIp() {
        return maxFailedAuthPerMinutePerIp;
    }

    /** The tenants' names, in the order they were added. */
    public Set<String> tenants() {
        return tenantDigests.keySet();
    }

    /** Each tenant's quota on the shared store; a tenant not here has {@link io.paddock.server.internal.TenantQuota#DEFAULT}. */
    public Map<String, io.paddock.server.internal.TenantQuota> tenantQuotas() {
        return tenantQuotas;
    }

    /** Each tenant's name and the SHA-256 digest of its token (the arrays are not to be changed). */
    Map<String, byte[]> tenantDigests() {
        return tenantDigests;
    }

    /**
     * The most live sandboxes one tenant may have at once (default 100); its next create gets 429 with
     * {@code Retry-After}. The operator is bound only by the engine's maximum.
     */
    public int maxSandboxesPerTenant() {
        return maxSandboxesPerTenant;
    }

    /**
     * The most port-proxy exchanges and WebSockets one tenant's sandboxes may have relayed at once, together
     * (default 128); beyond it, 429 RESOURCE_EXHAUSTED. The operator's are not counted.
     */
    public int maxPortConnectionsPerTenant() {
        return maxPortConnectionsPerTenant;
    }

    /**
     * The most exec WebSockets (one command's, and reusable ones) one tenant may have open at once (default 128);
     * beyond it, 429 RESOURCE_EXHAUSTED before the upgrade. The operator's are not counted.
     */
    public int maxExecSocketsPerTenant() {
        return maxExecSocketsPerTenant;
    }

    /**
     * The most tunnels of the daemon's destination gate (its 128, through which tenants' pulls and pushes connect)
     * one tenant's pulls and pushes may hold at once, together (default 32, 1 to 128); as many pulls and pushes may
     * run at once. Beyond either, 429 RESOURCE_EXHAUSTED. The operator's are not counted.
     */
    public int maxRegistryConnectionsPerTenant() {
        return maxRegistryConnectionsPerTenant;
    }

    /**
     * The daemon's data directory, where it keeps the key that signs port URLs ({@code url-signing-key}, mode
     * 0600, made on first use) and its audit log ({@code audit.log}, mode 0600, rotated at {@link #auditMaxBytes}).
     * Empty: the key is random and in memory, so URLs die with the server, and there is no audit log.
     */
    public Optional<Path> dataDir() {
        return Optional.ofNullable(dataDir);
    }

    /**
     * The domain under which host names {@code {port}-{id}.{domain}} reach sandbox ports (each one an origin
     * of its own, for browsers); empty for none. DNS (a wildcard record) and any TLS in front are the
     * operator's.
     */
    public Optional<String> portDomain() {
        return Optional.ofNullable(portDomain);
    }

    /** A port domain checked and in its normal form (lower case, no final dot). */
    static String portDomain(String domain) {
        String d = domain.trim().toLowerCase(java.util.Locale.ROOT);
        if (d.endsWith(".")) {
            d = d.substring(0, d.length() - 1);
        }
        if (d.startsWith("*.")) {
            throw SandboxException.invalid("portDomain", "give the domain itself ('" + d.substring(2)
                    + "'): host names PORT-ID." + d.substring(2) + " are under it");
        }
        if (!PORT_DOMAIN.matcher(d).matches() || d.length() > 200) {
            throw SandboxException.invalid("portDomain", "'" + domain + "' is not a DNS name (for example"
                    + " sandboxes.example.com: no scheme, port or path)");
        }
        return d;
    }

    public Builder toBuilder() {
        Builder b = new Builder();
        b.host = host;
        b.port = port;
        b.token = token;
        b.maxJsonBytes = maxJsonBytes;
        b.maxUploadBytes = maxUploadBytes;
        b.maxConnections = maxConnections;
        b.idleTimeout = idleTimeout;
        b.maxFailedAuthPerMinutePerIp = maxFailedAuthPerMinutePerIp;
        b.tenantDigests.putAll(tenantDigests);
        b.maxSandboxesPerTenant = maxSandboxesPerTenant;
        b.maxPortConnectionsPerTenant = maxPortConnectionsPerTenant;
        b.maxExecSocketsPerTenant = maxExecSocketsPerTenant;
        b.maxRegistryConnectionsPerTenant = maxRegistryConnectionsPerTenant;
        b.dataDir = dataDir;
        b.portDomain = portDomain;
        b.e2bHost = e2bHost;
        b.e2bPort = e2bPort;
        b.e2bTemplates.putAll(e2bTemplates);
        b.e2bRecipes.putAll(e2bRecipes);
        b.e2bPrepareWait = e2bPrepareWait;
        b.auditMaxBytes = auditMaxBytes;
        b.auditKeep = auditKeep;
        return b;
    }

    @Override
    public String toString() {
        return "ServerOptions{host=" + host + ", port=" + port + ", token=<redacted>, maxJsonBytes=" + maxJsonBytes
                + ", maxUploadBytes=" + maxUploadBytes + ", maxConnections=" + maxConnections + ", idleTimeout="
                + idleTimeout + ", maxFailedAuthPerMinutePerIp=" + maxFailedAuthPerMinutePerIp + ", tenants="
                + tenants() + ", maxSandboxesPerTenant=" + maxSandboxesPerTenant
                + (dataDir == null ? "" : ", dataDir=" + dataDir) + (portDomain == null ? "" : ", portDomain=" + portDomain)
                + e2bListen().map(l -> ", e2bListen=" + l).orElse("") + "}";
    }

    public static final class Builder {
        private String host = DEFAULT_HOST;
        private int port = DEFAULT_PORT;
        private String token;
        private long maxJsonBytes = DEFAULT_MAX_JSON_BYTES;
        private long maxUploadBytes = DEFAULT_MAX_UPLOAD_BYTES;
        private int maxConnections = DEFAULT_MAX_CONNECTIONS;
        private Duration idleTimeout = DEFAULT_IDLE_TIMEOUT;
        private int maxFailedAuthPerMinutePerIp = DEFAULT_MAX_FAILED_AUTH_PER_MINUTE_PER_IP;
        private final Map<String, byte[]> tenantDigests = new LinkedHashMap<>();
        private final Map<String, io.paddock.server.internal.TenantQuota> tenantQuotas = new LinkedHashMap<>();
        private int maxSandboxesPerTenant = DEFAULT_MAX_SANDBOXES_PER_TENANT;
        private int maxPortConnectionsPerTenant = io.paddock.server.internal.PortProxy.DEFAULT_MAX_PER_TENANT;
        private int maxExecSocketsPerTenant = io.paddock.server.internal.Tenancy.DEFAULT_MAX_EXEC_SOCKETS_PER_TENANT;
        private int maxRegistryConnectionsPerTenant =
                io.paddock.server.internal.Tenancy.DEFAULT_MAX_REGISTRY_CONNECTIONS_PER_TENANT;
        private Path dataDir;
        private String portDomain;
        private String e2bHost;
        private int e2bPort;
        private final Map<String, String> e2bTemplates = new LinkedHashMap<>();
        private final Map<String, io.paddock.Image> e2bRecipes = new LinkedHashMap<>();
        private java.time.Duration e2bPrepareWait;
        private long auditMaxBytes = DEFAULT_AUDIT_MAX_BYTES;
        private int auditKeep = DEFAULT_AUDIT_KEEP;

        private Builder() {
        }

        /** Also serves the E2B-compatible API on {@code host:port} (port 0: a free one); a null host for none. */
        public Builder e2b(String host, int port) {
            if (port < 0 || port > 65535) {
                throw SandboxException.invalid("e2bListen", "the port must be between 0 and 65535, got " + port);
            }
            this.e2bHost = host;
            this.e2bPort = port;
            return this;
        }

        /** Serves the E2B template {@code template} with {@code image} ({@code host} or a stored image). */
        public Builder e2bTemplate(String template, String image) {
            e2bTemplates.put(java.util.Objects.requireNonNull(template, "template"), java.util.Objects.requireNonNull(image, "image"));
            e2bRecipes.remove(template);
            return this;
        }

        /** Serves {@code template} with {@code image}, built from {@code recipe} on its first create if not stored. */
        public Builder e2bTemplate(String template, String image, io.paddock.Image recipe) {
            e2bTemplate(template, image);
            e2bRecipes.put(template, java.util.Objects.requireNonNull(recipe, "recipe"));
            return this;
        }

        /** How long an E2B create waits for its template's first build before answering 503 (default 20 s). */
        public Builder e2bPrepareWait(java.time.Duration wait) {
            this.e2bPrepareWait = java.util.Objects.requireNonNull(wait, "wait");
            return this;
        }

        public Builder host(String host) {
            if (host == null || host.isBlank()) {
                throw SandboxException.invalid("host", "must not be blank");
            }
            this.host = host.trim();
            return this;
        }

        public Builder port(int port) {
            if (port < 0 || port > 65535) {
                throw SandboxException.invalid("port", "must be between 0 and 65535, got " + port);
            }
            this.port = port;
            return this;
        }

        public Builder token(String token) {
            if (token == null || token.isBlank()) {
                throw SandboxException.invalid("token", "must not be blank");
            }
            if (token.chars().anyMatch(c -> c <= 0x20 || c >= 0x7f)) {
                throw SandboxException.invalid("token", "must be printable ASCII without spaces");
            }
            this.token = token;
            return this;
        }

        public Builder maxJsonBytes(long bytes) {
            this.maxJsonBytes = positive("maxJsonBytes", bytes);
            return this;
        }

        public Builder maxUploadBytes(long bytes) {
            this.maxUploadBytes = positive("maxUploadBytes", bytes);
            return this;
        }

        public Builder maxConnections(int max) {
            this.maxConnections = (int) positive("maxConnections", max);
            return this;
        }

        public Builder idleTimeout(Duration timeout) {
            Objects.requireNonNull(timeout, "idleTimeout");
            if (timeout.toMillis() < 100) {
                throw SandboxException.invalid("idleTimeout", "must be at least 100 ms, got " + timeout);
            }
            this.idleTimeout = timeout;
            return this;
        }

        public Builder maxFailedAuthPerMinutePerIp(int max) {
            this.maxFailedAuthPerMinutePerIp = (int) positive("maxFailedAuthPerMinutePerIp", max);
            return this;
        }

        /**
         * Adds a tenant: {@code name} is 1-16 lower-case letters and digits starting with a letter;
         * {@code token} is at least {@value #MIN_TENANT_TOKEN_CHARS} printable ASCII characters, different
         * from every other tenant's and from the operator's. Only the token's digest is kept. Failures are
         * INVALID_ARGUMENT naming {@code tenants} and the tenant, never the token.
         */
        public Builder tenant(String name, String token) {
            if (name == null || !Tenancy.NAME.matcher(name).matches()) {
                throw SandboxException.invalid("tenants", "'" + (name == null ? "null" : name.length() > 40
                        ? name.substring(0, 40) + "…" : name) + "' is not a valid tenant name (1-16 lower-case"
                        + " letters and digits, starting with a letter)");
            }
            if (tenantDigests.containsKey(name)) {
                throw SandboxException.invalid("tenants", "tenant '" + name + "' is given twice");
            }
            if (token == null || token.chars().anyMatch(c -> c <= 0x20 || c >= 0x7f)) {
                throw SandboxException.invalid("tenants", "tenant '" + name
                        + "': the token must be printable ASCII without spaces");
            }
            if (token.length() < MIN_TENANT_TOKEN_CHARS) {
                throw SandboxException.invalid("tenants", "tenant '" + name + "': the token has " + token.length()
                        + " characters, fewer than " + MIN_TENANT_TOKEN_CHARS + " (generate one with"
                        + " 'openssl rand -base64 32')");
            }
            byte[] digest = AuthGuard.sha256(token);
            for (Map.Entry<String, byte[]> e : tenantDigests.entrySet()) {
                if (MessageDigest.isEqual(e.getValue(), digest)) {
                    throw SandboxException.invalid("tenants", "tenants '" + e.getKey() + "' and '" + name
                            + "' have the same token; give each tenant its own");
                }
            }
            tenantDigests.put(name, digest);
            return this;
        }

        /** Tenant {@code name}'s quota on the shared store (volumes, codebases); the default otherwise. */
        public Builder tenantQuota(String name, io.paddock.server.internal.TenantQuota quota) {
            if (name == null || quota == null) {
                throw SandboxException.invalid("tenants", "a tenant's quota needs its name and the quota");
            }
            tenantQuotas.put(name, quota);
            return this;
        }

        public Builder maxSandboxesPerTenant(int max) {
            this.maxSandboxesPerTenant = (int) positive("maxSandboxesPerTenant", max);
            return this;
        }

        /** See {@link ServerOptions#maxPortConnectionsPerTenant()}. */
        public Builder maxPortConnectionsPerTenant(int max) {
            this.maxPortConnectionsPerTenant = (int) positive("maxPortConnectionsPerTenant", max);
            return this;
        }

        /** See {@link ServerOptions#maxExecSocketsPerTenant()}. */
        public Builder maxExecSocketsPerTenant(int max) {
            this.maxExecSocketsPerTenant = (int) positive("maxExecSocketsPerTenant", max);
            return this;
        }

        /** See {@link ServerOptions#maxRegistryConnectionsPerTenant()}. */
        public Builder maxRegistryConnectionsPerTenant(int max) {
            if (max < 1 || max > io.paddock.network.DestinationGate.MAX_CONNECTIONS) {
                throw SandboxException.invalid("maxRegistryConnectionsPerTenant", "must be between 1 and "
                        + io.paddock.network.DestinationGate.MAX_CONNECTIONS + " (the destination gate's tunnels), got "
                        + max);
            }
            this.maxRegistryConnectionsPerTenant = max;
            return this;
        }

        /** See {@link ServerOptions#dataDir()}; an absolute path, or null for none. */
        public Builder dataDir(Path dir) {
            if (dir != null && !dir.isAbsolute()) {
                throw SandboxException.invalid("dataDir", "must be an absolute path, got " + dir);
            }
            this.dataDir = dir == null ? null : dir.normalize();
            return this;
        }

        /**
         * See {@link ServerOptions#portDomain()}: a DNS name such as {@code sandboxes.example.com} (no scheme,
         * port or wildcard), or null for none.
         */
        public Builder portDomain(String domain) {
            this.portDomain = domain == null ? null : ServerOptions.portDomain(domain);
            return this;
        }

        /** See {@link ServerOptions#auditMaxBytes()}: at least 4 KiB. */
        public Builder auditMaxBytes(long bytes) {
            if (bytes < 4096) {
                throw SandboxException.invalid("auditMaxBytes", "must be at least 4096, got " + bytes);
            }
            this.auditMaxBytes = bytes;
            return this;
        }

        /** See {@link ServerOptions#auditKeep()}: 1 to 100. */
        public Builder auditKeep(int files) {
            if (files < 1 || files > 100) {
                throw SandboxException.invalid("auditKeep", "must be between 1 and 100, got " + files);
            }
            this.auditKeep = files;
            return this;
        }

        private static long positive(String field, long v) {
            if (v < 1) {
                throw SandboxException.invalid(field, "must be at least 1, got " + v);
            }
            return v;
        }

        public ServerOptions build() {
            if (token == null) {
                throw SandboxException.invalid("token", "a bearer token is required");
            }
            byte[] operator = AuthGuard.sha256(token);
            for (Map.Entry<String, byte[]> e : tenantDigests.entrySet()) {
                if (MessageDigest.isEqual(e.getValue(), operator)) {
                    throw SandboxException.invalid("tenants", "tenant '" + e.getKey()
                            + "' has the operator's token; give each tenant its own");
                }
            }
            return new ServerOptions(this);
        }
    }
}
