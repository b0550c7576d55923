package io.paddock.image.internal.build;

import io.paddock.ErrorCode;
import io.paddock.ImageStep;
import io.paddock.SandboxException;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parses a Dockerfile into the same {@link ImageStep}s the Java builder {@link io.paddock.Image} makes.
 * Pure: no I/O beyond {@link #read(Path, Map)} reading the file.
 *
 * <p>What is supported, with Docker's syntax and semantics:
 * <ul>
 *   <li>comments, blank lines, line continuations with the escape character (also across comment and
 *       blank lines inside an instruction), the {@code # escape=} parser directive ({@code \} or
 *       {@code `}); {@code # syntax=} and {@code # check=} are accepted and ignored; instruction names
 *       in any case;</li>
 *   <li>one stage: {@code FROM image [AS name]} (the name is ignored); {@code ARG}s before it, which only
 *       {@code FROM} sees, and which a later {@code ARG NAME} without a default brings into the stage;</li>
 *   <li>{@code RUN}, {@code CMD}, {@code ENTRYPOINT} in shell form (→ {@code ["/bin/sh","-c",…]}) and exec
 *       (JSON array) form; {@code RUN} is not substituted: its shell does that;</li>
 *   <li>{@code COPY}/{@code ADD} with {@code --chown=user[:group]}, several sources and wildcards, in
 *       plain or JSON form; a relative destination is resolved against the working directory;</li>
 *   <li>{@code ENV K=V K2="v 2"} and {@code ENV K V}; {@code LABEL a=b c="d e"}; {@code ARG NAME[=default]};
 *       {@code WORKDIR} (relative to the previous one, starting at {@code /}); {@code USER};
 *       {@code EXPOSE 8000 8000/tcp 53/udp};</li>
 *   <li>variables ({@code $VAR}, {@code ${VAR}}, {@code ${VAR:-default}}, … see {@link ShellWord}) in
 *       {@code FROM}, {@code ENV}, {@code ARG}, {@code LABEL}, {@code WORKDIR}, {@code COPY}/{@code ADD},
 *       {@code USER} and {@code EXPOSE}, from {@code ENV}s and {@code ARG}s before (an {@code ENV}
 *       wins over an {@code ARG} of the same name), and from the build arguments for declared
 *       {@code ARG}s;</li>
 *   <li>{@code MAINTAINER x} becomes {@code LABEL org.opencontainers.image.authors=x}.</li>
 * </ul>
 *
 * <p>Refused, each with INVALID_ARGUMENT naming the line ({@code Dockerfile line N: …}, the instruction's
 * first line): a second {@code FROM} (multi-stage builds), instructions before {@code FROM} other than
 * {@code ARG}, a missing {@code FROM}, {@code HEALTHCHECK}, {@code ONBUILD}, {@code STOPSIGNAL},
 * {@code SHELL}, {@code VOLUME}, unknown instructions, flags other than {@code --chown} (such as
 * {@code COPY --from}, {@code RUN --mount}, {@code FROM --platform}), {@code ADD} or {@code COPY} of a URL,
 * heredocs ({@code <<EOF}), and every syntax error. Build arguments that no {@code ARG} declares are ignored
 * with a warning, as Docker does.
 *
 * <p>Resolution differs from Docker's in one respect: a relative {@code WORKDIR} or {@code COPY}
 * destination is resolved against this Dockerfile's {@code WORKDIR}s starting at {@code /}, not against
 * the base image's configured working directory, which the parser does not know.
 */
public final class Dockerfile {
    /** A parser directive, allowed only before anything else: {@code # name=value}. */
    private static final Pattern DIRECTIVE = Pattern.compile("#[ \\t]*([a-zA-Z][a-zA-Z0-9]*)[ \\t]*=[ \\t]*(.*?)[ \\t]*");
    private static final Set<String> DIRECTIVES = Set.of("escape", "syntax", "check");
    private static final Pattern HEREDOC = Pattern.compile("<<-?[ \\t]*([\"']?)[A-Za-z_][A-Za-z0-9_]*\\1");
    private static final Pattern URL = Pattern.compile("(?i)(?:[a-z][a-z0-9+.-]*://|git@).*");
    private static final Pattern STAGE_NAME = Pattern.compile("[a-zA-Z][a-zA-Z0-9_.-]*");
    private static final Pattern KEYWORD = Pattern.compile("[A-Za-z]+");
    /** The label {@code MAINTAINER} becomes, as Docker's deprecation notice recommends. */
    static final String AUTHORS_LABEL = "org.opencontainers.image.authors";

    private final Map<String, String> buildArgs;
    private char escape = '\\';
    /** ARGs before FROM: only FROM and later ARGs of the same name see them. Empty value: declared, unset. */
    private final Map<String, Optional<String>> globalArgs = new LinkedHashMap<>();
    private final Map<String, Optional<String>> args = new LinkedHashMap<>();
    private final Map<String, String> env = new LinkedHashMap<>();
    private final Set<String> declared = new HashSet<>();
    private String workdir = "/";
    private boolean seenFrom;
    private final List<ImageStep> steps = new ArrayList<>();
    private final List<Integer> lines = new ArrayList<>();
    private final List<String> warnings = new ArrayList<>();

    private Dockerfile(Map<String, String> buildArgs) {
        this.buildArgs = buildArgs;
    }

    /** One instruction after joining its continuation lines; {@code line} is its first line. */
    private record Instruction(int line, String keyword, String rest) {
    }

    /**
     * Parses a Dockerfile.
     *
     * @param buildArgs values for the Dockerfile's {@code ARG}s ({@code docker build --build-arg}); names
     *                  it does not declare are ignored with a warning
     */
    public static ParsedDockerfile parse(String text, Map<String, String> buildArgs) {
        if (text == null) {
            throw SandboxException.invalid("Dockerfile", "missing");
        }
        if (buildArgs == null) {
            throw SandboxException.invalid("buildArgs", "missing (use Map.of())");
        }
        Dockerfile parser = new Dockerfile(Map.copyOf(buildArgs));
        return parser.run(text);
    }

    /** Reads and parses a Dockerfile (UTF-8). */
    public static ParsedDockerfile read(Path file, Map<String, String> buildArgs) {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INVALID_ARGUMENT, "cannot read the Dockerfile " + file + ": " + e, e);
        }
        return parse(text, buildArgs);
    }

    private ParsedDockerfile run(String text) {
        for (Instruction instruction : split(text)) {
            try {
                dispatch(instruction);
            } catch (IllegalArgumentException e) {
                throw error(instruction.line(), e.getMessage(), e);
            } catch (SandboxException e) {
                // a step's own validation: "field: problem"
                throw error(instruction.line(), instruction.keyword().toUpperCase(Locale.ROOT) + " " + e.getMessage(), e);
            }
        }
        if (!seenFrom) {
            throw SandboxException.invalid("Dockerfile", "no FROM instruction; a Dockerfile starts with FROM"
                    + " (only ARG may come before it)");
        }
        Set<String> unused = new TreeSet<>(buildArgs.keySet());
        unused.removeAll(declared);
        if (!unused.isEmpty()) {
            warnings.add("build arguments " + unused + " are not declared by any ARG; they were ignored");
        }
        return new ParsedDockerfile(steps, lines, warnings);
    }

    // --- lines ---------------------------------------------------------------------------------------------

    /** Parser directives, then instructions with continuations joined, comments and blank lines dropped. */
    private List<Instruction> split(String text) {
        if (text.startsWith("\uFEFF")) {
            text = text.substring(1);
        }
        String[] physical = text.split("\n", -1);
        for (int i = 0; i < physical.length; i++) {
            if (physical[i].endsWith("\r")) {
                physical[i] = physical[i].substring(0, physical[i].length() - 1);
            }
        }
        int i = directives(physical);
        List<Instruction> out = new ArrayList<>();
        while (i < physical.length) {
            int first = i + 1;
            String line = physical[i++].stripLeading();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            StringBuilder joined = new StringBuilder();
            while (true) {
                String trimmed = line.stripTrailing();
                if (trimmed.isEmpty() || trimmed.charAt(trimmed.length() - 1) != escape) {
                    joined.append(line);
                    break;
                }
                joined.append(trimmed, 0, trimmed.length() - 1);
                // the next line that is neither a comment nor blank continues this one
                String next = null;
                while (i < physical.length) {
                    String candidate = physical[i++];
                    String stripped = candidate.strip();
                    if (!stripped.isEmpty() && !stripped.startsWith("#")) {
                        next = candidate;
                        break;
                    }
                }
                if (next == null) {
                    break;
                }
                line = next;
            }
            String instruction = joined.toString().strip();
            int space = 0;
            while (space < instruction.length() && !Character.isWhitespace(instruction.charAt(space))) {
                space++;
            }
            out.add(new Instruction(first, instruction.substring(0, space), instruction.substring(space).strip()));
        }
        return out;
    }

    /** Reads the parser directives at the top; returns the index of the first line after them. */
    private int directives(String[] physical) {
        Set<String> seen = new HashSet<>();
        int i = 0;
        for (; i < physical.length; i++) {
            Matcher m = DIRECTIVE.matcher(physical[i]);
            if (!m.matches()) {
                break;
            }
            String name = m.group(1).toLowerCase(Locale.ROOT);
            if (!DIRECTIVES.contains(name)) {
                break;
            }
            if (!seen.add(name)) {
                throw error(i + 1, "only one " + name + " parser directive can be used", null);
            }
            if (name.equals("escape")) {
                String value = m.group(2);
                if (!value.equals("\\") && !value.equals("`")) {
                    throw error(i + 1, "invalid escape token '" + value + "' does not match ` or \\", null);
                }
                escape = value.charAt(0);
            }
        }
        return i;
    }

    // --- instructions --------------------------------------------------------------------------------------

    private void dispatch(Instruction in) {
        String keyword = in.keyword().toUpperCase(Locale.ROOT);
        if (!KEYWORD.matcher(keyword).matches()) {
            throw problem("unknown instruction: " + in.keyword());
        }
        if (!seenFrom && !keyword.equals("FROM") && !keyword.equals("ARG") && isKnown(keyword)) {
            throw problem(keyword + " before FROM; a Dockerfile starts with FROM (only ARG may come before it)");
        }
        String rest = in.rest();
        switch (keyword) {
            case "FROM" -> from(in.line(), rest);
            case "ARG" -> arg(in.line(), rest);
            case "RUN" -> run(in.line(), rest);
            case "CMD" -> add(in.line(), new ImageStep.Cmd(command("CMD", rest)));
            case "ENTRYPOINT" -> add(in.line(), new ImageStep.Entrypoint(command("ENTRYPOINT", rest)));
            case "COPY" -> copy(in.line(), rest, false);
            case "ADD" -> copy(in.line(), rest, true);
            case "ENV" -> env(in.line(), rest);
            case "LABEL" -> label(in.line(), rest);
            case "WORKDIR" -> workdir(in.line(), rest);
            case "USER" -> user(in.line(), rest);
            case "EXPOSE" -> expose(in.line(), rest);
            case "MAINTAINER" -> maintainer(in.line(), rest);
            case "HEALTHCHECK", "ONBUILD", "STOPSIGNAL" -> throw problem(keyword + " is not supported");
            case "SHELL" -> throw problem("SHELL is not supported; use the exec form, as in"
                    + " RUN [\"/bin/bash\", \"-c\", \"…\"]");
            case "VOLUME" -> throw problem("VOLUME is not supported; a sandbox's writable areas are /workspace"
                    + " and /tmp");
            default -> throw problem("unknown instruction: " + in.keyword());
        }
    }

    private static boolean isKnown(String keyword) {
        return switch (keyword) {
            case "RUN", "CMD", "ENTRYPOINT", "COPY", "ADD", "ENV", "LABEL", "WORKDIR", "USER", "EXPOSE",
                    "MAINTAINER" -> true;
            default -> false;
        };
    }

    private void from(int line, String rest) {
        if (seenFrom) {
            throw problem("multi-stage builds are not supported (a second FROM); build a single stage");
        }
        Flags flags = Flags.take(rest);
        flags.refuseAll("FROM");
        String[] words = flags.rest().isEmpty() ? new String[0] : flags.rest().split("\\s+");
        if (words.length == 3 && words[1].equalsIgnoreCase("AS")) {
            if (!STAGE_NAME.matcher(words[2]).matches()) {
                throw problem("invalid stage name '" + words[2] + "'");
            }
        } else if (words.length != 1) {
            throw problem("FROM requires either one or three arguments (FROM image [AS name])");
        }
        String image = process(words[0]);
        if (image.isEmpty()) {
            throw problem("FROM names no image once its variables are substituted ('" + words[0] + "')");
        }
        add(line, new ImageStep.From(image));
        seenFrom = true;
    }

    private void arg(int line, String rest) {
        List<String> words = words(rest);
        if (words.isEmpty()) {
            throw problem("ARG requires at least one argument (ARG NAME[=default])");
        }
        for (String word : words) {
            int eq = word.indexOf('=');
            String name = eq < 0 ? word : word.substring(0, eq);
            Optional<String> defaultValue = eq < 0 ? Optional.empty() : Optional.of(process(word.substring(eq + 1)));
            new ImageStep.Arg(name, defaultValue); // validates the name everywhere, also before FROM
            declared.add(name);
            Optional<String> value = buildArgs.containsKey(name) ? Optional.of(buildArgs.get(name)) : defaultValue;
            if (!seenFrom) {
                globalArgs.put(name, value);
                continue;
            }
            if (value.isEmpty()) {
                value = globalArgs.getOrDefault(name, Optional.empty());
            }
            args.put(name, value);
            add(line, new ImageStep.Arg(name, value));
        }
    }

    private void run(int line, String rest) {
        Flags flags = Flags.take(rest);
        flags.refuseAll("RUN");
        rest = flags.rest();
        Optional<List<String>> exec = JsonArray.parse(rest);
        if (exec.isPresent()) {
            if (exec.get().isEmpty()) {
                throw problem("RUN requires at least one argument");
            }
            add(line, ImageStep.Run.exec(exec.get()));
            return;
        }
        if (rest.isEmpty()) {
            throw problem("RUN requires at least one argument");
        }
        refuseHeredoc(rest);
        add(line, ImageStep.Run.shell(rest));
    }

    /** CMD and ENTRYPOINT: the exec form as given, the shell form as {@code /bin/sh -c}. */
    private List<String> command(String keyword, String rest) {
        if (rest.isEmpty()) {
            throw problem(keyword + " requires at least one argument");
        }
        Optional<List<String>> exec = JsonArray.parse(rest);
        if (exec.isPresent()) {
            return exec.get();
        }
        List<String> argv = new ArrayList<>(ImageStep.SHELL);
        argv.add(rest);
        return argv;
    }

    private void copy(int line, String rest, boolean add) {
        String keyword = add ? "ADD" : "COPY";
        Flags flags = Flags.take(rest);
        Optional<String> chown = Optional.empty();
        for (Map.Entry<String, String> flag : flags.values().entrySet()) {
            String name = flag.getKey();
            if (name.equals("chown")) {
                String owner = process(flag.getValue());
                if (owner.isEmpty()) {
                    throw problem(keyword + " --chown needs a value (--chown=user[:group])");
                }
                chown = Optional.of(owner);
            } else if (name.equals("from")) {
                throw problem(keyword + " --from is not supported: multi-stage builds are not supported");
            } else {
                throw problem(keyword + " --" + name + " is not supported (only --chown is)");
            }
        }
        rest = flags.rest();
        Optional<List<String>> json = JsonArray.parse(rest);
        List<String> raw;
        if (json.isPresent()) {
            raw = json.get();
        } else {
            refuseHeredoc(rest);
            raw = rest.isEmpty() ? List.of() : List.of(rest.split("\\s+"));
        }
        if (raw.size() < 2) {
            throw problem(keyword + " requires at least two arguments: the sources and a destination");
        }
        List<String> sources = new ArrayList<>();
        for (String word : raw.subList(0, raw.size() - 1)) {
            String source = process(word);
            if (URL.matcher(source).matches()) {
                throw problem(add ? "ADD from a URL is not supported; use RUN curl (or wget) to download '" + source + "'"
                        : "COPY from a URL is not supported; use RUN curl (or wget) to download '" + source + "'");
            }
            sources.add(source);
        }
        String dest = ImageStep.Copy.resolveDest(workdir, process(raw.get(raw.size() - 1)));
        add(line, new ImageStep.Copy(sources, dest, chown, add));
    }

    private void env(int line, String rest) {
        // every value is substituted with the variables as they were before this instruction, as in Docker
        List<ImageStep.Env> made = new ArrayList<>();
        for (String[] pair : nameValues("ENV", rest)) {
            made.add(new ImageStep.Env(process(pair[0]), process(pair[1])));
        }
        for (ImageStep.Env step : made) {
            env.put(step.key(), step.value());
            add(line, step);
        }
    }

    private void label(int line, String rest) {
        for (String[] pair : nameValues("LABEL", rest)) {
            add(line, new ImageStep.Label(process(pair[0]), process(pair[1])));
        }
    }

    private void workdir(int line, String rest) {
        if (rest.isEmpty()) {
            throw problem("WORKDIR requires exactly one argument");
        }
        ImageStep.Workdir step = ImageStep.Workdir.resolve(workdir, process(rest));
        workdir = step.path();
        add(line, step);
    }

    private void user(int line, String rest) {
        if (rest.isEmpty() || rest.split("\\s+").length != 1) {
            throw problem("USER requires exactly one argument (USER user[:group])");
        }
        add(line, new ImageStep.User(process(rest)));
    }

    private void expose(int line, String rest) {
        if (rest.isEmpty()) {
            throw problem("EXPOSE requires at least one argument");
        }
        for (String word : rest.split("\\s+")) {
            add(line, new ImageStep.Expose(process(word)));
        }
    }

    private void maintainer(int line, String rest) {
        if (rest.isEmpty()) {
            throw problem("MAINTAINER requires exactly one argument");
        }
        add(line, new ImageStep.Label(AUTHORS_LABEL, rest));
        warnings.add("line " + line + ": MAINTAINER is deprecated; recorded as LABEL " + AUTHORS_LABEL);
    }

    private void add(int line, ImageStep step) {
        steps.add(step);
        lines.add(line);
    }

    // --- words ---------------------------------------------------------------------------------------------

    /** Quotes removed and variables substituted, with the variables this point of the Dockerfile sees. */
    private String process(String word) {
        return ShellWord.process(word, escape, this::lookup);
    }

    private String lookup(String name) {
        if (!seenFrom) {
            return globalArgs.getOrDefault(name, Optional.empty()).orElse(null);
        }
        String value = env.get(name);
        if (value != null) {
            return value;
        }
        return args.getOrDefault(name, Optional.empty()).orElse(null);
    }

    /**
     * {@code K=V K2="v 2"} pairs, or the legacy {@code K the rest of the line} when the first word has no
     * {@code =}; keys and values still raw (quoted), for {@link #process}.
     */
    private List<String[]> nameValues(String keyword, String rest) {
        List<String> words = words(rest);
        if (words.isEmpty()) {
            throw problem(keyword + " requires at least one argument");
        }
        List<String[]> pairs = new ArrayList<>();
        if (words.get(0).indexOf('=') < 0) {
            String[] parts = rest.split("\\s+", 2);
            if (parts.length < 2) {
                throw problem(keyword + " " + parts[0] + " has no value (" + keyword + " key=value, or " + keyword
                        + " key value)");
            }
            pairs.add(parts);
            return pairs;
        }
        for (String word : words) {
            int eq = word.indexOf('=');
            if (eq < 0) {
                throw problem("syntax error - can't find = in \"" + word + "\"; must be of the form name=value");
            }
            if (eq == 0) {
                throw problem(keyword + " names can not be blank (\"" + word + "\")");
            }
            pairs.add(new String[] {word.substring(0, eq), word.substring(eq + 1)});
        }
        return pairs;
    }

    /** Docker's {@code parseWords}: splits at whitespace outside quotes, keeping quotes and escapes. */
    private List<String> words(String rest) {
        List<String> words = new ArrayList<>();
        StringBuilder word = new StringBuilder();
        boolean inWord = false;
        boolean blankOk = false;
        char quote = 0;
        for (int i = 0; i < rest.length(); i++) {
            char c = rest.charAt(i);
            if (quote != 0) {
                if (c == escape && quote != '\'' && i + 1 < rest.length()) {
                    word.append(c).append(rest.charAt(++i));
                    continue;
                }
                if (c == quote) {
                    quote = 0;
                }
                word.append(c);
                continue;
            }
            if (Character.isWhitespace(c)) {
                if (inWord && (blankOk || word.length() > 0)) {
                    words.add(word.toString());
                }
                word.setLength(0);
                inWord = false;
                blankOk = false;
                continue;
            }
            inWord = true;
            if (c == '\'' || c == '"') {
                quote = c;
                blankOk = true;
            }
            if (c == escape && i + 1 < rest.length()) {
                word.append(c).append(rest.charAt(++i));
                continue;
            }
            word.append(c);
        }
        if (quote != 0) {
            throw problem("unterminated " + (quote == '"' ? "double" : "single") + " quote in: " + rest);
        }
        if (inWord && (blankOk || word.length() > 0)) {
            words.add(word.toString());
        }
        return words;
    }

    private static void refuseHeredoc(String rest) {
        Matcher m = HEREDOC.matcher(rest);
        if (m.find()) {
            throw problem("heredocs (" + m.group() + ") are not supported; put the script in a file in the build"
                    + " context and COPY it");
        }
    }

    // --- errors --------------------------------------------------------------------------------------------

    private static IllegalArgumentException problem(String message) {
        return new IllegalArgumentException(message);
    }

    private static SandboxException error(int line, String problem, Throwable cause) {
        return new SandboxException(ErrorCode.INVALID_ARGUMENT, "Dockerfile line " + line + ": " + problem, cause);
    }

    /** Leading {@code --name[=value]} flags of an instruction, and the arguments after them. */
    private record Flags(Map<String, String> values, String rest) {
        static Flags take(String rest) {
            Map<String, String> values = new LinkedHashMap<>();
            String remaining = rest;
            while (remaining.startsWith("--")) {
                int end = 0;
                while (end < remaining.length() && !Character.isWhitespace(remaining.charAt(end))) {
                    end++;
                }
                String flag = remaining.substring(2, end);
                remaining = remaining.substring(end).stripLeading();
                if (flag.isEmpty()) {
                    break; // "--" ends the flags
                }
                int eq = flag.indexOf('=');
                values.put(eq < 0 ? flag : flag.substring(0, eq), eq < 0 ? "" : flag.substring(eq + 1));
            }
            return new Flags(values, remaining);
        }

        void refuseAll(String keyword) {
            if (!values.isEmpty()) {
                throw problem(keyword + " --" + values.keySet().iterator().next() + " is not supported");
            }
        }
    }
}
