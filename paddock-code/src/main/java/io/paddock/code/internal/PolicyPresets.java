package io.paddock.code.internal;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.code.CodePolicy;

import java.io.IOException;
import java.io.InputStream;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The code-policy presets, read once from {@code policies.json}. */
public final class PolicyPresets {
    private static final String RESOURCE = "/io/paddock/code/policies.json";
    private static final Map<String, CodePolicy> PRESETS = load();

    private PolicyPresets() {
    }

    public static CodePolicy get(String name) {
        CodePolicy p = name == null ? null : PRESETS.get(name.toLowerCase(Locale.ROOT));
        if (p == null) {
            throw SandboxException.invalid("policy", "unknown preset '" + name + "'; known: " + String.join(", ", PRESETS.keySet()));
        }
        return p;
    }

    public static List<String> names() {
        return List.copyOf(PRESETS.keySet());
    }

    private static Map<String, CodePolicy> load() {
        JsonNode root;
        try (InputStream in = PolicyPresets.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new SandboxException(ErrorCode.INTERNAL, RESOURCE + " is missing from the jar");
            }
            root = Json.MAPPER.readTree(in);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot read " + RESOURCE + ": " + e.getMessage(), e);
        }
        Map<String, CodePolicy> out = new LinkedHashMap<>();
        for (JsonNode preset : root.path("presets")) {
            String name = Json.text(preset, "name", null);
            String parent = Json.text(preset, "extends", null);
            CodePolicy.Builder b = parent != null ? out.get(parent).toBuilder() : CodePolicy.builder();
            b.name(name).threshold(CodePolicy.Severity.valueOf(Json.text(preset, "threshold", "HIGH")));
            for (JsonNode r : preset.path("rules")) {
                b.rule(new CodePolicy.Rule(Json.text(r, "id", "rule"),
                        CodePolicy.Rule.Kind.valueOf(Json.text(r, "kind", "PATTERN")), Json.text(r, "expression", ""),
                        Json.text(r, "description", ""), CodePolicy.Severity.valueOf(Json.text(r, "severity", "HIGH")),
                        new HashSet<>(Json.strings(r, "languages"))));
            }
            out.put(name, b.build());
        }
        return out;
    }
}
