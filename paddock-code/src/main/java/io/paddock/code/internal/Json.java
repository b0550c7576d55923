package io.paddock.code.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The one Jackson mapper of the code layer, and small helpers to read untrusted JSON trees. */
final class Json {
    static final ObjectMapper MAPPER = new ObjectMapper()
            .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

    private Json() {
    }

    static String write(Object value) {
        try {
            return MAPPER.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot encode JSON: " + e.getOriginalMessage(), e);
        }
    }

    static String text(JsonNode node, String field, String fallback) {
        JsonNode v = node.get(field);
        return v != null && v.isTextual() ? v.asText() : fallback;
    }

    static List<String> strings(JsonNode node, String field) {
        List<String> out = new ArrayList<>();
        JsonNode v = node.get(field);
        if (v != null && v.isArray()) {
            for (JsonNode e : v) {
                if (e.isTextual()) {
                    out.add(e.asText());
                }
            }
        }
        return out;
    }

    static Map<String, String> stringMap(JsonNode node, String field) {
        Map<String, String> out = new LinkedHashMap<>();
        JsonNode v = node.get(field);
        if (v != null && v.isObject()) {
            for (Iterator<Map.Entry<String, JsonNode>> it = v.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                if (e.getValue().isTextual()) {
                    out.put(e.getKey(), e.getValue().asText());
                }
            }
        }
        return out;
    }
}
