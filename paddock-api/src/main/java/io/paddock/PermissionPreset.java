package io.paddock;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * A named starting set of {@link PermissionRule}s for a workspace. A user's rules are merged after the preset's
 * (the most specific pattern wins; among equally specific ones the later rule, so a user's rule beats the
 * preset's). {@link #VIEW_ONLY} is the default.
 *
 * <p>The secrets that {@link #AGENT_SAFE} and {@link #DEVELOPMENT} hide ({@link #SECRETS}, all {@code none}):
 * {@code .env*}, private keys ({@code *.pem}, {@code *.key}, {@code *.p12}, {@code *.pfx}, {@code id_rsa*},
 * {@code id_ecdsa*}, {@code id_ed25519*}), credential stores ({@code .netrc}, {@code .git-credentials},
 * {@code credentials*}) at any depth, and every {@code secrets} directory with everything under it. They are
 * patterns on names; a secret under another name stays visible.
 */
public enum PermissionPreset {
    /** {@code **:view}: everything listed with its metadata, nothing readable. The default. */
    VIEW_ONLY("view-only", List.of("**:view")),
    /** {@code **:read}: everything readable, nothing writable. */
    READ_ONLY("read-only", List.of("**:read")),
    /**
     * For an agent exploring a codebase: everything readable, the {@link #SECRETS} absent, and two areas
     * writable: {@code out/} (results) and {@code tmp/} (scratch). A file under those areas that matches a
     * secret pattern is writable too ({@code out/**} names more literal segments than {@code **}{@code /*.pem}):
     * the write areas are the agent's own.
     */
    AGENT_SAFE("agent-safe", concat(List.of("**:read"), secretRules(), List.of("out/**:write", "tmp/**:write"))),
    /** For an agent developing in the codebase: everything writable but the {@link #SECRETS}, which are absent. */
    DEVELOPMENT("development", concat(List.of("**:write"), secretRules())),
    /** {@code **:write}: everything, secrets included. A weakening: name it only for a trusted workload. */
    FULL_ACCESS("full-access", List.of("**:write"));

    /** The patterns that {@link #AGENT_SAFE} and {@link #DEVELOPMENT} set to {@code none}. */
    public static final List<String> SECRETS = Secrets.PATTERNS;

    private final String label;
    private final List<PermissionRule> rules;

    PermissionPreset(String label, List<String> rules) {
        this.label = label;
        this.rules = rules.stream().map(PermissionRule::parse).collect(Collectors.toUnmodifiableList());
    }

    /** The preset a workspace gets when none is named. */
    public static PermissionPreset defaultPreset() {
        return VIEW_ONLY;
    }

    /** The name the CLI takes: {@code view-only}, {@code read-only}, {@code agent-safe}, ... */
    public String label() {
        return label;
    }

    /** The preset's rules, in order (a later rule wins a tie of specificity). */
    public List<PermissionRule> rules() {
        return rules;
    }

    /** Parses a preset's name ({@link #label()}, any case; {@code _} read as {@code -}). */
    public static PermissionPreset parse(String name) {
        Objects.requireNonNull(name, "name");
        String wanted = name.trim().toLowerCase(Locale.ROOT).replace('_', '-');
        for (PermissionPreset p : values()) {
            if (p.label.equals(wanted)) {
                return p;
            }
        }
        throw SandboxException.invalid("preset", "unknown preset '" + name + "' (known: "
                + Stream.of(values()).map(PermissionPreset::label).collect(Collectors.joining(", ")) + ")");
    }

    @Override
    public String toString() {
        return label;
    }

    private static List<String> secretRules() {
        return Secrets.PATTERNS.stream().map(p -> p + ":none").collect(Collectors.toList());
    }

    @SafeVarargs
    private static List<String> concat(List<String>... lists) {
        List<String> out = new ArrayList<>();
        for (List<String> l : lists) {
            out.addAll(l);
        }
        return out;
    }

    /** A holder, so that the enum's constructors can read the list (an enum's own statics come after them). */
    private static final class Secrets {
        static final List<String> PATTERNS = List.of("**/.env*", "**/*.pem", "**/*.key", "**/*.p12", "**/*.pfx",
                "**/id_rsa*", "**/id_ecdsa*", "**/id_ed25519*", "**/.netrc", "**/.git-credentials",
                "**/credentials*", "**/secrets/**");
    }
}
