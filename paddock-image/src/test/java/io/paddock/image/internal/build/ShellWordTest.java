package io.paddock.image.internal.build;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Docker's quote removal and variable substitution, case by case. */
class ShellWordTest {
    private static final Map<String, String> VARS = Map.of("SET", "value", "EMPTY", "", "SP", "a b");

    private static String process(String word) {
        return ShellWord.process(word, '\\', VARS::get);
    }

    @ParameterizedTest(name = "{0} -> [{1}]")
    @CsvSource(delimiter = '|', quoteCharacter = '^', emptyValue = "", value = {
            "plain               | plain",
            "$SET                | value",
            "${SET}x             | valuex",
            "$SETx               | ^^",
            "$UNSET              | ^^",
            "${UNSET:-dflt}      | dflt",
            "${EMPTY:-dflt}      | dflt",
            "${EMPTY-dflt}       | ^^",
            "${UNSET-dflt}       | dflt",
            "${SET:-dflt}        | value",
            "${SET:+alt}         | alt",
            "${EMPTY:+alt}       | ^^",
            "${EMPTY+alt}        | alt",
            "${UNSET+alt}        | ^^",
            "${UNSET:-$SET}      | value",
            "${UNSET:-\"a b\"}   | a b",
            "\"$SP\"             | a b",
            "'$SET'              | $SET",
            "\"'$SET'\"          | 'value'",
            "\\$SET              | $SET",
            "\"\\$SET \\\" \\x\" | $SET \" \\x",
            "a\\ b               | a b",
            "trailing\\          | trailing",
            "$                   | $",
            "cost: $5            | ^cost: ^",
            "a$-b                | ab",
            "${SET:?}            | value",
    })
    void processes(String word, String expected) {
        assertThat(process(word.strip())).isEqualTo(expected);
    }

    @ParameterizedTest(name = "{0}: {1}")
    @CsvSource(delimiter = '|', quoteCharacter = '^', value = {
            "${SET                | missing '}'",
            "${                   | missing '}'",
            "${}                  | bad substitution",
            "${:x}                | bad substitution",
            "${SET%x}             | unsupported modifier (%)",
            "${SET/a/b}           | unsupported modifier (/)",
            "${UNSET:?must be set}| UNSET: must be set",
            "${UNSET?}            | UNSET: is not allowed to be unset",
            "${EMPTY:?}           | EMPTY: is not allowed to be empty",
            "\"open               | matching double-quote",
            "'open                | matching single-quote",
    })
    void refuses(String word, String problem) {
        assertThatThrownBy(() -> process(word.strip())).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(problem);
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', quoteCharacter = '^', value = {"`$SET | $SET", "a`\"b | a\"b", "C:\\dir | C:\\dir", "\"`\"x`\"\" | \"x\""})
    void theEscapeCharacterCanBeBacktick(String word, String expected) {
        assertThat(ShellWord.process(word.strip(), '`', VARS::get)).isEqualTo(expected.strip());
    }
}
