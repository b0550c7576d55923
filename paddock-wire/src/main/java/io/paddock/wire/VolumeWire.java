package io.paddock.wire;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.ByteSize;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.VolumeInfo;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static io.paddock.wire.JsonFields.field;
import static io.paddock.wire.JsonFields.integer;
import static io.paddock.wire.JsonFields.onlyFields;
import static io.paddock.wire.JsonFields.text;

/**
 * The JSON forms of the volume API ({@link io.paddock.Volumes}) as {@code openapi.json} describes them, shared by
 * the daemon and the remote SDK: {@code VolumeInfo} ({@code name}, {@code size_bytes}, {@code used_bytes},
 * {@code created_at}, {@code sandboxes}), a list of them, and the create request ({@code name}, optional
 * {@code size}: bytes, or a size such as {@code "64m"} as a sandbox's {@code disk} takes). Strict: unknown fields and wrong types are INVALID_ARGUMENT naming the field. Stateless.
 */
public final class VolumeWire {
    private static final Set<String> CREATE_FIELDS = Set.of("name", "size");

    /** A create request: the name, and the size in bytes or none for the default. */
    public record CreateRequest(String name, java.util.Optional<ByteSize> size) {
    }

    private VolumeWire() {
    }

    public static ObjectNode json(VolumeInfo v) {
        ObjectNode o = Wire.object();
        o.put("name", v.name());
        o.put("size_bytes", v.size().bytes());
        o.put("used_bytes", v.used());
        o.put("created_at", v.created().toString());
        ArrayNode s = o.putArray("sandboxes");
        v.sandboxes().forEach(id -> s.add(id.value()));
        return o;
    }

    public static ObjectNode json(List<VolumeInfo> volumes) {
        ObjectNode o = Wire.object();
        ArrayNode a = o.putArray("volumes");
        volumes.forEach(v -> a.add(json(v)));
        return o;
    }

    public static VolumeInfo volumeInfo(JsonNode n) {
        List<SandboxId> sandboxes = new ArrayList<>();
        n.path("sandboxes").forEach(s -> sandboxes.add(new SandboxId(s.asText())));
        return new VolumeInfo(n.path("name").asText(), ByteSize.bytes(n.path("size_bytes").asLong()),
                n.path("used_bytes").asLong(), Instant.parse(n.path("created_at").asText()), sandboxes);
    }

    public static List<VolumeInfo> volumeList(JsonNode n) {
        List<VolumeInfo> out = new ArrayList<>();
        n.path("volumes").forEach(v -> out.add(volumeInfo(v)));
        return out;
    }

    public static ObjectNode createRequest(String name, ByteSize size) {
        ObjectNode o = Wire.object();
        o.put("name", name);
        o.put("size", size.bytes());
        return o;
    }

    public static CreateRequest createRequest(JsonNode body) {
        ObjectNode o = JsonFields.object(body, "body");
        onlyFields(o, "a volume", CREATE_FIELDS);
        String name = text(field(o, "name").orElseThrow(() -> SandboxException.invalid("name", "a volume needs a name")), "name");
        java.util.Optional<ByteSize> size = java.util.Optional.empty();
        if (field(o, "size").isPresent()) {
            JsonNode v = field(o, "size").get();
            if (v.isIntegralNumber()) {
                long bytes = integer(v, "size");
                if (bytes < 0) {
                    throw SandboxException.invalid("size", "must not be negative, got " + bytes);
                }
                size = java.util.Optional.of(ByteSize.bytes(bytes));
            } else {
                try {
                    size = java.util.Optional.of(ByteSize.parse(text(v, "size")));
                } catch (IllegalArgumentException e) {
                    throw SandboxException.invalid("size", e.getMessage());
                }
            }
        }
        return new CreateRequest(name, size);
    }
}
