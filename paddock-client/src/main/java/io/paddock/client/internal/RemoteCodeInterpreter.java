package io.paddock.client.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.ErrorCode;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.code.CodeContext;
import io.paddock.code.CodeInterpreter;
import io.paddock.code.CodeListener;
import io.paddock.code.CodeOptions;
import io.paddock.code.CodePolicy;
import io.paddock.code.CodeRequest;
import io.paddock.code.CodeResult;
import io.paddock.code.ContextInfo;
import io.paddock.code.InstallResult;
import io.paddock.code.Language;
import io.paddock.code.ShellSession;
import io.paddock.code.internal.CodeWire;
import io.paddock.wire.Wire;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * A {@link CodeInterpreter} whose contexts and shell sessions live in the daemon: every call is one request
 * to {@code /v1/sandboxes/{id}/code/…}. So a context outlives this object and the connection that made it;
 * another client finds it with {@link #context(String)} by id or name. {@link #close()} therefore releases
 * only this handle: contexts and shells end when removed, when the sandbox ends, or when the daemon stops.
 *
 * <p>The options' policy is checked here, before anything is sent (the daemon never sees it); the options'
 * timeout, output cap and package source are sent as each request's defaults; {@code maxContexts} and
 * {@code interruptGrace} are the daemon's. A run or cell with a {@link CodeListener} is streamed
 * ({@code Accept: application/x-ndjson}): the listener hears stdout, stderr, results and plots on the calling
 * thread as the daemon sends them, while the code runs. Thread-safe: it holds no mutable state but its flag.
 */
final class RemoteCodeInterpreter implements CodeInterpreter {
    /** Added to a streamed run's own timeout: context start, a queue behind another cell, the transfer. */
    static final Duration STREAM_MARGIN = Duration.ofMinutes(1);

    private final RemoteSandbox sandbox;
    private final CodeOptions options;
    private final Http http;
    private final String base;
    private volatile boolean closed;

    RemoteCodeInterpreter(RemoteSandbox sandbox, CodeOptions options) {
        this.sandbox = sandbox;
        this.options = options;
        this.http = sandbox.http();
        this.base = sandbox.path() + "/code";
    }

    @Override
    public Sandbox sandbox() {
        return sandbox;
    }

    @Override
    public CodeOptions options() {
        return options;
    }

    @Override
    public CodeResult run(CodeRequest request, CodeListener listener) {
        checkOpen();
        enforce(options.languages().get(request.language().orElse(null)), request.code());
        return send(base + "/run", request, listener);
    }

    /**
     * Sends a run or cell with the options' defaults filled in. With a listener the answer is streamed and the
     * listener hears each output as it happens (bounded by {@link #streamLimit}); without one it is one JSON
     * answer with no request timeout (the code's own bounds it).
     */
    CodeResult send(String path, CodeRequest request, CodeListener listener) {
        CodeRequest.Builder b = request.toBuilder();
        if (request.timeout().isEmpty()) {
            b.timeout(options.timeout());
        }
        if (request.outputLimit().isEmpty()) {
            b.outputLimit(options.outputLimit());
        }
        if (request.packageSource().isEmpty() && !request.libraries().isEmpty()) {
            options.packageSource().ifPresent(b::packageSource);
        }
        CodeRequest full = b.build();
        if (listener == null || listener == CodeListener.NONE) {
            return CodeWire.codeResult(http.call("POST", path, null, CodeWire.json(full), null));
        }
        return http.stream(path, CodeWire.json(full), CodeWire.STREAM_TYPE, streamLimit(full),
                event -> CodeWire.deliver(event, listener), answer -> {
                    CodeResult r = CodeWire.codeResult(answer); // a daemon that does not stream
                    deliver(r, listener);
                    return r;
                });
    }

    /**
     * How long a streamed run may take in all: its timeout, a margin for starting a context or waiting for
     * another client's cell in it, and the install bound when it installs libraries first.
     */
    static Duration streamLimit(CodeRequest request) {
        Duration limit = request.timeout().orElseThrow().plus(STREAM_MARGIN);
        return request.libraries().isEmpty() ? limit : limit.plus(Http.CONTROL_TIMEOUT);
    }

    /** Hands a finished result to the listener, for a daemon that answered without streaming. */
    private static void deliver(CodeResult r, CodeListener listener) {
        if (listener == CodeListener.NONE) {
            return;
        }
        if (!r.stdout().isEmpty()) {
            quietly(listener::onStdout, r.stdout());
        }
        if (!r.stderr().isEmpty()) {
            quietly(listener::onStderr, r.stderr());
        }
        r.results().forEach(o -> quietly(listener::onResult, o));
        r.plots().forEach(p -> quietly(listener::onPlot, p));
    }

    private static <T> void quietly(Consumer<T> callback, T value) {
        try {
            callback.accept(value);
        } catch (RuntimeException e) {
            // a listener's failure does not change the result
        }
    }

    /** The options' policy, checked client-side; {@code CodePolicyException} (PERMISSION_DENIED) and nothing is sent. */
    void enforce(Language language, String code) {
        options.policy().ifPresent(p -> p.enforce(language, code));
    }

    void enforceShell(String command) {
        options.policy().ifPresent(p -> options.languages().find("bash").ifPresent(l -> p.enforce(l, command)));
    }

    @Override
    public List<CodePolicy.Violation> check(String language, String code) {
        Language lang = options.languages().get(language);
        return options.policy().map(p -> p.check(lang, code == null ? "" : code)).orElse(List.of());
    }

    @Override
    public CodeContext createContext(String language, String name) {
        checkOpen();
        ObjectNode body = Wire.object().put("language", language);
        if (name != null) {
            body.put("name", name);
        }
        return new RemoteCodeContext(this, CodeWire.contextInfo(http.call("POST", base + "/contexts", null, body,
                Http.CONTROL_TIMEOUT)));
    }

    @Override
    public CodeContext context(String idOrName) {
        checkOpen();
        return new RemoteCodeContext(this, info(requireName(idOrName)));
    }

    ContextInfo info(String idOrName) {
        return CodeWire.contextInfo(http.call("GET", contextPath(idOrName), null, null, Http.CONTROL_TIMEOUT));
    }

    /** The daemon's answer for this sandbox, as rows of this interpreter's table (a row it lacks is left out). */
    @Override
    public List<Language> availableLanguages() {
        checkOpen();
        JsonNode answer = http.call("GET", base + "/languages", null, null, Http.CONTROL_TIMEOUT);
        List<Language> rows = new ArrayList<>();
        for (JsonNode row : answer.path("languages")) {
            options.languages().find(row.path("name").asText()).ifPresent(rows::add);
        }
        return List.copyOf(rows);
    }

    @Override
    public List<ContextInfo> contexts() {
        checkOpen();
        return CodeWire.contextList(http.call("GET", base + "/contexts", null, null, Http.CONTROL_TIMEOUT));
    }

    @Override
    public void removeContext(String idOrName) {
        checkOpen();
        http.call("DELETE", contextPath(requireName(idOrName)), null, null, Http.CONTROL_TIMEOUT);
    }

    String contextPath(String idOrName) {
        return base + "/contexts/" + Http.encode(idOrName);
    }

    private static String requireName(String idOrName) {
        if (idOrName == null || idOrName.isBlank()) {
            throw SandboxException.invalid("context", "missing; give a context id or name");
        }
        return idOrName;
    }

    @Override
    public InstallResult install(String language, List<String> packages, String source) {
        checkOpen();
        ObjectNode body = Wire.object().put("language", language);
        ArrayNode a = body.putArray("packages");
        packages.forEach(a::add);
        String from = source != null ? source : options.packageSource().orElse(null);
        if (from != null) {
            body.put("source", from);
        }
        return CodeWire.installResult(http.call("POST", base + "/install", null, body, null));
    }

    @Override
    public ShellSession shell(Map<String, String> env) {
        checkOpen();
        ObjectNode body = Wire.object();
        ObjectNode vars = body.putObject("env");
        env.forEach(vars::put);
        JsonNode shell = http.call("POST", base + "/shells", null, body, Http.CONTROL_TIMEOUT);
        return new RemoteShellSession(this, shell.path("id").asText(), env);
    }

    Http http() {
        return http;
    }

    String base() {
        return base;
    }

    void checkOpen() {
        if (closed) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "this code interpreter is closed");
        }
    }

    /** Releases this handle; the daemon keeps the sandbox's contexts and shells. */
    @Override
    public void close() {
        closed = true;
    }

    @Override
    public String toString() {
        return "CodeInterpreter[" + sandbox.id() + " @ " + http.base() + "]";
    }
}
