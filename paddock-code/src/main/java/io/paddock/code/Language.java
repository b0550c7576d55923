package io.paddock.code;

import io.paddock.SandboxException;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * One row of the language table ({@link Languages}): how to compile, run, install packages for and keep a
 * stateful context of one language. Rows are data (the defaults come from a JSON resource); nothing in
 * Paddock switches on a language's name. Immutable.
 *
 * <p>Argument templates may hold placeholders: {@code {file}} the source file, {@code {dir}} the run's
 * directory, {@code {helpers}} Paddock's uploaded helpers, {@code {libs}} this language's install target,
 * {@code {state}} Paddock's scratch directory; see docs/CODE.md.
 *
 * @param name          the canonical name, for example {@code python}
 * @param aliases       other names accepted for it (case-insensitive), for example {@code py}
 * @param sourceFile    the file name the code is written to, for example {@code Main.java}
 * @param compile       the compile step's argv template; empty when the language is not compiled
 * @param run           the run step's argv template
 * @param kernel        the argv template of the kernel behind a stateful context; empty when contexts are
 *                      not supported
 * @param env           variables (templates) set for runs, kernels and installs
 * @param packages      the package manager, if the language has one
 * @param contexts      whether stateful contexts are supported
 * @param plots         whether matplotlib-style plots are captured
 * @param lineComment   the line-comment prefix (used by {@link CodePolicy} to skip comments); may be empty
 * @param imports       regular expressions with a named group {@code modules} that find imported modules
 *                      (used by {@link CodePolicy} import rules)
 * @param debian        the Debian packages a lean image for this language installs on top of Debian's base
 *                      ({@link CodeImages#forLanguage}); empty when the base has what it needs
 */
public record Language(String name, List<String> aliases, String sourceFile, List<String> compile,
                       List<String> run, List<String> kernel, Map<String, String> env,
                       Optional<PackageManager> packages, boolean contexts, boolean plots, String lineComment,
                       List<String> imports, List<String> debian) {

    public Language {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(sourceFile, "sourceFile");
        aliases = List.copyOf(aliases);
        compile = List.copyOf(compile);
        run = List.copyOf(run);
        kernel = List.copyOf(kernel);
        env = Map.copyOf(env);
        Objects.requireNonNull(packages, "packages");
        lineComment = lineComment == null ? "" : lineComment;
        imports = List.copyOf(imports);
        debian = List.copyOf(debian);
        for (String pkg : debian) {
            if (!pkg.matches("[a-z0-9][a-z0-9+.-]{0,99}")) {
                throw SandboxException.invalid("language.debian", "'" + pkg + "' is not a Debian package name");
            }
        }
        if (!name.matches("[a-z][a-z0-9+#._-]{0,31}")) {
            throw SandboxException.invalid("language.name", "must be lower case letters, digits or +#._-, got '" + name + "'");
        }
        if (!sourceFile.matches("[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")) {
            throw SandboxException.invalid("language.sourceFile", "must be a plain file name, got '" + sourceFile + "'");
        }
        if (run.isEmpty()) {
            throw SandboxException.invalid("language.run", "language '" + name + "' has no run command");
        }
        if (contexts && kernel.isEmpty()) {
            throw SandboxException.invalid("language.kernel", "language '" + name + "' supports contexts but has no kernel");
        }
    }

    /** A row without Debian packages of its own (its lean image is Debian's base with the common packages). */
    public Language(String name, List<String> aliases, String sourceFile, List<String> compile, List<String> run,
                    List<String> kernel, Map<String, String> env, Optional<PackageManager> packages, boolean contexts,
                    boolean plots, String lineComment, List<String> imports) {
        this(name, aliases, sourceFile, compile, run, kernel, env, packages, contexts, plots, lineComment, imports,
                List.of());
    }

    /** Whether {@code nameOrAlias} names this language (case-insensitive). */
    public boolean matches(String nameOrAlias) {
        return name.equalsIgnoreCase(nameOrAlias) || aliases.stream().anyMatch(a -> a.equalsIgnoreCase(nameOrAlias));
    }

    /**
     * A language's package manager: how {@code install} runs it offline.
     *
     * @param manager     its name for messages, for example {@code pip}
     * @param install     the install argv template; {@code {from}} is the package source, {@code {packages}}
     *                    expands to one argument per package (or resolved file)
     * @param env         extra variables (templates) for installs
     * @param sourceKind  how a source is used: {@code find-links} (the source directory is passed as
     *                    {@code {from}} and packages by name) or {@code files} (each package is resolved to an
     *                    archive in the source directory, or the source itself is one package)
     * @param extensions  for {@code files}: the archive extensions looked for, for example {@code .tgz}
     * @param manifest    for {@code files}: the file that marks a directory as one unpacked package, for
     *                    example {@code package.json}; empty when there is none
     */
    public record PackageManager(String manager, List<String> install, Map<String, String> env, String sourceKind,
                                 List<String> extensions, String manifest) {
        public static final String FIND_LINKS = "find-links";
        public static final String FILES = "files";

        public PackageManager {
            Objects.requireNonNull(manager, "manager");
            install = List.copyOf(install);
            env = Map.copyOf(env);
            extensions = List.copyOf(extensions);
            manifest = manifest == null ? "" : manifest;
            if (install.isEmpty()) {
                throw SandboxException.invalid("language.packages.install", "no install command for " + manager);
            }
            if (!FIND_LINKS.equals(sourceKind) && !FILES.equals(sourceKind)) {
                throw SandboxException.invalid("language.packages.source.kind",
                        "must be " + FIND_LINKS + " or " + FILES + ", got '" + sourceKind + "'");
            }
        }
    }
}
