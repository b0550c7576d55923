package io.paddock.cli;

import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code paddock create}: a sandbox on the daemon; prints only its id. */
@Command(name = "create", sortOptions = false,
        description = {"Create a sandbox on the daemon and print its id (only the id, on stdout).",
                "Arguments after -- are its entrypoint: a command that runs for the sandbox's life."},
        footer = {"", "Examples:", "  id=$(paddock create --memory 256m --label team=ml)",
                "  paddock create --name web --timeout 1h -- python3 -m http.server 8080"})
final class CreateCommand implements Callable<Integer> {
    @Mixin
    SpecOptions spec;

    @Mixin
    Connection connection;

    @Option(names = "--name", paramLabel = "NAME", description = "A name, unique among live sandboxes.")
    String name;

    @Option(names = {"-l", "--label"}, paramLabel = "KEY=VALUE", description = "A label (repeatable).")
    List<String> labels = new ArrayList<>();

    @Option(names = "--timeout", paramLabel = "DURATION", description = "Lifetime, e.g. 30m, 2h (default: 5m).")
    String timeout;

    @Parameters(paramLabel = "ENTRYPOINT", description = "Optional entrypoint command (after --).")
    List<String> entrypoint = new ArrayList<>();

    @Override
    public Integer call() {
        SandboxSpec.Builder b = spec.apply(SandboxSpec.builder());
        if (name != null) {
            b.name(name);
        }
        for (String kv : labels) {
            String[] p = SpecOptions.keyValue("label", kv);
            b.label(p[0], p[1]);
        }
        if (timeout != null) {
            b.timeout(SpecOptions.duration("timeout", timeout));
        }
        if (!entrypoint.isEmpty()) {
            b.entrypoint(entrypoint);
        }
        try (Paddock paddock = connection.connect()) {
            Sandbox sb = paddock.create(b.build());
            System.out.println(sb.id());
            return 0;
        }
    }
}
