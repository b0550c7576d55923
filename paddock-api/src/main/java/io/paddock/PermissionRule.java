package io.paddock;

import java.util.Objects;

/**
 * One permission rule of a workspace: a path pattern and the level it grants. Immutable; the pattern is checked
 * on construction.
 *
 * <p>A pattern is a path relative to the workspace root, segments separated by {@code /}:
 * <ul>
 *   <li>a literal path names exactly that path ({@code docs/README.md});</li>
 *   <li>{@code *} matches any characters within one segment, {@code ?} exactly one ({@code docs/*.md},
 *       {@code .env*}); both match a leading dot;</li>
 *   <li>{@code **}, only as a whole segment, matches any number of segments, zero included: {@code docs/**}
 *       matches {@code docs} itself and everything under it, {@code **}{@code /*.pem} a {@code .pem} file at
 *       any depth, the top included;</li>
 *   <li>a trailing {@code /} means the directory and everything under it: {@code docs/} is {@code docs/**}.</li>
 * </ul>
 * Refused, with an error naming the rule: an empty or absolute pattern, empty, {@code .} or {@code ..}
 * segments, a NUL, more than {@value #MAX_PATTERN_LENGTH} characters, {@code **} inside a segment, and the
 * characters {@code [ ] { } \} (character classes, braces and escapes are not supported; refusing them keeps
 * {@code *.{pem,key}} from silently matching nothing).
 *
 * <p>Which rule decides a path when several match is the workspace's precedence (docs/WORKSPACES.md,
 * "Permission rules"): the most specific pattern wins.
 *
 * @param pattern the pattern as written
 * @param level the level it grants
 */
public record PermissionRule(String pattern, Permission level) {
    /** The longest pattern accepted, in characters. */
    public static final int MAX_PATTERN_LENGTH = 4096;

    public PermissionRule {
        Objects.requireNonNull(pattern, "pattern");
        Objects.requireNonNull(level, "level");
        check(pattern, pattern + ":" + level.label());
    }

    /** Parses {@code PATTERN:LEVEL}, as the CLI's {@code --permission 'docs/**:view'}; the last {@code :} splits. */
    public static PermissionRule parse(String rule) {
        Objects.requireNonNull(rule, "rule");
        int colon = rule.lastIndexOf(':');
        if (colon < 0) {
            throw invalid(rule, "expected PATTERN:LEVEL, such as 'docs/**:view'");
        }
        String levelText = rule.substring(colon + 1);
        Permission level;
        try {
            level = Permission.parse(levelText);
        } catch (SandboxException e) {
            throw invalid(rule, "unknown level '" + levelText + "' (none, view, read, write)");
        }
        String pattern = rule.substring(0, colon);
        check(pattern, rule);
        return new PermissionRule(pattern, level);
    }

    /** The rule as {@link #parse} reads it: {@code pattern:level}. */
    @Override
    public String toString() {
        return pattern + ":" + level.label();
    }

    private static void check(String pattern, String rule) {
        if (pattern.isEmpty()) {
            throw invalid(rule, "the pattern is empty (use '**' for everything)");
        }
        if (pattern.length() > MAX_PATTERN_LENGTH) {
            throw invalid(rule, "the pattern is longer than " + MAX_PATTERN_LENGTH + " characters");
        }
        if (pattern.indexOf('\0') >= 0) {
            throw invalid(rule, "the pattern contains a NUL character");
        }
        if (pattern.startsWith("/")) {
            throw invalid(rule, "the pattern must be relative to the workspace root (no leading '/')");
        }
        for (char c : new char[] {'[', ']', '{', '}', '\\'}) {
            if (pattern.indexOf(c) >= 0) {
                throw invalid(rule, "'" + c + "' is not supported (only '*', '**', '?' and literal names)");
            }
        }
        String body = pattern.endsWith("/") ? pattern.substring(0, pattern.length() - 1) : pattern;
        for (String segment : body.split("/", -1)) {
            if (segment.isEmpty()) {
                throw invalid(rule, "the pattern has an empty segment ('//')");
            }
            if (segment.equals(".") || segment.equals("..")) {
                throw invalid(rule, "'" + segment + "' segments are not allowed");
            }
            if (segment.contains("**") && !segment.equals("**")) {
                throw invalid(rule, "'**' must be a whole segment ('a/**/b'), not part of '" + segment + "'");
            }
        }
    }

    private static SandboxException invalid(String rule, String problem) {
        return SandboxException.invalid("permission", "rule '" + rule + "': " + problem);
    }
}
