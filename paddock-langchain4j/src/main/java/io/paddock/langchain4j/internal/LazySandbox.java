package io.paddock.langchain4j.internal;

import io.paddock.ErrorCode;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import io.paddock.code.CodeInterpreter;
import io.paddock.code.ShellSession;

import java.util.Objects;
import java.util.Optional;

/**
 * One sandbox, created on first use from a spec, with the interpreter and the shell session opened on it
 * on their first use; {@link #close()} ends them in reverse order and destroys the sandbox. Thread-safe:
 * creating, opening and closing happen under this object's lock, I/O included, so that two first calls
 * never make two sandboxes and a close never races a creation; the work done on them is not under it.
 */
public final class LazySandbox implements AutoCloseable {
    private final Paddock paddock;
    private final SandboxSpec spec;

    // @GuardedBy("this")
    private Sandbox sandbox;
    // @GuardedBy("this")
    private CodeInterpreter interpreter;
    // @GuardedBy("this")
    private ShellSession shell;
    // @GuardedBy("this")
    private boolean closed;

    public LazySandbox(Paddock paddock, SandboxSpec spec) {
        this.paddock = Objects.requireNonNull(paddock, "paddock");
        this.spec = Objects.requireNonNull(spec, "spec");
    }

    /** The sandbox, created now if this is the first call. */
    public synchronized Sandbox sandbox() {
        if (closed) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "the sandbox's tool was closed");
        }
        if (sandbox == null) {
            sandbox = paddock.create(spec);
        }
        return sandbox;
    }

    public synchronized CodeInterpreter interpreter() {
        Sandbox sb = sandbox();
        if (interpreter == null) {
            interpreter = CodeInterpreter.of(sb);
        }
        return interpreter;
    }

    /** The persistent shell, opened now if there is none or the last one ended. */
    public synchronized ShellSession shell() {
        CodeInterpreter code = interpreter();
        if (shell == null || !shell.isAlive()) {
            if (shell != null) {
                shell.close();
            }
            shell = code.shell();
        }
        return shell;
    }

    /** The sandbox if it was created, without creating it. */
    public synchronized Optional<Sandbox> created() {
        return Optional.ofNullable(sandbox);
    }

    /** Ends the shell and the interpreter, then destroys the sandbox; idempotent. Throws the first failure. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        RuntimeException failure = null;
        for (AutoCloseable c : new AutoCloseable[] {shell, interpreter, sandbox}) {
            if (c == null) {
                continue;
            }
            try {
                c.close();
            } catch (Exception e) {
                if (failure == null) {
                    failure = e instanceof RuntimeException r ? r : new IllegalStateException(e);
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        shell = null;
        interpreter = null;
        sandbox = null;
        if (failure != null) {
            throw failure;
        }
    }
}
