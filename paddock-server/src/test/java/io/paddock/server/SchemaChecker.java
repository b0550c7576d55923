package io.paddock.server;

import com.fasterxml.jackson.databind.JsonNode;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * A small validator for the subset of OpenAPI 3.0 schemas that openapi.json uses: $ref, type, required,
 * properties, additionalProperties, items, enum, nullable, allOf, oneOf (exactly one must match), and the
 * date-time and byte formats.
 */
final class SchemaChecker {
    private final JsonNode document;

    SchemaChecker(JsonNode document) {
        this.document = document;
    }

    JsonNode resolve(JsonNode node) {
        while (node != null && node.has("$ref")) {
            String ref = node.get("$ref").asText();
            if (!ref.startsWith("#/")) {
                throw new IllegalArgumentException("external $ref " + ref);
            }
            JsonNode n = document;
            for (String part : ref.substring(2).split("/")) {
                n = n.get(part);
            }
            if (n == null) {
                throw new AssertionError("dangling $ref " + ref);
            }
            node = n;
        }
        return node;
    }

    /** Problems found validating {@code value} against {@code schema}; empty when it conforms. */
    List<String> check(JsonNode schema, JsonNode value) {
        List<String> problems = new ArrayList<>();
        check(resolve(schema), value, "$", problems);
        return problems;
    }

    private void check(JsonNode schema, JsonNode value, String at, List<String> problems) {
        schema = resolve(schema);
        if (value == null || value.isNull()) {
            if (!schema.path("nullable").asBoolean(false)) {
                problems.add(at + ": null but not nullable");
            }
            return;
        }
        if (schema.has("oneOf")) {
            int matched = 0;
            List<String> why = new ArrayList<>();
            for (JsonNode s : schema.get("oneOf")) {
                List<String> p = new ArrayList<>();
                check(s, value, at, p);
                if (p.isEmpty()) {
                    matched++;
                } else {
                    why.add(p.get(0));
                }
            }
            if (matched != 1) {
                problems.add(at + ": matches " + matched + " of oneOf, not exactly one" + (matched == 0 ? " " + why : ""));
            }
        }
        if (schema.has("allOf")) {
            for (JsonNode s : schema.get("allOf")) {
                check(s, value, at, problems);
            }
        }
        String type = schema.path("type").asText("");
        switch (type) {
            case "object" -> {
                if (!value.isObject()) {
                    problems.add(at + ": an object is expected, got " + value.getNodeType());
                    return;
                }
                for (JsonNode r : schema.path("required")) {
                    if (!value.has(r.asText())) {
                        problems.add(at + ": missing required property '" + r.asText() + "'");
                    }
                }
                JsonNode props = schema.path("properties");
                for (Iterator<Map.Entry<String, JsonNode>> it = value.fields(); it.hasNext(); ) {
                    Map.Entry<String, JsonNode> e = it.next();
                    if (props.has(e.getKey())) {
                        check(props.get(e.getKey()), e.getValue(), at + "." + e.getKey(), problems);
                    } else if (schema.has("additionalProperties") && schema.get("additionalProperties").isObject()) {
                        check(schema.get("additionalProperties"), e.getValue(), at + "." + e.getKey(), problems);
                    } else if (schema.path("additionalProperties").isBoolean()
                            && !schema.get("additionalProperties").asBoolean()) {
                        problems.add(at + ": unexpected property '" + e.getKey() + "'");
                    }
                }
            }
            case "array" -> {
                if (!value.isArray()) {
                    problems.add(at + ": an array is expected, got " + value.getNodeType());
                    return;
                }
                int i = 0;
                for (JsonNode v : value) {
                    check(schema.path("items"), v, at + "[" + i++ + "]", problems);
                }
            }
            case "string" -> {
                if (!value.isTextual()) {
                    problems.add(at + ": a string is expected, got " + value.getNodeType());
                    return;
                }
                String format = schema.path("format").asText("");
                try {
                    if (format.equals("date-time")) {
                        Instant.parse(value.asText());
                    } else if (format.equals("byte")) {
                        Base64.getDecoder().decode(value.asText());
                    }
                } catch (RuntimeException e) {
                    problems.add(at + ": not a valid " + format + ": " + value.asText());
                }
            }
            case "integer" -> {
                if (!value.isIntegralNumber()) {
                    problems.add(at + ": an integer is expected, got " + value);
                }
            }
            case "number" -> {
                if (!value.isNumber()) {
                    problems.add(at + ": a number is expected, got " + value);
                }
            }
            case "boolean" -> {
                if (!value.isBoolean()) {
                    problems.add(at + ": a boolean is expected, got " + value);
                }
            }
            case "" -> {
                // allOf-only or untyped schema
            }
            default -> problems.add(at + ": unknown schema type " + type);
        }
        if (schema.has("enum")) {
            boolean found = false;
            for (JsonNode e : schema.get("enum")) {
                found |= e.equals(value);
            }
            if (!found) {
                problems.add(at + ": " + value + " is not one of " + schema.get("enum"));
            }
        }
    }
}
