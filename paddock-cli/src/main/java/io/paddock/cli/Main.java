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
        useVforkSpawns();
        System.exit(execute(args));
    }

    /**
     * The engine starts a few host processes per sandbox (its root, runc's launcher, the root's removal). The JDK's
     * default way to start one on Linux, POSIX_SPAWN, execs {@code jspawnhelper} (a dynamically linked program)
     * first: 1.36 ms per start here against 0.40 ms with VFORK, the JDK's default before 12 (200 starts of a static
     * helper, p50; docs/BENCHMARKS.md, "Cold create and churn"). Unless the user chose, the command line uses
     * VFORK; it must be set before the first process starts, which is here.
     */
    static void useVforkSpawns() {
        if (System.getProperty("jdk.lang.Process.launchMechanism") == null
                && System.getProperty("os.name", "").startsWith("Linux")) {
            System.setProperty("jdk.lang.Process.launchMechanism", "VFORK");
        }
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
