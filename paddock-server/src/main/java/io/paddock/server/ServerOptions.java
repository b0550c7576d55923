package io.paddock.server;

import io.paddock.SandboxException;

import java.time.Duration;
import java.util.Objects;

/**
 * Options of a {@link PaddockServer}. Immutable; build one with {@link #builder()}. Every limit has a
 * default that protects the daemon (ATTACKS.md A57–A61); only the token has none.
 */
public final class ServerOptions {
    public static final String DEFAULT_HOST = "127.0.0.1";
    public static final int DEFAULT_PORT = 7070;
    public static final long DEFAULT_MAX_JSON_BYTES = 1L << 20;
    public static final long DEFAULT_MAX_UPLOAD_BYTES = 1L << 30;
    public static final int DEFAULT_MAX_CONNECTIONS = 512;
    public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(30);
    public static final int DEFAULT_MAX_FAILED_AUTH_PER_MINUTE_PER_IP = 30;

    private final String host;
    private final int port;
    private final String token;
    private final long maxJsonBytes;
    private final long maxUploadBytes;
    private final int maxConnections;
    private final Duration idleTimeout;
    private final int maxFailedAuthPerMinutePerIp;

    private ServerOptions(Builder b) {
        this.host = b.host;
        this.port = b.port;
        this.token = b.token;
        this.maxJsonBytes = b.maxJsonBytes;
        this.maxUploadBytes = b.maxUploadBytes;
        this.maxConnections = b.maxConnections;
        this.idleTimeout = b.idleTimeout;
        this.maxFailedAuthPerMinutePerIp = b.maxFailedAuthPerMinutePerIp;
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
        return b;
    }

    @Override
    public String toString() {
        return "ServerOptions{host=" + host + ", port=" + port + ", token=<redacted>, maxJsonBytes=" + maxJsonBytes
                + ", maxUploadBytes=" + maxUploadBytes + ", maxConnections=" + maxConnections + ", idleTimeout="
                + idleTimeout + ", maxFailedAuthPerMinutePerIp=" + maxFailedAuthPerMinutePerIp + "}";
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

        private Builder() {
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
            return new ServerOptions(this);
        }
    }
}
