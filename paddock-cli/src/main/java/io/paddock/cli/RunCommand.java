package io.paddock.cli;

import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import io.paddock.code.CodeImages;
import io.paddock.code.CodeInterpreter;
import io.paddock.code.CodeRequest;
import io.paddock.code.CodeResult;
import io.paddock.code.Languages;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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
                "  paddock run --lang python --artifacts out --code 'import matplotlib.pyplot as plt; plt.plot([1, 3]); plt.show()'",
                "  paddock run --lang c --code - < main.c",
                "  echo data | paddock run -i -- wc -c",
                "  paddock run -t --image python:3.12 -- python3"})
final class RunCommand implements Callable<Integer> {
    /** The sandbox outlives the command's own timeout a little, so the command's timeout is what fires. */
    static final Duration LIFETIME_GRACE = Duration.ofSeconds(30);

    @Mixin
    SpecOptions spec;

    @Option(names = "--timeout", paramLabel = "DURATION",
            description = "Kill the command's whole process tree after this long, e.g. 30s, 5m (default: 5m).")
    String timeout = "5m";

    @Option(names = "--dns-upstream", paramLabel = "IP[:PORT]",
            description = {"The DNS server Paddock's resolver asks for the sandbox's allowlisted names (default: "
                    + "$PADDOCK_DNS_UPSTREAM, else the first nameserver of /etc/resolv.conf)."})
    String dnsUpstream;

    @Option(names = {"-i", "--interactive"}, description = "Forward this process's stdin to the command.")
    boolean interactive;

    @Option(names = {"-t", "--tty"}, description = {"Run the command on a terminal of this terminal's size: an interactive shell, colours, Ctrl-C. With "
            + "a terminal here, stdin is forwarded and keys go to the command raw."})
    boolean tty;

    @ArgGroup(exclusive = false)
    Code code;

    static final class Code {
        @Option(names = "--lang", required = true, paramLabel = "LANGUAGE",
                description = "Run --code in this language: python, javascript, bash, java, c, cpp, perl, go, ruby, r"
                        + " (those whose toolchain the image has).")
        String language;

        @Option(names = "--code", required = true, paramLabel = "CODE", description = "The code to run; - reads it from stdin.")
        String code;

        @Option(names = "--artifacts", paramLabel = "DIR",
                description = "Save the run's plots (plot-N.png) and the files it wrote under $PADDOCK_ARTIFACTS_DIR here.")
        String artifacts;
    }

    @Parameters(paramLabel = "CMD", description = "The command and its arguments (after --).")
    List<String> command = new ArrayList<>();

    @Override
    public Integer call() throws Exception {
        Duration limit = SpecOptions.duration("timeout", timeout);
        if (limit.isZero() || limit.isNegative()) {
            throw SandboxException.invalid("timeout", "must be positive, got " + timeout);
        }
        SandboxSpec sandboxSpec = spec.apply(SandboxSpec.builder()).timeout(limit.plus(LIFETIME_GRACE)).build();
        if (code != null) {
            return runCode(sandboxSpec, limit);
        }
        if (command.isEmpty()) {
            throw SandboxException.invalid("command", "no command given; usage: paddock run [OPTIONS] -- CMD [ARG...]");
        }
        LocalTerminal here = LocalTerminal.current();
        ExecRequest request = ExecRequest.builder().argv(command).timeout(limit).outputLimit(ExecRequest.UNLIMITED)
                .terminal(tty ? here.size() : null).build();
        quietEngineLogging();
        try (Paddock paddock = Paddock.local(localOptions());
             Sandbox sandbox = paddock.create(sandboxSpec);
             ExecProcess process = sandbox.start(request)) {
            String memory = sandboxSpec.memory().toString();
            return tty ? Streaming.attachTerminal(process, here, interactive, limit, memory)
                    : Streaming.attach(process, interactive, limit, memory);
        }
    }

    private io.paddock.LocalOptions localOptions() {
        io.paddock.LocalOptions.Builder b = io.paddock.LocalOptions.builder();
        if (dnsUpstream != null) {
            b.dnsUpstream(dnsUpstream);
        }
        return b.build();
    }

    private int runCode(SandboxSpec sandboxSpec, Duration limit) {
        if (!command.isEmpty()) {
            throw SandboxException.invalid("command", "give either --lang/--code or a command after --, not both");
        }
        if (interactive) {
            throw SandboxException.invalid("interactive", "-i forwards stdin to a command; with --lang, use --code - to read the code from stdin");
        }
        Languages.defaults().get(code.language); // an unknown language fails before a sandbox is made
        CodeRequest request = CodeRequest.builder().language(code.language).code(CodeOutput.code(code.code, System.in))
                .timeout(limit).artifactContent(code.artifacts != null).build();
        Path dir = CodeOutput.artifactsDir(code.artifacts);
        CodeOutput output = new CodeOutput(System.out, System.err);
        quietEngineLogging();
        try (Paddock paddock = Paddock.local(localOptions())) {
            SandboxSpec withImage = spec.image != null ? sandboxSpec : codeImage(paddock, sandboxSpec, code.language);
            return runCode(paddock, withImage, request, output, dir, limit);
        }
    }

    /**
     * Code runs default to Paddock's code images: the full one when this host has it ({@code paddock image
     * prepare}), else the language's lean image, built now (with its progress on stderr) if it is not here yet.
     */
    private static SandboxSpec codeImage(Paddock paddock, SandboxSpec spec, String language) {
        CodeImages.Named image = CodeImages.forRun(paddock.images(), Languages.defaults().get(language));
        if (CodeImages.stored(paddock.images(), image.name()).isEmpty()) {
            System.err.println("paddock: building " + image.name() + " once (" + image.description() + ");"
                    + " later runs reuse it. `paddock image prepare` builds the image of every language ahead of time;"
                    + " --image host uses the host's toolchains.");
            image.ensure(paddock.images(), new ImageCommand.Progress(false));
        }
        return spec.toBuilder().image(image.name()).build();
    }

    private static int runCode(Paddock paddock, SandboxSpec sandboxSpec, CodeRequest request, CodeOutput output,
                               Path dir, Duration limit) {
        try (Sandbox sandbox = paddock.create(sandboxSpec);
             CodeInterpreter interpreter = CodeInterpreter.of(sandbox)) {
            CodeResult result = interpreter.run(request, output);
            return output.finish(result, dir, limit, sandboxSpec.memory().toString());
        }
    }

    /** stderr belongs to the command: the engine's informational logging would be mixed into it. */
    private static void quietEngineLogging() {
        java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.WARNING);
    }
}
