package io.paddock.code;

import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * A successful package install.
 *
 * @param language  the language's canonical name
 * @param manager   the package manager that ran, for example {@code pip}
 * @param packages  what was asked for
 * @param source    the package source in the sandbox it installed from
 * @param target    where it installed (on the language's path for later runs and contexts)
 * @param log       the manager's output (capped)
 * @param duration  wall time
 */
public record InstallResult(String language, String manager, List<String> packages, String source, String target,
                            String log, Duration duration) {
    public InstallResult {
        Objects.requireNonNull(language, "language");
        Objects.requireNonNull(manager, "manager");
        packages = List.copyOf(packages);
        Objects.requireNonNull(source, "source");
        Objects.requireNonNull(target, "target");
        Objects.requireNonNull(log, "log");
        Objects.requireNonNull(duration, "duration");
    }
}
