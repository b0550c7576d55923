package io.paddock.code.internal;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.code.Language;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** Reads the language table's JSON form into {@link Language} rows. */
public final class LanguageTable {
    private static final String RESOURCE = "/io/paddock/code/languages.json";

    private LanguageTable() {
    }

    public static List<Language> loadDefaults() {
        try (InputStream in = LanguageTable.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new SandboxException(ErrorCode.INTERNAL, "the language table " + RESOURCE + " is missing from the jar");
            }
            return parse(in);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot read " + RESOURCE + ": " + e.getMessage(), e);
        }
    }

    public static List<Language> parse(InputStream json) {
        JsonNode root;
        try {
            root = Json.MAPPER.readTree(json);
        } catch (IOException e) {
            throw SandboxException.invalid("languages", "not valid JSON: " + e.getMessage());
        }
        JsonNode rows = root == null ? null : root.get("languages");
        if (rows == null || !rows.isArray()) {
            throw SandboxException.invalid("languages", "expected {\"languages\": [ … ]}");
        }
        List<Language> out = new ArrayList<>();
        for (JsonNode row : rows) {
            out.add(row(row));
        }
        return out;
    }

    private static Language row(JsonNode n) {
        String name = Json.text(n, "name", null);
        if (name == null || Json.text(n, "sourceFile", null) == null) {
            throw SandboxException.invalid("languages", "every row needs a name and a sourceFile: " + n);
        }
        Optional<Language.PackageManager> packages = Optional.empty();
        JsonNode p = n.get("packages");
        if (p != null && p.isObject()) {
            JsonNode source = p.path("source");
            packages = Optional.of(new Language.PackageManager(Json.text(p, "manager", "packages"),
                    Json.strings(p, "install"), Json.stringMap(p, "env"),
                    Json.text(source, "kind", Language.PackageManager.FIND_LINKS),
                    Json.strings(source, "extensions"), Json.text(source, "manifest", "")));
        }
        return new Language(name, Json.strings(n, "aliases"), Json.text(n, "sourceFile", null),
                Json.strings(n, "compile"), Json.strings(n, "run"), Json.strings(n, "kernel"),
                Json.stringMap(n, "env"), packages, n.path("contexts").asBoolean(false),
                n.path("plots").asBoolean(false), Json.text(n, "lineComment", ""), Json.strings(n, "imports"),
                Json.strings(n, "debian"));
    }
}
