package io.paddock.code.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.ErrorCode;
import io.paddock.ExecRequest;
import io.paddock.ExitStatus;
import io.paddock.SandboxException;
import io.paddock.code.CellError;
import io.paddock.code.CodeContext;
import io.paddock.code.CodeListener;
import io.paddock.code.CodeRequest;
import io.paddock.code.CodeResult;
import io.paddock.code.ContextInfo;
import io.paddock.code.Language;

import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A code context backed by a kernel process (see the helpers' protocol in docs/CODE.md). One cell at a
 * time: the lock is held for the whole cell, which is I/O with this context's own kernel only.
 */
final class KernelContext implements CodeContext {
    private static final Duration START_TIMEOUT = Duration.ofSeconds(30);

    private final SandboxCodeInterpreter owner;
    private final String id;
    private final String name;
    private final Language lang;
    private final Instant createdAt = Instant.now();
    private final ReentrantLock lock = new ReentrantLock();
    // @GuardedBy("lock")
    private KernelProcess kernel;
    private volatile long cells;
    private volatile int restarts;
    private volatile boolean busy;
    private volatile boolean closed;

    KernelContext(SandboxCodeInterpreter owner, String id, String name, Language lang) {
        this.owner = owner;
        this.id = id;
        this.name = name;
        this.lang = lang;
    }

    @Override
    public String id() {
        return id;
    }

    @Override
    public Optional<String> name() {
        return Optional.ofNullable(name);
    }

    @Override
    public String language() {
        return lang.name();
    }

    @Override
    public ContextInfo info() {
        ContextInfo.State s = closed ? ContextInfo.State.CLOSED : busy ? ContextInfo.State.BUSY : ContextInfo.State.READY;
        return new ContextInfo(id, name(), lang.name(), s, cells, restarts, createdAt);
    }

    void start() {
        lock.lock();
        try {
            startLocked();
        } finally {
            lock.unlock();
        }
    }

    private void startLocked() {
        Map<String, String> vars = owner.vars(lang);
        vars.put("dir", SandboxCodeInterpreter.ARTIFACTS);
        Map<String, String> env = new LinkedHashMap<>(Templates.env(lang.env(), vars));
        env.put("PADDOCK_ARTIFACTS_DIR", SandboxCodeInterpreter.ARTIFACTS + "/" + id);
        env.put("PADDOCK_CONTEXT_ID", id);
        ExecRequest req = ExecRequest.builder().argv(Templates.argv(lang.kernel(), vars, List.of())).env(env)
                .outputLimit(ExecRequest.UNLIMITED).build();
        KernelProcess k = KernelProcess.start(owner.sandbox(), req, owner.threads());
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        while (true) {
            JsonNode msg = k.poll(deadline - System.nanoTime());
            if (msg == null || msg == KernelProcess.EOF) {
                String why = msg == null ? "did not answer within " + START_TIMEOUT.toSeconds() + " s" : k.failure();
                String tail = k.stderrTail();
                k.kill();
                throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "the " + lang.name()
                        + " kernel for context " + id + " could not start: " + why + (tail.isEmpty() ? "" : "; its stderr: " + tail));
            }
            if ("ready".equals(Json.text(msg, "type", ""))) {
                break;
            }
        }
        kernel = k;
    }

    @Override
    public CodeResult run(CodeRequest cell, CodeListener listener) {
        cell.language().ifPresent(l -> {
            if (!lang.matches(l)) {
                throw SandboxException.invalid("language", "this context runs " + lang.name() + ", not '" + l + "'");
            }
        });
        if (closed) {
            throw removed();
        }
        owner.enforcePolicy(lang, cell.code());
        if (!cell.libraries().isEmpty()) {
            owner.prepare(lang);
            owner.installerFor().ensureInstalled(lang, cell.libraries(), cell.packageSource().orElse(null));
        }
        lock.lock();
        try {
            busy = true;
            if (closed) {
                throw removed();
            }
            if (kernel == null) {
                startLocked();
                restarts++;
            }
            return runLocked(cell, listener == null ? CodeListener.NONE : listener);
        } finally {
            busy = false;
            lock.unlock();
        }
    }

    private CodeResult runLocked(CodeRequest cell, CodeListener listener) {
        long started = System.nanoTime();
        long n = ++cells;
        String cellId = id + "-" + n;
        String artifacts = SandboxCodeInterpreter.ARTIFACTS + "/" + cellId;
        Duration timeout = cell.timeout().orElse(owner.options().timeout());
        long cap = cell.outputLimit().orElse(owner.options().outputLimit()).bytes();
        ObjectNode req = Json.MAPPER.createObjectNode();
        req.put("op", "execute").put("id", cellId).put("code", cell.code())
                .put("plot_format", cell.plotFormat().extension()).put("artifacts_dir", artifacts)
                .put("max_output", Math.min(cap, Integer.MAX_VALUE));
        Capture out = new Capture(cap);
        Capture err = new Capture(cap);
        Outputs outputs = new Outputs(listener);
        KernelProcess k = kernel;
        k.send(req);
        long deadline = started + timeout.toNanos();
        boolean interrupted = false;
        while (true) {
            JsonNode msg = k.poll(deadline - System.nanoTime());
            if (msg == null) {
                if (!interrupted) {
                    // the cell's time is up: interrupt it, and give it the grace period to stop
                    interrupted = true;
                    k.interrupt();
                    deadline = System.nanoTime() + owner.options().interruptGrace().toNanos();
                    continue;
                }
                // it did not stop: the context is restarted and its state lost
                restartLocked();
                err.add("paddock: the cell did not stop within " + owner.options().interruptGrace().toMillis()
                        + " ms of its interrupt; the context was restarted and its state is lost\n");
                return result(ExitStatus.Outcome.TIMED_OUT, 124, out, err, outputs,
                        new CellError("TimeoutError", "timed out after " + timeout.toMillis() + " ms", ""),
                        true, started, List.of());
            }
            if (msg == KernelProcess.EOF) {
                String why = k.failure();
                Optional<ExitStatus> exit = k.exitStatus(Duration.ofMillis(500));
                String tail = k.stderrTail();
                restartLocked();
                String detail = exit.map(ExitStatus::describe).orElse(why);
                err.add("paddock: the context's process ended (" + detail + ")"
                        + (tail.isEmpty() ? "" : ": " + tail) + "; it was restarted and its state is lost\n");
                ExitStatus.Outcome outcome = interrupted ? ExitStatus.Outcome.TIMED_OUT
                        : exit.map(ExitStatus::outcome).orElse(ExitStatus.Outcome.SIGNALED);
                int code = interrupted ? 124 : exit.map(ExitStatus::exitCode).orElse(137);
                if (outcome == ExitStatus.Outcome.EXITED && code == 0) {
                    code = 1;
                }
                return result(outcome, code, out, err, outputs,
                        new CellError("ContextDied", "the context's process ended: " + detail, ""), true, started, List.of());
            }
            String type = Json.text(msg, "type", "");
            if (!cellId.equals(Json.text(msg, "id", null))) {
                continue; // a late message of an earlier cell, or output between cells
            }
            switch (type) {
                case "stream" -> {
                    String text = Json.text(msg, "text", "");
                    if ("stderr".equals(Json.text(msg, "name", ""))) {
                        err.add(text);
                        listener.onStderr(text);
                    } else {
                        out.add(text);
                        listener.onStdout(text);
                    }
                }
                case "done" -> {
                    if ("died".equals(Json.text(msg, "status", ""))) {
                        // the kernel's worker died (JavaScript: process.exit, a crash); its supervisor exits next
                        CellError e = msg.has("error") ? Outputs.error(msg.get("error"))
                                : new CellError("ContextDied", "the context's process ended", "");
                        restartLocked();
                        err.add("paddock: " + e.message() + "; the context was restarted and its state is lost\n");
                        int code = exitCode(e.message());
                        return result(interrupted ? ExitStatus.Outcome.TIMED_OUT : ExitStatus.Outcome.EXITED,
                                interrupted ? 124 : code, out, err, outputs, e, true, started, List.of());
                    }
                    return done(msg, out, err, outputs, interrupted, timeout, started, artifacts, cell.artifactContent());
                }
                default -> outputs.accept(msg);
            }
        }
    }

    /** The code in "… (code 5)" of a died message; 1 when there is none (for example, a signal). */
    private static int exitCode(String message) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("\\(code (\\d{1,3})\\)").matcher(message);
        if (m.find()) {
            int c = Integer.parseInt(m.group(1));
            return c == 0 ? 1 : c;
        }
        return 1;
    }

    private CodeResult done(JsonNode msg, Capture out, Capture err, Outputs outputs, boolean interrupted,
                            Duration timeout, long started, String artifacts, boolean content) {
        if (msg.path("stdout_truncated").asBoolean(false)) {
            out.markTruncated();
        }
        if (msg.path("stderr_truncated").asBoolean(false)) {
            err.markTruncated();
        }
        String status = Json.text(msg, "status", "error");
        CellError error = msg.has("error") ? Outputs.error(msg.get("error")) : outputs.error;
        List<io.paddock.code.Artifact> found = Outputs.artifacts(owner.sandbox().files(), artifacts,
                Outputs.listing(msg.get("artifacts")), content);
        ExitStatus.Outcome outcome = ExitStatus.Outcome.EXITED;
        int code;
        switch (status) {
            case "ok" -> code = 0;
            case "exit" -> code = msg.path("error").path("exit_code").asInt(1);
            case "interrupted" -> {
                if (interrupted) {
                    outcome = ExitStatus.Outcome.TIMED_OUT;
                    code = 124;
                    error = new CellError(error == null ? "KeyboardInterrupt" : error.name(),
                            "timed out after " + timeout.toMillis() + " ms and was interrupted; the context kept its state",
                            error == null ? "" : error.traceback());
                } else {
                    outcome = ExitStatus.Outcome.SIGNALED;
                    code = 130;
                }
            }
            default -> code = 1;
        }
        return result(outcome, code, out, err, outputs, error, false, started, found);
    }

    private CodeResult result(ExitStatus.Outcome outcome, int code, Capture out, Capture err, Outputs outputs,
                              CellError error, boolean restarted, long started, List<io.paddock.code.Artifact> artifacts) {
        Duration took = SandboxCodeInterpreter.since(started);
        ExitStatus status = new ExitStatus(outcome, code, outcome == ExitStatus.Outcome.SIGNALED ? 2 : 0,
                out.truncated(), err.truncated(), took);
        return new CodeResult(lang.name(), CodeResult.Step.RUN, status, out.text(), err.text(), outputs.results,
                outputs.plots, artifacts, Optional.ofNullable(error), restarted, took);
    }

    private void restartLocked() {
        if (kernel != null) {
            kernel.kill();
            kernel = null;
        }
        if (closed) {
            return;
        }
        restarts++;
        try {
            startLocked();
        } catch (SandboxException e) {
            // left stopped: the next cell tries again and reports why it cannot start
        }
    }

    @Override
    public void restart() {
        if (closed) {
            throw removed();
        }
        lock.lock();
        try {
            if (kernel != null) {
                kernel.kill();
                kernel = null;
            }
            restarts++;
            startLocked();
        } finally {
            lock.unlock();
        }
    }

    private SandboxException removed() {
        return new SandboxException(ErrorCode.NOT_FOUND, "code context '" + id + "' was removed");
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        owner.forget(this);
        KernelProcess k = kernel;
        if (k != null) {
            k.kill();
        }
        // a cell still running returns once its kernel is gone; its lock holder clears the field
        if (lock.tryLock()) {
            try {
                kernel = null;
            } finally {
                lock.unlock();
            }
        }
    }

    @Override
    public String toString() {
        return "CodeContext[" + id + (name == null ? "" : " " + name) + ", " + lang.name() + "]";
    }
}
