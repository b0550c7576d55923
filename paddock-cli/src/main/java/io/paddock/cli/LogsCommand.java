package io.paddock.cli;

import io.paddock.Paddock;
import io.paddock.SandboxLogs;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.util.concurrent.Callable;

/** {@code paddock logs}: the entrypoint's output. */
@Command(name = "logs", description = "Print a sandbox's entrypoint output: its stdout to stdout, its stderr to stderr.")
final class LogsCommand implements Callable<Integer> {
    @Mixin
    Connection connection;

    @Parameters(index = "0", paramLabel = "SANDBOX", description = "Sandbox id or name.")
    String sandbox;

    @Override
    public Integer call() throws IOException {
        SandboxLogs logs;
        try (Paddock paddock = connection.connect()) {
            logs = Connection.find(paddock, sandbox).logs();
        }
        if (logs.stdoutTruncated() || logs.stderrTruncated()) {
            System.err.println("paddock: (older output was dropped; the daemon keeps the most recent 1 MiB of each stream)");
        }
        new FileOutputStream(FileDescriptor.out).write(logs.stdout());
        new FileOutputStream(FileDescriptor.err).write(logs.stderr());
        return 0;
    }
}
