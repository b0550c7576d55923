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
 * One command to run in a sandbox: an argv list (never a shell string), with optional environment, working
 * directory, timeout, standard input and output cap. Immutable and thread-safe.
 */
public final class ExecRequest {
    /** The default cap on each of stdout and stderr. */
    public static final ByteSize DEFAULT_OUTPUT_LIMIT = ByteSize.mib(16);
    /** No cap: for streaming consumers that apply their own backpressure. */
    public static final ByteSize UNLIMITED = ByteSize.bytes(Long.MAX_VALUE);

    private final List<String> argv;
    private final Map<String, String> env;
    private final String cwd;
    private final Duration timeout;
    private final byte[] stdin;
    private final ByteSize outputLimit;
    private final TerminalSize terminal;

    private ExecRequest(Builder b) {
        if (b.argv == null) {
            throw SandboxException.invalid("argv", "no command given");
        }
        this.argv = b.argv;
        this.env = Collections.unmodifiableMap(new LinkedHashMap<>(b.env));
        this.cwd = b.cwd;
        this.timeout = b.timeout;
        this.stdin = b.stdin;
        this.outputLimit = b.outputLimit;
        this.terminal = b.terminal;
    }

    public static Builder builder() {
        return new Builder();
    }

    public static ExecRequest of(String... argv) {
        return builder().argv(argv).build();
    }

    public Builder toBuilder() {
        Builder b = new Builder();
        b.argv = argv;
        b.env.putAll(env);
        b.cwd = cwd;
        b.timeout = timeout;
        b.stdin = stdin;
        b.outputLimit = outputLimit;
        b.terminal = terminal;
        return b;
    }

    public List<String> argv() {
        return argv;
    }

    /** Variables added to (and overriding) the sandbox's environment for this command. */
    public Map<String, String> env() {
        return env;
    }

    /** The working directory; empty means the sandbox's workdir. */
    public Optional<String> cwd() {
        return Optional.ofNullable(cwd);
    }

    /** When the command's whole process tree is killed; empty means only the sandbox's lifetime bounds it. */
    public Optional<Duration> timeout() {
        return Optional.ofNullable(timeout);
    }

    /** Bytes written to the command's stdin before it is closed ({@code exec} only); empty means none. */
    public Optional<byte[]> stdin() {
        return Optional.ofNullable(stdin).map(byte[]::clone);
    }

    /** The cap on each of stdout and stderr; output past it is discarded and reported as truncated. */
    public ByteSize outputLimit() {
        return outputLimit;
    }

    /** The pseudo-terminal the command runs on; empty means pipes (the default). */
    public Optional<TerminalSize> terminal() {
        return Optional.ofNullable(terminal);
    }

    @Override
    public String toString() {
        return "ExecRequest{argv=" + argv + ", env=" + env.keySet() + ", cwd=" + cwd + ", timeout=" + timeout
                + ", stdin=" + (stdin == null ? "none" : stdin.length + " bytes") + ", outputLimit=" + outputLimit
                + (terminal == null ? "" : ", terminal=" + terminal) + "}";
    }

    public static final class Builder {
        private List<String> argv;
        private final Map<String, String> env = new LinkedHashMap<>();
        private String cwd;
        private Duration timeout;
        private byte[] stdin;
        private ByteSize outputLimit = DEFAULT_OUTPUT_LIMIT;
        private TerminalSize terminal;

        private Builder() {
        }

        public Builder argv(String... argv) {
            return argv(List.of(argv));
        }

        public Builder argv(List<String> argv) {
            List<String> copy = List.copyOf(Objects.requireNonNull(argv, "argv"));
            Validate.argv("argv", copy);
            this.argv = copy;
            return this;
        }

        public Builder env(String key, String value) {
            Validate.envKey("env", key);
            env.put(key, Objects.requireNonNull(value, "value"));
            Validate.env("env", env);
            return this;
        }

        public Builder env(Map<String, String> vars) {
            vars.forEach(this::env);
            return this;
        }

        public Builder cwd(String cwd) {
            this.cwd = cwd == null ? null : Validate.absoluteDir("cwd", cwd);
            return this;
        }

        public Builder timeout(Duration timeout) {
            if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
                throw SandboxException.invalid("timeout", "must be positive, got " + timeout);
            }
            this.timeout = timeout;
            return this;
        }

        public Builder stdin(byte[] data) {
            this.stdin = data == null ? null : data.clone();
            return this;
        }

        public Builder stdin(String text) {
            return stdin(text == null ? null : text.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }

        public Builder outputLimit(ByteSize limit) {
            this.outputLimit = Objects.requireNonNull(limit, "outputLimit");
            return this;
        }

        /**
         * Runs the command on a pseudo-terminal of this size instead of pipes, as {@code ssh -t} or
         * {@code docker exec -t} do: its stdin, stdout and stderr are the terminal, which is also its
         * controlling terminal, so shells are interactive, programs colour their output and job control works.
         * Everything the command writes, stderr included, arrives on {@link ExecProcess#stdout()} with the
         * terminal's line endings ({@code \r\n}); {@link ExecProcess#stderr()} stays empty. Input is typed
         * into the terminal (and echoed by it); closing stdin types the end-of-file character (Ctrl-D), and
         * {@link ExecProcess#resize} changes the size. {@code TERM} is {@code xterm-256color} unless the
         * environment sets it. Null means pipes.
         */
        public Builder terminal(TerminalSize size) {
            this.terminal = size;
            return this;
        }

        public ExecRequest build() {
            return new ExecRequest(this);
        }
    }
}
