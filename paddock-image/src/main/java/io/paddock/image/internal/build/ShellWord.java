package io.paddock.image.internal.build;

import java.util.function.Function;

/**
 * Docker's word processing for instruction arguments (BuildKit's {@code shell/lex.go}): removes quotes,
 * handles the escape character and substitutes variables, in one pass over one word.
 *
 * <ul>
 *   <li>{@code 'single quotes'} keep everything literally;</li>
 *   <li>{@code "double quotes"} keep everything but {@code $} substitutions; the escape character escapes
 *       only {@code "}, {@code $} and itself and is otherwise kept;</li>
 *   <li>outside quotes, the escape character makes the next character literal (and is dropped at the
 *       end);</li>
 *   <li>{@code $NAME}, {@code ${NAME}}, {@code ${NAME:-word}} / {@code ${NAME-word}} (default when unset
 *       or empty / unset), {@code ${NAME:+word}} / {@code ${NAME+word}} (alternative when set and not
 *       empty / set), {@code ${NAME:?message}} / {@code ${NAME?message}} (error). An unset variable is
 *       empty; a {@code $} not followed by a name is literal. Other modifiers ({@code # % /}) are
 *       refused.</li>
 * </ul>
 *
 * Errors are {@link IllegalArgumentException}s whose message the parser puts after the line number.
 */
final class ShellWord {
    private final String text;
    private final char escape;
    private final Function<String, String> lookup;
    private int pos;

    private ShellWord(String text, char escape, Function<String, String> lookup) {
        this.text = text;
        this.escape = escape;
        this.lookup = lookup;
    }

    /**
     * Processes one word.
     *
     * @param lookup a variable's value, or {@code null} when it is not set
     */
    static String process(String word, char escape, Function<String, String> lookup) {
        ShellWord w = new ShellWord(word, escape, lookup);
        return w.until(-1);
    }

    /** Reads up to {@code stop} (consumed; -1 for the end), processing quotes, escapes and substitutions. */
    private String until(int stop) {
        StringBuilder out = new StringBuilder();
        while (pos < text.length()) {
            char c = text.charAt(pos);
            if (c == stop) {
                pos++;
                return out.toString();
            }
            if (c == '\'') {
                out.append(singleQuoted());
            } else if (c == '"') {
                out.append(doubleQuoted());
            } else if (c == '$') {
                out.append(dollar());
            } else {
                pos++;
                if (c == escape) {
                    if (pos >= text.length()) {
                        break;
                    }
                    c = text.charAt(pos++);
                }
                out.append(c);
            }
        }
        if (stop != -1) {
            throw new IllegalArgumentException("syntax error: missing '" + (char) stop + "' in " + text);
        }
        return out.toString();
    }

    private String singleQuoted() {
        int end = text.indexOf('\'', pos + 1);
        if (end < 0) {
            throw new IllegalArgumentException("unexpected end of statement while looking for matching single-quote");
        }
        String literal = text.substring(pos + 1, end);
        pos = end + 1;
        return literal;
    }

    private String doubleQuoted() {
        pos++;
        StringBuilder out = new StringBuilder();
        while (pos < text.length()) {
            char c = text.charAt(pos);
            if (c == '"') {
                pos++;
                return out.toString();
            }
            if (c == '$') {
                out.append(dollar());
                continue;
            }
            pos++;
            if (c == escape && pos < text.length()) {
                char next = text.charAt(pos);
                if (next == '"' || next == '$' || next == escape) {
                    c = next;
                    pos++;
                }
            }
            out.append(c);
        }
        throw new IllegalArgumentException("unexpected end of statement while looking for matching double-quote");
    }

    private String dollar() {
        pos++;
        if (pos >= text.length() || text.charAt(pos) != '{') {
            String name = name();
            if (name.isEmpty()) {
                return "$";
            }
            String value = lookup.apply(name);
            return value == null ? "" : value;
        }
        pos++;
        if (pos >= text.length()) {
            throw new IllegalArgumentException("syntax error: missing '}' in " + text);
        }
        char first = text.charAt(pos);
        if (first == '{' || first == '}' || first == ':') {
            throw new IllegalArgumentException("syntax error: bad substitution in " + text);
        }
        String name = name();
        if (pos >= text.length()) {
            throw new IllegalArgumentException("syntax error: missing '}' in " + text);
        }
        char op = text.charAt(pos++);
        String value = lookup.apply(name);
        if (op == '}') {
            return value == null ? "" : value;
        }
        boolean emptyIsUnset = false;
        String modifier = String.valueOf(op);
        if (op == ':') {
            emptyIsUnset = true;
            if (pos >= text.length()) {
                throw new IllegalArgumentException("syntax error: missing '}' in " + text);
            }
            op = text.charAt(pos++);
            modifier += op;
        }
        if (op != '-' && op != '+' && op != '?') {
            throw new IllegalArgumentException("unsupported modifier (" + modifier + ") in substitution ${" + name
                    + modifier + "…}; only :- - :+ + :? ? are supported");
        }
        String word = until('}');
        boolean unset = value == null || (emptyIsUnset && value.isEmpty());
        switch (op) {
            case '-':
                return unset ? word : value;
            case '+':
                return unset ? "" : word;
            default:
                if (unset) {
                    throw new IllegalArgumentException(name + ": " + (word.isEmpty()
                            ? (value == null ? "is not allowed to be unset" : "is not allowed to be empty") : word));
                }
                return value;
        }
    }

    /** A variable name: letters, digits and '_'; a run of digits or one special parameter character alone. */
    private String name() {
        int start = pos;
        if (pos < text.length() && Character.isDigit(text.charAt(pos))) {
            while (pos < text.length() && Character.isDigit(text.charAt(pos))) {
                pos++;
            }
            return text.substring(start, pos);
        }
        if (pos < text.length() && "@*#?-$!".indexOf(text.charAt(pos)) >= 0) {
            pos++;
            return text.substring(start, pos);
        }
        while (pos < text.length() && (Character.isLetterOrDigit(text.charAt(pos)) || text.charAt(pos) == '_')) {
            pos++;
        }
        return text.substring(start, pos);
    }
}
