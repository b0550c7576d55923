package io.paddock.cli;

import io.paddock.Paddock;
import io.paddock.PauseMode;
import io.paddock.Sandbox;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

import java.util.concurrent.Callable;

/** {@code paddock pause}: stop every process of a sandbox until {@code paddock resume}. */
@Command(name = "pause",
        description = {"Pause a running sandbox: none of its processes runs until 'paddock resume'; exec, files and code "
                + "are refused meanwhile.",
                "On gVisor (--runtime runsc) its whole state is checkpointed to the host's disk and its memory is "
                + "freed; on runc its processes are frozen and their memory stays resident (stderr says so). Its "
                + "lifetime deadline keeps running while paused. Prints the id and the mode (CHECKPOINTED or FROZEN)."},
        footer = {"", "Example:", "  paddock pause web && paddock resume web"})
final class PauseCommand implements Callable<Integer> {
    @Mixin
    Connection connection;

    @Parameters(index = "0", paramLabel = "SANDBOX", description = "Sandbox id or name.")
    String sandbox;

    @Override
    public Integer call() {
        try (Paddock paddock = connection.connect()) {
            Sandbox sb = Connection.find(paddock, sandbox);
            PauseMode mode = sb.pause();
            System.out.println(sb.id() + " " + mode);
            if (mode == PauseMode.FROZEN) {
                System.err.println("paddock: " + sb.id() + " is frozen; its memory stays resident"
                        + " (memory checkpoints need the gVisor tier: --runtime runsc)");
            }
        }
        return 0;
    }
}
