package io.paddock.image.internal.build;

import java.util.regex.Pattern;

/**
 * Go's {@code filepath.Match} patterns, which Docker uses for {@code COPY} wildcards and (with {@code **})
 * for {@code .dockerignore}, translated to Java regular expressions over {@code /}-separated paths.
 *
 * <ul>
 *   <li>{@code *}: any run of characters other than {@code /}; {@code ?}: one such character;</li>
 *   <li>{@code [abc]}, {@code [a-z]}, {@code [^a-z]}: one character (never {@code /}) in or not in the
 *       class;</li>
 *   <li>{@code \c}: the character {@code c} literally;</li>
 *   <li>only in {@code .dockerignore} patterns: {@code **} any number of directories, including none
 *       ({@code **}{@code /x} matches {@code x} and {@code a/b/x}); a trailing {@code **} anything.</li>
 * </ul>
 *
 * A malformed class ({@code [} unclosed, empty, or a range missing an end) is an
 * {@link IllegalArgumentException}, as Go's {@code ErrBadPattern}.
 */
final class Glob {
    private Glob() {
    }

    /** Whether {@code s} has an unescaped wildcard ({@code * ? [}) and so must be matched, not looked up. */
    static boolean hasWildcards(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\\') {
                i++;
            } else if (c == '*' || c == '?' || c == '[') {
                return true;
            }
        }
        return false;
    }

    /** A pattern for one path component, as {@code filepath.Match} reads it ({@code **} is {@code *}). */
    static Pattern component(String pattern) {
        return Pattern.compile(translate(pattern, false), Pattern.DOTALL);
    }

    /** A {@code .dockerignore} pattern over a whole relative path, with {@code **}. */
    static Pattern path(String pattern) {
        return Pattern.compile(translate(pattern, true), Pattern.DOTALL);
    }

    private static String translate(String pattern, boolean doubleStar) {
        StringBuilder re = new StringBuilder();
        int i = 0;
        while (i < pattern.length()) {
            char c = pattern.charAt(i++);
            switch (c) {
                case '*' -> {
                    if (doubleStar && i < pattern.length() && pattern.charAt(i) == '*') {
                        i++;
                        if (i < pattern.length() && pattern.charAt(i) == '/') {
                            i++;
                        }
                        re.append(i >= pattern.length() ? ".*" : "(?:.*/)?");
                    } else {
                        re.append("[^/]*");
                    }
                }
                case '?' -> re.append("[^/]");
                case '[' -> i = charClass(pattern, i, re);
                case '\\' -> {
                    if (i < pattern.length()) {
                        literal(re, pattern.charAt(i++));
                    } else {
                        literal(re, '\\');
                    }
                }
                default -> literal(re, c);
            }
        }
        return re.toString();
    }

    /** Translates the class starting after '[' at {@code i}; returns the index after its ']'. */
    private static int charClass(String pattern, int i, StringBuilder re) {
        boolean negated = i < pattern.length() && pattern.charAt(i) == '^';
        if (negated) {
            i++;
        }
        StringBuilder ranges = new StringBuilder();
        int count = 0;
        while (true) {
            if (i >= pattern.length()) {
                throw bad(pattern);
            }
            if (pattern.charAt(i) == ']' && count > 0) {
                i++;
                break;
            }
            int[] lo = classChar(pattern, i);
            i = lo[1];
            ranges.append(String.format("\\x{%x}", lo[0]));
            if (i < pattern.length() && pattern.charAt(i) == '-') {
                int[] hi = classChar(pattern, i + 1);
                i = hi[1];
                if (hi[0] < lo[0]) {
                    throw bad(pattern);
                }
                ranges.append('-').append(String.format("\\x{%x}", hi[0]));
            }
            count++;
        }
        re.append(negated ? "[^" + ranges + "/]" : "[" + ranges + "&&[^/]]");
        return i;
    }

    /** One (possibly escaped) character of a class at {@code i}: {character, next index}. */
    private static int[] classChar(String pattern, int i) {
        if (i >= pattern.length()) {
            throw bad(pattern);
        }
        char c = pattern.charAt(i);
        if (c == '-' || c == ']') {
            throw bad(pattern);
        }
        if (c == '\\') {
            if (i + 1 >= pattern.length()) {
                throw bad(pattern);
            }
            return new int[] {pattern.charAt(i + 1), i + 2};
        }
        return new int[] {c, i + 1};
    }

    private static void literal(StringBuilder re, char c) {
        if (Character.isLetterOrDigit(c) || c == '/' || c > 0x7f) {
            re.append(c);
        } else {
            re.append('\\').append(c);
        }
    }

    private static IllegalArgumentException bad(String pattern) {
        return new IllegalArgumentException("bad pattern '" + pattern + "' (a [...] class is not closed or malformed)");
    }
}
