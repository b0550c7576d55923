package io.paddock;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PermissionRuleTest {
    @Test
    void levelsParseAndAreOrdered() {
        assertThat(Permission.parse("VIEW")).isEqualTo(Permission.VIEW);
        assertThat(Permission.parse("write").atLeast(Permission.READ)).isTrue();
        assertThat(Permission.NONE.atLeast(Permission.VIEW)).isFalse();
        assertThatThrownBy(() -> Permission.parse("rw")).isInstanceOf(SandboxException.class)
                .hasMessage("permission: unknown level 'rw' (none, view, read, write)");
    }

    @Test
    void rulesParseOnTheLastColon() {
        assertThat(PermissionRule.parse("docs/**:view")).isEqualTo(new PermissionRule("docs/**", Permission.VIEW));
        assertThat(PermissionRule.parse("a:b/c.txt:read").pattern()).isEqualTo("a:b/c.txt");
        assertThat(PermissionRule.parse("out/:write").toString()).isEqualTo("out/:write");
        assertThat(PermissionRule.parse("**/.env*:none").level()).isEqualTo(Permission.NONE);
    }

    @Test
    void badRulesAreRefusedNamingTheRule() {
        assertInvalid("docs/**", "rule 'docs/**': expected PATTERN:LEVEL, such as 'docs/**:view'");
        assertInvalid("docs/**:rw", "rule 'docs/**:rw': unknown level 'rw' (none, view, read, write)");
        assertInvalid(":read", "rule ':read': the pattern is empty (use '**' for everything)");
        assertInvalid("/etc/passwd:read", "rule '/etc/passwd:read': the pattern must be relative");
        assertInvalid("docs/../etc:read", "rule 'docs/../etc:read': '..' segments are not allowed");
        assertInvalid("./docs:read", "'.' segments are not allowed");
        assertInvalid("docs//a:read", "rule 'docs//a:read': the pattern has an empty segment");
        assertInvalid("docs/a**:read", "'**' must be a whole segment ('a/**/b'), not part of 'a**'");
        assertInvalid("**/*.{pem,key}:none", "rule '**/*.{pem,key}:none': '{' is not supported");
        assertInvalid("a[0-9]:none", "'[' is not supported");
        assertInvalid("a\0b:read", "NUL");
        assertInvalid("a/".repeat(2049) + ":read", "longer than 4096 characters");
        assertThatThrownBy(() -> new PermissionRule("../x", Permission.READ))
                .hasMessageContaining("rule '../x:read': '..' segments are not allowed");
    }

    @Test
    void presetsParseByNameAndListTheKnownOnesOnError() {
        assertThat(PermissionPreset.parse("agent-safe")).isEqualTo(PermissionPreset.AGENT_SAFE);
        assertThat(PermissionPreset.parse("READ_ONLY")).isEqualTo(PermissionPreset.READ_ONLY);
        assertThat(PermissionPreset.defaultPreset()).isEqualTo(PermissionPreset.VIEW_ONLY);
        assertThatThrownBy(() -> PermissionPreset.parse("safe")).isInstanceOf(SandboxException.class)
                .hasMessage("preset: unknown preset 'safe' (known: view-only, read-only, agent-safe, development, "
                        + "full-access)");
    }

    @Test
    void presetRulesAreWhatTheirDocumentationSays() {
        assertThat(PermissionPreset.VIEW_ONLY.rules()).containsExactly(PermissionRule.parse("**:view"));
        assertThat(PermissionPreset.FULL_ACCESS.rules()).containsExactly(PermissionRule.parse("**:write"));
        assertThat(PermissionPreset.AGENT_SAFE.rules()).first().isEqualTo(PermissionRule.parse("**:read"));
        assertThat(PermissionPreset.AGENT_SAFE.rules()).contains(PermissionRule.parse("**/.env*:none"),
                PermissionRule.parse("**/secrets/**:none"), PermissionRule.parse("out/**:write"),
                PermissionRule.parse("tmp/**:write"));
        assertThat(PermissionPreset.DEVELOPMENT.rules()).hasSize(1 + PermissionPreset.SECRETS.size())
                .first().isEqualTo(PermissionRule.parse("**:write"));
    }

    private static void assertInvalid(String rule, String message) {
        assertThatThrownBy(() -> PermissionRule.parse(rule)).isInstanceOf(SandboxException.class)
                .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.INVALID_ARGUMENT))
                .hasMessageContaining("permission: ").hasMessageContaining(message);
    }
}
