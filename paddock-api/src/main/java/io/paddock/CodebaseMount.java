package io.paddock;

import io.paddock.internal.Validate;

import java.util.List;
import java.util.Objects;

/**
 * A codebase given to a sandbox: its files appear at {@code path} as the permission rules allow, and what the
 * sandbox changes there goes to a layer of its own, never to the codebase, until someone commits it
 * ({@link Codebases#commit}). See docs/WORKSPACES.md.
 *
 * @param codebase the codebase's name ({@link Codebases})
 * @param path     where it appears in the sandbox (default {@code /workspace})
 * @param preset   the rules the user's rules are merged with
 * @param rules    the user's rules, after the preset's; the most specific pattern wins
 */
public record CodebaseMount(String codebase, String path, PermissionPreset preset, List<PermissionRule> rules) {
    public static final String DEFAULT_PATH = "/workspace";
    /** The most rules one mount may carry. */
    public static final int MAX_RULES = 256;

    public CodebaseMount {
        Validate.name("codebase", codebase);
        MountPaths.check("codebase", path);
        Objects.requireNonNull(preset, "preset");
        rules = List.copyOf(rules);
        if (rules.size() > MAX_RULES) {
            throw SandboxException.invalid("codebase", "at most " + MAX_RULES + " permission rules, got " + rules.size());
        }
    }

    /** Codebase {@code name} at {@code /workspace} under the default preset ({@code view-only}) and no rules. */
    public static CodebaseMount of(String name) {
        return new CodebaseMount(name, DEFAULT_PATH, PermissionPreset.defaultPreset(), List.of());
    }

    /**
     * Parses the CLI's {@code NAME[:/path]}.
     *
     * @throws SandboxException INVALID_ARGUMENT naming what is wrong
     */
    public static CodebaseMount parse(String text, PermissionPreset preset, List<PermissionRule> rules) {
        Objects.requireNonNull(text, "codebase");
        int colon = text.indexOf(':');
        return new CodebaseMount(colon < 0 ? text : text.substring(0, colon), colon < 0 ? DEFAULT_PATH : text.substring(colon + 1),
                preset, rules);
    }
}
