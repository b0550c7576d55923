package io.paddock.e2b.internal;

import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.code.CodeInterpreter;
import io.paddock.code.CodeOptions;
import io.paddock.code.internal.SandboxCodeInterpreter;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The code interpreter's state for the E2B API: one built-in interpreter per sandbox, made on first use, with
 * its contexts (E2B's default context per language and those of {@code POST /contexts}). It lives in the
 * daemon, so contexts outlive connections, and ends when the sandbox stops (a watcher thread per sandbox),
 * when it is killed through the E2B API, and when the listener closes. Never {@code CodeInterpreter.of}: a
 * provider on the daemon's class path must not turn the daemon into a client of itself. Thread-safe.
 */
public final class CodeState implements AutoCloseable {
    /** The most contexts one sandbox keeps here. */
    public static final int MAX_CONTEXTS = 16;
    private static final Duration WATCH = Duration.ofMinutes(1);

    // @GuardedBy("this")
    private final Map<SandboxId, SandboxCodeInterpreter> interpreters = new HashMap<>();
    /** The cwd each context was created with, per sandbox (E2B reports it); forgotten with the sandbox. */
    // @GuardedBy("this")
    private final Map<SandboxId, Map<String, String>> cwds = new HashMap<>();
    // @GuardedBy("this")
    private boolean closed;

    synchronized void setCwd(SandboxId sandbox, String context, String cwd) {
        if (interpreters.containsKey(sandbox)) {
            cwds.computeIfAbsent(sandbox, k -> new HashMap<>()).put(context, cwd);
        }
    }

    synchronized String cwd(SandboxId sandbox, String context, String otherwise) {
        return cwds.getOrDefault(sandbox, Map.of()).getOrDefault(context, otherwise);
    }

    /** The sandbox's interpreter (the sandbox is running: the caller checked). */
    CodeInterpreter interpreter(Sandbox sandbox) {
        synchronized (this) {
            if (closed) {
                throw new SandboxException(io.paddock.ErrorCode.UNAVAILABLE, "the daemon is shutting down");
            }
            SandboxCodeInterpreter i = interpreters.get(sandbox.id());
            if (i == null) {
                i = new SandboxCodeInterpreter(sandbox, CodeOptions.builder().maxContexts(MAX_CONTEXTS).build());
                interpreters.put(sandbox.id(), i);
                watch(sandbox);
            }
            return i;
        }
    }

    private void watch(Sandbox sandbox) {
        Thread t = new Thread(() -> {
            try {
                while (tracked(sandbox.id()) && sandbox.awaitStop(WATCH).isEmpty()) {
                    // still running
                }
            } catch (SandboxException e) {
                // gone from the engine, or the engine is closing
            }
            release(sandbox.id());
        }, "paddock-e2b-code-watch-" + sandbox.id());
        t.setDaemon(true);
        t.start();
    }

    private synchronized boolean tracked(SandboxId id) {
        return interpreters.containsKey(id);
    }

    /** Ends the sandbox's contexts; nothing if it has none. */
    void release(SandboxId id) {
        SandboxCodeInterpreter i;
        synchronized (this) {
            i = interpreters.remove(id);
            cwds.remove(id);
        }
        if (i != null) {
            i.close();
        }
    }

    @Override
    public void close() {
        List<SandboxCodeInterpreter> all;
        synchronized (this) {
            closed = true;
            all = new ArrayList<>(interpreters.values());
            interpreters.clear();
            cwds.clear();
        }
        all.forEach(SandboxCodeInterpreter::close);
    }
}
