package io.paddock.image.internal.build;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * A {@code .dockerignore} file: which paths of a build context are left out of it, with Docker's semantics
 * ({@code moby/patternmatcher} and its {@code ignorefile} reader).
 *
 * <ul>
 *   <li>one pattern a line; lines starting with {@code #} are comments; surrounding whitespace and blank
 *       lines are ignored;</li>
 *   <li>patterns are {@link Glob} patterns with {@code **}, cleaned as Go's {@code filepath.Clean} does
 *       ({@code ./a/} is {@code a}) with a leading {@code /} removed: they are always relative to the
 *       context's root;</li>
 *   <li>a pattern matches a path when it matches the path itself or any of its parent directories, so
 *       {@code node_modules} leaves out everything under it;</li>
 *   <li>{@code !pattern} is an exception: it puts matching paths back in; the last pattern that matches a
 *       path decides.</li>
 * </ul>
 *
 * Immutable and thread-safe.
 */
public final class DockerIgnore {
    /** No patterns: nothing is ignored. */
    public static final DockerIgnore NONE = new DockerIgnore(List.of());

    private final List<Rule> rules;

    private DockerIgnore(List<Rule> rules) {
        this.rules = rules;
    }

    /** One cleaned pattern; {@code exception} for a {@code !} line. */
    private record Rule(String pattern, boolean exception, Pattern regex) {
    }

    /** Parses the text of a {@code .dockerignore} file; a malformed pattern is INVALID_ARGUMENT naming its line. */
    public static DockerIgnore parse(String text) {
        List<Rule> rules = new ArrayList<>();
        String[] lines = text.split("\n", -1);
        for (int n = 0; n < lines.length; n++) {
            String line = lines[n];
            if (n == 0 && line.startsWith("\uFEFF")) {
                line = line.substring(1);
            }
            if (line.startsWith("#")) {
                continue;
            }
            String pattern = line.strip();
            if (pattern.isEmpty()) {
                continue;
            }
            boolean exception = pattern.startsWith("!");
            if (exception) {
                pattern = pattern.substring(1).strip();
                if (pattern.isEmpty()) {
                    throw SandboxException.invalid(".dockerignore line " + (n + 1), "illegal exclusion pattern: \"!\"");
                }
            }
            pattern = clean(pattern);
            if (pattern.length() > 1 && pattern.startsWith("/")) {
                pattern = pattern.substring(1);
            }
            try {
                rules.add(new Rule(pattern, exception, Glob.path(pattern)));
            } catch (IllegalArgumentException e) {
                throw SandboxException.invalid(".dockerignore line " + (n + 1), e.getMessage());
            }
        }
        return new DockerIgnore(List.copyOf(rules));
    }

    /** The context's {@code .dockerignore}, or {@link #NONE} when it has none. */
    public static DockerIgnore read(Path contextDir) {
        Path file = contextDir.resolve(".dockerignore");
        try {
            return parse(Files.readString(file, StandardCharsets.UTF_8));
        } catch (NoSuchFileException e) {
            return NONE;
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INVALID_ARGUMENT, "cannot read " + file + ": " + e, e);
        }
    }

    /**
     * Whether the context path {@code relativePath} ({@code /}-separated, relative to the context's root,
     * such as {@code src/app.py}) is left out of the context.
     */
    public boolean ignored(String relativePath) {
        String path = clean(relativePath);
        while (path.startsWith("/")) {
            path = path.substring(1);
        }
        if (path.isEmpty() || path.equals(".")) {
            return false;
        }
        boolean ignored = false;
        for (Rule rule : rules) {
            if (rule.exception() != ignored) {
                continue; // cannot change the outcome
            }
            if (matchesOrParentMatches(rule.regex(), path)) {
                ignored = !rule.exception();
            }
        }
        return ignored;
    }

    /**
     * Whether some pattern is an exception ({@code !}): then an ignored directory may still hold paths that
     * are not ignored, and a walk must look inside it.
     */
    public boolean hasExceptions() {
        return rules.stream().anyMatch(Rule::exception);
    }

    /** The cleaned patterns in order, exceptions with their {@code !}. */
    public List<String> patterns() {
        return rules.stream().map(r -> (r.exception() ? "!" : "") + r.pattern()).toList();
    }

    private static boolean matchesOrParentMatches(Pattern regex, String path) {
        if (regex.matcher(path).matches()) {
            return true;
        }
        for (int slash = path.indexOf('/'); slash >= 0; slash = path.indexOf('/', slash + 1)) {
            if (regex.matcher(path.substring(0, slash)).matches()) {
                return true;
            }
        }
        return false;
    }

    /** Go's {@code filepath.Clean} for {@code /}-separated paths. */
    static String clean(String path) {
        boolean absolute = path.startsWith("/");
        List<String> parts = new ArrayList<>();
        for (String part : path.split("/")) {
            if (part.isEmpty() || part.equals(".")) {
                continue;
            }
            if (part.equals("..")) {
                if (!parts.isEmpty() && !parts.get(parts.size() - 1).equals("..")) {
                    parts.remove(parts.size() - 1);
                    continue;
                }
                if (absolute) {
                    continue;
                }
            }
            parts.add(part);
        }
        String joined = String.join("/", parts);
        if (absolute) {
            return "/" + joined;
        }
        return joined.isEmpty() ? "." : joined;
    }

    @Override
    public String toString() {
        return "DockerIgnore" + patterns();
    }
}
