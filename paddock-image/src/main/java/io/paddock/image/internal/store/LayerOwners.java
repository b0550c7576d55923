package io.paddock.image.internal.store;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.image.internal.oci.Digest;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;

/**
 * Who brought each charged layer into the store, and what it holds there ({@code <root>/owners.json}: a layer's
 * diff_id -> {@code {"owner": …, "bytes": …}}). A layer is charged once, to the first owner whose pull or build
 * stored it; a layer stored with no owner (the operator's, or before owners were recorded) is charged to nobody.
 * Read and written only under the store's lock ({@link ImageStore}), each write atomic.
 */
final class LayerOwners {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** One charged layer. */
    record Charge(String owner, long bytes) {
    }

    private final Path file;

    LayerOwners(Path root) {
        this.file = root.resolve("owners.json");
    }

    /** Every charged layer, by diff_id. */
    Map<Digest, Charge> read() {
        Map<Digest, Charge> out = new TreeMap<>(java.util.Comparator.comparing(Digest::hex));
        try {
            JsonNode n = JSON.readTree(Files.readAllBytes(file));
            n.fields().forEachRemaining(e -> out.put(new Digest(e.getKey()),
                    new Charge(e.getValue().path("owner").asText(), e.getValue().path("bytes").asLong())));
        } catch (NoSuchFileException e) {
            return out;
        } catch (IOException | RuntimeException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "the image owners in " + file + " are unreadable: "
                    + e.getMessage(), e);
        }
        return out;
    }

    void write(Map<Digest, Charge> charges) {
        ObjectNode n = JSON.createObjectNode();
        charges.forEach((d, c) -> n.putObject(d.hex()).put("owner", c.owner()).put("bytes", c.bytes()));
        try {
            ImageStore.writeAtomically(file, JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(n));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
