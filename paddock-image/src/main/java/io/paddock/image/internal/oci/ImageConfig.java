package io.paddock.image.internal.oci;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What Paddock uses of an OCI image configuration ({@code application/vnd.oci.image.config.v1+json}): how
 * processes start (environment, user, working directory, entrypoint and command), the labels and exposed
 * ports, and the layers' uncompressed digests ({@code rootfs.diff_ids}), bottom first.
 */
public record ImageConfig(String architecture, String os, List<String> env, String user, String workingDir,
                          List<String> entrypoint, List<String> cmd, Map<String, String> labels,
                          List<String> exposedPorts, List<Digest> diffIds, Optional<Instant> created) {
    private static final ObjectMapper JSON = new ObjectMapper();
    /**
     * The label that says an image's layers stack on the host image's root rather than on nothing: a snapshot of
     * a {@code host} sandbox (value {@value #HOST_BASE}). Its sandboxes get the host's {@code /usr}, {@code /bin}
     * and {@code /lib*} read-only, as the host image's do (docs/IMAGES.md, "Snapshots").
     */
    public static final String BASE_LABEL = "io.paddock.image.base";
    public static final String HOST_BASE = "host";

    public ImageConfig {
        Objects.requireNonNull(architecture, "architecture");
        Objects.requireNonNull(os, "os");
        env = List.copyOf(env);
        Objects.requireNonNull(user, "user");
        Objects.requireNonNull(workingDir, "workingDir");
        entrypoint = List.copyOf(entrypoint);
        cmd = List.copyOf(cmd);
        labels = Map.copyOf(labels);
        exposedPorts = List.copyOf(exposedPorts);
        diffIds = List.copyOf(diffIds);
        Objects.requireNonNull(created, "created");
    }

    /** An empty linux/amd64 configuration with no layers. */
    public static ImageConfig empty() {
        return new ImageConfig("amd64", "linux", List.of(), "", "", List.of(), List.of(), Map.of(), List.of(),
                List.of(), Optional.empty());
    }

    /** Parses a configuration blob; INVALID_ARGUMENT when it is not one. */
    public static ImageConfig parse(byte[] json) {
        try {
            JsonNode root = JSON.readTree(json);
            if (root == null || !root.isObject()) {
                throw new IOException("not a JSON object");
            }
            JsonNode c = root.path("config");
            List<Digest> diffIds = new ArrayList<>();
            for (JsonNode d : root.path("rootfs").path("diff_ids")) {
                diffIds.add(Digest.parse(d.asText(), "rootfs.diff_ids"));
            }
            Map<String, String> labels = new LinkedHashMap<>();
            c.path("Labels").fields().forEachRemaining(e -> labels.put(e.getKey(), e.getValue().asText()));
            List<String> ports = new ArrayList<>();
            c.path("ExposedPorts").fieldNames().forEachRemaining(ports::add);
            Optional<Instant> created = Optional.empty();
            if (root.hasNonNull("created")) {
                try {
                    created = Optional.of(Instant.parse(root.get("created").asText()));
                } catch (RuntimeException ignored) {
                    // an unparsable date is not worth refusing an image for
                }
            }
            return new ImageConfig(root.path("architecture").asText("amd64"), root.path("os").asText("linux"),
                    strings(c.path("Env")), c.path("User").asText(""), c.path("WorkingDir").asText(""),
                    strings(c.path("Entrypoint")), strings(c.path("Cmd")), labels, ports, diffIds, created);
        } catch (IOException | RuntimeException e) {
            if (e instanceof SandboxException se) {
                throw se;
            }
            throw new SandboxException(ErrorCode.INVALID_ARGUMENT, "the image configuration is not valid: " + e.getMessage(), e);
        }
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        for (JsonNode n : array) {
            out.add(n.asText());
        }
        return out;
    }

    /** The configuration blob, canonical (fields in a fixed order), as Paddock writes it for built images. */
    public byte[] toJson() {
        ObjectNode root = JSON.createObjectNode();
        created.ifPresent(t -> root.put("created", t.toString()));
        root.put("architecture", architecture);
        root.put("os", os);
        ObjectNode c = root.putObject("config");
        if (!user.isEmpty()) {
            c.put("User", user);
        }
        if (!exposedPorts.isEmpty()) {
            ObjectNode p = c.putObject("ExposedPorts");
            exposedPorts.forEach(x -> p.putObject(x));
        }
        if (!env.isEmpty()) {
            ArrayNode a = c.putArray("Env");
            env.forEach(a::add);
        }
        if (!entrypoint.isEmpty()) {
            ArrayNode a = c.putArray("Entrypoint");
            entrypoint.forEach(a::add);
        }
        if (!cmd.isEmpty()) {
            ArrayNode a = c.putArray("Cmd");
            cmd.forEach(a::add);
        }
        if (!workingDir.isEmpty()) {
            c.put("WorkingDir", workingDir);
        }
        if (!labels.isEmpty()) {
            ObjectNode l = c.putObject("Labels");
            labels.entrySet().stream().sorted(Map.Entry.comparingByKey()).forEach(e -> l.put(e.getKey(), e.getValue()));
        }
        ObjectNode rootfs = root.putObject("rootfs");
        rootfs.put("type", "layers");
        ArrayNode ids = rootfs.putArray("diff_ids");
        diffIds.forEach(d -> ids.add(d.toString()));
        try {
            return JSON.writeValueAsBytes(root);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Whether this image's layers stack on the host image's root ({@link #BASE_LABEL}). */
    public boolean hostBased() {
        return HOST_BASE.equals(labels.get(BASE_LABEL));
    }

    /** The environment as a map, in order; a later duplicate wins. */
    public Map<String, String> envMap() {
        Map<String, String> m = new LinkedHashMap<>();
        for (String kv : env) {
            int eq = kv.indexOf('=');
            if (eq > 0) {
                m.put(kv.substring(0, eq), kv.substring(eq + 1));
            }
        }
        return m;
    }

    public ImageConfig withLayers(List<Digest> layers) {
        return new ImageConfig(architecture, os, env, user, workingDir, entrypoint, cmd, labels, exposedPorts, layers, created);
    }

    public ImageConfig withEnv(List<String> newEnv) {
        return new ImageConfig(architecture, os, newEnv, user, workingDir, entrypoint, cmd, labels, exposedPorts, diffIds, created);
    }

    public ImageConfig withUser(String newUser) {
        return new ImageConfig(architecture, os, env, newUser, workingDir, entrypoint, cmd, labels, exposedPorts, diffIds, created);
    }

    public ImageConfig withWorkingDir(String dir) {
        return new ImageConfig(architecture, os, env, user, dir, entrypoint, cmd, labels, exposedPorts, diffIds, created);
    }

    public ImageConfig withEntrypoint(List<String> e) {
        return new ImageConfig(architecture, os, env, user, workingDir, e, cmd, labels, exposedPorts, diffIds, created);
    }

    public ImageConfig withCmd(List<String> c) {
        return new ImageConfig(architecture, os, env, user, workingDir, entrypoint, c, labels, exposedPorts, diffIds, created);
    }

    public ImageConfig withLabels(Map<String, String> l) {
        return new ImageConfig(architecture, os, env, user, workingDir, entrypoint, cmd, l, exposedPorts, diffIds, created);
    }

    public ImageConfig withExposedPorts(List<String> p) {
        return new ImageConfig(architecture, os, env, user, workingDir, entrypoint, cmd, labels, p, diffIds, created);
    }

    public ImageConfig withCreated(Optional<Instant> c) {
        return new ImageConfig(architecture, os, env, user, workingDir, entrypoint, cmd, labels, exposedPorts, diffIds, c);
    }
}
