package io.paddock.wire;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.SandboxException;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Strict readers for JSON request and response fields, shared by every JSON form (the API types in
 * {@link Wire}, the code layer's in paddock-code): a value of the wrong type is {@code INVALID_ARGUMENT}
 * naming the field, and unknown fields are refused rather than ignored.
 */
public final class JsonFields {
    private JsonFields() {
    }

    /** {@code n} as an object; INVALID_ARGUMENT naming {@code field} otherwise. */
    public static ObjectNode object(JsonNode n, String field) {
        if (n == null || !n.isObject()) {
            throw SandboxException.invalid(field, "a JSON object is expected");
        }
        return (ObjectNode) n;
    }

    /** Refuses any field of {@code o} outside {@code allowed}, naming it and the known ones. */
    public static void onlyFields(ObjectNode o, String what, Set<String> allowed) {
        for (Iterator<String> it = o.fieldNames(); it.hasNext(); ) {
            String f = it.next();
            if (!allowed.contains(f)) {
                throw SandboxException.invalid(f, "unknown field in " + what + " (known: " + String.join(", ",
                        allowed.stream().sorted().toList()) + ")");
            }
        }
    }

    /** The field's value; empty when it is absent or JSON null. */
    public static Optional<JsonNode> field(ObjectNode o, String name) {
        JsonNode v = o.get(name);
        return v == null || v.isNull() ? Optional.empty() : Optional.of(v);
    }

    /** A string value; INVALID_ARGUMENT naming {@code field} otherwise. */
    public static String text(JsonNode v, String field) {
        if (!v.isTextual()) {
            throw SandboxException.invalid(field, "a string is expected");
        }
        return v.asText();
    }

    /** An integral value that fits a long; INVALID_ARGUMENT naming {@code field} otherwise. */
    public static long integer(JsonNode v, String field) {
        if (!v.isIntegralNumber() || !v.canConvertToLong()) {
            throw SandboxException.invalid(field, "an integer is expected");
        }
        return v.asLong();
    }

    /** An integral value that fits an int; INVALID_ARGUMENT naming {@code field} otherwise. */
    public static int int32(JsonNode v, String field) {
        long l = integer(v, field);
        if (l < Integer.MIN_VALUE || l > Integer.MAX_VALUE) {
            throw SandboxException.invalid(field, "out of range: " + l);
        }
        return (int) l;
    }

    /** true or false; INVALID_ARGUMENT naming {@code field} otherwise. */
    public static boolean bool(JsonNode v, String field) {
        if (!v.isBoolean()) {
            throw SandboxException.invalid(field, "true or false is expected");
        }
        return v.asBoolean();
    }

    /** An array of strings; INVALID_ARGUMENT naming {@code field} otherwise. */
    public static List<String> strings(JsonNode v, String field) {
        if (!v.isArray()) {
            throw SandboxException.invalid(field, "an array of strings is expected");
        }
        List<String> out = new ArrayList<>(v.size());
        for (JsonNode e : v) {
            out.add(text(e, field));
        }
        return out;
    }

    /** An object of string values, in order; INVALID_ARGUMENT naming {@code field} otherwise. */
    public static Map<String, String> stringMap(JsonNode v, String field) {
        ObjectNode o = object(v, field);
        Map<String, String> out = new LinkedHashMap<>();
        o.fields().forEachRemaining(e -> out.put(e.getKey(), text(e.getValue(), field)));
        return out;
    }
}
