package io.paddock.e2b;

import io.paddock.SandboxException;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Options of the E2B-compatible listener ({@link E2bServer}). Immutable; build one with {@link #builder()}.
 *
 * <p>Templates are Paddock images: {@code base} is {@code host} and {@code code-interpreter-v1} the code image
 * ({@link #CODE_IMAGE}) unless set otherwise with {@link Builder#template(String, String)}.
 */
public final class E2bOptions {
    /** The template E2B's {@code e2b} SDK creates by default. */
    public static final String BASE_TEMPLATE = "base";
    /** The template E2B's {@code @e2b/code-interpreter} SDK creates by default. */
    public static final String CODE_TEMPLATE = "code-interpreter-v1";
    /** Paddock's batteries-included code image (see paddock-code's {@code CodeImage}). */
    public static final String CODE_IMAGE = "paddock/code:bookworm-1";

    private final String host;
    private final int port;
    private final byte[] key;
    private final Map<String, String> templates;
    private final long maxJsonBytes;
    private final long maxUploadBytes;
    private final Duration idleTimeout;
    private final int maxConnections;

    private E2bOptions(Builder b) {
        this.host = b.host;
        this.port = b.port;
        this.key = b.key.clone();
        this.templates = Map.copyOf(b.templates);
        this.maxJsonBytes = b.maxJsonBytes;
        this.maxUploadBytes = b.maxUploadBytes;
        this.idleTimeout = b.idleTimeout;
        this.maxConnections = b.maxConnections;
    }

    public static Builder builder() {
        return new Builder();
    }

    public String host() {
        return host;
    }

    public int port() {
        return port;
    }

    /** The secret that signs per-sandbox access tokens (a copy). */
    public byte[] key() {
        return key.clone();
    }

    /** Template name → Paddock image. */
    public Map<String, String> templates() {
        return templates;
    }

    public Optional<String> image(String template) {
        return Optional.ofNullable(templates.get(template));
    }

    public long maxJsonBytes() {
        return maxJsonBytes;
    }

    public long maxUploadBytes() {
        return maxUploadBytes;
    }

    public Duration idleTimeout() {
        return idleTimeout;
    }

    public int maxConnections() {
        return maxConnections;
    }

    @Override
    public String toString() {
        return "E2bOptions{listen=" + host + ":" + port + ", templates=" + templates + "}";
    }

    public static final class Builder {
        private String host = "127.0.0.1";
        private int port = 0;
        private byte[] key;
        private final Map<String, String> templates = new LinkedHashMap<>(Map.of(BASE_TEMPLATE, "host", CODE_TEMPLATE, CODE_IMAGE));
        private long maxJsonBytes = 1L << 20;
        private long maxUploadBytes = 1L << 30;
        private Duration idleTimeout = Duration.ofSeconds(30);
        private int maxConnections = 256;

        private Builder() {
        }

        public Builder host(String host) {
            this.host = Objects.requireNonNull(host, "host");
            return this;
        }

        /** 0 picks a free port. */
        public Builder port(int port) {
            if (port < 0 || port > 65535) {
                throw SandboxException.invalid("e2bListen", "the port must be between 0 and 65535, got " + port);
            }
            this.port = port;
            return this;
        }

        /** The secret for access tokens: at least 32 bytes, kept by the daemon (required). */
        public Builder key(byte[] key) {
            if (key == null || key.length < 32) {
                throw SandboxException.invalid("key", "at least 32 bytes are required");
            }
            this.key = key.clone();
            return this;
        }

        /** Serves {@code template} with {@code image} ({@code host} or a stored image's reference). */
        public Builder template(String template, String image) {
            if (template == null || template.isBlank() || image == null || image.isBlank()) {
                throw SandboxException.invalid("template", "a template name and an image are required");
            }
            templates.put(template, image);
            return this;
        }

        public Builder maxJsonBytes(long bytes) {
            this.maxJsonBytes = bytes;
            return this;
        }

        public Builder maxUploadBytes(long bytes) {
            this.maxUploadBytes = bytes;
            return this;
        }

        public Builder idleTimeout(Duration timeout) {
            this.idleTimeout = Objects.requireNonNull(timeout, "idleTimeout");
            return this;
        }

        public Builder maxConnections(int max) {
            this.maxConnections = max;
            return this;
        }

        public E2bOptions build() {
            if (key == null) {
                throw SandboxException.invalid("key", "required (the secret of per-sandbox access tokens)");
            }
            return new E2bOptions(this);
        }
    }
}
