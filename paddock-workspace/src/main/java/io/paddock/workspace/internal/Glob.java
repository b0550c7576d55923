package io.paddock.workspace.internal;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.regex.Pattern;

/**
 * A {@link io.paddock.PermissionRule}'s pattern compiled for matching against workspace paths (segment lists),
 * and its specificity. The pattern was checked by the rule; a trailing {@code /} reads as {@code /**}.
 *
 * <p>Matching runs the pattern as an automaton over segments (a {@code **} position may stay or be skipped), so
 * its cost is linear in the path's length times the pattern's; no backtracking blow-up.
 */
final class Glob {
    private static final String ANY = "**";

    private final List<String> segments;
    private final List<Pattern> matchers; // null for a literal segment and for '**'
    private final boolean exact;
    private final int literalSegments;
    private final int doubleStars;
    private final int literalChars;

    private Glob(List<String> segments) {
        this.segments = List.copyOf(segments);
        this.matchers = new ArrayList<>();
        int literal = 0;
        int stars = 0;
        int chars = 0;
        for (String s : segments) {
            if (s.equals(ANY)) {
                stars++;
                matchers.add(null);
            } else if (s.indexOf('*') < 0 && s.indexOf('?') < 0) {
                literal++;
                chars += s.length();
                matchers.add(null);
            } else {
                StringBuilder re = new StringBuilder();
                for (char c : s.toCharArray()) {
                    if (c == '*') {
                        re.append(".*");
                    } else if (c == '?') {
                        re.append('.');
                    } else {
                        chars++;
                        re.append(Pattern.quote(String.valueOf(c)));
                    }
                }
                matchers.add(Pattern.compile(re.toString(), Pattern.DOTALL));
            }
        }
        this.literalSegments = literal;
        this.doubleStars = stars;
        this.literalChars = chars;
        this.exact = literal == segments.size();
    }

    /** Compiles a pattern that {@link io.paddock.PermissionRule} accepted. */
    static Glob of(String pattern) {
        List<String> segs = new ArrayList<>(List.of(pattern.split("/")));
        if (pattern.endsWith("/")) {
            segs.add(ANY);
        }
        return new Glob(segs);
    }

    /** Whether the pattern matches the path itself. */
    boolean matches(List<String> path) {
        return run(path).get(segments.size());
    }

    /** Whether the pattern could match some path strictly under {@code dir} (existing or not). */
    boolean mayMatchBelow(List<String> dir) {
        BitSet states = run(dir);
        // Any live position before the end can still consume at least one more segment: a literal matches
        // itself, '*' and '?' segments match some name, '**' matches one segment.
        return states.previousSetBit(segments.size() - 1) >= 0;
    }

    /** Whether the pattern matches {@code dir} and every path under it (it ends in {@code **} and matches). */
    boolean matchesAllBelow(List<String> dir) {
        return segments.get(segments.size() - 1).equals(ANY) && matches(dir);
    }

    private BitSet run(List<String> path) {
        BitSet states = closure(bit(0));
        for (String name : path) {
            BitSet next = new BitSet();
            for (int i = states.nextSetBit(0); i >= 0 && i < segments.size(); i = states.nextSetBit(i + 1)) {
                String seg = segments.get(i);
                if (seg.equals(ANY)) {
                    next.set(i);
                } else if (matchers.get(i) == null ? seg.equals(name) : matchers.get(i).matcher(name).matches()) {
                    next.set(i + 1);
                }
            }
            states = closure(next);
            if (states.isEmpty()) {
                break;
            }
        }
        return states;
    }

    private BitSet closure(BitSet states) {
        for (int i = 0; i < segments.size(); i++) {
            if (states.get(i) && segments.get(i).equals(ANY)) {
                states.set(i + 1);
            }
        }
        return states;
    }

    private static BitSet bit(int i) {
        BitSet b = new BitSet();
        b.set(i);
        return b;
    }

    /**
     * Orders two patterns by specificity, higher first wins: (1) an exact path (no {@code *}, {@code ?},
     * {@code **} or trailing {@code /}) beats any glob; (2) more literal segments; (3) fewer {@code **}
     * segments; (4) more literal characters in the other segments. Equal on all four: a tie, which the caller
     * breaks by the rules' order.
     */
    static int compareSpecificity(Glob a, Glob b) {
        int c = Boolean.compare(a.exact, b.exact);
        if (c == 0) {
            c = Integer.compare(a.literalSegments, b.literalSegments);
        }
        if (c == 0) {
            c = Integer.compare(b.doubleStars, a.doubleStars);
        }
        if (c == 0) {
            c = Integer.compare(a.literalChars, b.literalChars);
        }
        return c;
    }

    @Override
    public String toString() {
        return String.join("/", segments);
    }
}
