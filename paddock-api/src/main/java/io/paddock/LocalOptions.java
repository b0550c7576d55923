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
    private final int maxSandboxes;

    private LocalOptions(Builder b) {
        this.stateDir = b.stateDir;
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

    /** The most live sandboxes this engine keeps at once; creating more fails with {@code RESOURCE_EXHAUSTED}. */
    public int maxSandboxes() {
        return maxSandboxes;
    }

    public static final class Builder {
        private Path stateDir = DEFAULT_STATE_DIR;
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
