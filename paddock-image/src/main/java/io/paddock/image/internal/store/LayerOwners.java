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
 * Who brought each charged layer into the store, and what it holds there, and who wrote each name
 * ({@code <root>/owners.json}: {@code "layers"}: a layer's diff_id -> {@code {"owner": …, "bytes": …}};
 * {@code "names"}: a name -> the owner whose pull or build last wrote it). A layer is charged once, to the first
 * owner whose pull or build stored it; a layer or name written with no owner (the operator's, or before owners were
 * recorded) belongs to nobody. Read and written only under the store's lock ({@link ImageStore}), each write atomic.
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

    /** The records: the charged layers by diff_id, and the names' owners. Mutable, for {@link #write}. */
    record Records(Map<Digest, Charge> layers, Map<String, String> names) {
    }

    /** Every record. */
    Records read() {
        Records out = new Records(new TreeMap<>(java.util.Comparator.comparing(Digest::hex)), new TreeMap<>());
        try {
            JsonNode n = JSON.readTree(Files.readAllBytes(file));
            n.path("layers").fields().forEachRemaining(e -> out.layers().put(new Digest(e.getKey()),
                    new Charge(e.getValue().path("owner").asText(), e.getValue().path("bytes").asLong())));
            n.path("names").fields().forEachRemaining(e -> out.names().put(e.getKey(), e.getValue().asText()));
        } catch (NoSuchFileException e) {
            return out;
        } catch (IOException | RuntimeException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "the image owners in " + file + " are unreadable: "
                    + e.getMessage(), e);
        }
        return out;
    }

    void write(Records records) {
        ObjectNode n = JSON.createObjectNode();
        ObjectNode layers = n.putObject("layers");
        records.layers().forEach((d, c) -> layers.putObject(d.hex()).put("owner", c.owner()).put("bytes", c.bytes()));
        ObjectNode names = n.putObject("names");
        records.names().forEach(names::put);
        try {
            ImageStore.writeAtomically(file, JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(n));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
