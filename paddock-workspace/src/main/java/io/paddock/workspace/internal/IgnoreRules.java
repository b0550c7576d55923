package io.paddock.workspace.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The patterns of one ignore file ({@code .gitignore}, {@code .sandboxignore}) or of a list given by the user,
 * in a subset of gitignore's syntax, relative to the directory they apply from. Immutable.
 *
 * <p>Supported: blank lines and {@code #} comments; {@code !} negation (the last matching pattern decides,
 * and, as in git, a file under an ignored directory cannot be re-included since the walk never enters the
 * directory); a trailing {@code /} (directories only); a pattern with a {@code /} at its start or middle is
 * anchored to the file's directory, one without matches a name at any depth; {@code *} and {@code ?} (not
 * {@code /}); {@code **} as {@code **}{@code /x} (any depth), {@code x/**} (everything inside) and
 * {@code x/**}{@code /y} (zero or more directories); {@code [abc]}, {@code [a-z]} and {@code [!a]} classes;
 * a leading {@code \} escaping {@code #} or {@code !}.
 *
 * <p>Not supported: trailing spaces escaped with {@code \} (trailing whitespace is always trimmed), other
 * backslash escapes, {@code [[:alpha:]]} classes, {@code .git/info/exclude} and {@code core.excludesFile}.
 */
final class IgnoreRules {
    private record Line(Pattern regex, boolean negated, boolean directoryOnly) {
    }

    private final List<Line> lines;

    private IgnoreRules(List<Line> lines) {
        this.lines = List.copyOf(lines);
    }

    static final IgnoreRules EMPTY = new IgnoreRules(List.of());

    /** Parses an ignore file's lines. */
    static IgnoreRules parse(List<String> text) {
        List<Line> out = new ArrayList<>();
        for (String raw : text) {
            String line = raw.strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            boolean negated = line.startsWith("!");
            if (negated) {
                line = line.substring(1);
            } else if (line.startsWith("\\#") || line.startsWith("\\!")) {
                line = line.substring(1);
            }
            boolean dirOnly = line.endsWith("/");
            if (dirOnly) {
                line = line.substring(0, line.length() - 1);
            }
            if (line.isEmpty()) {
                continue;
            }
            boolean anchored = line.contains("/");
            if (line.startsWith("/")) {
                line = line.substring(1);
            }
            String re = (anchored ? "" : "(?:.*/)?") + translate(line);
            out.add(new Line(Pattern.compile(re, Pattern.DOTALL), negated, dirOnly));
        }
        return new IgnoreRules(out);
    }

    /**
     * Whether these rules decide the path (relative to their directory): {@code TRUE} ignored, {@code FALSE}
     * re-included by a negation, {@code null} no pattern matched.
     */
    Boolean decide(String relativePath, boolean directory) {
        Boolean result = null;
        for (Line l : lines) {
            if ((!l.directoryOnly() || directory) && l.regex().matcher(relativePath).matches()) {
                result = !l.negated();
            }
        }
        return result;
    }

    private static String translate(String glob) {
        StringBuilder re = new StringBuilder();
        int i = 0;
        while (i < glob.length()) {
            char c = glob.charAt(i);
            if (glob.startsWith("**/", i) && (i == 0 || glob.charAt(i - 1) == '/')) {
                re.append("(?:.*/)?");
                i += 3;
            } else if (glob.startsWith("/**", i) && i + 3 == glob.length()) {
                re.append("/.*");
                i += 3;
            } else if (glob.startsWith("**", i)) {
                re.append("[^/]*"); // '**' not as a whole segment is an ordinary '*'
                i += 2;
            } else if (c == '*') {
                re.append("[^/]*");
                i++;
            } else if (c == '?') {
                re.append("[^/]");
                i++;
            } else if (c == '[') {
                int close = glob.indexOf(']', i + 2);
                if (close < 0) {
                    re.append("\\[");
                    i++;
                } else {
                    String body = glob.substring(i + 1, close);
                    if (body.startsWith("!")) {
                        body = "^" + body.substring(1);
                    }
                    // a class never matches '/'
                    re.append("(?:(?!/)[").append(body.replace("\\", "\\\\").replace("[", "\\[")).append("])");
                    i = close + 1;
                }
            } else {
                re.append(Pattern.quote(String.valueOf(c)));
                i++;
            }
        }
        return re.toString();
    }
}
