package io.paddock.code;

import io.paddock.ByteSize;
import io.paddock.SandboxException;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * How a {@link CodeInterpreter} behaves: its language table, optional code policy, default package source,
 * default timeout and output cap. Immutable and thread-safe.
 */
public final class CodeOptions {
    private static final CodeOptions DEFAULTS = builder().build();

    private final Languages languages;
    private final CodePolicy policy;
    private final String packageSource;
    private final Duration timeout;
    private final ByteSize outputLimit;
    private final Duration interruptGrace;
    private final int maxContexts;

    private CodeOptions(Builder b) {
        this.languages = b.languages;
        this.policy = b.policy;
        this.packageSource = b.packageSource;
        this.timeout = b.timeout;
        this.outputLimit = b.outputLimit;
        this.interruptGrace = b.interruptGrace;
        this.maxContexts = b.maxContexts;
    }

    public static CodeOptions defaults() {
        return DEFAULTS;
    }

    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        Builder b = new Builder();
        b.languages = languages;
        b.policy = policy;
        b.packageSource = packageSource;
        b.timeout = timeout;
        b.outputLimit = outputLimit;
        b.interruptGrace = interruptGrace;
        b.maxContexts = maxContexts;
        return b;
    }

    public Languages languages() {
        return languages;
    }

    /** The code policy checked before every run, cell and shell command; empty means none. */
    public Optional<CodePolicy> policy() {
        return Optional.ofNullable(policy);
    }

    /** The package source used when a request names none (a directory in the sandbox). */
    public Optional<String> packageSource() {
        return Optional.ofNullable(packageSource);
    }

    /** The timeout of a run, cell or shell command that sets none (default 60 s). */
    public Duration timeout() {
        return timeout;
    }

    /** The cap on each of stdout and stderr per run or cell (default 1 MiB). */
    public ByteSize outputLimit() {
        return outputLimit;
    }

    /** How long an interrupted cell may take to stop before its context is restarted (default 2 s). */
    public Duration interruptGrace() {
        return interruptGrace;
    }

    /** The most live contexts one interpreter keeps (default 16); each is a process in the sandbox. */
    public int maxContexts() {
        return maxContexts;
    }

    public static final class Builder {
        private Languages languages = Languages.defaults();
        private CodePolicy policy;
        private String packageSource;
        private Duration timeout = Duration.ofSeconds(60);
        private ByteSize outputLimit = ByteSize.mib(1);
        private Duration interruptGrace = Duration.ofSeconds(2);
        private int maxContexts = 16;

        private Builder() {
        }

        public Builder languages(Languages languages) {
            this.languages = Objects.requireNonNull(languages, "languages");
            return this;
        }

        /** Sets (or, with null, clears) the code policy. A convenience, not a security boundary: see {@link CodePolicy}. */
        public Builder policy(CodePolicy policy) {
            this.policy = policy;
            return this;
        }

        public Builder packageSource(String path) {
            this.packageSource = path;
            return this;
        }

        public Builder timeout(Duration timeout) {
            if (timeout == null || timeout.isNegative() || timeout.isZero()) {
                throw SandboxException.invalid("timeout", "must be positive, got " + timeout);
            }
            this.timeout = timeout;
            return this;
        }

        public Builder outputLimit(ByteSize limit) {
            this.outputLimit = Objects.requireNonNull(limit, "outputLimit");
            return this;
        }

        public Builder interruptGrace(Duration grace) {
            if (grace == null || grace.isNegative()) {
                throw SandboxException.invalid("interruptGrace", "must not be negative, got " + grace);
            }
            this.interruptGrace = grace;
            return this;
        }

        public Builder maxContexts(int max) {
            if (max < 1) {
                throw SandboxException.invalid("maxContexts", "must be at least 1, got " + max);
            }
            this.maxContexts = max;
            return this;
        }

        public CodeOptions build() {
            return new CodeOptions(this);
        }
    }
}
