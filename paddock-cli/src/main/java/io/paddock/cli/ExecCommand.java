package io.paddock.cli;

import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code paddock exec}: a command in a sandbox on the daemon, streamed, with its exit code. */
@Command(name = "exec", sortOptions = false,
        description = {"Run a command in a sandbox on the daemon; stream its output and exit with its exit code (124 timed "
                + "out, 137 out of memory, 125 Paddock failed)."},
        footer = {"", "Examples:", "  paddock exec $id -- python3 -c 'print(6*7)'", "  echo hi | paddock exec -i web -- cat",
                "  paddock exec -t $id -- bash"})
final class ExecCommand implements Callable<Integer> {
    @Mixin
    Connection connection;

    @Option(names = {"-i", "--interactive"}, description = "Forward this process's stdin to the command.")
    boolean interactive;

    @Option(names = {"-t", "--tty"}, description = {"Run the command on a terminal of this terminal's size: an interactive shell, colours, Ctrl-C. With "
            + "a terminal here, stdin is forwarded and keys go to the command raw."})
    boolean tty;

    @Option(names = "--timeout", paramLabel = "DURATION", description = "Kill the command's process tree after this long.")
    String timeout;

    @Option(names = {"-e", "--env"}, paramLabel = "KEY=VALUE", description = "An environment variable (repeatable).")
    List<String> env = new ArrayList<>();

    @Option(names = {"-w", "--cwd"}, paramLabel = "DIR", description = "Working directory.")
    String cwd;

    @Parameters(index = "0", paramLabel = "SANDBOX", description = "Sandbox id or name.")
    String sandbox;

    @Parameters(index = "1..*", paramLabel = "CMD", description = "The command and its arguments (after --).")
    List<String> command = new ArrayList<>();

    @Override
    public Integer call() throws InterruptedException {
        ExecRequest.Builder b = ExecRequest.builder().argv(command).outputLimit(ExecRequest.UNLIMITED);
        Duration limit = timeout == null ? null : SpecOptions.duration("timeout", timeout);
        b.timeout(limit);
        for (String kv : env) {
            String[] p = SpecOptions.keyValue("env", kv);
            b.env(p[0], p[1]);
        }
        if (cwd != null) {
            b.cwd(cwd);
        }
        LocalTerminal here = LocalTerminal.current();
        if (tty) {
            b.terminal(here.size());
        }
        ExecRequest request = b.build();
        try (Paddock paddock = connection.connect()) {
            Sandbox sb = Connection.find(paddock, sandbox);
            try (ExecProcess process = sb.start(request)) {
                return tty ? Streaming.attachTerminal(process, here, interactive, limit, null)
                        : Streaming.attach(process, interactive, limit, null);
            }
        }
    }
}
