package io.paddock.wire;

import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.ExecRequest;
import io.paddock.ExitStatus;
import io.paddock.FileInfo;
import io.paddock.FileType;
import io.paddock.NetworkMode;
import io.paddock.NetworkPolicy;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.SandboxInfo;
import io.paddock.SandboxLogs;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;
import io.paddock.StopReason;
import io.paddock.TerminalSize;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import static io.paddock.wire.JsonFields.bool;
import static io.paddock.wire.JsonFields.field;
import static io.paddock.wire.JsonFields.int32;
import static io.paddock.wire.JsonFields.integer;
import static io.paddock.wire.JsonFields.onlyFields;
import static io.paddock.wire.JsonFields.stringMap;
import static io.paddock.wire.JsonFields.strings;
import static io.paddock.wire.JsonFields.text;

/**
 * The JSON forms of Paddock's API types, exactly as {@code openapi.json} describes them, in both
 * directions. Server and client share this class, so they cannot disagree. Parsing validates as the API
 * builders do: a bad field is {@code INVALID_ARGUMENT} naming it (in its JSON name).
 *
 * <p>Byte fields (stdin, stdout, stderr, logs) are base64. Durations are milliseconds; instants are
 * ISO-8601 UTC strings.
 */
public final class Wire {
    /** Nesting deeper than this in a request is refused: JSON depth bombs (ATTACKS.md A58). */
    public static final int MAX_DEPTH = 32;
    public static final ObjectMapper JSON = new ObjectMapper(JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(MAX_DEPTH)
                    .maxStringLength(64 * 1024 * 1024).build())
            .build())
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final Base64.Encoder B64 = Base64.getEncoder();
    private static final Base64.Decoder B64D = Base64.getDecoder();

    private Wire() {
    }

    // ---- parsing helpers ----

    /** Parses a request body; malformed JSON is INVALID_ARGUMENT. */
    public static JsonNode parse(byte[] body) {
        try {
            JsonNode n = JSON.readTree(body);
            if (n == null || n.isMissingNode()) {
                throw SandboxException.invalid("body", "empty; a JSON object is expected");
            }
            return n;
        } catch (JsonProcessingException e) {
            throw SandboxException.invalid("body", "not valid JSON: " + e.getOriginalMessage());
        } catch (java.io.IOException e) {
            throw SandboxException.invalid("body", "unreadable: " + e.getMessage());
        }
    }

    public static byte[] bytes(JsonNode node) {
        try {
            return JSON.writeValueAsBytes(node);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private static ByteSize size(JsonNode v, String field) {
        if (v.isIntegralNumber()) {
            long n = integer(v, field);
            if (n < 0) {
                throw SandboxException.invalid(field, "must not be negative");
            }
            return ByteSize.bytes(n);
        }
        try {
            return ByteSize.parse(text(v, field));
        } catch (IllegalArgumentException e) {
            throw SandboxException.invalid(field, e.getMessage());
        }
    }

    public static byte[] base64(JsonNode v, String field) {
        try {
            return B64D.decode(text(v, field));
        } catch (IllegalArgumentException e) {
            throw SandboxException.invalid(field, "not valid base64");
        }
    }

    private static ObjectNode stringMapNode(Map<String, String> m) {
        ObjectNode o = NODES.objectNode();
        m.forEach(o::put);
        return o;
    }

    // ---- SandboxSpec ----

    private static final Set<String> SPEC_FIELDS = Set.of("image", "entrypoint", "env", "secrets", "workdir", "name",
            "labels", "memory", "cpus", "pids", "disk", "open_files", "network", "ports", "egress_secrets", "codebase", "volumes", "timeout_ms", "idle_timeout_ms", "runtime",
            "on_timeout");

    public static SandboxSpec spec(JsonNode json) {
        ObjectNode o = JsonFields.object(json, "body");
        onlyFields(o, "a sandbox spec", SPEC_FIELDS);
        SandboxSpec.Builder b = SandboxSpec.builder();
        field(o, "image").ifPresent(v -> b.image(text(v, "image")));
        field(o, "entrypoint").ifPresent(v -> b.entrypoint(strings(v, "entrypoint")));
        field(o, "env").ifPresent(v -> b.env(stringMap(v, "env")));
        field(o, "secrets").ifPresent(v -> b.secrets(stringMap(v, "secrets")));
        field(o, "workdir").ifPresent(v -> b.workdir(text(v, "workdir")));
        field(o, "name").ifPresent(v -> b.name(text(v, "name")));
        field(o, "labels").ifPresent(v -> b.labels(stringMap(v, "labels")));
        field(o, "memory").ifPresent(v -> b.memory(size(v, "memory")));
        field(o, "cpus").ifPresent(v -> {
            if (!v.isNumber()) {
                throw SandboxException.invalid("cpus", "a number is expected");
            }
            b.cpus(v.asDouble());
        });
        field(o, "pids").ifPresent(v -> b.pids(int32(v, "pids")));
        field(o, "disk").ifPresent(v -> b.disk(size(v, "disk")));
        field(o, "open_files").ifPresent(v -> b.openFiles(int32(v, "open_files")));
        field(o, "network").ifPresent(v -> b.network(networkPolicy(v)));
        field(o, "ports").ifPresent(v -> {
            if (!v.isArray()) {
                throw SandboxException.invalid("ports", "an array of port numbers is expected");
            }
            List<Integer> ports = new java.util.ArrayList<>();
            v.forEach(p -> ports.add(int32(p, "ports")));
            b.ports(ports);
        });
        field(o, "timeout_ms").ifPresent(v -> b.timeout(Duration.ofMillis(integer(v, "timeout_ms"))));
        field(o, "idle_timeout_ms").ifPresent(v -> b.idleTimeout(Duration.ofMillis(integer(v, "idle_timeout_ms"))));
        field(o, "runtime").ifPresent(v -> b.runtime(text(v, "runtime")));
        field(o, "on_timeout").ifPresent(v -> b.onTimeout(timeoutAction(text(v, "on_timeout"))));
        field(o, "egress_secrets").ifPresent(v -> {
            if (!v.isArray()) {
                throw SandboxException.invalid("egress_secrets", "an array of {key, host, value} is expected");
            }
            for (JsonNode e : v) {
                ObjectNode eo = JsonFields.object(e, "egress_secrets");
                onlyFields(eo, "an egress secret", Set.of("key", "host", "value", "placeholder"));
                String key = text(field(eo, "key").orElseThrow(() -> SandboxException.invalid("egress_secrets", "no key")), "key");
                String host = text(field(eo, "host").orElseThrow(() -> SandboxException.invalid("egress_secrets", "no host")), "host");
                String value = text(field(eo, "value").orElseThrow(() -> SandboxException.invalid("egress_secrets", "no value")), "value");
                b.egressSecret(field(eo, "placeholder").isPresent()
                        ? new io.paddock.EgressSecret(key, host, value, text(eo.get("placeholder"), "placeholder"))
                        : io.paddock.EgressSecret.of(key, host, value));
            }
        });
        field(o, "codebase").ifPresent(v -> b.codebase(codebaseMount(v)));
        field(o, "volumes").ifPresent(v -> {
            if (!v.isArray()) {
                throw SandboxException.invalid("volumes", "an array of {name, path, read_only} is expected");
            }
            List<io.paddock.VolumeMount> volumes = new java.util.ArrayList<>();
            for (JsonNode e : v) {
                ObjectNode vo = JsonFields.object(e, "volumes");
                onlyFields(vo, "a volume mount", Set.of("name", "path", "read_only"));
                String name = text(field(vo, "name").orElseThrow(() -> SandboxException.invalid("volumes", "no name")), "volumes.name");
                String path = text(field(vo, "path").orElseThrow(() -> SandboxException.invalid("volumes", "no path")), "volumes.path");
                boolean ro = field(vo, "read_only").map(x -> {
                    if (!x.isBoolean()) {
                        throw SandboxException.invalid("volumes.read_only", "true or false is expected");
                    }
                    return x.asBoolean();
                }).orElse(false);
                volumes.add(new io.paddock.VolumeMount(name, path, ro));
            }
            b.volumes(volumes);
        });
        return b.build();
    }

    private static io.paddock.CodebaseMount codebaseMount(JsonNode v) {
        ObjectNode co = JsonFields.object(v, "codebase");
        onlyFields(co, "a codebase mount", Set.of("name", "path", "preset", "rules"));
        String name = text(field(co, "name").orElseThrow(() -> SandboxException.invalid("codebase", "no name")), "codebase.name");
        String path = field(co, "path").map(x -> text(x, "codebase.path")).orElse(io.paddock.CodebaseMount.DEFAULT_PATH);
        io.paddock.PermissionPreset preset = field(co, "preset").map(x -> io.paddock.PermissionPreset.parse(text(x, "codebase.preset")))
                .orElse(io.paddock.PermissionPreset.defaultPreset());
        List<io.paddock.PermissionRule> rules = field(co, "rules").map(x -> strings(x, "codebase.rules").stream()
                .map(io.paddock.PermissionRule::parse).toList()).orElse(List.of());
        return new io.paddock.CodebaseMount(name, path, preset, rules);
    }

    public static ObjectNode json(SandboxSpec s) {
        ObjectNode o = NODES.objectNode();
        o.put("image", s.image());
        ArrayNode ep = o.putArray("entrypoint");
        s.entrypoint().forEach(ep::add);
        o.set("env", stringMapNode(s.env()));
        o.set("secrets", stringMapNode(s.secrets()));
        o.put("workdir", s.workdir());
        s.name().ifPresent(n -> o.put("name", n));
        o.set("labels", stringMapNode(s.labels()));
        o.put("memory", s.memory().toString());
        o.put("cpus", s.cpus());
        o.put("pids", s.pids());
        o.put("disk", s.disk().toString());
        o.put("open_files", s.openFiles());
        o.set("network", json(s.network()));
        if (!s.ports().isEmpty()) {
            ArrayNode ports = o.putArray("ports");
            s.ports().forEach(ports::add);
        }
        o.put("timeout_ms", s.timeout().toMillis());
        s.idleTimeout().ifPresent(d -> o.put("idle_timeout_ms", d.toMillis()));
        s.runtime().ifPresent(r -> o.put("runtime", r));
        if (s.onTimeout() != io.paddock.TimeoutAction.DESTROY) {
            o.put("on_timeout", s.onTimeout().name().toLowerCase(java.util.Locale.ROOT));
        }
        if (!s.egressSecrets().isEmpty()) {
            ArrayNode es = o.putArray("egress_secrets");
            s.egressSecrets().forEach(e -> es.addObject().put("key", e.key()).put("host", e.host()).put("value", e.value())
                    .put("placeholder", e.placeholder()));
        }
        s.codebase().ifPresent(c -> {
            ObjectNode co = o.putObject("codebase").put("name", c.codebase()).put("path", c.path()).put("preset", c.preset().label());
            ArrayNode rules = co.putArray("rules");
            c.rules().forEach(r -> rules.add(r.toString()));
        });
        if (!s.volumes().isEmpty()) {
            ArrayNode vs = o.putArray("volumes");
            s.volumes().forEach(v -> vs.addObject().put("name", v.volume()).put("path", v.path()).put("read_only", v.readOnly()));
        }
        return o;
    }

    /** {@code {"labels": {k: v, …}}}: labels added to a running sandbox. */
    public static Map<String, String> labelsUpdate(JsonNode json) {
        ObjectNode o = JsonFields.object(json, "body");
        onlyFields(o, "a labels update", Set.of("labels"));
        Map<String, String> labels = stringMap(field(o, "labels").orElseThrow(() -> SandboxException.invalid("labels",
                "no labels given")), "labels");
        labels.forEach((k, v) -> io.paddock.internal.Validate.label("labels", k, v));
        return labels;
    }

    // ---- NetworkPolicy ----

    private static final Set<String> NETWORK_FIELDS = Set.of("mode", "allow");

    /**
     * A network policy: {@code "none"}, {@code "open"}, or {@code {"mode": "allow", "allow": ["198.18.0.0/24",
     * "api.example.com"]}} (an object may also say {@code "none"} or {@code "open"} as its mode).
     */
    public static NetworkPolicy networkPolicy(JsonNode v) {
        if (v.isTextual()) {
            return NetworkPolicy.of(networkMode(v.asText()));
        }
        ObjectNode o = JsonFields.object(v, "network");
        onlyFields(o, "a network policy", NETWORK_FIELDS);
        NetworkMode mode = networkMode(text(field(o, "mode").orElseThrow(
                () -> SandboxException.invalid("network.mode", "missing (none, allow or open)")), "network.mode"));
        List<String> allow = field(o, "allow").map(a -> strings(a, "network.allow")).orElse(List.of());
        if (mode != NetworkMode.ALLOW && !allow.isEmpty()) {
            throw SandboxException.invalid("network.allow", "only an 'allow' policy has entries");
        }
        return mode == NetworkMode.ALLOW ? NetworkPolicy.allow(allow) : NetworkPolicy.of(mode);
    }

    private static NetworkMode networkMode(String n) {
        return switch (n.toLowerCase(Locale.ROOT)) {
            case "none" -> NetworkMode.NONE;
            case "allow" -> NetworkMode.ALLOW;
            case "open" -> NetworkMode.OPEN;
            default -> throw SandboxException.invalid("network", "unknown network mode '" + n
                    + "' (known: none, allow, open)");
        };
    }

    /** {@code {"mode": "...", "allow": [...]}}; see {@link #networkPolicy(JsonNode)}. */
    public static ObjectNode json(NetworkPolicy p) {
        ObjectNode o = NODES.objectNode();
        o.put("mode", p.mode().name().toLowerCase(Locale.ROOT));
        ArrayNode allow = o.putArray("allow");
        p.entries().forEach(allow::add);
        return o;
    }

    // ---- ExecRequest ----

    private static final Set<String> EXEC_FIELDS = Set.of("argv", "env", "cwd", "timeout_ms", "stdin", "output_limit_bytes",
            "terminal");
    private static final Set<String> TERMINAL_FIELDS = Set.of("cols", "rows");

    public static ExecRequest execRequest(JsonNode json) {
        ObjectNode o = JsonFields.object(json, "body");
        onlyFields(o, "an exec request", EXEC_FIELDS);
        ExecRequest.Builder b = ExecRequest.builder();
        b.argv(strings(field(o, "argv").orElseThrow(() -> SandboxException.invalid("argv", "no command given")), "argv"));
        field(o, "env").ifPresent(v -> b.env(stringMap(v, "env")));
        field(o, "cwd").ifPresent(v -> b.cwd(text(v, "cwd")));
        field(o, "timeout_ms").ifPresent(v -> b.timeout(Duration.ofMillis(integer(v, "timeout_ms"))));
        field(o, "stdin").ifPresent(v -> b.stdin(base64(v, "stdin")));
        field(o, "output_limit_bytes").ifPresent(v -> {
            long n = integer(v, "output_limit_bytes");
            if (n < 0) {
                throw SandboxException.invalid("output_limit_bytes", "must not be negative");
            }
            b.outputLimit(ByteSize.bytes(n));
        });
        field(o, "terminal").ifPresent(v -> b.terminal(terminalSize(v, "terminal")));
        return b.build();
    }

    /** {@code {"cols": C, "rows": R}}: a terminal's size, in an exec request or a {@code resize} message. */
    public static TerminalSize terminalSize(JsonNode json, String what) {
        ObjectNode o = JsonFields.object(json, what);
        onlyFields(o, what, TERMINAL_FIELDS);
        JsonNode cols = field(o, "cols").orElseThrow(() -> SandboxException.invalid(what + ".cols", "is required"));
        JsonNode rows = field(o, "rows").orElseThrow(() -> SandboxException.invalid(what + ".rows", "is required"));
        return new TerminalSize(terminalSide(cols, what + ".cols"), terminalSide(rows, what + ".rows"));
    }

    private static int terminalSide(JsonNode v, String field) {
        int n = JsonFields.int32(v, field);
        if (n < 1 || n > TerminalSize.MAX) {
            throw SandboxException.invalid(field, "must be between 1 and " + TerminalSize.MAX + ", got " + n);
        }
        return n;
    }

    public static ObjectNode json(TerminalSize size) {
        ObjectNode o = NODES.objectNode();
        o.put("cols", size.columns());
        o.put("rows", size.rows());
        return o;
    }

    public static ObjectNode json(ExecRequest r, boolean withStdin) {
        ObjectNode o = NODES.objectNode();
        ArrayNode argv = o.putArray("argv");
        r.argv().forEach(argv::add);
        o.set("env", stringMapNode(r.env()));
        r.cwd().ifPresent(c -> o.put("cwd", c));
        r.timeout().ifPresent(t -> o.put("timeout_ms", Math.max(1, t.toMillis())));
        if (withStdin) {
            r.stdin().ifPresent(s -> o.put("stdin", B64.encodeToString(s)));
        }
        o.put("output_limit_bytes", r.outputLimit().bytes());
        r.terminal().ifPresent(t -> o.set("terminal", json(t)));
        return o;
    }

    // ---- ExitStatus, ExecResult ----

    public static ObjectNode json(ExitStatus s) {
        ObjectNode o = NODES.objectNode();
        o.put("outcome", s.outcome().name());
        o.put("exit_code", s.exitCode());
        o.put("signal", s.signal());
        o.put("stdout_truncated", s.stdoutTruncated());
        o.put("stderr_truncated", s.stderrTruncated());
        o.put("duration_ms", s.duration().toNanos() / 1e6);
        return o;
    }

    public static ExitStatus exitStatus(JsonNode json) {
        ObjectNode o = JsonFields.object(json, "status");
        ExitStatus.Outcome outcome = enumValue(ExitStatus.Outcome.class, o.path("outcome").asText(), "outcome");
        return new ExitStatus(outcome, o.path("exit_code").asInt(), o.path("signal").asInt(),
                o.path("stdout_truncated").asBoolean(), o.path("stderr_truncated").asBoolean(),
                Duration.ofNanos(Math.round(o.path("duration_ms").asDouble() * 1e6)));
    }

    public static ObjectNode json(io.paddock.ExecResult r) {
        ObjectNode o = NODES.objectNode();
        o.set("status", json(r.status()));
        o.put("stdout", B64.encodeToString(r.stdout()));
        o.put("stderr", B64.encodeToString(r.stderr()));
        return o;
    }

    public static io.paddock.ExecResult execResult(JsonNode json) {
        ObjectNode o = JsonFields.object(json, "body");
        return new io.paddock.ExecResult(exitStatus(o.get("status")), base64(o.get("stdout"), "stdout"),
                base64(o.get("stderr"), "stderr"));
    }

    // ---- pause ----

    /** {@code destroy} or {@code pause}: what a sandbox's deadline does to it. */
    public static io.paddock.TimeoutAction timeoutAction(String text) {
        return switch (text) {
            case "destroy" -> io.paddock.TimeoutAction.DESTROY;
            case "pause" -> io.paddock.TimeoutAction.PAUSE;
            default -> throw SandboxException.invalid("on_timeout", "must be destroy or pause, got '" + text + "'");
        };
    }

    /** The answer to a fork: the new sandboxes, in order. */
    public static ObjectNode forkResult(List<ObjectNode> sandboxes) {
        ObjectNode o = NODES.objectNode();
        com.fasterxml.jackson.databind.node.ArrayNode list = o.putArray("sandboxes");
        sandboxes.forEach(list::add);
        return o;
    }

    /** The answer to a pause: what happened to the memory (mode, and in words) and the sandbox as it is now. */
    public static ObjectNode pauseResult(io.paddock.PauseMode mode, ObjectNode sandbox) {
        ObjectNode o = NODES.objectNode();
        o.put("mode", mode.name());
        o.put("note", mode == io.paddock.PauseMode.CHECKPOINTED
                ? "checkpointed to disk; its memory is free until resume"
                : "frozen; its memory stays resident (memory checkpoints need the gVisor tier: --runtime runsc)");
        o.set("sandbox", sandbox);
        return o;
    }

    public static io.paddock.PauseMode pauseMode(JsonNode json) {
        return enumValue(io.paddock.PauseMode.class, JsonFields.object(json, "body").path("mode").asText(), "mode");
    }

    // ---- SandboxInfo ----

    public static ObjectNode json(SandboxInfo i) {
        ObjectNode o = NODES.objectNode();
        o.put("id", i.id().value());
        if (i.name().isPresent()) {
            o.put("name", i.name().get());
        } else {
            o.putNull("name");
        }
        o.set("labels", stringMapNode(i.labels()));
        o.put("state", i.state().name());
        if (i.stopReason().isPresent()) {
            o.put("stop_reason", i.stopReason().get().name());
        } else {
            o.putNull("stop_reason");
        }
        o.put("created_at", i.createdAt().toString());
        o.put("expires_at", i.expiresAt().toString());
        o.put("image", i.image());
        o.put("runtime", i.runtime());
        if (i.entrypointExit().isPresent()) {
            o.set("entrypoint_exit", json(i.entrypointExit().get()));
        } else {
            o.putNull("entrypoint_exit");
        }
        o.set("network", json(i.network()));
        ArrayNode ports = o.putArray("ports");
        i.ports().forEach(ports::add);
        if (i.traffic().isPresent()) {
            o.putObject("traffic").put("tx_bytes", i.traffic().get().txBytes()).put("rx_bytes", i.traffic().get().rxBytes());
        } else {
            o.putNull("traffic");
        }
        return o;
    }

    public static SandboxInfo sandboxInfo(JsonNode json) {
        ObjectNode o = JsonFields.object(json, "body");
        return new SandboxInfo(SandboxId.parse(o.path("id").asText()),
                o.hasNonNull("name") ? Optional.of(o.get("name").asText()) : Optional.empty(),
                o.has("labels") ? stringMap(o.get("labels"), "labels") : Map.of(),
                enumValue(SandboxState.class, o.path("state").asText(), "state"),
                o.hasNonNull("stop_reason")
                        ? Optional.of(enumValue(StopReason.class, o.get("stop_reason").asText(), "stop_reason"))
                        : Optional.empty(),
                Instant.parse(o.path("created_at").asText()), Instant.parse(o.path("expires_at").asText()),
                o.path("image").asText(), o.path("runtime").asText(),
                o.hasNonNull("entrypoint_exit") ? Optional.of(exitStatus(o.get("entrypoint_exit"))) : Optional.empty(),
                o.hasNonNull("network") ? networkPolicy(o.get("network")) : NetworkPolicy.none(),
                o.has("ports") && o.get("ports").isArray()
                        ? java.util.stream.StreamSupport.stream(o.get("ports").spliterator(), false).map(JsonNode::asInt).toList()
                        : List.of(),
                o.hasNonNull("traffic") ? Optional.of(new io.paddock.NetworkTraffic(o.get("traffic").path("tx_bytes").asLong(),
                        o.get("traffic").path("rx_bytes").asLong())) : Optional.empty());
    }

    // ---- logs, files, small requests ----

    public static ObjectNode json(SandboxLogs l) {
        ObjectNode o = NODES.objectNode();
        o.put("stdout", B64.encodeToString(l.stdout()));
        o.put("stderr", B64.encodeToString(l.stderr()));
        o.put("stdout_truncated", l.stdoutTruncated());
        o.put("stderr_truncated", l.stderrTruncated());
        return o;
    }

    public static SandboxLogs logs(JsonNode json) {
        ObjectNode o = JsonFields.object(json, "body");
        return new SandboxLogs(base64(o.get("stdout"), "stdout"), base64(o.get("stderr"), "stderr"),
                o.path("stdout_truncated").asBoolean(), o.path("stderr_truncated").asBoolean());
    }

    public static ObjectNode json(io.paddock.ResourceUsage u) {
        ObjectNode o = NODES.objectNode();
        o.put("memory_bytes", u.memory().bytes());
        if (u.memoryLimit().isPresent()) {
            o.put("memory_limit_bytes", u.memoryLimit().get().bytes());
        } else {
            o.putNull("memory_limit_bytes");
        }
        o.put("cpu_time_ms", u.cpuTime().toNanos() / 1e6);
        o.put("processes", u.processes());
        return o;
    }

    public static io.paddock.ResourceUsage usage(JsonNode json) {
        ObjectNode o = JsonFields.object(json, "body");
        return new io.paddock.ResourceUsage(ByteSize.bytes(integer(o.path("memory_bytes"), "memory_bytes")),
                field(o, "memory_limit_bytes").map(v -> ByteSize.bytes(integer(v, "memory_limit_bytes"))),
                Duration.ofNanos(Math.round(o.path("cpu_time_ms").asDouble() * 1e6)),
                integer(o.path("processes"), "processes"));
    }

    public static ObjectNode json(FileInfo f) {
        ObjectNode o = NODES.objectNode();
        o.put("path", f.path());
        o.put("name", f.name());
        o.put("type", f.type().name());
        o.put("size", f.size());
        o.put("mode", f.mode());
        o.put("modified_at", f.modifiedAt().toString());
        if (f.symlinkTarget().isPresent()) {
            o.put("symlink_target", f.symlinkTarget().get());
        } else {
            o.putNull("symlink_target");
        }
        return o;
    }

    public static FileInfo fileInfo(JsonNode json) {
        ObjectNode o = JsonFields.object(json, "file");
        return new FileInfo(o.path("path").asText(), o.path("name").asText(),
                enumValue(FileType.class, o.path("type").asText(), "type"), o.path("size").asLong(),
                o.path("mode").asInt(), Instant.parse(o.path("modified_at").asText()),
                o.hasNonNull("symlink_target") ? Optional.of(o.get("symlink_target").asText()) : Optional.empty());
    }

    public static ObjectNode fileList(List<FileInfo> entries) {
        ObjectNode o = NODES.objectNode();
        ArrayNode a = o.putArray("entries");
        entries.forEach(e -> a.add(json(e)));
        return o;
    }

    public static List<FileInfo> fileList(JsonNode json) {
        List<FileInfo> out = new ArrayList<>();
        for (JsonNode e : JsonFields.object(json, "body").path("entries")) {
            out.add(fileInfo(e));
        }
        return out;
    }

    /** A required string field of a small request object ({@code {"path": …}} and the like). */
    public static String requiredText(JsonNode json, String field) {
        ObjectNode o = JsonFields.object(json, "body");
        return text(field(o, field).orElseThrow(() -> SandboxException.invalid(field, "missing")), field);
    }

    public static boolean optionalBool(JsonNode json, String field, boolean dflt) {
        ObjectNode o = JsonFields.object(json, "body");
        return field(o, field).map(v -> bool(v, field)).orElse(dflt);
    }

    public static long requiredLong(JsonNode json, String field) {
        ObjectNode o = JsonFields.object(json, "body");
        return integer(field(o, field).orElseThrow(() -> SandboxException.invalid(field, "missing")), field);
    }

    public static ObjectNode object() {
        return NODES.objectNode();
    }

    // ---- errors ----

    public static ObjectNode error(SandboxException e) {
        return error(e.code(), e.getMessage());
    }

    public static ObjectNode error(ErrorCode code, String message) {
        ObjectNode o = NODES.objectNode();
        ObjectNode err = o.putObject("error");
        err.put("code", code.name());
        err.put("message", message == null ? code.name() : message);
        return o;
    }

    /** Turns an error body (and its HTTP status, for bodies that are not Paddock's) back into the exception. */
    public static SandboxException exception(int httpStatus, byte[] body) {
        try {
            JsonNode n = JSON.readTree(body);
            JsonNode err = n == null ? null : n.get("error");
            if (err != null && err.hasNonNull("code")) {
                ErrorCode code;
                try {
                    code = ErrorCode.valueOf(err.get("code").asText());
                } catch (IllegalArgumentException e) {
                    code = HttpStatus.toCode(httpStatus);
                }
                return new SandboxException(code, err.path("message").asText(code.name()));
            }
        } catch (java.io.IOException | RuntimeException e) {
            // not a Paddock error body
        }
        String text = new String(body, 0, Math.min(body.length, 200), StandardCharsets.UTF_8);
        return new SandboxException(HttpStatus.toCode(httpStatus), "HTTP " + httpStatus + (text.isBlank() ? "" : ": " + text));
    }

    static <E extends Enum<E>> E enumValue(Class<E> type, String value, String field) {
        try {
            return Enum.valueOf(type, value);
        } catch (IllegalArgumentException e) {
            throw SandboxException.invalid(field, "unknown value '" + value + "'");
        }
    }
}
