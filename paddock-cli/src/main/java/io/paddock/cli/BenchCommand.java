package io.paddock.cli;

import io.paddock.bench.Bench;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;

/** {@code paddock bench}: the benchmark harness (paddock-bench), Paddock beside its peers in one run. */
@Command(name = "bench", sortOptions = false,
        description = {"Measure Paddock's figures P1-P16 (docs/BENCHMARKS.md) beside the peers in the same run: native "
                + "spawn, JVM spawn, bubblewrap, runc, runc exec, runsc, podman, pasta and slirp4netns.",
                "Prints a table; --json writes the results with the environment. Needs root; missing peer tools are "
                + "installed with apt when root, else reported as unavailable. The podman peer's Debian image is built "
                + "once (mmdebstrap) and cached."},
        footer = {"", "Examples:", "  sudo ./paddock bench --quick", "  sudo ./paddock bench --json bench.json",
                "  sudo ./paddock bench --quick --only P1,P3,P10"})
final class BenchCommand implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "--quick", description = "The short run (a few minutes): fewer samples, a 15 s churn; 1000 idle sandboxes as in the full run.")
    boolean quick;

    @Option(names = "--json", paramLabel = "FILE", description = "Also write the results as JSON to FILE.")
    Path json;

    @Option(names = "--only", paramLabel = "P1,P3,...", split = ",", hideParamSyntax = true,
            description = "Measure only these figures (P1-P16), comma-separated.")
    List<String> only = new ArrayList<>();

    @Option(names = "--no-build", description = "Do not build the podman peer's image now (it is reported unavailable if missing).")
    boolean noBuild;

    @Option(names = "--scale", hidden = true, paramLabel = "X", description = "Scale every sample count and duration (0 < X <= 1; tests).")
    double scale = 1;

    @Override
    public Integer call() throws Exception {
        java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.WARNING);
        Bench.Options options;
        try {
            Set<String> ids = new LinkedHashSet<>();
            only.forEach(s -> ids.addAll(Bench.parseOnly(s)));
            options = new Bench.Options(quick, json, ids, scale, !noBuild, Bench.DEFAULT_CACHE);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
        return Bench.run(options, System.out);
    }
}
