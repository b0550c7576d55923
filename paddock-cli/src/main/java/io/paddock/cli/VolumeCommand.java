package io.paddock.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import io.paddock.ByteSize;
import io.paddock.Paddock;
import io.paddock.VolumeInfo;
import io.paddock.Volumes;
import io.paddock.wire.VolumeWire;
import io.paddock.wire.Wire;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code paddock volume}: create, list and remove the daemon's volumes. */
@Command(name = "volume", sortOptions = false,
        description = {"Manage volumes: directories that outlive sandboxes and are shared by every sandbox that mounts them "
                + "(paddock create --volume NAME:/data[:ro]), with a size the filesystem enforces."},
        subcommands = {VolumeCommand.Create.class, VolumeCommand.Ls.class, VolumeCommand.Rm.class})
final class VolumeCommand implements Runnable {
    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.err);
    }

    @Command(name = "create", description = "Create an empty volume; prints its name.")
    static final class Create implements Callable<Integer> {
        @Mixin
        Connection connection;
        @Parameters(paramLabel = "NAME", description = "1-63 lower-case letters, digits or '-'.")
        String name;
        @Option(names = "--size", paramLabel = "SIZE",
                description = "Its size, e.g. 64m, 10g (default: 1g; 1m to 1t). Writes past it fail with \"Disk quota exceeded\".")
        String size;

        @Override
        public Integer call() {
            ByteSize s = size == null ? Volumes.DEFAULT_SIZE : SpecOptions.size("size", size);
            try (Paddock p = connection.connect()) {
                System.out.println(p.volumes().create(name, s).name());
            }
            return 0;
        }
    }

    @Command(name = "ls", aliases = "list", description = "List volumes: size, use and the sandboxes that mount each.")
    static final class Ls implements Callable<Integer> {
        @Mixin
        Connection connection;
        @Option(names = "--json", description = "Print JSON (an array of volume objects) for programs.")
        boolean json;

        @Override
        public Integer call() throws Exception {
            List<VolumeInfo> infos;
            try (Paddock p = connection.connect()) {
                infos = p.volumes().list();
            }
            if (json) {
                ArrayNode a = Wire.JSON.createArrayNode();
                infos.forEach(v -> a.add(VolumeWire.json(v)));
                ImageCommand.printJson(a);
                return 0;
            }
            String format = "%-40s  %10s  %10s  %-12s  %s%n";
            System.out.printf(format, "NAME", "SIZE", "USED", "CREATED", "SANDBOXES");
            Instant now = Instant.now();
            for (VolumeInfo v : infos) {
                System.out.printf(format, v.name(), mib(v.size().bytes()), mib(v.used()),
                        ListCommand.human(Duration.between(v.created(), now)) + " ago",
                        v.sandboxes().isEmpty() ? "-" : String.join(",", v.sandboxes().stream().map(Object::toString).toList()));
            }
            return 0;
        }

        private static String mib(long bytes) {
            return String.format("%.1f MiB", bytes / 1048576.0);
        }
    }

    @Command(name = "rm", aliases = "remove", description = {"Delete volumes and their files.",
            "Refused while a sandbox mounts the volume: destroy it first."})
    static final class Rm implements Callable<Integer> {
        @Mixin
        Connection connection;
        @Parameters(arity = "1..*", paramLabel = "NAME", description = "Volume names.")
        List<String> names;

        @Override
        public Integer call() {
            try (Paddock p = connection.connect()) {
                for (String n : names) {
                    p.volumes().remove(n);
                }
            }
            return 0;
        }
    }
}
