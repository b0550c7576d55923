package io.paddock.cli;

import io.paddock.Paddock;
import io.paddock.Sandbox;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

import java.util.concurrent.Callable;

/** {@code paddock resume}: let a paused sandbox run again. */
@Command(name = "resume",
        description = {"Resume a paused sandbox where it was: its processes, their memory, its code contexts and files.",
                "Resuming a running sandbox does nothing. A checkpoint changed on disk since the pause is refused "
                + "(nothing of it runs) and the sandbox is stopped. Prints the id."})
final class ResumeCommand implements Callable<Integer> {
    @Mixin
    Connection connection;

    @Parameters(index = "0", paramLabel = "SANDBOX", description = "Sandbox id or name.")
    String sandbox;

    @Override
    public Integer call() {
        try (Paddock paddock = connection.connect()) {
            Sandbox sb = Connection.find(paddock, sandbox);
            sb.resume();
            System.out.println(sb.id());
        }
        return 0;
    }
}
