package io.paddock.wire;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.Image;
import io.paddock.ImageInfo;
import io.paddock.ImageListener;
import io.paddock.ImageStep;
import io.paddock.RegistryAuth;
import io.paddock.SandboxException;

import java.nio.file.Path;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;

import static io.paddock.wire.JsonFields.bool;
import static io.paddock.wire.JsonFields.field;
import static io.paddock.wire.JsonFields.int32;
import static io.paddock.wire.JsonFields.integer;
import static io.paddock.wire.JsonFields.onlyFields;
import static io.paddock.wire.JsonFields.stringMap;
import static io.paddock.wire.JsonFields.strings;
import static io.paddock.wire.JsonFields.text;

/**
 * The JSON forms of the image API ({@link io.paddock.Images}) as {@code openapi.json} describes them, shared by
 * the daemon and the remote SDK: {@link ImageInfo}, the pull and push requests (with their registry
 * credentials), the progress events of a streamed pull, push or build, and an {@link Image} (the Java builder's
 * steps) for a remote build.
 *
 * <p><b>Credentials.</b> A request carries only {@code insecure}, {@code username} and {@code password}. A
 * {@link RegistryAuth#configFile() config file} is the client's: the daemon never reads a path a client names
 * (it would read its own host's files). The remote SDK reads the file itself and sends the credentials of the
 * one registry the request goes to ({@code auths} entry, {@code auth} or {@code username}/{@code password}), or
 * none; {@link #pullRequest(String, RegistryAuth)} therefore refuses an auth that still names a file.
 *
 * <p>Parsing is strict, as everywhere in this package: unknown fields and wrong types are
 * {@code INVALID_ARGUMENT} naming the field. Stateless and thread-safe.
 */
public final class ImageWire {
    /** The media type that asks for (and marks) a streamed answer: one JSON event per line. */
    public static final String STREAM_TYPE = "application/x-ndjson";
    /** The media type of a build context: an uncompressed tar. */
    public static final String TAR_TYPE = "application/x-tar";
    /**
     * The entry of a {@code build-spec} tar that describes the {@link Image} ({@link #json(Image)}); the image's
     * local sources are the tar's other entries, each under its synthetic name ({@code local-0/app.py}).
     */
    public static final String IMAGE_ENTRY = "image.json";

    private static final Set<String> PULL_FIELDS = Set.of("ref", "insecure", "username", "password");
    private static final Set<String> PUSH_FIELDS = Set.of("ref", "target", "insecure", "username", "password");

    private ImageWire() {
    }

    // ---- ImageInfo ----

    public static ObjectNode json(ImageInfo i) {
        ObjectNode o = Wire.object();
        o.put("id", i.id());
        addAll(o.putArray("names"), i.names());
        o.put("size", i.size());
        o.put("layers", i.layers());
        if (i.created().isPresent()) {
            o.put("created", i.created().get().toString());
        } else {
            o.putNull("created");
        }
        addAll(o.putArray("env"), i.env());
        o.put("user", i.user());
        o.put("workdir", i.workdir());
        addAll(o.putArray("entrypoint"), i.entrypoint());
        addAll(o.putArray("cmd"), i.cmd());
        ObjectNode labels = o.putObject("labels");
        i.labels().forEach(labels::put);
        addAll(o.putArray("exposed_ports"), i.exposedPorts());
        return o;
    }

    public static ImageInfo imageInfo(JsonNode json) {
        ObjectNode o = JsonFields.object(json, "image");
        Optional<Instant> created = field(o, "created").map(v -> instant(v, "created"));
        return new ImageInfo(text(required(o, "id"), "id"), listOf(o, "names"), integer(required(o, "size"), "size"),
                int32(required(o, "layers"), "layers"), created, listOf(o, "env"), field(o, "user").map(v -> text(v, "user")).orElse(""),
                field(o, "workdir").map(v -> text(v, "workdir")).orElse(""), listOf(o, "entrypoint"), listOf(o, "cmd"),
                field(o, "labels").map(v -> stringMap(v, "labels")).orElse(Map.of()), listOf(o, "exposed_ports"));
    }

    /** {@code {"images": [ImageInfo…]}}: the answer of {@code GET /v1/images}. */
    public static ObjectNode imageList(List<ImageInfo> images) {
        ObjectNode o = Wire.object();
        ArrayNode a = o.putArray("images");
        images.forEach(i -> a.add(json(i)));
        return o;
    }

    public static List<ImageInfo> imageList(JsonNode json) {
        List<ImageInfo> out = new ArrayList<>();
        for (JsonNode i : JsonFields.object(json, "body").path("images")) {
            out.add(imageInfo(i));
        }
        return out;
    }

    /** {@code {"freed_bytes": n}}: the answer of {@code POST /v1/images/prune}. */
    public static ObjectNode pruned(long bytes) {
        ObjectNode o = Wire.object();
        o.put("freed_bytes", bytes);
        return o;
    }

    public static long pruned(JsonNode json) {
        return integer(required(JsonFields.object(json, "body"), "freed_bytes"), "freed_bytes");
    }

    // ---- pull and push requests ----

    /** A pull: the reference and how to reach its registry (never a config file: see the class comment). */
    public record PullRequest(String ref, RegistryAuth auth) {
    }

    /** A push: the stored image, where it goes, and how to reach that registry. */
    public record PushRequest(String ref, String target, RegistryAuth auth) {
    }

    /** {@code {"ref", "insecure", "username", "password"}}; {@code auth} must hold no config file. */
    public static ObjectNode pullRequest(String ref, RegistryAuth auth) {
        ObjectNode o = Wire.object();
        o.put("ref", ref);
        putAuth(o, auth);
        return o;
    }

    public static PullRequest pullRequest(JsonNode json) {
        ObjectNode o = JsonFields.object(json, "body");
        onlyFields(o, "a pull request", PULL_FIELDS);
        return new PullRequest(reference(o, "ref"), auth(o));
    }

    /** {@code {"ref", "target", "insecure", "username", "password"}}; {@code auth} must hold no config file. */
    public static ObjectNode pushRequest(String ref, String target, RegistryAuth auth) {
        ObjectNode o = Wire.object();
        o.put("ref", ref);
        o.put("target", target);
        putAuth(o, auth);
        return o;
    }

    public static PushRequest pushRequest(JsonNode json) {
        ObjectNode o = JsonFields.object(json, "body");
        onlyFields(o, "a push request", PUSH_FIELDS);
        return new PushRequest(reference(o, "ref"), reference(o, "target"), auth(o));
    }

    private static void putAuth(ObjectNode o, RegistryAuth auth) {
        if (auth.configFile().isPresent()) {
            throw new IllegalArgumentException("a config file is read by the client, never sent: resolve it first");
        }
        o.put("insecure", auth.isInsecure());
        auth.username().ifPresent(u -> o.put("username", u));
        auth.password().ifPresent(p -> o.put("password", p));
    }

    private static RegistryAuth auth(ObjectNode o) {
        RegistryAuth auth = RegistryAuth.none();
        if (field(o, "insecure").map(v -> bool(v, "insecure")).orElse(false)) {
            auth = auth.insecure();
        }
        Optional<String> user = field(o, "username").map(v -> text(v, "username"));
        Optional<String> password = field(o, "password").map(v -> text(v, "password"));
        if (user.isPresent() != password.isPresent()) {
            throw SandboxException.invalid(user.isPresent() ? "password" : "username",
                    "missing: a user name and a password go together");
        }
        if (user.isPresent()) {
            auth = auth.credentials(user.get(), password.get());
        }
        return auth;
    }

    private static String reference(ObjectNode o, String name) {
        String ref = text(required(o, name), name);
        if (ref.isEmpty()) {
            throw SandboxException.invalid(name, "empty; an image reference is expected");
        }
        return ref;
    }

    // ---- streamed progress (application/x-ndjson) ----

    /** {@code {"type": "log", "line": …}}: a line of output (a build step's, or a Debian base build's). */
    public static ObjectNode logEvent(String line) {
        ObjectNode o = typed("log");
        o.put("line", line);
        return o;
    }

    /** {@code {"type": "step", "index", "count", "description", "cached"}}: a build step starts. */
    public static ObjectNode stepEvent(int index, int count, String description, boolean cached) {
        ObjectNode o = typed("step");
        o.put("index", index);
        o.put("count", count);
        o.put("description", description);
        o.put("cached", cached);
        return o;
    }

    /** {@code {"type": "layer", "digest", "done", "total", "complete", "cached"}}: a layer's transfer. */
    public static ObjectNode layerEvent(String digest, long done, long total, boolean complete, boolean cached) {
        ObjectNode o = typed("layer");
        o.put("digest", digest);
        o.put("done", done);
        o.put("total", total);
        o.put("complete", complete);
        o.put("cached", cached);
        return o;
    }

    /** {@code {"type": "done", "image": ImageInfo}}: the last event of an operation that succeeded. */
    public static ObjectNode doneEvent(ImageInfo image) {
        ObjectNode o = typed("done");
        o.set("image", json(image));
        return o;
    }

    /**
     * {@code {"type": "error", "error": Error}}: the last event of an operation that failed after its stream
     * began; {@code errorBody} is the whole {@code Error} body, as in a streamed code run.
     */
    public static ObjectNode errorEvent(ObjectNode errorBody) {
        ObjectNode o = typed("error");
        o.set("error", errorBody);
        return o;
    }

    /** A JSON object whose {@code type} is {@code type}: an event, or a step of an image. */
    private static ObjectNode typed(String type) {
        ObjectNode o = Wire.object();
        o.put("type", type);
        return o;
    }

    /**
     * Hands one streamed event to {@code listener} and returns the image when the event is {@code done}. An
     * {@code error} event is thrown as the {@link SandboxException} it describes; an event of an unknown type is
     * skipped (later daemons may add some). A listener's own exception does not stop the operation (it runs in
     * the daemon), so it is dropped here.
     */
    public static Optional<ImageInfo> deliver(JsonNode event, ImageListener listener) {
        ObjectNode o = JsonFields.object(event, "event");
        switch (o.path("type").asText("")) {
            case "log" -> quietly(() -> listener.log(o.path("line").asText()));
            case "step" -> quietly(() -> listener.step(o.path("index").asInt(), o.path("count").asInt(),
                    o.path("description").asText(), o.path("cached").asBoolean()));
            case "layer" -> quietly(() -> listener.layer(o.path("digest").asText(), o.path("done").asLong(),
                    o.path("total").asLong(), o.path("complete").asBoolean(), o.path("cached").asBoolean()));
            case "done" -> {
                return Optional.of(imageInfo(o.get("image")));
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
            // a listener's failure does not change the operation
        }
    }

    // ---- an Image (the Java builder) ----

    /**
     * {@code {"steps": [ImageStep…]}}: the image's steps, each an object told apart by {@code type}
     * ({@code from}, {@code run}, {@code copy}, {@code env}, {@code workdir}, {@code user}, {@code label},
     * {@code cmd}, {@code entrypoint}, {@code expose}, {@code apt}, {@code pip}, {@code npm}). A {@code copy}
     * names its local source by the synthetic name {@link Image#localSources()} uses; the files themselves
     * travel beside the description (the {@code build-spec} tar).
     */
    public static ObjectNode json(Image image) {
        ObjectNode o = Wire.object();
        ArrayNode steps = o.putArray("steps");
        for (ImageStep step : image.steps()) {
            steps.add(json(step));
        }
        return o;
    }

    private static ObjectNode json(ImageStep step) {
        if (step instanceof ImageStep.From s) {
            return typed("from").put("base", s.base());
        } else if (step instanceof ImageStep.Run s) {
            ObjectNode o = typed("run");
            addAll(o.putArray("argv"), s.argv());
            return o.put("shell", s.shell());
        } else if (step instanceof ImageStep.Copy s) {
            if (s.add() || s.sources().size() != 1) {
                throw SandboxException.invalid("steps", "'" + s.describe() + "' is not a step of the Java builder");
            }
            ObjectNode o = typed("copy").put("source", s.sources().get(0)).put("dest", s.dest());
            s.chown().ifPresentOrElse(c -> o.put("chown", c), () -> o.putNull("chown"));
            return o;
        } else if (step instanceof ImageStep.Env s) {
            return typed("env").put("key", s.key()).put("value", s.value());
        } else if (step instanceof ImageStep.Workdir s) {
            return typed("workdir").put("path", s.path());
        } else if (step instanceof ImageStep.User s) {
            return typed("user").put("user", s.user());
        } else if (step instanceof ImageStep.Label s) {
            return typed("label").put("key", s.key()).put("value", s.value());
        } else if (step instanceof ImageStep.Cmd s) {
            ObjectNode o = typed("cmd");
            addAll(o.putArray("argv"), s.argv());
            return o;
        } else if (step instanceof ImageStep.Entrypoint s) {
            ObjectNode o = typed("entrypoint");
            addAll(o.putArray("argv"), s.argv());
            return o;
        } else if (step instanceof ImageStep.Expose s) {
            return typed("expose").put("port", s.portProto());
        } else if (step instanceof ImageStep.Apt s) {
            ObjectNode o = typed("apt");
            addAll(o.putArray("packages"), s.packages());
            return o;
        } else if (step instanceof ImageStep.Pip s) {
            ObjectNode o = typed("pip");
            addAll(o.putArray("packages"), s.packages());
            s.indexUrl().ifPresentOrElse(u -> o.put("index_url", u), () -> o.putNull("index_url"));
            addAll(o.putArray("find_links"), s.findLinks());
            return o;
        } else if (step instanceof ImageStep.Npm s) {
            ObjectNode o = typed("npm");
            addAll(o.putArray("packages"), s.packages());
            return o;
        }
        // ImageStep.Arg: only a Dockerfile has build arguments
        throw SandboxException.invalid("steps", "'" + step.describe() + "' is not a step of the Java builder");
    }

    /**
     * The {@link Image} a {@link #json(Image)} describes, rebuilt through {@link Image}'s own methods so that
     * every step is validated as the builder validates it. {@code localSource} gives the file or directory
     * behind a {@code copy}'s synthetic name ({@code local-0/app.py}); it is asked once per copy, in order, and
     * may refuse (throw). A copy whose name is not the one the builder would give that file there is refused.
     */
    public static Image image(JsonNode json, Function<String, Path> localSource) {
        ObjectNode o = JsonFields.object(json, "body");
        onlyFields(o, "an image description", Set.of("steps"));
        JsonNode steps = required(o, "steps");
        if (!steps.isArray() || steps.isEmpty()) {
            throw SandboxException.invalid("steps", "an array of steps, starting with 'from', is expected");
        }
        Image image = null;
        for (int i = 0; i < steps.size(); i++) {
            ObjectNode s = JsonFields.object(steps.get(i), "steps");
            String type = text(required(s, "type"), "steps[" + i + "].type");
            if (i == 0 != type.equals("from")) {
                throw SandboxException.invalid("steps", i == 0 ? "the first step must be 'from'"
                        : "step " + i + " is a second 'from'; an image has one base");
            }
            image = step(image, type, s, localSource);
        }
        return image;
    }

    private static Image step(Image image, String type, ObjectNode s, Function<String, Path> localSource) {
        switch (type) {
            case "from" -> {
                onlyFields(s, "a from step", Set.of("type", "base"));
                return Image.from(text(required(s, "base"), "base"));
            }
            case "run" -> {
                onlyFields(s, "a run step", Set.of("type", "argv", "shell"));
                List<String> argv = strings(required(s, "argv"), "argv");
                boolean shell = field(s, "shell").map(v -> bool(v, "shell")).orElse(false);
                if (!shell) {
                    return image.runArgv(argv);
                }
                if (argv.size() != 3 || !argv.subList(0, 2).equals(ImageStep.SHELL)) {
                    throw SandboxException.invalid("argv", "a shell-form command must be [/bin/sh, -c, command]");
                }
                return image.run(argv.get(2));
            }
            case "copy" -> {
                onlyFields(s, "a copy step", Set.of("type", "source", "dest", "chown"));
                String source = text(required(s, "source"), "source");
                String dest = text(required(s, "dest"), "dest");
                Optional<String> chown = field(s, "chown").map(v -> text(v, "chown"));
                Path local = localSource.apply(source);
                Image next = chown.isPresent() ? image.copy(local, dest, chown.get()) : image.copy(local, dest);
                ImageStep made = next.steps().get(next.steps().size() - 1);
                if (!made.equals(new ImageStep.Copy(List.of(source), dest, chown, false))) {
                    throw SandboxException.invalid("source", "'" + source + "' to '" + dest + "' is not what the"
                            + " builder makes of it (" + made.describe() + "); copy sources are named local-<n>/<file"
                            + " name>, numbered from 0 in order");
                }
                return next;
            }
            case "env" -> {
                onlyFields(s, "an env step", Set.of("type", "key", "value"));
                return image.env(text(required(s, "key"), "key"), text(required(s, "value"), "value"));
            }
            case "workdir" -> {
                onlyFields(s, "a workdir step", Set.of("type", "path"));
                return image.workdir(text(required(s, "path"), "path"));
            }
            case "user" -> {
                onlyFields(s, "a user step", Set.of("type", "user"));
                return image.user(text(required(s, "user"), "user"));
            }
            case "label" -> {
                onlyFields(s, "a label step", Set.of("type", "key", "value"));
                return image.label(text(required(s, "key"), "key"), text(required(s, "value"), "value"));
            }
            case "cmd" -> {
                onlyFields(s, "a cmd step", Set.of("type", "argv"));
                return image.cmd(strings(required(s, "argv"), "argv"));
            }
            case "entrypoint" -> {
                onlyFields(s, "an entrypoint step", Set.of("type", "argv"));
                return image.entrypoint(strings(required(s, "argv"), "argv"));
            }
            case "expose" -> {
                onlyFields(s, "an expose step", Set.of("type", "port"));
                return image.expose(text(required(s, "port"), "port"));
            }
            case "apt" -> {
                onlyFields(s, "an apt step", Set.of("type", "packages"));
                return image.apt(strings(required(s, "packages"), "packages"));
            }
            case "pip" -> {
                onlyFields(s, "a pip step", Set.of("type", "packages", "index_url", "find_links"));
                Optional<String> index = field(s, "index_url").map(v -> text(v, "index_url"));
                List<String> links = field(s, "find_links").map(v -> strings(v, "find_links")).orElse(List.of());
                return image.pip(new Image.PipOptions(index, links), strings(required(s, "packages"), "packages"));
            }
            case "npm" -> {
                onlyFields(s, "an npm step", Set.of("type", "packages"));
                return image.npm(strings(required(s, "packages"), "packages"));
            }
            default -> throw SandboxException.invalid("type", "unknown step type '" + type + "' (known: from, run,"
                    + " copy, env, workdir, user, label, cmd, entrypoint, expose, apt, pip, npm)");
        }
    }

    // ---- helpers ----

    private static JsonNode required(ObjectNode o, String name) {
        return field(o, name).orElseThrow(() -> SandboxException.invalid(name, "missing"));
    }

    private static List<String> listOf(ObjectNode o, String name) {
        return field(o, name).map(v -> strings(v, name)).orElse(List.of());
    }

    private static void addAll(ArrayNode into, List<String> values) {
        values.forEach(into::add);
    }

    private static Instant instant(JsonNode v, String field) {
        try {
            return Instant.parse(text(v, field));
        } catch (DateTimeParseException e) {
            throw SandboxException.invalid(field, "an ISO-8601 instant is expected");
        }
    }
}
