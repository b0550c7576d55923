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

    private final Path stateDir;
    private final Path dataDir;
    private final int maxSandboxes;

    private LocalOptions(Builder b) {
        this.stateDir = b.stateDir;
        this.dataDir = b.dataDir;
        this.maxSandboxes = b.maxSandboxes;
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

    public static final class Builder {
        private Path stateDir = DEFAULT_STATE_DIR;
        private Path dataDir;
        private int maxSandboxes = 1000;

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

        public LocalOptions build() {
            return new LocalOptions(this);
        }
    }
}
