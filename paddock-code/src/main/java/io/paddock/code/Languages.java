package io.paddock.code;

import io.paddock.SandboxException;
import io.paddock.code.internal.LanguageTable;

import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * The language table: every language the code layer can run, as data. {@link #defaults()} is Paddock's
 * own table (Python, JavaScript, Bash, Java, C, C++, Perl, Go, Ruby, R); add or replace rows with
 * {@link #with(Language)} or load a table of the same JSON form with {@link #fromJson(InputStream)}.
 * Whether a row can run in a given sandbox depends on the sandbox's image: a missing toolchain is reported
 * as {@code FAILED_PRECONDITION} naming the missing command. Immutable and thread-safe.
 */
public final class Languages {
    private static final Languages DEFAULTS = new Languages(LanguageTable.loadDefaults());

    private final List<Language> rows;

    private Languages(List<Language> rows) {
        this.rows = List.copyOf(rows);
        for (int i = 0; i < this.rows.size(); i++) {
            for (int j = 0; j < i; j++) {
                Language a = this.rows.get(i);
                Language b = this.rows.get(j);
                if (b.matches(a.name()) || a.aliases().stream().anyMatch(b::matches)) {
                    throw SandboxException.invalid("languages", "'" + a.name() + "' clashes with '" + b.name() + "'");
                }
            }
        }
    }

    /** Paddock's built-in table. */
    public static Languages defaults() {
        return DEFAULTS;
    }

    public static Languages of(List<Language> rows) {
        return new Languages(rows);
    }

    /** Reads a table in the form of Paddock's {@code languages.json} ({@code {"languages": [ … ]}}). */
    public static Languages fromJson(InputStream json) {
        return new Languages(LanguageTable.parse(json));
    }

    /** A copy with {@code row} added, replacing a row of the same name. */
    public Languages with(Language row) {
        List<Language> copy = new ArrayList<>();
        for (Language l : rows) {
            if (!l.name().equals(row.name())) {
                copy.add(l);
            }
        }
        copy.add(row);
        return new Languages(copy);
    }

    public List<Language> all() {
        return rows;
    }

    /** The row named (or aliased) {@code nameOrAlias}, case-insensitive. */
    public Optional<Language> find(String nameOrAlias) {
        if (nameOrAlias == null) {
            return Optional.empty();
        }
        String key = nameOrAlias.trim();
        return rows.stream().filter(l -> l.matches(key)).findFirst();
    }

    /** The row named {@code nameOrAlias}; {@code INVALID_ARGUMENT} naming the known languages otherwise. */
    public Language get(String nameOrAlias) {
        if (nameOrAlias == null || nameOrAlias.isBlank()) {
            throw SandboxException.invalid("language", "missing; known: " + names());
        }
        return find(nameOrAlias).orElseThrow(() -> SandboxException.invalid("language",
                "unknown language '" + nameOrAlias + "'; known: " + names()));
    }

    public String names() {
        return rows.stream().map(Language::name).collect(Collectors.joining(", "));
    }

    @Override
    public String toString() {
        return "Languages[" + names() + "]";
    }
}
