package io.paddock.code;

import io.paddock.Sandbox;
import io.paddock.code.internal.SandboxCodeInterpreter;
import io.paddock.code.spi.CodeInterpreterProvider;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;

/**
 * Runs code in a sandbox: one-shot runs in any language of the {@link Languages} table, stateful
 * {@link CodeContext}s, offline package installs, {@link ShellSession}s, with artifacts and plots
 * captured, and an optional {@link CodePolicy} checked first.
 *
 * <pre>{@code
 * try (Sandbox sb = paddock.create(SandboxSpec.builder().build());
 *      CodeInterpreter code = CodeInterpreter.of(sb)) {
 *     CodeResult r = code.run("python", "print(6*7)");          // r.stdout() = "42\n"
 *     try (CodeContext ctx = code.createContext("python")) {
 *         ctx.run("x = 41");
 *         ctx.run("x + 1").value();                              // text/plain "42"
 *     }
 * }
 * }</pre>
 *
 * <p>It uses only the public {@link Sandbox} API, so it works the same over {@code Paddock.local()} and
 * {@code Paddock.connect(…)}. Thread-safe. {@link #close()} ends the contexts and shell sessions it
 * started (not the sandbox); idempotent. The remote client's interpreter (from a provider, for a sandbox of
 * {@code Paddock.connect(…)}) keeps them in the daemon instead, where they outlive the connection, and its
 * {@code close()} releases only the handle (docs/CODE.md, "Remote use").
 */
public interface CodeInterpreter extends AutoCloseable {

    /** An interpreter for {@code sandbox} with default options. */
    static CodeInterpreter of(Sandbox sandbox) {
        return of(sandbox, CodeOptions.defaults());
    }

    /**
     * An interpreter for {@code sandbox}. A {@link CodeInterpreterProvider} on the class path may supply
     * one (for example, a remote client whose daemon keeps contexts server-side); otherwise the built-in
     * implementation drives the sandbox through its public API.
     */
    static CodeInterpreter of(Sandbox sandbox, CodeOptions options) {
        for (CodeInterpreterProvider p : ServiceLoader.load(CodeInterpreterProvider.class,
                CodeInterpreter.class.getClassLoader())) {
            Optional<CodeInterpreter> mine = p.open(sandbox, options);
            if (mine.isPresent()) {
                return mine.get();
            }
        }
        return new SandboxCodeInterpreter(sandbox, options);
    }

    Sandbox sandbox();

    CodeOptions options();

    /** The language table this interpreter knows: every row, whether or not this sandbox's image can run it. */
    default Languages languages() {
        return options().languages();
    }

    /**
     * The rows of {@link #languages()} this sandbox's image can run: those whose compile and run commands
     * it has, looked up along the default {@code PATH}, in table order. A language left out fails a run with
     * {@code FAILED_PRECONDITION} naming the missing command.
     */
    List<Language> availableLanguages();

    /** Runs code once, in a fresh process (compiled first where the language is compiled). */
    CodeResult run(CodeRequest request, CodeListener listener);

    default CodeResult run(CodeRequest request) {
        return run(request, CodeListener.NONE);
    }

    default CodeResult run(String language, String code) {
        return run(CodeRequest.of(language, code));
    }

    /** Checks code against the interpreter's policy (or none) without running it: the violations found. */
    List<CodePolicy.Violation> check(String language, String code);

    /** Starts a stateful context (a kernel process) for {@code language}. */
    default CodeContext createContext(String language) {
        return createContext(language, null);
    }

    /** Starts a stateful context with a name (unique among this interpreter's live contexts), or none if null. */
    CodeContext createContext(String language, String name);

    /** The live context with this id or name; {@code NOT_FOUND} otherwise. */
    CodeContext context(String idOrName);

    /** Snapshots of the live contexts, oldest first. */
    List<ContextInfo> contexts();

    /** Removes the context with this id or name; {@code NOT_FOUND} if there is none. */
    default void removeContext(String idOrName) {
        context(idOrName).close();
    }

    /**
     * Installs packages with the language's package manager, offline, from {@code source}: a directory (or
     * archive) in the sandbox, for pip a wheel directory ({@code --no-index --find-links}), for npm a
     * tarball, a package directory or a directory of tarballs. Later runs and contexts see them.
     * {@code FAILED_PRECONDITION} when there is no reachable source or the manager fails; the sandbox stays
     * usable either way.
     *
     * @param source the source in the sandbox; null means {@link CodeOptions#packageSource()}
     */
    InstallResult install(String language, List<String> packages, String source);

    default InstallResult install(String language, List<String> packages) {
        return install(language, packages, null);
    }

    /** Opens a persistent bash session in the sandbox's workdir. */
    default ShellSession shell() {
        return shell(Map.of());
    }

    /** Opens a persistent bash session with these variables exported. */
    ShellSession shell(Map<String, String> env);

    @Override
    void close();
}
