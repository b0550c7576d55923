package io.paddock.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** Artifact names come from the sandbox: only names inside the --artifacts directory are written. */
class CodeOutputTest {
    @TempDir
    Path dir;

    @Test
    void namesInsideTheDirectoryResolveThere() {
        assertThat(CodeOutput.inside(dir, "r.csv")).isEqualTo(dir.resolve("r.csv"));
        assertThat(CodeOutput.inside(dir, "out/a/../b.png")).isEqualTo(dir.resolve("out/b.png"));
    }

    @Test
    void namesThatLeaveTheDirectoryAreRefused() {
        assertThat(CodeOutput.inside(dir, "../escape")).isNull();
        assertThat(CodeOutput.inside(dir, "a/../../escape")).isNull();
        assertThat(CodeOutput.inside(dir, "/etc/passwd")).isNull();
        assertThat(CodeOutput.inside(dir, "")).isNull();
        assertThat(CodeOutput.inside(dir, ".")).isNull();
        assertThat(CodeOutput.inside(dir, "nul\0byte")).isNull();
    }
}
