package io.paddock.workspace.internal;

import io.paddock.Permission;
import io.paddock.PermissionPreset;
import io.paddock.PermissionRule;
import io.paddock.SandboxException;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static io.paddock.Permission.NONE;
import static io.paddock.Permission.READ;
import static io.paddock.Permission.VIEW;
import static io.paddock.Permission.WRITE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The precedence examples of docs/WORKSPACES.md ("Permission rules"), and each preset's plan over one sample
 * tree as golden text (regenerate with -Dpaddock.golden.update=true and read the diff).
 */
class PermissionPlanTest {
    static final Tree SAMPLE = Tree.of(".env", ".env.local", ".gitignore", "README.md", ".git/HEAD", ".git/config",
            "config/app.yml", "config/prod.key", "deploy/id_rsa", "deploy/id_rsa.pub", "docs/README.md",
            "docs/guide/intro.md", "docs/internal/notes.txt", "out/", "out/report.txt", "secrets/api-token",
            "secrets/public/ca.crt", "src/main/App.java", "src/main/resources/server.pem", "src/test/AppTest.java",
            "tmp/");

    private static PermissionPlan plan(PermissionPreset preset, Tree tree, String... rules) {
        return PermissionPlan.compile(preset, Stream.of(rules).map(PermissionRule::parse).toList(), tree);
    }

    @Test
    void anExactPathBeatsEveryGlob() {
        PermissionPlan p = plan(PermissionPreset.READ_ONLY, SAMPLE, "docs/**:view", "docs/README.md:write");
        assertThat(p.levelOf("docs/README.md")).isEqualTo(WRITE);
        assertThat(p.levelOf("docs/guide/intro.md")).isEqualTo(VIEW);
        assertThat(p.levelOf("docs")).as("'**' matches zero segments: docs itself").isEqualTo(VIEW);
    }

    @Test
    void moreLiteralSegmentsWin() {
        PermissionPlan p = plan(PermissionPreset.FULL_ACCESS, SAMPLE, "secrets/**:none", "secrets/public/**:read");
        assertThat(p.levelOf("secrets/api-token")).isEqualTo(NONE);
        assertThat(p.levelOf("secrets/public/ca.crt")).isEqualTo(READ);
        assertThat(p.levelOf("src/main/App.java")).isEqualTo(WRITE);
    }

    @Test
    void fewerDoubleStarsWinThenMoreLiteralCharacters() {
        PermissionPlan p = plan(PermissionPreset.VIEW_ONLY, SAMPLE, "docs/**:view", "docs/*.md:read");
        assertThat(p.levelOf("docs/README.md")).isEqualTo(READ);
        assertThat(p.levelOf("docs/guide/intro.md")).as("'*' stays within one segment").isEqualTo(VIEW);
        PermissionPlan q = plan(PermissionPreset.FULL_ACCESS, SAMPLE, "**/*.pem:none");
        assertThat(q.levelOf("src/main/resources/server.pem")).as("'*.pem' has 4 literal characters, '**' none")
                .isEqualTo(NONE);
        assertThat(q.levelOf("server.pem")).as("'**/' matches the top too").isEqualTo(NONE);
    }

    @Test
    void aTieGoesToTheLaterRuleAndUserRulesComeAfterThePresets() {
        assertThat(plan(PermissionPreset.READ_ONLY, SAMPLE, "docs/*:write", "docs/*:view").levelOf("docs/README.md"))
                .isEqualTo(VIEW);
        assertThat(plan(PermissionPreset.VIEW_ONLY, SAMPLE, "**:read").levelOf("README.md")).isEqualTo(READ);
        assertThat(plan(PermissionPreset.AGENT_SAFE, SAMPLE, "**/.env*:read").levelOf(".env")).isEqualTo(READ);
    }

    @Test
    void aTrailingSlashIsTheDirectoryAndEverythingUnderIt() {
        PermissionPlan slash = plan(PermissionPreset.READ_ONLY, SAMPLE, "out/:write");
        PermissionPlan stars = plan(PermissionPreset.READ_ONLY, SAMPLE, "out/**:write");
        assertThat(slash.levels()).isEqualTo(stars.levels());
        assertThat(slash.levelOf("out")).isEqualTo(WRITE);
        assertThat(slash.levelOf("outside.txt")).isEqualTo(READ);
    }

    @Test
    void theWriteAreaOfAgentSafeBeatsTheSecretPatterns() {
        // documented: 'out/**' has one literal segment, '**/*.pem' none
        PermissionPlan p = plan(PermissionPreset.AGENT_SAFE, SAMPLE);
        assertThat(p.levelOf("out/cert.pem")).isEqualTo(WRITE);
        assertThat(p.levelOf("src/cert.pem")).isEqualTo(NONE);
    }

    @Test
    void aHiddenDirectoryWithAVisibleDescendantIsRaisedToViewAndListsOnlyThatChild() {
        PermissionPlan p = plan(PermissionPreset.READ_ONLY, SAMPLE, "secrets/**:none", "secrets/public/ca.crt:read");
        assertThat(p.levelOf("secrets/public/ca.crt")).isEqualTo(READ);
        assertThat(p.levelOf("secrets/public")).isEqualTo(VIEW);
        assertThat(p.levelOf("secrets")).isEqualTo(VIEW);
        assertThat(p.decision("secrets").raised()).isTrue();
        assertThat(p.levelOf("secrets/api-token")).isEqualTo(NONE);
        PermissionPlan.Directory secrets = p.directories().stream().filter(d -> d.path().equals("secrets"))
                .findFirst().orElseThrow();
        assertThat(secrets.listable()).isTrue();
        assertThat(secrets.writable()).isFalse();
        assertThat(secrets.visibleChildren()).containsExactly("public");
        assertThat(p.levelOf("secrets/new-token")).as("a new path there is decided by its rule").isEqualTo(NONE);
        assertThat(plan(PermissionPreset.READ_ONLY, SAMPLE, "secrets/**:none").levelOf("secrets"))
                .as("without a visible descendant it stays absent").isEqualTo(NONE);
    }

    @Test
    void pathsNotInTheTreeGetTheLevelTheirPathMatches() {
        PermissionPlan p = plan(PermissionPreset.AGENT_SAFE, SAMPLE);
        assertThat(p.levelOf("out/new/result.json")).isEqualTo(WRITE);
        assertThat(p.levelOf("tmp/scratch")).isEqualTo(WRITE);
        assertThat(p.levelOf("src/main/New.java")).isEqualTo(READ);
        assertThat(p.levelOf("src/main/new.key")).isEqualTo(NONE);
        assertThat(p.levelOf(".env.production")).isEqualTo(NONE);
        assertThat(p.levelOf("lib/secrets/x")).isEqualTo(NONE);
        assertThat(plan(PermissionPreset.READ_ONLY, SAMPLE, "docs/*.md:write").levelOf("nowhere/x"))
                .isEqualTo(READ);
        assertThat(PermissionPlan.compile(PermissionPreset.READ_ONLY, List.of(), SAMPLE).levelOf(""))
                .isEqualTo(READ);
        assertThatThrownBy(() -> p.levelOf("out/../.env")).isInstanceOf(SandboxException.class)
                .hasMessageContaining("not a normalised relative path");
    }

    @Test
    void spansCoverEveryPathOnceAndSealOnlyWhatNoOtherRuleCanReach() {
        PermissionPlan p = plan(PermissionPreset.AGENT_SAFE, SAMPLE);
        List<PermissionPlan.Span> spans = p.spans();
        // not sealed: '**/.netrc:none' (a literal last segment, 6 characters) outranks 'out/**:write' for out/.netrc
        assertThat(p.levelOf("out/.netrc")).isEqualTo(NONE);
        assertThat(spans).contains(new PermissionPlan.Span("out", PermissionPlan.Scope.SUBTREE, WRITE, false),
                new PermissionPlan.Span("docs", PermissionPlan.Scope.SUBTREE, READ, false),
                new PermissionPlan.Span("", PermissionPlan.Scope.SELF, READ, false));
        long covered = 0;
        for (String path : p.levels().keySet()) {
            covered += spans.stream().filter(s -> covers(s, path)).count();
        }
        assertThat(covered).isEqualTo(p.levels().size());
        assertThat(plan(PermissionPreset.READ_ONLY, SAMPLE, "out/**:write").spans())
                .contains(new PermissionPlan.Span("out", PermissionPlan.Scope.SUBTREE, WRITE, true));
        assertThat(plan(PermissionPreset.READ_ONLY, SAMPLE).spans())
                .containsExactly(new PermissionPlan.Span("", PermissionPlan.Scope.SUBTREE, READ, true));
    }

    private static boolean covers(PermissionPlan.Span s, String path) {
        if (s.scope() == PermissionPlan.Scope.SELF) {
            return s.path().equals(path);
        }
        if (!path.equals(s.path()) && !(s.path().isEmpty() || path.startsWith(s.path() + "/"))) {
            return false;
        }
        // not covered by a deeper span
        return true;
    }

    @Test
    void goldenPlans() throws IOException {
        for (PermissionPreset preset : PermissionPreset.values()) {
            golden(preset.label(), plan(preset, SAMPLE).render());
        }
        // the CLI example, and a hidden directory opened for one child
        golden("agent-safe-user", plan(PermissionPreset.AGENT_SAFE, SAMPLE, "secrets/**:none", "docs/**:view",
                "out/**:write", "secrets/public/ca.crt:read").render());
    }

    private static void golden(String name, String actual) throws IOException {
        Path golden = Path.of("src/test/resources/golden/plan-" + name + ".txt");
        if (Boolean.getBoolean("paddock.golden.update")) {
            Files.writeString(golden, actual, StandardCharsets.UTF_8);
        }
        assertThat(actual).as(golden.toString()).isEqualTo(Files.readString(golden, StandardCharsets.UTF_8));
    }
}
