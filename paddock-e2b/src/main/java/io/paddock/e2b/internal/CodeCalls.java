package io.paddock.e2b.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.ErrorCode;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.code.CellError;
import io.paddock.code.CodeContext;
import io.paddock.code.CodeInterpreter;
import io.paddock.code.CodeListener;
import io.paddock.code.CodeRequest;
import io.paddock.code.CodeResult;
import io.paddock.code.ContextInfo;
import io.paddock.code.Language;
import io.paddock.code.Plot;
import io.paddock.code.PlotFormat;
import io.paddock.code.RichOutput;
import io.paddock.e2b.E2bOptions;
import io.paddock.wire.Wire;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * E2B's code interpreter (port 49999) over paddock-code: {@code POST /execute} answers a stream of JSON lines
 * ({@code stdout}, {@code stderr}, {@code result}, {@code error}, {@code number_of_executions},
 * {@code end_of_execution}) as the cell runs; {@code /contexts} creates, lists, restarts and removes contexts.
 * A request with a language and no context runs in that language's default context (made on first use), as
 * E2B's server does; languages without stateful contexts in Paddock run once, statelessly. Errors are plain
 * text, as E2B's server answers them. Thread-safe.
 */
final class CodeCalls {
    private static final String DEFAULT_PREFIX = "e2b-default-";
    private final CodeState state;
    private final long maxJsonBytes;

    CodeCalls(CodeState state, E2bOptions options) {
        this.state = state;
        this.maxJsonBytes = options.maxJsonBytes();
    }

    void release(SandboxId id) {
        state.release(id);
    }

    void handle(Sandbox sb, Request request, Response response, Callback callback) throws IOException {
        String method = request.getMethod();
        String path = Request.getPathInContext(request);
        if ("GET".equals(method) && "/health".equals(path)) {
            Http.json(response, callback, 200, Wire.JSON.getNodeFactory().textNode("OK"));
            return;
        }
        if ("POST".equals(method) && "/execute".equals(path)) {
            execute(sb, request, response, callback);
            return;
        }
        if ("/contexts".equals(path)) {
            switch (method) {
                case "POST" -> {
                    createContext(sb, request, response, callback);
                    return;
                }
                case "GET" -> {
                    listContexts(sb, response, callback);
                    return;
                }
                default -> throw E2bError.unsupported(method, path + " (code interpreter)");
            }
        }
        if (path.startsWith("/contexts/")) {
            String rest = path.substring("/contexts/".length());
            boolean restart = rest.endsWith("/restart");
            String id = restart ? rest.substring(0, rest.length() - "/restart".length()) : rest;
            if (!id.isEmpty() && !id.contains("/")) {
                if ("DELETE".equals(method) && !restart) {
                    context(sb, id).close();
                    Http.json(response, callback, 200, Wire.JSON.getNodeFactory().nullNode());
                    return;
                }
                if ("POST".equals(method) && restart) {
                    context(sb, id).restart();
                    Http.json(response, callback, 200, Wire.JSON.getNodeFactory().nullNode());
                    return;
                }
            }
        }
        throw E2bError.unsupported(method, path + " (code interpreter)");
    }

    private CodeContext context(Sandbox sb, String id) {
        try {
            return state.interpreter(sb).context(id);
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.NOT_FOUND || e.code() == ErrorCode.INVALID_ARGUMENT) {
                throw new E2bError(404, "Context " + id + " not found");
            }
            throw e;
        }
    }

    private static String normalize(String language) {
        String l = language == null || language.isBlank() ? "python" : language.trim().toLowerCase(Locale.ROOT);
        return switch (l) {
            case "js" -> "javascript";
            case "py", "python3" -> "python";
            default -> l;
        };
    }

    private void createContext(Sandbox sb, Request request, Response response, Callback callback) throws IOException {
        JsonNode body = Http.json(request, maxJsonBytes);
        CodeInterpreter interpreter = state.interpreter(sb);
        Language lang = interpreter.languages().get(normalize(body.path("language").asText(null)));
        CodeContext ctx = interpreter.createContext(lang.name());
        String cwd = body.hasNonNull("cwd") ? body.get("cwd").asText() : null;
        if (cwd != null) {
            chdir(ctx, lang, cwd);
        }
        if (cwd != null) {
            state.setCwd(sb.id(), ctx.id(), cwd);
        }
        Http.json(response, callback, 200, contextJson(sb, ctx.info()));
    }

    /** Moves a new context into {@code cwd}; on failure the context is removed and the call answers 400. */
    private static void chdir(CodeContext ctx, Language lang, String cwd) {
        String quoted = Wire.JSON.getNodeFactory().textNode(cwd).toString();
        String code = switch (lang.name()) {
            case "python" -> "import os as __e2b_os; __e2b_os.chdir(" + quoted + "); del __e2b_os";
            case "javascript" -> "process.chdir(" + quoted + ")";
            default -> null;
        };
        if (code == null) {
            return;
        }
        CodeResult r = ctx.run(code);
        if (!r.success()) {
            ctx.close();
            throw new E2bError(400, "cwd: cannot change to '" + cwd + "': "
                    + r.error().map(e -> e.name() + ": " + e.message()).orElse(r.stderr().strip()));
        }
    }

    private void listContexts(Sandbox sb, Response response, Callback callback) {
        ArrayNode a = Wire.JSON.createArrayNode();
        for (ContextInfo info : state.interpreter(sb).contexts()) {
            a.add(contextJson(sb, info));
        }
        Http.json(response, callback, 200, a);
    }

    private ObjectNode contextJson(Sandbox sb, ContextInfo info) {
        ObjectNode o = Wire.object();
        o.put("id", info.id());
        o.put("language", info.language());
        o.put("cwd", state.cwd(sb.id(), info.id(), io.paddock.SandboxSpec.DEFAULT_WORKDIR));
        return o;
    }

    private void execute(Sandbox sb, Request request, Response response, Callback callback) throws IOException {
        JsonNode body = Http.json(request, maxJsonBytes);
        JsonNode codeNode = body.path("code");
        if (!codeNode.isTextual()) {
            throw new E2bError(400, "code: a string is required");
        }
        String contextId = body.hasNonNull("context_id") ? body.get("context_id").asText() : null;
        String language = body.hasNonNull("language") ? body.get("language").asText() : null;
        if (contextId != null && language != null) {
            throw new E2bError(400, "Only one of context_id or language can be provided");
        }
        Map<String, String> env = new LinkedHashMap<>();
        body.path("env_vars").fields().forEachRemaining(e -> env.put(e.getKey(), e.getValue().asText()));
        CodeInterpreter interpreter = state.interpreter(sb);
        CodeContext ctx = null;
        Language lang = null;
        if (contextId != null) {
            ctx = context(sb, contextId);
        } else {
            lang = interpreter.languages().get(normalize(language));
            if (lang.contexts()) {
                ctx = defaultContext(interpreter, lang);
            }
        }
        if (codeNode.asText().isBlank()) { // E2B runs an empty cell; Paddock refuses one
            Lines out = start(request, response);
            out.end(ctx == null ? 0 : ctx.info().cells());
            callback.succeeded();
            return;
        }
        CodeRequest.Builder cell = CodeRequest.builder().code(codeNode.asText());
        if (ctx == null) {
            cell.language(lang.name()).env(env);
        }
        CodeRequest req = cell.build();
        // A context keeps the environment it started with; E2B's envs hold for one cell, so they are set
        // before it and put back after it, in the kernel itself.
        String[] envCells = ctx == null || env.isEmpty() ? null : envCells(ctx.language(), env);
        if (env.size() > 0 && ctx != null && envCells == null) {
            throw new E2bError(400, "envs: not supported in a " + ctx.language() + " context");
        }
        Lines out = start(request, response);
        CodeResult result;
        try {
            if (envCells != null) {
                ctx.run(envCells[0]);
            }
            try {
                result = ctx != null ? ctx.run(req, out) : interpreter.run(req, out);
            } finally {
                if (envCells != null) {
                    ctx.run(envCells[1]);
                }
            }
        } catch (SandboxException e) {
            out.error(e.code() == ErrorCode.DEADLINE_EXCEEDED ? "TimeoutError" : "PaddockError", e.getMessage(), "");
            out.end(ctx == null ? 0 : safeCells(ctx));
            callback.succeeded();
            return;
        }
        if (result.error().isPresent()) {
            CellError e = result.error().get();
            out.error(e.name(), e.message(), e.traceback());
        } else if (result.timedOut()) {
            out.error("TimeoutError", "the cell ran past its timeout and was interrupted", "");
        } else if (!result.success() && ctx == null) {
            out.error("ExitError", "exit code " + result.exitCode(), result.stderr());
        }
        out.end(ctx == null ? 1 : safeCells(ctx));
        callback.succeeded();
    }

    /** The cells that set {@code env} in a context and put the previous values back; null for other languages. */
    private static String[] envCells(String language, Map<String, String> env) {
        ObjectNode o = Wire.object();
        env.forEach(o::put);
        String vars = o.toString();
        return switch (language) {
            case "python" -> new String[] {
                    "import os as __e2b_os, json as __e2b_json\n__e2b_env = __e2b_json.loads(" + quote(vars) + ")\n"
                            + "__e2b_saved = {k: __e2b_os.environ.get(k) for k in __e2b_env}\n__e2b_os.environ.update(__e2b_env)",
                    "for __e2b_k, __e2b_v in __e2b_saved.items():\n"
                            + "    __e2b_os.environ.pop(__e2b_k, None) if __e2b_v is None else __e2b_os.environ.__setitem__(__e2b_k, __e2b_v)\n"
                            + "del __e2b_os, __e2b_json, __e2b_env, __e2b_saved"};
            case "javascript" -> new String[] {
                    "globalThis.__e2b_env = " + vars + "; globalThis.__e2b_saved = {}; for (const k of Object.keys(__e2b_env))"
                            + " { __e2b_saved[k] = process.env[k]; process.env[k] = __e2b_env[k]; }",
                    "for (const k of Object.keys(__e2b_saved)) { if (__e2b_saved[k] === undefined) delete process.env[k];"
                            + " else process.env[k] = __e2b_saved[k]; } delete globalThis.__e2b_env; delete globalThis.__e2b_saved;"};
            default -> null;
        };
    }

    private static String quote(String s) {
        return Wire.JSON.getNodeFactory().textNode(s).toString();
    }

    private static long safeCells(CodeContext ctx) {
        try {
            return ctx.info().cells();
        } catch (SandboxException e) {
            return 0;
        }
    }

    private CodeContext defaultContext(CodeInterpreter interpreter, Language lang) {
        String name = DEFAULT_PREFIX + lang.name();
        synchronized (interpreter) {
            try {
                return interpreter.context(name);
            } catch (SandboxException e) {
                if (e.code() != ErrorCode.NOT_FOUND) {
                    throw e;
                }
            }
            return interpreter.createContext(lang.name(), name);
        }
    }

    /** Commits a 200 answer and gives the cell's listener; the connection may idle as long as the cell runs. */
    private static Lines start(Request request, Response response) {
        EndPoint endPoint = request.getConnectionMetaData().getConnection().getEndPoint();
        endPoint.setIdleTimeout(Math.max(endPoint.getIdleTimeout(), 15 * 60_000L)); // E2B sends no heartbeats
        response.setStatus(200);
        response.getHeaders().put(HttpHeader.CONTENT_TYPE, "application/x-ndjson");
        return new Lines(Content.Sink.asOutputStream(response));
    }

    /**
     * The cell's output as E2B's JSON lines, each written and flushed as it happens (blocking: a client that
     * stops reading stops the cell's output). Events come from Paddock's threads; the lock keeps lines whole.
     */
    private static final class Lines implements CodeListener {
        private final OutputStream out;
        private boolean broken;

        Lines(OutputStream out) {
            this.out = out;
        }

        private synchronized void send(ObjectNode o) {
            if (broken) {
                return;
            }
            try {
                out.write(Wire.bytes(o));
                out.write('\n');
                out.flush();
            } catch (IOException | RuntimeException e) {
                broken = true; // the client left; the cell goes on to its end, its output is dropped
            }
        }

        private void text(String type, String text) {
            ObjectNode o = Wire.object();
            o.put("type", type);
            o.put("text", text);
            o.put("timestamp", Instant.now().toString());
            send(o);
        }

        @Override
        public void onStdout(String text) {
            text("stdout", text);
        }

        @Override
        public void onStderr(String text) {
            text("stderr", text);
        }

        @Override
        public void onResult(RichOutput output) {
            ObjectNode o = Wire.object();
            o.put("type", "result");
            output.data().forEach((mime, value) -> put(o, mime, value));
            o.put("is_main_result", output.fromLastExpression());
            send(o);
        }

        @Override
        public void onPlot(Plot plot) {
            ObjectNode o = Wire.object();
            o.put("type", "result");
            if (plot.format() == PlotFormat.SVG) {
                o.put("svg", new String(plot.content(), StandardCharsets.UTF_8));
            } else {
                o.put("png", Base64.getEncoder().encodeToString(plot.content()));
            }
            o.put("text", "<Figure size " + plot.width() + "x" + plot.height() + " with 1 Axes>");
            o.put("is_main_result", false);
            send(o);
        }

        void error(String name, String value, String traceback) {
            ObjectNode o = Wire.object();
            o.put("type", "error");
            o.put("name", name);
            o.put("value", value);
            o.put("traceback", traceback);
            send(o);
        }

        void end(long executions) {
            ObjectNode n = Wire.object();
            n.put("type", "number_of_executions");
            n.put("execution_count", executions);
            send(n);
            ObjectNode e = Wire.object();
            e.put("type", "end_of_execution");
            send(e);
            synchronized (this) {
                try {
                    out.close();
                } catch (IOException ex) {
                    broken = true;
                }
            }
        }

        /** One MIME representation under E2B's name for it; unknown types keep their MIME name (SDK: extra). */
        private static void put(ObjectNode o, String mime, String value) {
            switch (mime) {
                case RichOutput.TEXT -> o.put("text", unquote(value));
                case RichOutput.HTML -> o.put("html", value);
                case "text/markdown" -> o.put("markdown", value);
                case "image/svg+xml" -> o.put("svg", value);
                case "image/png" -> o.put("png", value);
                case "image/jpeg" -> o.put("jpeg", value);
                case "application/pdf" -> o.put("pdf", value);
                case "text/latex" -> o.put("latex", value);
                case "application/javascript" -> o.put("javascript", value);
                case RichOutput.JSON -> {
                    try {
                        o.set("json", Wire.parse(value.getBytes(StandardCharsets.UTF_8)));
                    } catch (SandboxException e) {
                        o.put("json", value);
                    }
                }
                default -> o.put(mime, value);
            }
        }

        /** E2B's server strips the quotes of a string's repr: {@code 'abc'} is {@code abc}. */
        private static String unquote(String text) {
            if (text.length() >= 2 && ((text.startsWith("'") && text.endsWith("'"))
                    || (text.startsWith("\"") && text.endsWith("\"")))) {
                return text.substring(1, text.length() - 1);
            }
            return text;
        }
    }
}
