package io.paddock.server.internal;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.wire.Wire;

import java.nio.charset.StandardCharsets;

/** Small helpers over {@link Wire}'s mapper. */
final class Json {
    private Json() {
    }

    static String text(JsonNode node) {
        return new String(Wire.bytes(node), StandardCharsets.UTF_8);
    }
}
