package io.paddock.code.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.ByteSize;
import io.paddock.SandboxException;
import io.paddock.code.Artifact;
import io.paddock.code.CellError;
import io.paddock.code.CodeListener;
import io.paddock.code.CodePolicy;
import io.paddock.code.CodePolicyException;
import io.paddock.code.CodeRequest;
import io.paddock.code.CodeResult;
import io.paddock.code.ContextInfo;
import io.paddock.code.InstallResult;
import io.paddock.code.Language;
import io.paddock.code.Languages;
import io.paddock.code.Plot;
import io.paddock.code.PlotFormat;
import io.paddock.code.RichOutput;
import io.paddock.code.ShellResult;
import io.paddock.wire.JsonFields;
import io.paddock.wire.Wire;

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
import static io.paddock.wire.JsonFields.object;
import static io.paddock.wire.JsonFields.stringMap;
import static io.paddock.wire.JsonFields.strings;
import static io.paddock.wire.JsonFields.text;

/**
 * The JSON forms of the code layer's types, exactly as the daemon's {@code openapi.json} describes them
 * ({@code CodeRequest}, {@code CodeResult}, {@code ContextInfo}, …), in both directions: the daemon
 * ({@code paddock-server}) and the remote client ({@code paddock-client}) share this class, as they share
 * {@link Wire} for the sandbox types. Not an API for applications.
 *
 * <p>Names are snake_case; durations are milliseconds; plot and artifact bytes are base64; stdout and
 * stderr are text (the code layer decodes them as UTF-8). Parsing validates as the API builders do: a bad
 * field is {@code INVALID_ARGUMENT} naming it in its JSON name.
 */
public final class CodeWire {
    private static final Base64.Encoder B64 = Base64.getEncoder();

    /**
     * The media type a client puts in {@code Accept} to have a run or cell streamed: one JSON event per line,
     * {@code stdout}, {@code stderr}, {@code result}, {@code plot} as they happen, then {@code done} (or
     * {@code error}). openapi.json's {@code CodeEvent} describes the lines.
     */
    public static final String STREAM_TYPE = "application/x-ndjson";

    /** The fields of a {@code CodeRequest} body (a run or a cell). */
    private static final Set<String> REQUEST_FIELDS = Set.of("language", "code", "timeout_ms", "env", "cwd",
            "libraries", "package_source", "plot_format", "artifact_content", "output_limit_bytes", "policy");

    private CodeWire() {
    }

    // ---- requests ----

    public static CodeRequest request(JsonNode json) {
        ObjectNode o = object(json, "body");
        onlyFields(o, "a code request", REQUEST_FIELDS);
        CodeRequest.Builder b = CodeRequest.builder();
        field(o, "language").ifPresent(v -> b.language(text(v, "language")));
        b.code(field(o, "code").map(v -> text(v, "code")).orElse(null));
        field(o, "timeout_ms").ifPresent(v -> b.timeout(Duration.ofMillis(positive(v, "timeout_ms"))));
        field(o, "env").ifPresent(v -> b.env(stringMap(v, "env")));
        field(o, "cwd").ifPresent(v -> b.cwd(text(v, "cwd")));
        field(o, "libraries").ifPresent(v -> b.libraries(strings(v, "libraries")));
        field(o, "package_source").ifPresent(v -> b.packageSource(text(v, "package_source")));
        field(o, "plot_format").ifPresent(v -> b.plotFormat(plotFormat(text(v, "plot_format"), "plot_format")));
        field(o, "artifact_content").ifPresent(v -> b.artifactContent(bool(v, "artifact_content")));
        field(o, "output_limit_bytes").ifPresent(v -> b.outputLimit(ByteSize.bytes(positive(v, "output_limit_bytes"))));
        return b.build();
    }

    public static ObjectNode json(CodeRequest r) {
        ObjectNode o = Wire.object();
        r.language().ifPresent(l -> o.put("language", l));
        o.put("code", r.code());
        r.timeout().ifPresent(t -> o.put("timeout_ms", Math.max(1, t.toMillis())));
        if (!r.env().isEmpty()) {
            o.set("env", stringMapNode(r.env()));
        }
        r.cwd().ifPresent(c -> o.put("cwd", c));
        if (!r.libraries().isEmpty()) {
            ArrayNode a = o.putArray("libraries");
            r.libraries().forEach(a::add);
        }
        r.packageSource().ifPresent(s -> o.put("package_source", s));
        o.put("plot_format", r.plotFormat().extension());
        o.put("artifact_content", r.artifactContent());
        r.outputLimit().ifPresent(l -> o.put("output_limit_bytes", l.bytes()));
        return o;
    }

    /**
     * The policy a REST request names in its optional {@code policy} field (a preset: {@code permissive},
     * {@code standard}, {@code strict}); empty when it names none. An unknown preset is {@code INVALID_ARGUMENT}.
     */
    public static Optional<CodePolicy> policy(JsonNode json) {
        return field(object(json, "body"), "policy").map(v -> CodePolicy.preset(text(v, "policy")));
    }

    /** A required string field of a small request ({@code {"language": …}} and the like). */
    public static String requiredText(JsonNode json, String name) {
        return text(field(object(json, "body"), name).orElseThrow(() -> SandboxException.invalid(name, "missing")), name);
    }

    public static Optional<String> optionalText(JsonNode json, String name) {
        return field(object(json, "body"), name).map(v -> text(v, name));
    }

    public static List<String> optionalStrings(JsonNode json, String name) {
        return field(object(json, "body"), name).map(v -> strings(v, name)).orElse(List.of());
    }

    public static Map<String, String> optionalStringMap(JsonNode json, String name) {
        return field(object(json, "body"), name).map(v -> stringMap(v, name)).orElse(Map.of());
    }

    public static Optional<Duration> optionalMillis(JsonNode json, String name) {
        return field(object(json, "body"), name).map(v -> Duration.ofMillis(positive(v, name)));
    }

    /** Refuses fields other than {@code allowed} in a small request body. */
    public static void onlyFields(JsonNode json, String what, Set<String> allowed) {
        JsonFields.onlyFields(object(json, "body"), what, allowed);
    }

    // ---- CodeResult ----

    public static ObjectNode json(CodeResult r) {
        ObjectNode o = Wire.object();
        o.put("language", r.language());
        o.put("step", r.step().name());
        o.set("status", Wire.json(r.status()));
        o.put("stdout", r.stdout());
        o.put("stderr", r.stderr());
        ArrayNode results = o.putArray("results");
        r.results().forEach(ro -> results.add(json(ro)));
        ArrayNode plots = o.putArray("plots");
        r.plots().forEach(p -> plots.add(json(p)));
        ArrayNode artifacts = o.putArray("artifacts");
        for (Artifact a : r.artifacts()) {
            ObjectNode n = artifacts.addObject();
            n.put("name", a.name());
            n.put("path", a.path());
            n.put("mime_type", a.mimeType());
            n.put("size", a.size());
            Optional<byte[]> content = a.content();
            if (content.isPresent()) {
                n.put("content", B64.encodeToString(content.get()));
            } else {
                n.putNull("content");
            }
        }
        if (r.error().isPresent()) {
            ObjectNode e = o.putObject("error");
            e.put("name", r.error().get().name());
            e.put("message", r.error().get().message());
            e.put("traceback", r.error().get().traceback());
        } else {
            o.putNull("error");
        }
        o.put("context_restarted", r.contextRestarted());
        o.put("duration_ms", r.duration().toNanos() / 1e6);
        return o;
    }

    public static CodeResult codeResult(JsonNode json) {
        ObjectNode o = object(json, "body");
        List<RichOutput> results = new ArrayList<>();
        for (JsonNode n : o.path("results")) {
            results.add(richOutput(n, "results"));
        }
        List<Plot> plots = new ArrayList<>();
        for (JsonNode n : o.path("plots")) {
            plots.add(plot(n, "plots"));
        }
        List<Artifact> artifacts = new ArrayList<>();
        for (JsonNode n : o.path("artifacts")) {
            artifacts.add(new Artifact(n.path("name").asText(), n.path("path").asText(), n.path("mime_type").asText(),
                    n.path("size").asLong(), n.hasNonNull("content")
                    ? Optional.of(Wire.base64(n.get("content"), "artifacts.content")) : Optional.empty()));
        }
        Optional<CellError> error = o.hasNonNull("error")
                ? Optional.of(new CellError(o.get("error").path("name").asText(), o.get("error").path("message").asText(),
                o.get("error").path("traceback").asText()))
                : Optional.empty();
        return new CodeResult(o.path("language").asText(), enumValue(CodeResult.Step.class, o.path("step").asText(), "step"),
                Wire.exitStatus(o.get("status")), o.path("stdout").asText(), o.path("stderr").asText(), results, plots,
                artifacts, error, o.path("context_restarted").asBoolean(), millis(o.path("duration_ms")));
    }

    public static ObjectNode json(RichOutput ro) {
        ObjectNode n = Wire.object();
        n.set("data", stringMapNode(new java.util.TreeMap<>(ro.data())));
        n.put("from_last_expression", ro.fromLastExpression());
        return n;
    }

    private static RichOutput richOutput(JsonNode n, String field) {
        return new RichOutput(stringMap(n.path("data"), field + ".data"), n.path("from_last_expression").asBoolean());
    }

    public static ObjectNode json(Plot p) {
        ObjectNode n = Wire.object();
        n.put("format", p.format().extension());
        n.put("mime_type", p.format().mimeType());
        n.put("width", p.width());
        n.put("height", p.height());
        n.put("dpi", p.dpi());
        n.put("size", p.size());
        n.put("content", B64.encodeToString(p.content()));
        return n;
    }

    private static Plot plot(JsonNode n, String field) {
        return new Plot(plotFormat(n.path("format").asText(), field + ".format"),
                Wire.base64(n.path("content"), field + ".content"), n.path("width").asInt(), n.path("height").asInt(),
                n.path("dpi").asDouble());
    }

    // ---- streamed runs and cells (application/x-ndjson) ----

    /** {@code {"type": "stdout"|"stderr", "text": …}}: output as the code wrote it (UTF-8 decoded). */
    public static ObjectNode textEvent(boolean stderr, String text) {
        ObjectNode o = event(stderr ? "stderr" : "stdout");
        o.put("text", text);
        return o;
    }

    /** {@code {"type": "result", "output": RichOutput}}: a rich value, the last expression's or a display's. */
    public static ObjectNode resultEvent(RichOutput output) {
        ObjectNode o = event("result");
        o.set("output", json(output));
        return o;
    }

    /** {@code {"type": "plot", "plot": Plot}}. */
    public static ObjectNode plotEvent(Plot plot) {
        ObjectNode o = event("plot");
        o.set("plot", json(plot));
        return o;
    }

    /** {@code {"type": "done", "result": CodeResult}}: the last event of a run that finished. */
    public static ObjectNode doneEvent(CodeResult result) {
        ObjectNode o = event("done");
        o.set("result", json(result));
        return o;
    }

    /**
     * {@code {"type": "error", "error": Error}}: the last event of a run that failed after its stream began;
     * {@code error} is the whole {@code Error} body (as on the exec WebSocket), so
     * {@code {"type":"error","error":{"error":{"code":…,"message":…}}}}.
     */
    public static ObjectNode errorEvent(ObjectNode errorBody) {
        ObjectNode o = event("error");
        o.set("error", errorBody);
        return o;
    }

    private static ObjectNode event(String type) {
        ObjectNode o = Wire.object();
        o.put("type", type);
        return o;
    }

    /**
     * Hands one streamed event to {@code listener} (a listener's exception is its own: it does not stop the
     * stream) and returns the run's result when the event is {@code done}. An {@code error} event is thrown as
     * the {@link SandboxException} it describes; an event of an unknown type is skipped (later daemons may add
     * some).
     */
    public static Optional<CodeResult> deliver(JsonNode event, CodeListener listener) {
        ObjectNode o = object(event, "event");
        switch (o.path("type").asText("")) {
            case "stdout" -> quietly(() -> listener.onStdout(o.path("text").asText()));
            case "stderr" -> quietly(() -> listener.onStderr(o.path("text").asText()));
            case "result" -> {
                RichOutput out = richOutput(o.path("output"), "output");
                quietly(() -> listener.onResult(out));
            }
            case "plot" -> {
                Plot p = plot(o.path("plot"), "plot");
                quietly(() -> listener.onPlot(p));
            }
            case "done" -> {
                return Optional.of(codeResult(o.get("result")));
            }
            case "error" -> throw Wire.exception(500, Wire.bytes(o.path("error")));
            default -> {
                // a type this client does not know
            }
        }
        return Optional.empty();
    }

    private static void quietly(Runnable callback) {
        try {
            callback.run();
        } catch (RuntimeException e) {
            // a listener's failure does not change the run
        }
    }

    // ---- contexts, installs, shells, policy, languages ----

    public static ObjectNode json(ContextInfo c) {
        ObjectNode o = Wire.object();
        o.put("id", c.id());
        if (c.name().isPresent()) {
            o.put("name", c.name().get());
        } else {
            o.putNull("name");
        }
        o.put("language", c.language());
        o.put("state", c.state().name());
        o.put("cells", c.cells());
        o.put("restarts", c.restarts());
        o.put("created_at", c.createdAt().toString());
        return o;
    }

    public static ContextInfo contextInfo(JsonNode json) {
        ObjectNode o = object(json, "context");
        return new ContextInfo(o.path("id").asText(),
                o.hasNonNull("name") ? Optional.of(o.get("name").asText()) : Optional.empty(),
                o.path("language").asText(), enumValue(ContextInfo.State.class, o.path("state").asText(), "state"),
                o.path("cells").asLong(), o.path("restarts").asInt(), Instant.parse(o.path("created_at").asText()));
    }

    public static ObjectNode contextList(List<ContextInfo> contexts) {
        ObjectNode o = Wire.object();
        ArrayNode a = o.putArray("contexts");
        contexts.forEach(c -> a.add(json(c)));
        return o;
    }

    public static List<ContextInfo> contextList(JsonNode json) {
        List<ContextInfo> out = new ArrayList<>();
        for (JsonNode n : object(json, "body").path("contexts")) {
            out.add(contextInfo(n));
        }
        return out;
    }

    public static ObjectNode json(InstallResult r) {
        ObjectNode o = Wire.object();
        o.put("language", r.language());
        o.put("manager", r.manager());
        ArrayNode p = o.putArray("packages");
        r.packages().forEach(p::add);
        o.put("source", r.source());
        o.put("target", r.target());
        o.put("log", r.log());
        o.put("duration_ms", r.duration().toNanos() / 1e6);
        return o;
    }

    public static InstallResult installResult(JsonNode json) {
        ObjectNode o = object(json, "body");
        return new InstallResult(o.path("language").asText(), o.path("manager").asText(),
                strings(o.path("packages"), "packages"), o.path("source").asText(), o.path("target").asText(),
                o.path("log").asText(), millis(o.path("duration_ms")));
    }

    public static ObjectNode json(ShellResult r) {
        ObjectNode o = Wire.object();
        o.set("status", Wire.json(r.status()));
        o.put("stdout", r.stdout());
        o.put("stderr", r.stderr());
        o.put("session_restarted", r.sessionRestarted());
        return o;
    }

    public static ShellResult shellResult(JsonNode json) {
        ObjectNode o = object(json, "body");
        return new ShellResult(Wire.exitStatus(o.get("status")), o.path("stdout").asText(), o.path("stderr").asText(),
                o.path("session_restarted").asBoolean());
    }

    /** A shell session as the daemon describes it: its id, the variables it was opened with, and whether it is alive. */
    public static ObjectNode shell(String id, Map<String, String> env, boolean alive) {
        ObjectNode o = Wire.object();
        o.put("id", id);
        o.set("env", stringMapNode(new java.util.TreeMap<>(env)));
        o.put("alive", alive);
        return o;
    }

    /** The answer of a policy check: the policy's name and threshold (or none) and the violations found. */
    public static ObjectNode violations(Optional<CodePolicy> policy, List<CodePolicy.Violation> violations) {
        ObjectNode o = Wire.object();
        if (policy.isPresent()) {
            o.put("policy", policy.get().name());
            o.put("threshold", policy.get().threshold().name());
        } else {
            o.putNull("policy");
            o.putNull("threshold");
        }
        o.set("violations", violationArray(violations));
        return o;
    }

    public static List<CodePolicy.Violation> violations(JsonNode json) {
        List<CodePolicy.Violation> out = new ArrayList<>();
        for (JsonNode n : object(json, "body").path("violations")) {
            out.add(new CodePolicy.Violation(n.path("rule").asText(), n.path("description").asText(),
                    enumValue(CodePolicy.Severity.class, n.path("severity").asText(), "severity"), n.path("line").asInt(),
                    n.path("excerpt").asText()));
        }
        return out;
    }

    /** The {@code Error} body of a policy refusal: code, message, and the policy and its violations. */
    public static ObjectNode error(CodePolicyException e) {
        ObjectNode o = Wire.error(e);
        ObjectNode err = (ObjectNode) o.get("error");
        err.put("policy", e.policy());
        err.set("violations", violationArray(e.violations()));
        return o;
    }

    /** The language table as the daemon serves it: what each row can do (not its command templates). */
    public static ObjectNode json(Languages languages) {
        ObjectNode o = Wire.object();
        ArrayNode a = o.putArray("languages");
        for (Language l : languages.all()) {
            ObjectNode n = a.addObject();
            n.put("name", l.name());
            ArrayNode aliases = n.putArray("aliases");
            l.aliases().forEach(aliases::add);
            n.put("compiled", !l.compile().isEmpty());
            n.put("contexts", l.contexts());
            n.put("plots", l.plots());
            if (l.packages().isPresent()) {
                n.put("package_manager", l.packages().get().manager());
            } else {
                n.putNull("package_manager");
            }
        }
        return o;
    }

    // ---- helpers ----

    private static ArrayNode violationArray(List<CodePolicy.Violation> violations) {
        ArrayNode a = Wire.object().arrayNode();
        for (CodePolicy.Violation v : violations) {
            ObjectNode n = a.addObject();
            n.put("rule", v.rule());
            n.put("description", v.description());
            n.put("severity", v.severity().name());
            n.put("line", v.line());
            n.put("excerpt", v.excerpt());
        }
        return a;
    }

    private static PlotFormat plotFormat(String value, String field) {
        for (PlotFormat f : PlotFormat.values()) {
            if (f.extension().equals(value.toLowerCase(Locale.ROOT))) {
                return f;
            }
        }
        throw SandboxException.invalid(field, "unknown plot format '" + value + "' (known: png, svg)");
    }

    private static Duration millis(JsonNode v) {
        return Duration.ofNanos(Math.round(v.asDouble() * 1e6));
    }

    private static long positive(JsonNode v, String field) {
        if (!v.isIntegralNumber() || !v.canConvertToLong() || v.asLong() < 1) {
            throw SandboxException.invalid(field, "a positive integer is expected");
        }
        return v.asLong();
    }

    private static ObjectNode stringMapNode(Map<String, String> m) {
        ObjectNode o = Wire.object();
        m.forEach(o::put);
        return o;
    }

    private static <E extends Enum<E>> E enumValue(Class<E> type, String value, String field) {
        try {
            return Enum.valueOf(type, value);
        } catch (IllegalArgumentException e) {
            throw SandboxException.invalid(field, "unknown value '" + value + "'");
        }
    }
}
