package io.paddock.internal;

import io.paddock.CodebaseChange;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Sandbox-chosen names in output for people cannot forge lines or drive the terminal (issue 32, breach 5). */
class PrintableTest {
    @Test
    void plainNamesStayAndOthersAreQuotedWithEscapes() {
        assertThat(Printable.name("src/main.py")).isEqualTo("src/main.py");
        assertThat(Printable.name("docs/naïve café.md")).isEqualTo("docs/naïve café.md");
        assertThat(Printable.name("out/x\nD docs/important.md")).isEqualTo("$'out/x\\nD docs/important.md'");
        assertThat(Printable.name("a\rb\u001b[2Jc\td\u0007")).isEqualTo("$'a\\rb\\e[2Jc\\td\\x07'");
        assertThat(Printable.name("evil\u202Etxt.exe")).as("a bidi override").isEqualTo("$'evil\\u202Etxt.exe'");
        assertThat(Printable.name("bad\uFFFDbyte")).as("bytes that were not UTF-8").isEqualTo("$'bad\\uFFFDbyte'");
        assertThat(Printable.name("it's\\x\n")).isEqualTo("$'it\\'s\\\\x\\n'");
        assertThat(Printable.name("c1\u009bx")).isEqualTo("$'c1\\x9Bx'");
        assertThat(Printable.line("link-outside: x\nD y\r")).isEqualTo("link-outside: x\\nD y\\x0D");
        assertThat(Printable.text("line one\nconflicting paths: a\u001b]0;x\u0007")).isEqualTo("line one\nconflicting paths: a\\x1B]0;x\\x07");
    }

    @Test
    void aDiffLineCannotBeForged() {
        String line = new CodebaseChange("out/x\nD docs/important.md", CodebaseChange.Kind.ADDED, true).toString();
        assertThat(line).doesNotContain("\n").isEqualTo("A $'out/x\\nD docs/important.md'");
        assertThat(new CodebaseChange("out/\u001b[1A\rM ok", CodebaseChange.Kind.MODIFIED, false).toString())
                .doesNotContain("\u001b").doesNotContain("\r");
    }
}
