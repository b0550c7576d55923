package io.paddock.cli;

import io.paddock.Paddock;
import io.paddock.SandboxException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

import java.util.List;
import java.util.concurrent.Callable;

/** {@code paddock rm}: destroy sandboxes on the daemon. */
@Command(name = "rm", description = {"Destroy sandboxes (by id or name).",
        "Prints each destroyed id. Destroying an already stopped sandbox succeeds; an unknown one is an "
        + "error (exit 1)."})
final class RemoveCommand implements Callable<Integer> {
    @Mixin
    Connection connection;

    @Parameters(arity = "1..*", paramLabel = "SANDBOX", description = "Sandbox ids or names.")
    List<String> sandboxes;

    @Override
    public Integer call() {
        int failed = 0;
        try (Paddock paddock = connection.connect()) {
            for (String s : sandboxes) {
                try {
                    var sb = Connection.find(paddock, s);
                    sb.destroy();
                    System.out.println(sb.id());
                } catch (SandboxException e) {
                    System.err.println("paddock: " + s + ": " + e.getMessage());
                    failed++;
                }
            }
        }
        return failed == 0 ? 0 : 1;
    }
}
