package io.paddock.e2b;

import io.paddock.Image;
import io.paddock.SandboxException;
import io.paddock.code.CodeImages;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Options of the E2B-compatible listener ({@link E2bServer}). Immutable; build one with {@link #builder()}.
 *
 * <p>Templates are Paddock images: {@code base} is {@code host} and {@code code-interpreter-v1} the code image
 * ({@link #CODE_IMAGE}) unless set otherwise with {@link Builder#template(String, String)}. A template with a
 * recipe ({@link #recipe}; the code image has one) is built on its first create when its image is not stored:
 * that create waits up to {@link #prepareWait()}, and until the build is done creates answer 503 saying so.
 */
public final class E2bOptions {
    /** The template E2B's {@code e2b} SDK creates by default. */
    public static final String BASE_TEMPLATE = "base";
    /** The template E2B's {@code @e2b/code-interpreter} SDK creates by default. */
    public static final String CODE_TEMPLATE = "code-interpreter-v1";
    /** Paddock's batteries-included code image (paddock-code's {@link CodeImages#FULL}). */
    public static final String CODE_IMAGE = CodeImages.FULL;

    private final String host;
    private final int port;
    private final byte[] key;
    private final Map<String, String> templates;
    private final Map<String, Image> recipes;
    private final Duration prepareWait;
    private final long maxJsonBytes;
    private final long maxUploadBytes;
    private final Duration idleTimeout;
    private final int maxConnections;

    private E2bOptions(Builder b) {
        this.host = b.host;
        this.port = b.port;
        this.key = b.key.clone();
        this.templates = Map.copyOf(b.templates);
        this.recipes = Map.copyOf(b.recipes);
        this.prepareWait = b.prepareWait;
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

    /** What builds {@code template}'s image when it is not stored; empty for a template served as it is. */
    public Optional<Image> recipe(String template) {
        return Optional.ofNullable(recipes.get(template));
    }

    /** How long a create waits for its template's first build before answering 503 (it goes on building). */
    public Duration prepareWait() {
        return prepareWait;
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
        private final Map<String, Image> recipes = new LinkedHashMap<>(Map.of(CODE_TEMPLATE, CodeImages.full()));
        private Duration prepareWait = Duration.ofSeconds(20);
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

        /** Serves {@code template} with {@code image} ({@code host} or a stored image's reference) as it is. */
        public Builder template(String template, String image) {
            if (template == null || template.isBlank() || image == null || image.isBlank()) {
                throw SandboxException.invalid("template", "a template name and an image are required");
            }
            templates.put(template, image);
            recipes.remove(template);
            return this;
        }

        /**
         * Serves {@code template} with {@code image}, built from {@code recipe} on the template's first create
         * when the image is not stored (the daemon builds it, whoever asked).
         */
        public Builder template(String template, String image, Image recipe) {
            template(template, image);
            if (image.equals("host")) {
                throw SandboxException.invalid("template", "'host' is not built; serve it without a recipe");
            }
            recipes.put(template, Objects.requireNonNull(recipe, "recipe"));
            return this;
        }

        /** How long a create waits for its template's first build before answering 503; at most 10 minutes. */
        public Builder prepareWait(Duration wait) {
            if (wait == null || wait.isNegative() || wait.compareTo(Duration.ofMinutes(10)) > 0) {
                throw SandboxException.invalid("prepareWait", "between 0 and 10 minutes, got " + wait);
            }
            this.prepareWait = wait;
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
