package io.paddock.cli;

import io.paddock.Paddock;
import io.paddock.Sandbox;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.util.concurrent.Callable;

/** {@code paddock fork}: N new sandboxes from one memory checkpoint of a sandbox. */
@Command(name = "fork",
        description = {"Start N new sandboxes from one memory checkpoint of a sandbox: each has its processes, their memory "
                + "and its in-memory files (/tmp, /workspace) where they were, then its own state, id and a fresh "
                + "lifetime.",
                "A running sandbox is paused for the checkpoint and resumed after; a paused one stays paused. Needs "
                + "the gVisor tier (--runtime runsc) and a sandbox without a network. Prints the new ids, one a line."},
        footer = {"", "Example:", "  paddock fork web -n 3"})
final class ForkCommand implements Callable<Integer> {
    @Mixin
    Connection connection;

    @Parameters(index = "0", paramLabel = "SANDBOX", description = "Sandbox id or name.")
    String sandbox;

    @Option(names = {"-n", "--count"}, paramLabel = "N", defaultValue = "1",
            description = "How many sandboxes to start (1 to 64; default ${DEFAULT-VALUE}).")
    int count;

    @Override
    public Integer call() {
        try (Paddock paddock = connection.connect()) {
            Sandbox sb = Connection.find(paddock, sandbox);
            for (Sandbox f : sb.fork(count)) {
                System.out.println(f.id());
            }
        }
        return 0;
    }
}
