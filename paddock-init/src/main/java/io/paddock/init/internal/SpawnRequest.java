package io.paddock.init.internal;

import io.paddock.TerminalSize;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * One SPAWN: everything the init needs to start a command. Built by the engine from a validated
 * {@link io.paddock.ExecRequest}; the init trusts none of it anyway.
 *
 * @param argv         the command, at least one element; argv[0] is looked up in the env's PATH
 * @param env          the complete environment, {@code KEY=VALUE} entries
 * @param cwd          absolute working directory
 * @param uid          user the command runs as (inside the sandbox's user namespace)
 * @param gid          group likewise
 * @param timeout      kills the whole process tree when it passes; null for none
 * @param stdoutCap    bytes of stdout delivered before the rest is discarded; {@link Long#MAX_VALUE} = none
 * @param stderrCap    likewise for stderr
 * @param stdinPipe    give the command a stdin pipe (else /dev/null)
 * @param rlimits      rlimits set in the command before exec
 * @param entrypoint   informational: this is the sandbox's entrypoint
 * @param stdoutWindow initial stdout window in bytes
 * @param stderrWindow initial stderr window in bytes
 * @param classifier   turns the exit report into an exit status
 * @param terminal     run the command on a pseudo-terminal of this size (stdin is then always the terminal); null
 *                     for pipes
 */
public record SpawnRequest(List<String> argv, List<String> env, String cwd, int uid, int gid, Duration timeout,
                           long stdoutCap, long stderrCap, boolean stdinPipe, List<Rlimit> rlimits,
                           boolean entrypoint, int stdoutWindow, int stderrWindow, ExitClassifier classifier,
                           TerminalSize terminal) {
    public static final int DEFAULT_WINDOW = 256 * 1024;

    /**
     * An rlimit (Linux {@code RLIMIT_*} number); {@link #UNLIMITED} (or any negative value) is
     * {@code RLIM_INFINITY}.
     */
    public record Rlimit(int resource, long soft, long hard) {
        public static final long UNLIMITED = Long.MAX_VALUE;
    }

    public SpawnRequest {
        argv = List.copyOf(argv);
        env = List.copyOf(env);
        rlimits = List.copyOf(rlimits);
        Objects.requireNonNull(cwd, "cwd");
        Objects.requireNonNull(classifier, "classifier");
        if (argv.isEmpty() || argv.get(0).isEmpty()) {
            throw new IllegalArgumentException("argv must have a non-empty first element");
        }
        if (!cwd.startsWith("/")) {
            throw new IllegalArgumentException("cwd must be absolute: " + cwd);
        }
        if (stdoutCap < 0 || stderrCap < 0 || stdoutWindow <= 0 || stderrWindow <= 0) {
            throw new IllegalArgumentException("caps must be >= 0 and windows > 0");
        }
        if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
            throw new IllegalArgumentException("timeout must be positive");
        }
    }

    public static Builder builder(List<String> argv) {
        return new Builder(argv);
    }

    public static Builder builder(String... argv) {
        return new Builder(List.of(argv));
    }

    public SpawnRequest withStdinPipe(boolean pipe) {
        return new SpawnRequest(argv, env, cwd, uid, gid, timeout, stdoutCap, stderrCap, pipe, rlimits, entrypoint,
                stdoutWindow, stderrWindow, classifier, terminal);
    }

    public Builder toBuilder() {
        Builder b = new Builder(argv);
        b.env = new ArrayList<>(env);
        b.cwd = cwd;
        b.uid = uid;
        b.gid = gid;
        b.timeout = timeout;
        b.stdoutCap = stdoutCap;
        b.stderrCap = stderrCap;
        b.stdinPipe = stdinPipe;
        b.rlimits = new ArrayList<>(rlimits);
        b.entrypoint = entrypoint;
        b.stdoutWindow = stdoutWindow;
        b.stderrWindow = stderrWindow;
        b.classifier = classifier;
        b.terminal = terminal;
        return b;
    }

    public static final class Builder {
        private final List<String> argv;
        private List<String> env = new ArrayList<>(List.of("PATH=/usr/local/bin:/usr/bin:/bin"));
        private String cwd = "/";
        private int uid;
        private int gid;
        private Duration timeout;
        private long stdoutCap = Long.MAX_VALUE;
        private long stderrCap = Long.MAX_VALUE;
        private boolean stdinPipe;
        private List<Rlimit> rlimits = new ArrayList<>();
        private boolean entrypoint;
        private int stdoutWindow = DEFAULT_WINDOW;
        private int stderrWindow = DEFAULT_WINDOW;
        private ExitClassifier classifier = ExitClassifier.DEFAULT;
        private TerminalSize terminal;

        private Builder(List<String> argv) {
            this.argv = List.copyOf(argv);
        }

        public Builder env(List<String> env) {
            this.env = new ArrayList<>(env);
            return this;
        }

        public Builder cwd(String cwd) {
            this.cwd = cwd;
            return this;
        }

        public Builder user(int uid, int gid) {
            this.uid = uid;
            this.gid = gid;
            return this;
        }

        public Builder timeout(Duration timeout) {
            this.timeout = timeout;
            return this;
        }

        public Builder stdoutCap(long cap) {
            this.stdoutCap = cap;
            return this;
        }

        public Builder stderrCap(long cap) {
            this.stderrCap = cap;
            return this;
        }

        public Builder stdinPipe(boolean pipe) {
            this.stdinPipe = pipe;
            return this;
        }

        public Builder rlimit(int resource, long soft, long hard) {
            this.rlimits.add(new Rlimit(resource, soft, hard));
            return this;
        }

        public Builder rlimits(List<Rlimit> rlimits) {
            this.rlimits = new ArrayList<>(rlimits);
            return this;
        }

        public Builder entrypoint(boolean entrypoint) {
            this.entrypoint = entrypoint;
            return this;
        }

        public Builder windows(int stdoutWindow, int stderrWindow) {
            this.stdoutWindow = stdoutWindow;
            this.stderrWindow = stderrWindow;
            return this;
        }

        public Builder classifier(ExitClassifier classifier) {
            this.classifier = classifier;
            return this;
        }

        public Builder terminal(TerminalSize terminal) {
            this.terminal = terminal;
            return this;
        }

        public SpawnRequest build() {
            return new SpawnRequest(argv, env, cwd, uid, gid, timeout, stdoutCap, stderrCap, stdinPipe, rlimits,
                    entrypoint, stdoutWindow, stderrWindow, classifier, terminal);
        }
    }
}
