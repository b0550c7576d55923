package io.paddock.code;

import io.paddock.ErrorCode;
import io.paddock.Sandbox;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A policy set on the interpreter is enforced before anything runs; a permissive one lets code through. */
class PolicyEnforcementTest extends SandboxTestBase {

    @Test
    void aViolatingRunIsRefusedWithItsViolationsAndNothingRuns() {
        CodeOptions opts = CodeOptions.builder().policy(CodePolicy.preset("standard")).build();
        try (Sandbox sb = sandbox(); CodeInterpreter ci = CodeInterpreter.of(sb, opts)) {
            String bad = "import os\n# os.system('harmless comment')\nos.system('touch /workspace/ran')";
            assertThatThrownBy(() -> ci.run("python", bad))
                    .isInstanceOf(CodePolicyException.class)
                    .satisfies(e -> {
                        CodePolicyException p = (CodePolicyException) e;
                        assertThat(p.code()).isEqualTo(ErrorCode.PERMISSION_DENIED);
                        assertThat(p.policy()).isEqualTo("standard");
                        assertThat(p.violations()).singleElement().satisfies(v -> {
                            assertThat(v.rule()).isEqualTo("os-system");
                            assertThat(v.severity()).isEqualTo(CodePolicy.Severity.HIGH);
                            assertThat(v.line()).isEqualTo(3);
                        });
                    });
            assertThat(sb.files().exists("/workspace/ran")).isFalse();
            assertThat(ci.check("python", bad)).hasSize(1);
            // cells and shell commands are checked too
            try (CodeContext ctx = ci.createContext("javascript")) {
                assertThatThrownBy(() -> ctx.run("require('child_process').execSync('id')"))
                        .isInstanceOf(CodePolicyException.class).hasMessageContaining("child-process");
                assertThat(ctx.run("1 + 1").value().orElseThrow().text()).isEqualTo("2");
            }
            try (ShellSession sh = ci.shell()) {
                assertThatThrownBy(() -> sh.exec("rm -rf /")).isInstanceOf(CodePolicyException.class);
            }
            assertThat(ci.run("python", "print('fine')").stdout()).isEqualTo("fine\n");
        }
    }

    @Test
    void aPermissivePolicyLetsTheSameCodeRun() {
        CodeOptions opts = CodeOptions.builder().policy(CodePolicy.preset("permissive")).build();
        try (Sandbox sb = sandbox(); CodeInterpreter ci = CodeInterpreter.of(sb, opts)) {
            CodeResult r = ci.run("python", "import os\nos.system('echo ran')");
            assertThat(r.success()).isTrue();
            assertThat(r.stdout()).isEqualTo("ran\n");
            assertThat(ci.check("python", "import os")).isEmpty();
        }
    }
}
