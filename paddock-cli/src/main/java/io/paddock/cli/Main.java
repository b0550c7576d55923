package io.paddock.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code paddock}: run untrusted code in sandboxes. */
@Command(name = "paddock",
        mixinStandardHelpOptions = true,
        scope = CommandLine.ScopeType.INHERIT, // so every subcommand has --help and --version too
        versionProvider = VersionProvider.class,
        description = "Run untrusted and AI-generated code in isolated, resource-limited sandboxes.",
        subcommands = {RunCommand.class, ServeCommand.class, CreateCommand.class, ExecCommand.class, CodeCommand.class, ListCommand.class,
                RemoveCommand.class, CopyCommand.class, LogsCommand.class, NetworkCommand.class, PortCommand.class,
                PauseCommand.class, ResumeCommand.class, ForkCommand.class, SnapshotCommand.class,
                ImageCommand.class, CodebaseCommand.class, VolumeCommand.class, AuditCommand.class, BenchCommand.class, McpCommand.class,
                CommandLine.HelpCommand.class})
public final class Main implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    public static void main(String[] args) {
        System.exit(execute(args));
    }

    static int execute(String... args) {
        CommandLine cli = new CommandLine(new Main())
                .setExecutionExceptionHandler(new ExitCodes.ErrorHandler())
                .setCaseInsensitiveEnumValuesAllowed(true);
        cli.setParameterExceptionHandler(new ExitCodes.UsageHandler());
        return cli.execute(args);
    }

    @Override
    public void run() {
        spec.commandLine().usage(System.err);
    }
}
