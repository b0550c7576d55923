package io.paddock.runtime.internal.bundle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * A fork's {@code config.json}, made from its source's as pure data: every host path or name that carries the
 * source's id (its cgroup, its root, its files under the state directory) carries the fork's instead, and the
 * uid and gid mappings that point into the source's host range point into the fork's, at the same offsets.
 * Everything the sandbox itself sees (mount destinations, its process, its limits) stays as it was: a gVisor
 * restore matches the checkpoint's mounts by their destinations in the sandbox.
 */
final class ForkSpec {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private ForkSpec() {
    }

    static byte[] retarget(String sourceConfig, String sourceId, String forkId, long sourceUidBase, long forkUidBase) {
        try {
            // Sandbox ids are long random tokens: an occurrence is the id, never part of something else.
            JsonNode spec = JSON.readTree(sourceConfig.replace(sourceId, forkId));
            JsonNode linux = spec.path("linux");
            for (String field : new String[] {"uidMappings", "gidMappings"}) {
                for (JsonNode m : linux.path(field)) {
                    long host = m.path("hostID").asLong();
                    if (host >= sourceUidBase && host < sourceUidBase + UidLeases.RANGE) {
                        ((ObjectNode) m).put("hostID", forkUidBase + (host - sourceUidBase));
                    }
                }
            }
            return JSON.writeValueAsBytes(spec);
        } catch (IOException e) {
            throw new UncheckedIOException("the source's config.json is not JSON: " + e.getMessage(), e);
        }
    }
}
