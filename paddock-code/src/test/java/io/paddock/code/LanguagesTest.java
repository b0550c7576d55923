package io.paddock.code;

import io.paddock.SandboxException;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The language table is data: rows load from JSON, resolve by alias, and new rows need no code. */
class LanguagesTest {

    @Test
    void theDefaultTableHasEveryLanguageWithItsCapabilities() {
        Languages l = Languages.defaults();
        assertThat(l.all()).extracting(Language::name)
                .containsExactly("python", "javascript", "bash", "java", "c", "cpp", "perl", "go", "ruby", "r");
        assertThat(l.get("PY").name()).isEqualTo("python");
        assertThat(l.get("node").name()).isEqualTo("javascript");
        assertThat(l.get("c++").name()).isEqualTo("cpp");
        assertThat(l.get("python").contexts()).isTrue();
        assertThat(l.get("python").plots()).isTrue();
        assertThat(l.get("javascript").contexts()).isTrue();
        assertThat(l.get("javascript").plots()).isFalse();
        assertThat(l.get("c").compile()).contains("{file}");
        assertThat(l.get("python").packages()).hasValueSatisfying(p -> assertThat(p.manager()).isEqualTo("pip"));
        assertThat(l.get("javascript").packages()).hasValueSatisfying(p -> assertThat(p.sourceKind()).isEqualTo("files"));
        assertThat(l.get("bash").packages()).isEmpty();
        assertThat(l.find("cobol")).isEmpty();
        assertThatThrownBy(() -> l.get("cobol")).isInstanceOf(SandboxException.class)
                .hasMessage("language: unknown language 'cobol'; known: python, javascript, bash, java, c, cpp, perl, go, ruby, r");
    }

    @Test
    void aNewLanguageIsARow() {
        Language lua = new Language("lua", List.of("luajit"), "main.lua", List.of(), List.of("lua", "{file}"), List.of(),
                Map.of(), Optional.empty(), false, false, "--", List.of("require\\s*\\(?\\s*['\"](?<modules>[\\w.]+)"));
        Languages l = Languages.defaults().with(lua);
        assertThat(l.get("luajit")).isEqualTo(lua);
        assertThat(Languages.defaults().find("lua")).isEmpty();
        String json = "{\"languages\": [{\"name\": \"tcl\", \"sourceFile\": \"main.tcl\", \"run\": [\"tclsh\", \"{file}\"]}]}";
        Languages t = Languages.fromJson(new ByteArrayInputStream(json.getBytes(StandardCharsets.UTF_8)));
        assertThat(t.get("tcl").run()).containsExactly("tclsh", "{file}");
        assertThatThrownBy(() -> Languages.defaults().with(new Language("py2", List.of("py"), "m.py", List.of(),
                List.of("python2", "{file}"), List.of(), Map.of(), Optional.empty(), false, false, "#", List.of())))
                .isInstanceOf(SandboxException.class).hasMessageContaining("clashes");
        assertThatThrownBy(() -> new Language("x", List.of(), "../evil", List.of(), List.of("x"), List.of(), Map.of(),
                Optional.empty(), false, false, "", List.of())).isInstanceOf(SandboxException.class);
        assertThatThrownBy(() -> new Language("x", List.of(), "m.x", List.of(), List.of("x"), List.of(), Map.of(),
                Optional.empty(), true, false, "", List.of())).hasMessageContaining("no kernel");
    }
}
