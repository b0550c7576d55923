package io.paddock.internal;

/**
 * Names that a sandbox or a tenant chose (paths, artifact names), made safe to print for a person: a name that
 * could forge a line or rewrite the terminal (a newline, CR, ESC and every other control character, Unicode
 * format characters such as bidi overrides, line separators, lone surrogates, and U+FFFD, which stands for bytes
 * that were not UTF-8) is printed quoted as {@code $'…'} with escapes, as GNU {@code ls} does; any other name is
 * printed as it is. JSON output needs none of this: its strings are escaped already.
 */
public final class Printable {
    private Printable() {
    }

    /** {@code name} as is if it is plain, else quoted with escapes. */
    public static String name(String name) {
        if (name == null) {
            return "-";
        }
        boolean plain = true;
        for (int i = 0; i < name.length() && plain; ) {
            int c = name.codePointAt(i);
            plain = !unsafe(c) && c != '\\' && c != '\'';
            i += Character.charCount(c);
        }
        if (plain) {
            return name;
        }
        StringBuilder s = new StringBuilder("$'");
        for (int i = 0; i < name.length(); ) {
            int c = name.codePointAt(i);
            i += Character.charCount(c);
            switch (c) {
                case '\n' -> s.append("\\n");
                case '\r' -> s.append("\\r");
                case '\t' -> s.append("\\t");
                case 0x1b -> s.append("\\e");
                case '\\' -> s.append("\\\\");
                case '\'' -> s.append("\\'");
                default -> {
                    if (c < 0x100 && unsafe(c)) {
                        s.append(String.format("\\x%02X", c));
                    } else if (unsafe(c)) {
                        s.append(String.format(c > 0xFFFF ? "\\U%08X" : "\\u%04X", c));
                    } else {
                        s.appendCodePoint(c);
                    }
                }
            }
        }
        return s.append('\'').toString();
    }

    /**
     * A message meant for a person (an error's text) with its control characters escaped, newlines and tabs
     * kept: names quoted inside it cannot move the cursor or rewrite what was printed before.
     */
    public static String text(String text) {
        if (text == null) {
            return "";
        }
        StringBuilder s = new StringBuilder(text.length());
        for (int i = 0; i < text.length(); ) {
            int c = text.codePointAt(i);
            i += Character.charCount(c);
            if (c == '\n' || c == '\t' || !unsafe(c) || c == 0xFFFD) {
                s.appendCodePoint(c);
            } else {
                s.append(c > 0xFFFF ? String.format("\\U%08X", c) : String.format(c < 0x100 ? "\\x%02X" : "\\u%04X", c));
            }
        }
        return s.toString();
    }

    /**
     * A one-line field meant for a person (a reason, a detail) that may hold a name: as {@link #text}, with
     * newlines and tabs escaped too, so it stays one line.
     */
    public static String line(String text) {
        return text(text).replace("\n", "\\n").replace("\t", "\\t");
    }

    private static boolean unsafe(int c) {
        return switch (Character.getType(c)) {
            case Character.CONTROL, Character.FORMAT, Character.LINE_SEPARATOR, Character.PARAGRAPH_SEPARATOR,
                    Character.SURROGATE, Character.UNASSIGNED, Character.PRIVATE_USE -> true;
            default -> c == 0xFFFD;
        };
    }
}
