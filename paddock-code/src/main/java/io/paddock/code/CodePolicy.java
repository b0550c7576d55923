package io.paddock.code;

import io.paddock.SandboxException;
import io.paddock.code.internal.PolicyPresets;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * An optional pre-run check of code against pattern rules and import rules, each with a severity; code
 * with a violation at or above the policy's threshold is refused with a {@link CodePolicyException}
 * listing the violations. Named presets: {@code permissive}, {@code standard}, {@code strict}.
 *
 * <p><b>This is a convenience, not a security boundary.</b> It reads source text with regular
 * expressions; code that wants to get past it can (string building, {@code getattr}, encodings, a
 * subprocess, a compiled binary). It is useful to stop an assistant's obvious mistakes early and to
 * explain why; it protects nothing. The sandbox is the boundary: isolation, no network, limits.
 *
 * <p>Immutable and thread-safe.
 */
public final class CodePolicy {

    public enum Severity { LOW, MEDIUM, HIGH, CRITICAL }

    /**
     * One rule.
     *
     * @param id          a short name shown in violations
     * @param kind        {@link Kind#PATTERN}: a regular expression (multi-line mode) over the code with
     *                    comment lines blanked; {@link Kind#IMPORT}: a module name, matched against the
     *                    modules the language's import patterns find (also its submodules)
     * @param expression  the regular expression or the module name
     * @param description what it guards against, in words
     * @param severity    how bad a match is
     * @param languages   the languages it applies to (canonical names); empty means all
     */
    public record Rule(String id, Kind kind, String expression, String description, Severity severity,
                       Set<String> languages) {
        public enum Kind { PATTERN, IMPORT }

        public Rule {
            Objects.requireNonNull(id, "id");
            Objects.requireNonNull(kind, "kind");
            Objects.requireNonNull(expression, "expression");
            Objects.requireNonNull(description, "description");
            Objects.requireNonNull(severity, "severity");
            languages = Set.copyOf(languages);
            if (kind == Kind.PATTERN) {
                try {
                    Pattern.compile(expression);
                } catch (PatternSyntaxException e) {
                    throw SandboxException.invalid("policy.rule." + id, "bad regular expression: " + e.getDescription());
                }
            }
        }

        boolean appliesTo(Language language) {
            return languages.isEmpty() || languages.contains(language.name());
        }
    }

    /**
     * One rule that matched.
     *
     * @param rule        the rule's id
     * @param description the rule's description
     * @param severity    the rule's severity
     * @param line        the 1-based line of the match
     * @param excerpt     the matched text (at most 120 characters)
     */
    public record Violation(String rule, String description, Severity severity, int line, String excerpt) {
        @Override
        public String toString() {
            return severity + " " + rule + " (line " + line + ": " + excerpt + "): " + description;
        }
    }

    private final String name;
    private final Severity threshold;
    private final List<Rule> rules;
    private final List<Pattern> compiled;

    private CodePolicy(Builder b) {
        this.name = b.name;
        this.threshold = b.threshold;
        this.rules = List.copyOf(b.rules);
        List<Pattern> c = new ArrayList<>();
        for (Rule r : rules) {
            c.add(r.kind() == Rule.Kind.PATTERN ? Pattern.compile(r.expression(), Pattern.MULTILINE) : null);
        }
        this.compiled = c;
    }

    /** A named preset: {@code permissive} (no rules), {@code standard} or {@code strict}. */
    public static CodePolicy preset(String name) {
        return PolicyPresets.get(name);
    }

    public static List<String> presets() {
        return PolicyPresets.names();
    }

    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        Builder b = new Builder();
        b.name = name;
        b.threshold = threshold;
        b.rules.addAll(rules);
        return b;
    }

    public String name() {
        return name;
    }

    /** Violations at or above this severity refuse the code. */
    public Severity threshold() {
        return threshold;
    }

    public List<Rule> rules() {
        return rules;
    }

    /** The violations at or above the threshold in {@code code}; empty means it passes. */
    public List<Violation> check(Language language, String code) {
        String text = blankComments(code, language.lineComment());
        List<Violation> out = new ArrayList<>();
        for (int i = 0; i < rules.size(); i++) {
            Rule rule = rules.get(i);
            if (rule.severity().compareTo(threshold) < 0 || !rule.appliesTo(language)) {
                continue;
            }
            if (rule.kind() == Rule.Kind.PATTERN) {
                Matcher m = compiled.get(i).matcher(text);
                if (m.find()) {
                    out.add(violation(rule, text, m.start(), m.group()));
                }
            } else {
                for (String p : language.imports()) {
                    Matcher m = Pattern.compile(p, Pattern.MULTILINE).matcher(text);
                    boolean hit = false;
                    while (m.find() && !hit) {
                        for (String module : modules(m.group("modules"))) {
                            if (importMatches(rule.expression(), module)) {
                                out.add(violation(rule, text, m.start(), m.group().trim()));
                                hit = true;
                                break;
                            }
                        }
                    }
                    if (hit) {
                        break;
                    }
                }
            }
        }
        return out;
    }

    /** Refuses {@code code} with a {@link CodePolicyException} when {@link #check} finds violations. */
    public void enforce(Language language, String code) {
        List<Violation> v = check(language, code);
        if (!v.isEmpty()) {
            throw new CodePolicyException(name, language.name(), v);
        }
    }

    private static List<String> modules(String group) {
        List<String> out = new ArrayList<>();
        for (String part : group.split(",")) {
            String m = part.trim().split("\\s+")[0];
            if (!m.isEmpty()) {
                out.add(m);
            }
        }
        return out;
    }

    private static boolean importMatches(String rule, String module) {
        String m = module.startsWith("node:") ? module.substring(5) : module;
        return m.equals(rule) || m.startsWith(rule + ".") || m.startsWith(rule + "/") || m.startsWith(rule + "::");
    }

    private static Violation violation(Rule rule, String text, int at, String match) {
        int line = 1;
        for (int i = 0; i < at && i < text.length(); i++) {
            if (text.charAt(i) == '\n') {
                line++;
            }
        }
        String excerpt = match.replace('\n', ' ');
        if (excerpt.length() > 120) {
            excerpt = excerpt.substring(0, 120) + "…";
        }
        return new Violation(rule.id(), rule.description(), rule.severity(), line, excerpt);
    }

    /** Blanks lines that are only a comment, keeping line numbers. */
    private static String blankComments(String code, String prefix) {
        if (prefix.isEmpty()) {
            return code;
        }
        String[] lines = code.split("\n", -1);
        StringBuilder sb = new StringBuilder(code.length());
        for (int i = 0; i < lines.length; i++) {
            if (i > 0) {
                sb.append('\n');
            }
            if (!lines[i].stripLeading().startsWith(prefix)) {
                sb.append(lines[i]);
            }
        }
        return sb.toString();
    }

    @Override
    public String toString() {
        return "CodePolicy[" + name + ", threshold " + threshold + ", " + rules.size() + " rules]";
    }

    public static final class Builder {
        private String name = "custom";
        private Severity threshold = Severity.HIGH;
        private final List<Rule> rules = new ArrayList<>();

        private Builder() {
        }

        public Builder name(String name) {
            this.name = Objects.requireNonNull(name, "name");
            return this;
        }

        public Builder threshold(Severity threshold) {
            this.threshold = Objects.requireNonNull(threshold, "threshold");
            return this;
        }

        public Builder rule(Rule rule) {
            rules.add(Objects.requireNonNull(rule, "rule"));
            return this;
        }

        /** Adds a pattern rule; {@code languages} empty means every language. */
        public Builder pattern(String id, String regex, String description, Severity severity, String... languages) {
            return rule(new Rule(id, Rule.Kind.PATTERN, regex, description, severity, Set.of(lower(languages))));
        }

        /** Adds an import rule for {@code module} (and its submodules); {@code languages} empty means every language. */
        public Builder restrictImport(String module, String description, Severity severity, String... languages) {
            return rule(new Rule("import:" + module, Rule.Kind.IMPORT, module, description, severity, Set.of(lower(languages))));
        }

        private static String[] lower(String[] in) {
            String[] out = new String[in.length];
            for (int i = 0; i < in.length; i++) {
                out[i] = in[i].toLowerCase(Locale.ROOT);
            }
            return out;
        }

        public CodePolicy build() {
            return new CodePolicy(this);
        }
    }
}
