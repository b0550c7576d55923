package io.paddock.code;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The policy's rules, presets and thresholds, without a sandbox. */
class CodePolicyTest {
    private static final Language PY = Languages.defaults().get("python");
    private static final Language JS = Languages.defaults().get("javascript");

    @Test
    void presetsHaveThresholdsAndRules() {
        assertThat(CodePolicy.presets()).containsExactly("permissive", "standard", "strict");
        assertThat(CodePolicy.preset("permissive").check(PY, "import os\nos.system('x')")).isEmpty();
        assertThat(CodePolicy.preset("standard").check(PY, "import subprocess\nsubprocess.run(['ls'])")).isEmpty();
        assertThat(CodePolicy.preset("strict").check(PY, "import subprocess\nsubprocess.run(['ls'])"))
                .extracting(CodePolicy.Violation::rule).containsExactly("subprocess");
        assertThat(CodePolicy.preset("strict").check(PY, "from os import path, sep")).extracting(CodePolicy.Violation::rule)
                .containsExactly("os");
        assertThat(CodePolicy.preset("strict").check(PY, "import json, os.path as p")).extracting(CodePolicy.Violation::line)
                .containsExactly(1);
        assertThat(CodePolicy.preset("strict").check(JS, "const cp = require('node:child_process')"))
                .extracting(CodePolicy.Violation::rule).containsExactly("child-process");
        assertThat(CodePolicy.preset("standard").check(Languages.defaults().get("bash"), ":(){ :|:& };:"))
                .extracting(CodePolicy.Violation::severity).containsExactly(CodePolicy.Severity.CRITICAL);
        assertThatThrownBy(() -> CodePolicy.preset("paranoid")).hasMessageContaining("unknown preset 'paranoid'");
    }

    @Test
    void customRulesCommentsAndEnforcement() {
        CodePolicy p = CodePolicy.builder().name("mine").threshold(CodePolicy.Severity.MEDIUM)
                .pattern("internal-url", "requests\\.get\\(.*internal\\.example", "internal network access",
                        CodePolicy.Severity.HIGH, "python")
                .restrictImport("pickle", "untrusted deserialisation", CodePolicy.Severity.MEDIUM)
                .restrictImport("this", "a joke", CodePolicy.Severity.LOW)
                .build();
        assertThat(p.check(PY, "# import pickle\nimport this")).isEmpty(); // comment skipped, LOW below threshold
        assertThat(p.check(PY, "import pickle\nrequests.get('http://internal.example/x')"))
                .extracting(CodePolicy.Violation::rule).containsExactly("internal-url", "import:pickle");
        assertThat(p.check(JS, "requests.get('http://internal.example/x')")).isEmpty(); // python-only rule
        assertThatThrownBy(() -> p.enforce(PY, "import pickle"))
                .isInstanceOf(CodePolicyException.class)
                .hasMessageContaining("code refused by policy 'mine' (python): MEDIUM import:pickle (line 1: import pickle)");
        assertThatThrownBy(() -> CodePolicy.builder().pattern("bad", "(", "x", CodePolicy.Severity.LOW))
                .hasMessageContaining("bad regular expression");
    }
}
