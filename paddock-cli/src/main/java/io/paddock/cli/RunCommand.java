package io.paddock.cli;

import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code paddock run}: runs one command (or one snippet of code) in a fresh sandbox, streams its output
 * live, and exits with its exit code. The sandbox is destroyed afterwards, whatever happens.
 */
@Command(name = "run", sortOptions = false,
        description = {"Run a command in a fresh sandbox and exit with its exit code.",
                "Exit codes: the command's own; 124 when it timed out; 137 when it ran out of memory;"
                        + " 125 when Paddock itself failed; 2 for bad usage."},
        footer = {"", "Examples:",
                "  paddock run -- echo hello",
                "  paddock run --memory 256m --timeout 30s -- python3 -c 'print(6*7)'",
                "  paddock run --lang python --code 'print(6*7)'",
                "  echo data | paddock run -i -- wc -c"})
final class RunCommand implements Callable<Integer> {
    /** Languages the shorthand knows: the interpreter's argv before the code. */
    static final Map<String, List<String>> LANGUAGES = Map.of(
            "python", List.of("python3", "-c"),
            "javascript", List.of("node", "-e"),
            "bash", List.of("bash", "-c"));
    /** The sandbox outlives the command's own timeout a little, so the command's timeout is what fires. */
    static final Duration LIFETIME_GRACE = Duration.ofSeconds(30);

    @Mixin
    SpecOptions spec;

    @Option(names = "--timeout", paramLabel = "DURATION",
            description = "Kill the command's whole process tree after this long, e.g. 30s, 5m (default: 5m).")
    String timeout = "5m";

    @Option(names = {"-i", "--interactive"}, description = "Forward this process's stdin to the command.")
    boolean interactive;

    @ArgGroup(exclusive = false)
    Code code;

    static final class Code {
        @Option(names = "--lang", required = true, paramLabel = "LANGUAGE",
                description = "Run --code in this language: python, javascript or bash.")
        String language;

        @Option(names = "--code", required = true, paramLabel = "CODE", description = "The code to run.")
        String code;
    }

    @Parameters(paramLabel = "CMD", description = "The command and its arguments (after --).")
    List<String> command = new ArrayList<>();

    @Override
    public Integer call() throws Exception {
        List<String> argv = argv();
        Duration limit = SpecOptions.duration("timeout", timeout);
        if (limit.isZero() || limit.isNegative()) {
            throw SandboxException.invalid("timeout", "must be positive, got " + timeout);
        }
        SandboxSpec sandboxSpec = spec.apply(SandboxSpec.builder()).timeout(limit.plus(LIFETIME_GRACE)).build();
        ExecRequest request = ExecRequest.builder().argv(argv).timeout(limit).outputLimit(ExecRequest.UNLIMITED).build();
        // stderr belongs to the command: the engine's informational logging would be mixed into it.
        java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.WARNING);
        try (Paddock paddock = Paddock.local();
             Sandbox sandbox = paddock.create(sandboxSpec);
             ExecProcess process = sandbox.start(request)) {
            return Streaming.attach(process, interactive, limit, sandboxSpec.memory().toString());
        }
    }

    private List<String> argv() {
        if (code != null) {
            if (!command.isEmpty()) {
                throw SandboxException.invalid("command", "give either --lang/--code or a command after --, not both");
            }
            List<String> prefix = LANGUAGES.get(code.language);
            if (prefix == null) {
                throw SandboxException.invalid("lang", "unknown language '" + code.language + "'; known: "
                        + String.join(", ", LANGUAGES.keySet().stream().sorted().toList()));
            }
            List<String> argv = new ArrayList<>(prefix);
            argv.add(code.code);
            return argv;
        }
        if (command.isEmpty()) {
            throw SandboxException.invalid("command", "no command given; usage: paddock run [OPTIONS] -- CMD [ARG...]");
        }
        return command;
    }

}
