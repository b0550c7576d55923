package io.paddock.code;

import io.paddock.ByteSize;
import io.paddock.SandboxException;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * One piece of code to run: once ({@link CodeInterpreter#run(CodeRequest)}, language required) or as a cell
 * of a context ({@link CodeContext#run(CodeRequest)}, language optional). Immutable and thread-safe.
 */
public final class CodeRequest {
    /** The largest code accepted: 1 MiB of UTF-8. */
    public static final int MAX_CODE_BYTES = 1 << 20;

    private final String language;
    private final String code;
    private final Duration timeout;
    private final Map<String, String> env;
    private final String cwd;
    private final List<String> libraries;
    private final String packageSource;
    private final PlotFormat plotFormat;
    private final boolean artifactContent;
    private final ByteSize outputLimit;

    private CodeRequest(Builder b) {
        if (b.code == null || b.code.isBlank()) {
            throw SandboxException.invalid("code", "empty; give the code to run");
        }
        int bytes = b.code.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_CODE_BYTES) {
            throw SandboxException.invalid("code", "too large: " + bytes + " bytes, the limit is " + MAX_CODE_BYTES
                    + "; upload big sources with sandbox.files() and run them from there");
        }
        if (b.code.indexOf('\0') >= 0) {
            throw SandboxException.invalid("code", "contains a NUL character");
        }
        this.language = b.language;
        this.code = b.code;
        this.timeout = b.timeout;
        this.env = Map.copyOf(b.env);
        this.cwd = b.cwd;
        this.libraries = List.copyOf(b.libraries);
        this.packageSource = b.packageSource;
        this.plotFormat = b.plotFormat;
        this.artifactContent = b.artifactContent;
        this.outputLimit = b.outputLimit;
    }

    public static Builder builder() {
        return new Builder();
    }

    public static CodeRequest of(String language, String code) {
        return builder().language(language).code(code).build();
    }

    /** A cell for a context: no language (the context's own). */
    public static CodeRequest cell(String code) {
        return builder().code(code).build();
    }

    public Optional<String> language() {
        return Optional.ofNullable(language);
    }

    public String code() {
        return code;
    }

    /** When the run or cell is stopped; empty means the interpreter's default. */
    public Optional<Duration> timeout() {
        return Optional.ofNullable(timeout);
    }

    /** Variables added for a one-shot run (contexts keep the environment they started with). */
    public Map<String, String> env() {
        return env;
    }

    /** The working directory of a one-shot run; empty means the sandbox's workdir. */
    public Optional<String> cwd() {
        return Optional.ofNullable(cwd);
    }

    /** Packages to install before running (through the language's package manager, offline). */
    public List<String> libraries() {
        return libraries;
    }

    /** Where {@link #libraries()} come from in the sandbox; empty means the interpreter's default. */
    public Optional<String> packageSource() {
        return Optional.ofNullable(packageSource);
    }

    public PlotFormat plotFormat() {
        return plotFormat;
    }

    /** Whether artifacts come back with their bytes (otherwise name, type, size and sandbox path only). */
    public boolean artifactContent() {
        return artifactContent;
    }

    /** The cap on each of stdout and stderr; empty means the interpreter's default. */
    public Optional<ByteSize> outputLimit() {
        return Optional.ofNullable(outputLimit);
    }

    public Builder toBuilder() {
        Builder b = new Builder();
        b.language = language;
        b.code = code;
        b.timeout = timeout;
        b.env.putAll(env);
        b.cwd = cwd;
        b.libraries = libraries;
        b.packageSource = packageSource;
        b.plotFormat = plotFormat;
        b.artifactContent = artifactContent;
        b.outputLimit = outputLimit;
        return b;
    }

    @Override
    public String toString() {
        return "CodeRequest{language=" + language + ", code=" + code.length() + " chars, timeout=" + timeout
                + ", libraries=" + libraries + ", plotFormat=" + plotFormat + "}";
    }

    public static final class Builder {
        private String language;
        private String code;
        private Duration timeout;
        private final Map<String, String> env = new LinkedHashMap<>();
        private String cwd;
        private List<String> libraries = List.of();
        private String packageSource;
        private PlotFormat plotFormat = PlotFormat.PNG;
        private boolean artifactContent;
        private ByteSize outputLimit;

        private Builder() {
        }

        public Builder language(String language) {
            this.language = language;
            return this;
        }

        public Builder code(String code) {
            this.code = code;
            return this;
        }

        public Builder timeout(Duration timeout) {
            if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
                throw SandboxException.invalid("timeout", "must be positive, got " + timeout);
            }
            this.timeout = timeout;
            return this;
        }

        public Builder env(String key, String value) {
            if (key == null || !key.matches("[A-Za-z_][A-Za-z0-9_]*")) {
                throw SandboxException.invalid("env", "bad variable name '" + key + "'");
            }
            env.put(key, Objects.requireNonNull(value, "value"));
            return this;
        }

        public Builder env(Map<String, String> vars) {
            vars.forEach(this::env);
            return this;
        }

        public Builder cwd(String cwd) {
            if (cwd != null && !cwd.startsWith("/")) {
                throw SandboxException.invalid("cwd", "must be an absolute path, got '" + cwd + "'");
            }
            this.cwd = cwd;
            return this;
        }

        public Builder libraries(List<String> libraries) {
            this.libraries = List.copyOf(libraries);
            return this;
        }

        public Builder libraries(String... libraries) {
            return libraries(List.of(libraries));
        }

        public Builder packageSource(String path) {
            this.packageSource = path;
            return this;
        }

        public Builder plotFormat(PlotFormat format) {
            this.plotFormat = Objects.requireNonNull(format, "plotFormat");
            return this;
        }

        public Builder artifactContent(boolean include) {
            this.artifactContent = include;
            return this;
        }

        public Builder outputLimit(ByteSize limit) {
            this.outputLimit = limit;
            return this;
        }

        public CodeRequest build() {
            return new CodeRequest(this);
        }
    }
}
