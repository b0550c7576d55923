package io.paddock.image.internal.build;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The exec ("JSON") form of Dockerfile arguments: {@code ["a", "b"]}. As in Docker, text that is not a JSON
 * array is not an error: the instruction is then in shell form; but a JSON array with a non-string element
 * is ({@link IllegalArgumentException}).
 */
final class JsonArray {
    private final String text;
    private int pos;

    private JsonArray(String text) {
        this.text = text;
    }

    /** The strings of {@code text} if it is exactly a JSON array of strings; empty if it is not JSON. */
    static Optional<List<String>> parse(String text) {
        String t = text.strip();
        if (!t.startsWith("[")) {
            return Optional.empty();
        }
        return new JsonArray(t).array();
    }

    private Optional<List<String>> array() {
        List<String> out = new ArrayList<>();
        boolean nonString = false;
        pos = 1;
        space();
        if (peek() == ']') {
            pos++;
            return end(out, false);
        }
        while (true) {
            space();
            if (peek() == '"') {
                String s = string();
                if (s == null) {
                    return Optional.empty();
                }
                out.add(s);
            } else if (scalar()) {
                nonString = true;
            } else {
                return Optional.empty();
            }
            space();
            char c = peek();
            pos++;
            if (c == ']') {
                return end(out, nonString);
            }
            if (c != ',') {
                return Optional.empty();
            }
        }
    }

    private Optional<List<String>> end(List<String> out, boolean nonString) {
        space();
        if (pos != text.length()) {
            return Optional.empty();
        }
        if (nonString) {
            throw new IllegalArgumentException("when using JSON array syntax, arrays must be comprised of strings only");
        }
        return Optional.of(List.copyOf(out));
    }

    /** A JSON number, true, false or null. */
    private boolean scalar() {
        for (String word : List.of("true", "false", "null")) {
            if (text.startsWith(word, pos)) {
                pos += word.length();
                return true;
            }
        }
        int start = pos;
        while (pos < text.length() && "+-0123456789.eE".indexOf(text.charAt(pos)) >= 0) {
            pos++;
        }
        if (pos == start) {
            return false;
        }
        try {
            Double.parseDouble(text.substring(start, pos));
            return true;
        } catch (NumberFormatException e) {
            return false;
        }
    }

    /** A JSON string at {@code pos} (on its opening quote); null if malformed. */
    private String string() {
        StringBuilder out = new StringBuilder();
        pos++;
        while (pos < text.length()) {
            char c = text.charAt(pos++);
            if (c == '"') {
                return out.toString();
            }
            if (c < 0x20) {
                return null;
            }
            if (c != '\\') {
                out.append(c);
                continue;
            }
            if (pos >= text.length()) {
                return null;
            }
            char e = text.charAt(pos++);
            switch (e) {
                case '"', '\\', '/' -> out.append(e);
                case 'b' -> out.append('\b');
                case 'f' -> out.append('\f');
                case 'n' -> out.append('\n');
                case 'r' -> out.append('\r');
                case 't' -> out.append('\t');
                case 'u' -> {
                    if (pos + 4 > text.length()) {
                        return null;
                    }
                    try {
                        out.append((char) Integer.parseInt(text.substring(pos, pos + 4), 16));
                    } catch (NumberFormatException ex) {
                        return null;
                    }
                    pos += 4;
                }
                default -> {
                    return null;
                }
            }
        }
        return null;
    }

    private void space() {
        while (pos < text.length() && (text.charAt(pos) == ' ' || text.charAt(pos) == '\t'
                || text.charAt(pos) == '\n' || text.charAt(pos) == '\r')) {
            pos++;
        }
    }

    private char peek() {
        return pos < text.length() ? text.charAt(pos) : '\0';
    }
}
