package io.paddock.code.internal;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.ExecResult;
import io.paddock.ExitStatus;
import io.paddock.FileInfo;
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

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * The built-in code interpreter: drives one sandbox through the public {@link Sandbox} API only
 * (exec/start/files), so it works over an embedded engine and a remote daemon alike.
 */
public final class SandboxCodeInterpreter implements CodeInterpreter {
    static final String LIBS = "/workspace/.paddock/libs";
    static final String ARTIFACTS = Helpers.STATE + "/artifacts";
    static final String RUNS = Helpers.STATE + "/runs";
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final List<String> DEFAULT_PATH = List.of("/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
            "/usr/bin", "/sbin", "/bin");

    private final Sandbox sandbox;
    private final CodeOptions options;
    private final ExecutorService threads;
    private final Installer installer;
    /** Contexts by id, in creation order. */
    // @GuardedBy("contexts")
    private final Map<String, KernelContext> contexts = new LinkedHashMap<>();
    private final Set<BashSession> shells = ConcurrentHashMap.newKeySet();
    private final Map<String, Boolean> commands = new ConcurrentHashMap<>();
    private final Set<String> libDirs = ConcurrentHashMap.newKeySet();
    private volatile boolean helpersReady;
    private volatile boolean closed;

    public SandboxCodeInterpreter(Sandbox sandbox, CodeOptions options) {
        if (sandbox == null) {
            throw SandboxException.invalid("sandbox", "missing");
        }
        this.sandbox = sandbox;
        this.options = options == null ? CodeOptions.defaults() : options;
        AtomicInteger n = new AtomicInteger();
        this.threads = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "paddock-code-" + sandbox.id() + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        this.installer = new Installer(this);
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
    public List<Language> availableLanguages() {
        checkOpen();
        List<Language> available = new ArrayList<>();
        for (Language lang : options.languages().all()) {
            if (hasCommand(Templates.command(lang.compile())) && hasCommand(Templates.command(lang.run()))) {
                available.add(lang);
            }
        }
        return List.copyOf(available);
    }

    // ------------------------------------------------------------------ one-shot runs

    @Override
    public CodeResult run(CodeRequest request, CodeListener listener) {
        checkOpen();
        long started = System.nanoTime();
        Language lang = options.languages().get(request.language().orElse(null));
        enforcePolicy(lang, request.code());
        requireCommand(lang, Templates.command(lang.compile()));
        requireCommand(lang, Templates.command(lang.run()));
        prepare(lang);
        if (!request.libraries().isEmpty()) {
            installer.ensureInstalled(lang, request.libraries(), request.packageSource().orElse(null));
        }
        Duration timeout = request.timeout().orElse(options.timeout());
        long cap = request.outputLimit().orElse(options.outputLimit()).bytes();
        String id = newId();
        String dir = RUNS + "/" + id;
        String artifacts = ARTIFACTS + "/" + id;
        String file = dir + "/" + lang.sourceFile();
        String events = dir + "/.events.jsonl";
        Map<String, String> vars = vars(lang);
        vars.put("file", file);
        vars.put("dir", dir);
        try {
            sandbox.files().write(file, request.code().getBytes(StandardCharsets.UTF_8));
            sandbox.files().mkdir(artifacts);
            Map<String, String> env = new LinkedHashMap<>(Templates.env(lang.env(), vars));
            env.put("PADDOCK_ARTIFACTS_DIR", artifacts);
            if (lang.plots()) {
                env.put("PADDOCK_RUN_EVENTS", events);
                env.put("PADDOCK_PLOT_FORMAT", request.plotFormat().extension());
            }
            env.putAll(request.env());
            if (!lang.compile().isEmpty()) {
                ExecRequest.Builder cb = ExecRequest.builder().argv(Templates.argv(lang.compile(), vars, List.of()))
                        .env(env).timeout(timeout).outputLimit(ByteSize.bytes(cap));
                request.cwd().ifPresent(cb::cwd);
                ExecResult c = sandbox.exec(cb.build());
                if (!c.success()) {
                    listener.onStderr(c.stderrText());
                    return new CodeResult(lang.name(), CodeResult.Step.COMPILE, c.status(), c.stdoutText(),
                            c.stderrText(), List.of(), List.of(), List.of(), Optional.empty(), false, since(started));
                }
                Duration used = since(started);
                timeout = timeout.minus(used).isNegative() || timeout.minus(used).isZero()
                        ? Duration.ofMillis(1) : timeout.minus(used);
            }
            ExecRequest.Builder rb = ExecRequest.builder().argv(Templates.argv(lang.run(), vars, List.of()))
                    .env(env).timeout(timeout).outputLimit(ByteSize.bytes(cap));
            request.cwd().ifPresent(rb::cwd);
            Capture out = new Capture(cap);
            Capture err = new Capture(cap);
            ExitStatus status;
            try (ExecProcess p = sandbox.start(rb.build())) {
                p.closeStdin();
                Future<?> fo = pump(p.stdout(), out, listener::onStdout);
                Future<?> fe = pump(p.stderr(), err, listener::onStderr);
                status = p.awaitExit();
                join(fo);
                join(fe);
            }
            Outputs outputs = new Outputs(listener);
            if (lang.plots()) {
                readEvents(events, outputs);
            }
            List<io.paddock.code.Artifact> found = Outputs.artifacts(sandbox.files(), artifacts,
                    listArtifacts(artifacts), request.artifactContent());
            if (found.isEmpty()) {
                quietly(() -> sandbox.files().removeRecursive(artifacts));
            }
            ExitStatus s = new ExitStatus(status.outcome(), status.exitCode(), status.signal(),
                    status.stdoutTruncated() || out.truncated(), status.stderrTruncated() || err.truncated(),
                    status.duration());
            return new CodeResult(lang.name(), CodeResult.Step.RUN, s, out.text(), err.text(), outputs.results,
                    outputs.plots, found, Optional.ofNullable(outputs.error), false, since(started));
        } finally {
            quietly(() -> sandbox.files().removeRecursive(dir));
        }
    }

    private Future<?> pump(InputStream in, Capture capture, Consumer<String> listener) {
        return threads.submit(() -> {
            byte[] buf = new byte[16 * 1024];
            java.nio.charset.CharsetDecoder dec = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(java.nio.charset.CodingErrorAction.REPLACE)
                    .onUnmappableCharacter(java.nio.charset.CodingErrorAction.REPLACE);
            java.nio.ByteBuffer pending = java.nio.ByteBuffer.allocate(buf.length + 8);
            try (in) {
                int n;
                while ((n = in.read(buf)) > 0) {
                    capture.add(buf, 0, n);
                    if (listener != null) {
                        pending.put(buf, 0, n).flip();
                        java.nio.CharBuffer chars = java.nio.CharBuffer.allocate(pending.remaining() + 1);
                        dec.decode(pending, chars, false);
                        pending.compact();
                        chars.flip();
                        if (chars.hasRemaining()) {
                            try {
                                listener.accept(chars.toString());
                            } catch (RuntimeException e) {
                                // a listener's failure does not stop the capture
                            }
                        }
                    }
                }
            } catch (IOException | SandboxException e) {
                capture.markTruncated();
            }
            return null;
        });
    }

    private static void join(Future<?> f) {
        try {
            f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SandboxException(ErrorCode.UNAVAILABLE, "interrupted");
        } catch (java.util.concurrent.ExecutionException e) {
            // the pump records its own failures as truncation
        }
    }

    private void readEvents(String path, Outputs outputs) {
        byte[] raw;
        try {
            raw = sandbox.files().read(path);
        } catch (SandboxException e) {
            return; // no events (nothing to report, or the code removed the file)
        }
        for (String line : new String(raw, StandardCharsets.UTF_8).split("\n")) {
            if (line.isBlank()) {
                continue;
            }
            try {
                JsonNode msg = Json.MAPPER.readTree(line);
                if (msg != null && msg.isObject()) {
                    outputs.accept(msg);
                }
            } catch (IOException e) {
                // a corrupted line (the code can write to this file too) is skipped
            }
        }
    }

    /** Files under the artifacts directory, depth-first, bounded. */
    private List<Map.Entry<String, Long>> listArtifacts(String dir) {
        List<Map.Entry<String, Long>> out = new ArrayList<>();
        walk(dir, "", out, 0);
        return out;
    }

    private void walk(String root, String rel, List<Map.Entry<String, Long>> out, int depth) {
        if (depth > 16 || out.size() >= Outputs.MAX_ARTIFACTS) {
            return;
        }
        List<FileInfo> entries;
        try {
            entries = sandbox.files().list(rel.isEmpty() ? root : root + "/" + rel);
        } catch (SandboxException e) {
            return;
        }
        entries = new ArrayList<>(entries);
        entries.sort(java.util.Comparator.comparing(FileInfo::name));
        for (FileInfo f : entries) {
            String r = rel.isEmpty() ? f.name() : rel + "/" + f.name();
            if (f.isDirectory()) {
                walk(root, r, out, depth + 1);
            } else if (f.isFile() && out.size() < Outputs.MAX_ARTIFACTS) {
                out.add(Map.entry(r, f.size()));
            }
        }
    }

    // ------------------------------------------------------------------ contexts

    @Override
    public CodeContext createContext(String language, String name) {
        checkOpen();
        Language lang = options.languages().get(language);
        if (!lang.contexts()) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "language '" + lang.name()
                    + "' has no stateful contexts; languages with contexts: " + options.languages().all().stream()
                    .filter(Language::contexts).map(Language::name).toList() + " (run it with run() instead)");
        }
        if (name != null && !name.matches("[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")) {
            throw SandboxException.invalid("name", "a context name is 1-64 letters, digits, '_', '.' or '-', got '" + name + "'");
        }
        requireCommand(lang, Templates.command(lang.kernel()));
        prepare(lang);
        KernelContext ctx;
        synchronized (contexts) {
            if (contexts.size() >= options.maxContexts()) {
                throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "this interpreter already has "
                        + contexts.size() + " live contexts (the limit is " + options.maxContexts()
                        + "); remove one first");
            }
            if (name != null && contexts.values().stream().anyMatch(c -> name.equals(c.name().orElse(null)))) {
                throw new SandboxException(ErrorCode.ALREADY_EXISTS, "a context named '" + name + "' already exists");
            }
            String id = "ctx-" + newId().substring(0, 12);
            ctx = new KernelContext(this, id, name, lang);
            contexts.put(id, ctx);
        }
        try {
            ctx.start();
        } catch (RuntimeException e) {
            forget(ctx);
            throw e;
        }
        return ctx;
    }

    @Override
    public CodeContext context(String idOrName) {
        synchronized (contexts) {
            KernelContext c = idOrName == null ? null : contexts.get(idOrName);
            if (c == null && idOrName != null) {
                c = contexts.values().stream().filter(x -> idOrName.equals(x.name().orElse(null))).findFirst().orElse(null);
            }
            if (c == null) {
                throw new SandboxException(ErrorCode.NOT_FOUND, "no code context '" + idOrName + "' in sandbox "
                        + sandbox.id() + (contexts.isEmpty() ? " (it has none)" : " (live: " + String.join(", ", contexts.keySet()) + ")"));
            }
            return c;
        }
    }

    @Override
    public List<ContextInfo> contexts() {
        List<KernelContext> live;
        synchronized (contexts) {
            live = new ArrayList<>(contexts.values());
        }
        return live.stream().map(KernelContext::info).toList();
    }

    void forget(KernelContext ctx) {
        synchronized (contexts) {
            contexts.remove(ctx.id());
        }
    }

    // ------------------------------------------------------------------ installs, shells, policy

    @Override
    public InstallResult install(String language, List<String> packages, String source) {
        checkOpen();
        Language lang = options.languages().get(language);
        prepare(lang);
        return installer.install(lang, packages, source);
    }

    @Override
    public ShellSession shell(Map<String, String> env) {
        checkOpen();
        requireCommand(null, "bash");
        BashSession s = new BashSession(this, env);
        shells.add(s);
        try {
            s.start();
        } catch (RuntimeException e) {
            shells.remove(s);
            throw e;
        }
        return s;
    }

    void forget(BashSession s) {
        shells.remove(s);
    }

    @Override
    public List<CodePolicy.Violation> check(String language, String code) {
        Language lang = options.languages().get(language);
        return options.policy().map(p -> p.check(lang, code == null ? "" : code)).orElse(List.of());
    }

    void enforcePolicy(Language lang, String code) {
        options.policy().ifPresent(p -> p.enforce(lang, code));
    }

    void enforceShellPolicy(String command) {
        options.policy().ifPresent(p -> options.languages().find("bash").ifPresent(l -> p.enforce(l, command)));
    }

    // ------------------------------------------------------------------ shared plumbing

    /** Uploads the helpers and creates the language's install target (so interpreters see it on their path). */
    void prepare(Language lang) {
        if (!helpersReady) {
            Helpers.ensure(sandbox);
            helpersReady = true;
        }
        if (libDirs.add(lang.name())) {
            try {
                sandbox.files().mkdir(libs(lang));
            } catch (RuntimeException e) {
                libDirs.remove(lang.name());
                throw e;
            }
        }
    }

    static String libs(Language lang) {
        return LIBS + "/" + lang.name();
    }

    Map<String, String> vars(Language lang) {
        Map<String, String> v = new LinkedHashMap<>();
        v.put("helpers", Helpers.DIR);
        v.put("libs", libs(lang));
        v.put("state", Helpers.STATE);
        return v;
    }

    /**
     * Fails with {@code FAILED_PRECONDITION} naming the command when the sandbox's image does not have it.
     * Looks along the default PATH with file operations (no process), once per command per interpreter; a null
     * command (a step the language does not have) passes.
     */
    void requireCommand(Language lang, String command) {
        if (!hasCommand(command)) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, (lang == null ? "" : "language '" + lang.name() + "': ")
                    + "the command '" + command + "' is missing from this sandbox's image (looked in "
                    + String.join(":", DEFAULT_PATH) + "); use an image that has it"
                    + (lang == null ? "" : " to run " + lang.name() + " code"));
        }
    }

    /** Whether the image has {@code command} (null: no command needed), looked up once per interpreter. */
    private boolean hasCommand(String command) {
        if (command == null) {
            return true;
        }
        Boolean known = commands.get(command);
        boolean present = known != null ? known : lookUp(command); // file operations: not under the map's lock
        commands.put(command, present);
        return present;
    }

    Installer installerFor() {
        return installer;
    }

    private boolean lookUp(String command) {
        if (command.startsWith("/")) {
            return sandbox.files().exists(command);
        }
        for (String dir : DEFAULT_PATH) {
            if (sandbox.files().exists(dir + "/" + command)) {
                return true;
            }
        }
        return false;
    }

    ExecutorService threads() {
        return threads;
    }

    static String newId() {
        byte[] b = new byte[12];
        RANDOM.nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    static Duration since(long startNanos) {
        return Duration.ofNanos(System.nanoTime() - startNanos);
    }

    static void quietly(Runnable r) {
        try {
            r.run();
        } catch (RuntimeException e) {
            // best-effort cleanup inside the sandbox; it is all gone with the sandbox anyway
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "this code interpreter is closed");
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        List<KernelContext> live;
        synchronized (contexts) {
            live = new ArrayList<>(contexts.values());
        }
        live.forEach(KernelContext::close);
        new ArrayList<>(shells).forEach(BashSession::close);
        threads.shutdownNow();
    }

    @Override
    public String toString() {
        return "CodeInterpreter[" + sandbox.id() + "]";
    }
}
