package io.paddock.cli;

import io.paddock.Paddock;
import io.paddock.SandboxInfo;
import io.paddock.SandboxQuery;
import io.paddock.SandboxState;
import io.paddock.wire.Wire;
import com.fasterxml.jackson.databind.node.ArrayNode;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;

/** {@code paddock ls}: the daemon's sandboxes as a table, or JSON. */
@Command(name = "ls", aliases = "list", sortOptions = false, description = "List sandboxes on the daemon.")
final class ListCommand implements Callable<Integer> {
    @Mixin
    Connection connection;

    @Option(names = {"-l", "--label"}, paramLabel = "KEY=VALUE", description = "Only sandboxes with this label (repeatable).")
    List<String> labels = new ArrayList<>();

    @Option(names = "--state", paramLabel = "STATE", description = "Only sandboxes in this state: ${COMPLETION-CANDIDATES} (repeatable).")
    List<SandboxState> states = new ArrayList<>();

    @Option(names = {"-a", "--all"}, description = "Include stopped sandboxes (shown for 10 minutes after they stop).")
    boolean all;

    @Option(names = "--json", description = "Print JSON (an array of sandbox objects) for programs.")
    boolean json;

    @Override
    public Integer call() throws Exception {
        SandboxQuery.Builder q = SandboxQuery.builder();
        for (String kv : labels) {
            String[] p = SpecOptions.keyValue("label", kv);
            q.label(p[0], p[1]);
        }
        if (!states.isEmpty()) {
            q.state(states.toArray(SandboxState[]::new));
        } else if (!all) {
            q.state(SandboxState.CREATING, SandboxState.RUNNING, SandboxState.PAUSED, SandboxState.STOPPING);
        }
        List<SandboxInfo> infos;
        try (Paddock paddock = connection.connect()) {
            infos = paddock.list(q.build());
        }
        if (json) {
            ArrayNode a = Wire.JSON.createArrayNode();
            infos.forEach(i -> a.add(Wire.json(i)));
            System.out.println(Wire.JSON.writerWithDefaultPrettyPrinter().writeValueAsString(a));
            return 0;
        }
        String format = "%-29s  %-20s  %-8s  %-8s  %-9s  %s%n";
        System.out.printf(format, "ID", "NAME", "STATE", "AGE", "EXPIRES", "LABELS");
        Instant now = Instant.now();
        for (SandboxInfo i : infos) {
            System.out.printf(format, i.id(), i.name().orElse("-"), i.state(), human(Duration.between(i.createdAt(), now)),
                    i.state().isLive() ? "in " + human(Duration.between(now, i.expiresAt())) : "-", labels(i.labels()));
        }
        return 0;
    }

    static String human(Duration d) {
        long s = Math.max(0, d.getSeconds());
        if (s < 120) {
            return s + "s";
        }
        if (s < 7200) {
            return (s / 60) + "m";
        }
        if (s < 172800) {
            return (s / 3600) + "h";
        }
        return (s / 86400) + "d";
    }

    private static String labels(Map<String, String> labels) {
        return labels.isEmpty() ? "-" : labels.entrySet().stream().sorted(Map.Entry.comparingByKey())
                .map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining(","));
    }
}
