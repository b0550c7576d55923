package io.paddock.image.internal.registry;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * One challenge of a {@code WWW-Authenticate} header (RFC 9110 §11.6.1): a scheme such as {@code bearer}
 * (lowercased) and its parameters ({@code realm}, {@code service}, {@code scope}; names lowercased, quoted
 * values unescaped). Parsing is lenient: what cannot be read is skipped rather than refused, since a
 * malformed challenge only means the client cannot authenticate.
 */
record AuthChallenge(String scheme, Map<String, String> params) {
    AuthChallenge {
        params = Map.copyOf(params);
    }

    Optional<String> param(String name) {
        return Optional.ofNullable(params.get(name));
    }

    /** All challenges of all the given header values, in order. */
    static List<AuthChallenge> parse(List<String> headerValues) {
        List<AuthChallenge> out = new ArrayList<>();
        for (String h : headerValues) {
            new Parser(h).parseInto(out);
        }
        return out;
    }

    private static final class Parser {
        private final String s;
        private int pos;

        Parser(String s) {
            this.s = s;
        }

        void parseInto(List<AuthChallenge> out) {
            while (true) {
                skip(" \t,");
                String scheme = token();
                if (scheme.isEmpty()) {
                    return;
                }
                Map<String, String> params = new LinkedHashMap<>();
                while (true) {
                    skip(" \t,");
                    int mark = pos;
                    String name = token();
                    skip(" \t");
                    if (name.isEmpty() || !peek('=')) {
                        pos = mark; // the next challenge's scheme, or the end
                        break;
                    }
                    pos++;
                    skip(" \t");
                    params.put(name.toLowerCase(Locale.ROOT), peek('"') ? quoted() : token());
                }
                out.add(new AuthChallenge(scheme.toLowerCase(Locale.ROOT), params));
                if (pos >= s.length()) {
                    return;
                }
            }
        }

        private String token() {
            int start = pos;
            while (pos < s.length() && " \t,=\"".indexOf(s.charAt(pos)) < 0) {
                pos++;
            }
            return s.substring(start, pos);
        }

        private String quoted() {
            StringBuilder b = new StringBuilder();
            pos++; // opening quote
            while (pos < s.length()) {
                char c = s.charAt(pos++);
                if (c == '"') {
                    break;
                }
                if (c == '\\' && pos < s.length()) {
                    c = s.charAt(pos++);
                }
                b.append(c);
            }
            return b.toString();
        }

        private boolean peek(char c) {
            return pos < s.length() && s.charAt(pos) == c;
        }

        private void skip(String chars) {
            while (pos < s.length() && chars.indexOf(s.charAt(pos)) >= 0) {
                pos++;
            }
        }
    }
}
