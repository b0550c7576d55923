package io.paddock.mcp.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.server.McpServerFeatures.SyncToolSpecification;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.ExecRequest;
import io.paddock.ExecResult;
import io.paddock.ExitStatus;
import io.paddock.FileInfo;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxFiles;
import io.paddock.SandboxId;
import io.paddock.SandboxInfo;
import io.paddock.SandboxQuery;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;
import io.paddock.code.Artifact;
import io.paddock.code.CodeContext;
import io.paddock.code.CodeInterpreter;
import io.paddock.code.CodeListener;
import io.paddock.code.CodeRequest;
import io.paddock.code.CodeResult;
import io.paddock.code.Plot;
import io.paddock.code.PlotFormat;
import io.paddock.code.RichOutput;
import io.paddock.wire.Wire;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * Paddock's MCP tools, defined once over the {@link io.paddock.Paddock} interface: each call asks a
 * {@link Scope} resolver what the caller may reach (the whole engine, a daemon, or one tenant's view of the
 * daemon), so stdio and the daemon's HTTP endpoint serve the same tools.
 *
 * <p>A tool that fails — an unknown sandbox, a bad argument, a command that exits non-zero — answers an
 * MCP tool result with {@code isError: true} and a one-line reason ({@code NOT_FOUND: no sandbox …}), never
 * a protocol error, so the model sees what went wrong. Stateless, so thread-safe.
 */
public final class PaddockTools {
    /** Output a command or code run may return per stream: enough to read, small enough for a model's context. */
    static final ByteSize OUTPUT_LIMIT = ByteSize.kib(256);
    static final Duration PROGRESS_EVERY = Duration.ofSeconds(5);
    static final Duration DEFAULT_RUN_TIMEOUT = Duration.ofSeconds(30); // within clients' own request timeouts (60 s in the TypeScript SDK)
    static final Duration MAX_RUN_TIMEOUT = Duration.ofHours(1);
    /** Files read_file returns; bigger ones are refused with a hint to read them otherwise. */
    static final long MAX_READ = 4L << 20;
    /** Artifact images returned inline, each. */
    static final long MAX_INLINE_IMAGE = 4L << 20;

    private final Function<McpSyncServerExchange, Scope> scopes;
    private final McpJsonMapper json;

    /**
     * @param scopes what a call may reach, from its exchange (the daemon reads the caller from the transport
     *               context); it throws {@link SandboxException} to refuse
     */
    public PaddockTools(Function<McpSyncServerExchange, Scope> scopes, McpJsonMapper json) {
        this.scopes = scopes;
        this.json = json;
    }

    /** The tool names, in the order they are listed. */
    public static final List<String> NAMES = List.of("sandbox_create", "sandbox_list", "sandbox_destroy", "run_command",
            "run_code", "read_file", "write_file", "list_files");

    public List<SyncToolSpecification> specifications() {
        return List.of(
                tool("sandbox_create", "Create a sandbox",
                        "Creates an isolated Linux sandbox (its own user namespace, cgroups, seccomp, no network unless"
                                + " asked) and returns its id. It lives until sandbox_destroy or its timeout (5 minutes by"
                                + " default). Every field is optional; the body is the same as the REST API's"
                                + " POST /v1/sandboxes.",
                        """
                        {"type": "object", "properties": {
                          "name": {"type": "string", "description": "A name to find it by instead of its id (unique among live sandboxes)"},
                          "image": {"type": "string", "description": "An image name, e.g. debian:bookworm; by default the host's read-only userland"},
                          "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                          "env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Environment variables of every command"},
                          "memory": {"type": ["string", "integer"], "description": "Memory limit, e.g. 512m or 1g (bytes as an integer)"},
                          "cpus": {"type": "number", "description": "CPU limit, e.g. 1.5"},
                          "disk": {"type": ["string", "integer"], "description": "Disk limit of the writable root, e.g. 1g"},
                          "timeout_ms": {"type": "integer", "minimum": 1000, "description": "Lifetime in milliseconds (default 300000)"},
                          "workdir": {"type": "string", "description": "Working directory (default /workspace)"}
                        }}
                        """, false, false, this::create),
                tool("sandbox_list", "List sandboxes",
                        "Lists the sandboxes this client may see, with their id, name, labels, state and expiry.",
                        """
                        {"type": "object", "properties": {
                          "labels": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Only sandboxes with all these labels"},
                          "state": {"type": "string", "description": "Only sandboxes in this state: creating, running, paused, stopping or stopped"}
                        }}
                        """, true, false, this::list),
                tool("sandbox_destroy", "Destroy a sandbox",
                        "Destroys a sandbox: kills its processes and removes everything it wrote. Destroying one already"
                                + " destroyed succeeds.",
                        """
                        {"type": "object", "required": ["sandbox"], "properties": {
                          "sandbox": {"type": "string", "description": "The sandbox's id or name"}
                        }}
                        """, false, true, this::destroy),
                tool("run_command", "Run a command in a sandbox",
                        "Runs a command (an argv list, not a shell string: use [\"sh\", \"-c\", \"...\"] for a shell) in a"
                                + " sandbox and returns its exit status, stdout and stderr (each up to 256 KiB). A non-zero"
                                + " exit, a timeout or running out of memory is reported as an error result with the output.",
                        """
                        {"type": "object", "required": ["sandbox", "command"], "properties": {
                          "sandbox": {"type": "string", "description": "The sandbox's id or name"},
                          "command": {"type": "array", "items": {"type": "string"}, "minItems": 1, "description": "The argv, e.g. [\\"python3\\", \\"-c\\", \\"print(6*7)\\"]"},
                          "cwd": {"type": "string", "description": "Working directory (default: the sandbox's, /workspace)"},
                          "env": {"type": "object", "additionalProperties": {"type": "string"}},
                          "stdin": {"type": "string", "description": "Text given to the command on its standard input"},
                          "timeout_seconds": {"type": "number", "exclusiveMinimum": 0, "description": "Kill its whole process tree after this long (default 30, at most 3600)"}
                        }}
                        """, false, false, this::runCommand),
                tool("run_code", "Run code in a sandbox",
                        "Runs a snippet of code in a sandbox (python, javascript, bash, java, c, cpp, perl, go, ruby, r,"
                                + " as the sandbox's image has them; compiled languages are compiled first) and returns"
                                + " its output, the value of a Python snippet's last expression, and its matplotlib plots"
                                + " as PNG images. Files written under $PADDOCK_ARTIFACTS_DIR come back too (images"
                                + " inline). Each call is a fresh process, unless it names a context, whose state persists between calls.",
                        """
                        {"type": "object", "required": ["sandbox", "language", "code"], "properties": {
                          "sandbox": {"type": "string", "description": "The sandbox's id or name"},
                          "language": {"type": "string", "description": "python, javascript, bash, java, c, cpp, perl, go, ruby or r"},
                          "code": {"type": "string", "description": "The source code"},
                          "context": {"type": "string", "description": "A stateful context's name: variables, imports and definitions persist between calls with the same name, as in a notebook (created on first use; python, javascript, bash and r have contexts)"},
                          "timeout_seconds": {"type": "number", "exclusiveMinimum": 0, "description": "Default 30, at most 3600"}
                        }}
                        """, false, false, this::runCode),
                tool("read_file", "Read a file from a sandbox",
                        "Reads a file of a sandbox (up to 4 MiB): text comes back as text, images (PNG, JPEG, GIF, WebP)"
                                + " as images, other binary files as base64 text.",
                        """
                        {"type": "object", "required": ["sandbox", "path"], "properties": {
                          "sandbox": {"type": "string", "description": "The sandbox's id or name"},
                          "path": {"type": "string", "description": "Absolute, or relative to the sandbox's working directory"}
                        }}
                        """, true, false, this::readFile),
                tool("write_file", "Write a file into a sandbox",
                        "Writes a file into a sandbox (atomically, as the sandbox user), creating missing parent"
                                + " directories, replacing the file if it exists.",
                        """
                        {"type": "object", "required": ["sandbox", "path", "content"], "properties": {
                          "sandbox": {"type": "string", "description": "The sandbox's id or name"},
                          "path": {"type": "string", "description": "Absolute, or relative to the sandbox's working directory"},
                          "content": {"type": "string", "description": "The file's content: UTF-8 text, or base64 with base64: true"},
                          "base64": {"type": "boolean", "description": "content is base64 (for binary files)"}
                        }}
                        """, false, true, this::writeFile),
                tool("list_files", "List a directory of a sandbox",
                        "Lists a directory of a sandbox: each entry's name, type, size and modification time.",
                        """
                        {"type": "object", "required": ["sandbox"], "properties": {
                          "sandbox": {"type": "string", "description": "The sandbox's id or name"},
                          "path": {"type": "string", "description": "The directory (default: the working directory, /workspace)"}
                        }}
                        """, true, false, this::listFiles));
    }

    private SyncToolSpecification tool(String name, String title, String description, String schema, boolean readOnly,
                                       boolean idempotent, BiFunction<Scope, Args, CallToolResult> handler) {
        McpSchema.Tool tool = McpSchema.Tool.builder(name, json, schema).title(title).description(description)
                .annotations(McpSchema.ToolAnnotations.builder().title(title).readOnlyHint(readOnly)
                        .destructiveHint(!readOnly && !name.equals("sandbox_create")) // commands and writes may overwrite files
                        .idempotentHint(idempotent).openWorldHint(false).build())
                .build();
        return SyncToolSpecification.builder().tool(tool).callHandler((exchange, request) -> {
            ScheduledFuture<?> progress = progress(exchange, request.progressToken(), name);
            long began = System.nanoTime();
            Args args = new Args(request.arguments());
            ErrorCode failure = null;
            Scope scope = null;
            try {
                scope = scopes.apply(exchange);
                return handler.apply(scope, args);
            } catch (SandboxException e) {
                failure = e.code();
                return error(e.code() + ": " + e.getMessage());
            } catch (RuntimeException e) {
                failure = ErrorCode.INTERNAL;
                System.getLogger(PaddockTools.class.getName()).log(System.Logger.Level.WARNING, "tool " + name + " failed", e);
                return error("INTERNAL: " + name + " failed: " + e);
            } finally {
                if (progress != null) {
                    progress.cancel(false);
                }
                if (!readOnly && scope != null) {
                    scope.audit().called(name, args.reached(), Optional.ofNullable(failure),
                            Duration.ofNanos(System.nanoTime() - began));
                }
            }
        }).build();
    }

    /**
     * When the client asked for progress (a {@code progressToken}), tells it every {@link #PROGRESS_EVERY} that
     * the call is still running, so that a client that resets its timeout on progress waits for a long run.
     */
    private static ScheduledFuture<?> progress(McpSyncServerExchange exchange, Object token, String tool) {
        if (token == null) {
            return null;
        }
        long start = System.nanoTime();
        long every = PROGRESS_EVERY.toMillis();
        return Progress.TIMER.scheduleAtFixedRate(() -> {
            long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
            try {
                exchange.progressNotification(new McpSchema.ProgressNotification(token, (double) seconds, null,
                        tool + " running for " + seconds + " s", null));
            } catch (RuntimeException e) {
                // the client is gone; the call ends by itself
            }
        }, every, every, TimeUnit.MILLISECONDS);
    }

    /** One daemon thread for every call's progress ticks (sending one is a short write). */
    private static final class Progress {
        static final ScheduledExecutorService TIMER = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "paddock-mcp-progress");
            t.setDaemon(true);
            return t;
        });
    }

    // ---- sandboxes ----

    private CallToolResult create(Scope scope, Args args) {
        SandboxSpec spec = Wire.spec(Wire.JSON.valueToTree(args.raw()));
        Sandbox sb = scope.paddock().create(spec);
        args.reached(sb.id());
        SandboxInfo info = scope.view().apply(sb.info());
        return ok("created sandbox " + info.id().value() + "\n" + pretty(Wire.json(info)));
    }

    private CallToolResult list(Scope scope, Args args) {
        SandboxQuery.Builder q = SandboxQuery.builder().labels(args.stringMap("labels"));
        args.optString("state").ifPresent(s -> q.state(state(s)));
        List<SandboxInfo> found = scope.paddock().list(q.build());
        ArrayNode out = Wire.JSON.createArrayNode();
        found.forEach(i -> out.add(Wire.json(scope.view().apply(i))));
        return ok(found.size() + (found.size() == 1 ? " sandbox" : " sandboxes") + "\n" + pretty(out));
    }

    private static SandboxState state(String s) {
        try {
            return SandboxState.valueOf(s.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw SandboxException.invalid("state", "one of " + List.of(SandboxState.values()) + " is expected, got '" + s + "'");
        }
    }

    private CallToolResult destroy(Scope scope, Args args) {
        Sandbox sb = find(scope, args);
        scope.destroy().accept(sb);
        return ok("destroyed sandbox " + sb.id().value());
    }

    /** A sandbox by id, or by name when the argument is not an id (as the CLI finds them). */
    private static Sandbox find(Scope scope, Args args) {
        String ref = args.string("sandbox");
        Sandbox sb = SandboxId.isValid(ref) ? scope.paddock().get(ref) : scope.paddock().getByName(ref);
        args.reached(sb.id());
        return sb;
    }

    // ---- commands and code ----

    private CallToolResult runCommand(Scope scope, Args args) {
        Sandbox sb = find(scope, args);
        ExecRequest.Builder r = ExecRequest.builder().argv(args.strings("command")).env(args.stringMap("env"))
                .timeout(args.optSeconds("timeout_seconds", MAX_RUN_TIMEOUT).orElse(DEFAULT_RUN_TIMEOUT))
                .outputLimit(OUTPUT_LIMIT);
        args.optString("cwd").ifPresent(r::cwd);
        args.optString("stdin").ifPresent(r::stdin);
        ExecResult result = sb.exec(r.build());
        StringBuilder text = new StringBuilder(status(result.status()));
        section(text, "stdout", result.stdoutText(), result.status().stdoutTruncated());
        section(text, "stderr", result.stderrText(), result.status().stderrTruncated());
        return result(text.toString(), List.of(), !result.success());
    }

    private CallToolResult runCode(Scope scope, Args args) {
        Sandbox sb = find(scope, args);
        String language = args.string("language");
        Optional<String> contextName = args.optString("context");
        CodeRequest.Builder request = CodeRequest.builder().code(args.string("code"))
                .timeout(args.optSeconds("timeout_seconds", MAX_RUN_TIMEOUT).orElse(DEFAULT_RUN_TIMEOUT))
                .outputLimit(OUTPUT_LIMIT).plotFormat(PlotFormat.PNG).artifactContent(true);
        CodeInterpreter code = scope.code().apply(sb); // the scope's: kept, never closed here
        CodeResult r = contextName.isPresent()
                ? context(code, contextName.get(), language).run(request.build(), CodeListener.NONE)
                : code.run(request.language(language).build(), CodeListener.NONE);
        StringBuilder text = new StringBuilder(r.language()).append(": ");
        text.append(r.step() == CodeResult.Step.COMPILE ? "compilation failed: " : "").append(status(r.status()));
        section(text, "stdout", r.stdout(), r.status().stdoutTruncated());
        section(text, "stderr", r.stderr(), r.status().stderrTruncated());
        r.error().ifPresent(e -> section(text, "error", e.name() + ": " + e.message()
                + (e.traceback().isEmpty() ? "" : "\n" + e.traceback()), false));
        for (RichOutput out : r.results()) {
            section(text, out.fromLastExpression() ? "value" : "displayed", out.text(), false);
        }
        List<McpSchema.Content> images = new ArrayList<>();
        for (Plot p : r.plots()) {
            if (p.format() == PlotFormat.PNG) {
                images.add(McpSchema.ImageContent.builder(Base64.getEncoder().encodeToString(p.content()), "image/png").build());
            }
        }
        if (!r.plots().isEmpty()) {
            text.append("\n").append(r.plots().size()).append(r.plots().size() == 1 ? " plot" : " plots").append(" (PNG images)");
        }
        for (Artifact a : r.artifacts()) {
            boolean inline = isImage(a.mimeType()) && a.content().isPresent() && a.size() <= MAX_INLINE_IMAGE;
            text.append("\nartifact ").append(a.name()).append(" (").append(a.mimeType()).append(", ").append(a.size())
                    .append(" bytes) at ").append(a.path()).append(inline ? ", returned as an image" : ", read it with read_file");
            if (inline) {
                images.add(McpSchema.ImageContent.builder(Base64.getEncoder().encodeToString(a.content().get()), a.mimeType()).build());
            }
        }
        return result(text.toString(), images, !r.success());
    }

    /** The named context, created in {@code language} on first use; a context of another language is refused. */
    private static CodeContext context(CodeInterpreter code, String name, String language) {
        CodeContext c;
        try {
            c = code.context(name);
        } catch (SandboxException e) {
            if (e.code() != ErrorCode.NOT_FOUND) {
                throw e;
            }
            try {
                return code.createContext(language, name);
            } catch (SandboxException raced) {
                if (raced.code() != ErrorCode.ALREADY_EXISTS) {
                    throw raced;
                }
                c = code.context(name);
            }
        }
        if (!code.languages().get(language).name().equals(c.language())) {
            throw SandboxException.invalid("language", "context '" + name + "' runs " + c.language() + ", not " + language);
        }
        return c;
    }

    private static String status(ExitStatus s) {
        return s.outcome() == ExitStatus.Outcome.TIMED_OUT ? s.describe()
                : s.describe() + " (" + String.format(Locale.ROOT, "%.3f", s.duration().toNanos() / 1e9) + " s)";
    }

    private static void section(StringBuilder text, String name, String content, boolean truncated) {
        if (content.isEmpty() && !truncated) {
            return;
        }
        text.append("\n--- ").append(name).append(truncated ? " (truncated at " + OUTPUT_LIMIT + ")" : "").append(" ---\n");
        text.append(content);
        if (!content.endsWith("\n")) {
            text.append("\n");
        }
    }

    // ---- files ----

    private CallToolResult readFile(Scope scope, Args args) {
        Sandbox sb = find(scope, args);
        String path = args.string("path");
        FileInfo info = sb.files().stat(path);
        if (info.isDirectory()) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, path + " is a directory; use list_files");
        }
        if (info.size() > MAX_READ) {
            throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, path + " has " + info.size() + " bytes; read_file"
                    + " returns files of up to " + MAX_READ + " bytes (use run_command with head, tail or grep)");
        }
        byte[] data = sb.files().read(path);
        String image = imageType(data);
        if (image != null) {
            return result(path + ": " + image + ", " + data.length + " bytes",
                    List.of(McpSchema.ImageContent.builder(Base64.getEncoder().encodeToString(data), image).build()), false);
        }
        try {
            return ok(StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(data)).toString());
        } catch (CharacterCodingException e) {
            return ok(path + " is binary (" + data.length + " bytes); its content in base64:\n"
                    + Base64.getEncoder().encodeToString(data));
        }
    }

    private CallToolResult writeFile(Scope scope, Args args) {
        Sandbox sb = find(scope, args);
        String path = args.string("path");
        String content = args.string("content");
        byte[] data;
        if (args.optBoolean("base64").orElse(false)) {
            try {
                data = Base64.getMimeDecoder().decode(content);
            } catch (IllegalArgumentException e) {
                throw SandboxException.invalid("content", "not base64: " + e.getMessage());
            }
        } else {
            data = content.getBytes(StandardCharsets.UTF_8);
        }
        int slash = path.lastIndexOf('/');
        if (slash > 0) {
            mkdirs(sb.files(), path.substring(0, slash));
        }
        sb.files().write(path, data);
        return ok("wrote " + data.length + " bytes to " + path);
    }

    private static void mkdirs(SandboxFiles files, String dir) {
        if (files.exists(dir)) {
            return;
        }
        int slash = dir.lastIndexOf('/');
        if (slash > 0) {
            mkdirs(files, dir.substring(0, slash));
        }
        try {
            files.mkdir(dir);
        } catch (SandboxException e) {
            if (e.code() != ErrorCode.ALREADY_EXISTS) {
                throw e;
            }
        }
    }

    private CallToolResult listFiles(Scope scope, Args args) {
        Sandbox sb = find(scope, args);
        String path = args.optString("path").orElse(SandboxSpec.DEFAULT_WORKDIR);
        List<FileInfo> entries = sb.files().list(path);
        StringBuilder text = new StringBuilder(path).append(": ").append(entries.size())
                .append(entries.size() == 1 ? " entry" : " entries");
        for (FileInfo f : entries) {
            text.append("\n").append(f.type().name().toLowerCase(Locale.ROOT)).append("\t").append(f.size()).append("\t")
                    .append(f.modifiedAt()).append("\t").append(f.name()).append(f.isDirectory() ? "/" : "")
                    .append(f.symlinkTarget().map(t -> " -> " + t).orElse(""));
        }
        return ok(text.toString());
    }

    // ---- results ----

    private static boolean isImage(String mimeType) {
        return mimeType.equals("image/png") || mimeType.equals("image/jpeg") || mimeType.equals("image/gif")
                || mimeType.equals("image/webp");
    }

    /** The image type a file's first bytes say it is, or null. */
    static String imageType(byte[] b) {
        if (b.length >= 8 && (b[0] & 0xff) == 0x89 && b[1] == 'P' && b[2] == 'N' && b[3] == 'G') {
            return "image/png";
        }
        if (b.length >= 3 && (b[0] & 0xff) == 0xff && (b[1] & 0xff) == 0xd8 && (b[2] & 0xff) == 0xff) {
            return "image/jpeg";
        }
        if (b.length >= 6 && b[0] == 'G' && b[1] == 'I' && b[2] == 'F' && b[3] == '8') {
            return "image/gif";
        }
        if (b.length >= 12 && b[0] == 'R' && b[1] == 'I' && b[2] == 'F' && b[3] == 'F' && b[8] == 'W' && b[9] == 'E'
                && b[10] == 'B' && b[11] == 'P') {
            return "image/webp";
        }
        return null;
    }

    private static String pretty(JsonNode node) {
        try {
            return Wire.JSON.writerWithDefaultPrettyPrinter().writeValueAsString(node);
        } catch (JsonProcessingException e) {
            return node.toString();
        }
    }

    private static CallToolResult ok(String text) {
        return result(text, List.of(), false);
    }

    static CallToolResult error(String text) {
        return result(text, List.of(), true);
    }

    private static CallToolResult result(String text, List<McpSchema.Content> more, boolean isError) {
        List<McpSchema.Content> content = new ArrayList<>();
        content.add(McpSchema.TextContent.builder(text).build());
        content.addAll(more);
        return CallToolResult.builder().content(content).isError(isError).build();
    }
}
