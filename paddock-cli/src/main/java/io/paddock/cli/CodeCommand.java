package io.paddock.cli;

import io.paddock.ErrorCode;
import io.paddock.Paddock;
import io.paddock.SandboxException;
import io.paddock.code.CodeContext;
import io.paddock.code.CodeInterpreter;
import io.paddock.code.CodeRequest;
import io.paddock.code.CodeResult;
import io.paddock.code.ContextInfo;
import io.paddock.code.Language;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code paddock code}: runs code in a sandbox on the daemon, once or as a cell of a named context that the
 * daemon keeps between invocations (so variables, imports and functions persist, as in a notebook).
 */
@Command(name = "code", sortOptions = false,
        description = {"Run code in a sandbox on the daemon: once, or as a cell of a stateful context that persists between "
                + "invocations.",
                "Exit codes as for exec: the code's own, 124 timed out, 137 out of memory."},
        footer = {"", "Examples:",
                "  paddock code $id --lang python --code 'print(6*7)'",
                "  paddock code $id --context nb --lang python --code 'import math; x = 41'",
                "  paddock code $id --context nb --code 'math.floor(x + 1.5)'      # prints 42",
                "  paddock code $id --context nb --artifacts out --code 'import matplotlib.pyplot as plt; plt.plot([1, 3])'",
                "  paddock code $id --contexts",
                "  paddock code $id --languages             # what this sandbox's image can run",
                "  paddock code $id --context nb --restart | --remove"})
final class CodeCommand implements Callable<Integer> {
    @Mixin
    Connection connection;

    @Parameters(index = "0", paramLabel = "SANDBOX", description = "Sandbox id or name.")
    String sandbox;

    @Option(names = "--lang", paramLabel = "LANGUAGE",
            description = "The language; needed for a one-shot run and to create a context, optional for an existing one.")
    String language;

    @Option(names = "--code", paramLabel = "CODE", description = "The code to run; - reads it from stdin.")
    String code;

    @Option(names = "--context", paramLabel = "NAME",
            description = "Run the code as a cell of this context, creating it (with --lang) when it does not exist.")
    String context;

    @Option(names = "--timeout", paramLabel = "DURATION", description = "Interrupt the run or cell after this long (default: 60s).")
    String timeout;

    @Option(names = "--artifacts", paramLabel = "DIR",
            description = "Save plots (plot-N.png) and the files written under $PADDOCK_ARTIFACTS_DIR here.")
    String artifacts;

    @Option(names = "--contexts", description = "List the sandbox's contexts instead of running code.")
    boolean list;

    @Option(names = "--languages", description = "List the languages this sandbox's image can run instead of running code.")
    boolean languages;

    @Option(names = "--restart", description = "Restart --context (a fresh process: its state is gone).")
    boolean restart;

    @Option(names = "--remove", description = "Remove --context.")
    boolean remove;

    @Override
    public Integer call() {
        int actions = (list ? 1 : 0) + (languages ? 1 : 0) + (restart ? 1 : 0) + (remove ? 1 : 0) + (code != null ? 1 : 0);
        if (actions != 1) {
            throw SandboxException.invalid("code", "give exactly one of --code, --contexts, --languages, --restart or --remove");
        }
        if ((restart || remove) && context == null) {
            throw SandboxException.invalid("context", "--restart and --remove need --context NAME");
        }
        Duration limit = timeout == null ? null : SpecOptions.duration("timeout", timeout);
        Path dir = CodeOutput.artifactsDir(artifacts);
        // Against a daemon the interpreter is the remote one: closing it releases this process's handle,
        // while the contexts stay in the daemon for the next invocation.
        try (Paddock paddock = connection.connect();
             CodeInterpreter interpreter = CodeInterpreter.of(Connection.find(paddock, sandbox))) {
            if (list) {
                printContexts(interpreter.contexts());
                return 0;
            }
            if (languages) {
                printLanguages(interpreter.availableLanguages());
                return 0;
            }
            if (remove) {
                interpreter.removeContext(context);
                return 0;
            }
            if (restart) {
                interpreter.context(context).restart();
                return 0;
            }
            CodeRequest.Builder request = CodeRequest.builder().code(CodeOutput.code(code, System.in))
                    .artifactContent(dir != null);
            if (limit != null) {
                request.timeout(limit);
            }
            CodeOutput output = new CodeOutput(System.out, System.err);
            CodeResult result;
            if (context == null) {
                if (language == null) {
                    throw SandboxException.invalid("lang", "a one-shot run needs --lang (or give --context NAME)");
                }
                result = interpreter.run(request.language(language).build(), output);
            } else {
                CodeContext ctx = contextFor(interpreter);
                result = ctx.run(request.build(), output);
            }
            return output.finish(result, dir, limit, null);
        }
    }

    private CodeContext contextFor(CodeInterpreter interpreter) {
        try {
            CodeContext ctx = interpreter.context(context);
            if (language != null && !interpreter.languages().get(language).name().equals(ctx.language())) {
                throw SandboxException.invalid("lang", "context '" + context + "' runs " + ctx.language() + ", not " + language);
            }
            return ctx;
        } catch (SandboxException e) {
            if (e.code() != ErrorCode.NOT_FOUND) {
                throw e;
            }
            if (language == null) {
                throw SandboxException.invalid("lang", "there is no context '" + context + "' yet; give --lang to create it");
            }
            return interpreter.createContext(language, context);
        }
    }

    private static void printLanguages(List<Language> languages) {
        System.out.printf("%-12s %-24s %-8s %-8s %s%n", "LANGUAGE", "ALIASES", "CONTEXTS", "PLOTS", "PACKAGES");
        for (Language l : languages) {
            System.out.printf("%-12s %-24s %-8s %-8s %s%n", l.name(), l.aliases().isEmpty() ? "-" : String.join(",", l.aliases()),
                    l.contexts() ? "yes" : "no", l.plots() ? "yes" : "no",
                    l.packages().map(Language.PackageManager::manager).orElse("-"));
        }
    }

    private static void printContexts(List<ContextInfo> contexts) {
        System.out.printf("%-28s %-16s %-12s %-8s %6s %8s%n", "ID", "NAME", "LANGUAGE", "STATE", "CELLS", "RESTARTS");
        for (ContextInfo c : contexts) {
            System.out.printf("%-28s %-16s %-12s %-8s %6d %8d%n", c.id(), c.name().orElse("-"), c.language(),
                    c.state().name().toLowerCase(java.util.Locale.ROOT), c.cells(), c.restarts());
        }
    }
}
