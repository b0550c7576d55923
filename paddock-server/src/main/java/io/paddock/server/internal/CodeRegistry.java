package io.paddock.server.internal;

import io.paddock.ErrorCode;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.SandboxState;
import io.paddock.code.CodeInterpreter;
import io.paddock.code.CodeOptions;
import io.paddock.code.ShellSession;
import io.paddock.code.internal.SandboxCodeInterpreter;

import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The code layer's state in the daemon: one built-in {@link CodeInterpreter} per sandbox, created on first
 * use, with its contexts and the shell sessions opened over REST. It lives in the daemon, so contexts and
 * shells outlive the client connection that made them; it ends when the sandbox is deleted or stops (a
 * watcher thread per sandbox waits for the stop) and when the server closes.
 *
 * <p>The interpreter is {@link SandboxCodeInterpreter} itself, never {@link CodeInterpreter#of}: a provider
 * on the daemon's class path (the remote client's) must not turn the daemon into a client of itself.
 * Thread-safe.
 */
public final class CodeRegistry implements AutoCloseable {
    /** The most contexts, and separately the most shell sessions, one sandbox keeps in the daemon. */
    public static final int MAX_PER_SANDBOX = 16;
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final Duration WATCH = Duration.ofMinutes(1);

    // @GuardedBy("this")
    private final Map<SandboxId, Entry> entries = new LinkedHashMap<>();
    // @GuardedBy("this")
    private boolean closed;

    /** One sandbox's interpreter and shells. */
    private static final class Entry {
        final SandboxCodeInterpreter interpreter;
        // @GuardedBy("this")
        final Map<String, ShellSession> shells = new LinkedHashMap<>();

        Entry(SandboxCodeInterpreter interpreter) {
            this.interpreter = interpreter;
        }

        synchronized void close() {
            interpreter.close(); // ends its contexts and the shells it opened
            shells.clear();
        }
    }

    /** The sandbox's interpreter, created (and watched) on first use; {@code FAILED_PRECONDITION} unless it runs. */
    public CodeInterpreter interpreter(Sandbox sandbox) {
        return entry(sandbox).interpreter;
    }

    private Entry entry(Sandbox sandbox) {
        synchronized (this) {
            Entry e = entries.get(sandbox.id());
            if (e != null) {
                return e;
            }
        }
        SandboxState state = sandbox.info().state();
        if (state != SandboxState.RUNNING) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "sandbox " + sandbox.id() + " is "
                    + state.name().toLowerCase(Locale.ROOT) + "; running code needs a running sandbox");
        }
        synchronized (this) {
            if (closed) {
                throw new SandboxException(ErrorCode.UNAVAILABLE, "the daemon is shutting down");
            }
            Entry e = entries.get(sandbox.id());
            if (e == null) {
                e = new Entry(new SandboxCodeInterpreter(sandbox, CodeOptions.builder().maxContexts(MAX_PER_SANDBOX).build()));
                entries.put(sandbox.id(), e);
                watch(sandbox);
            }
            return e;
        }
    }

    /** Ends the sandbox's code state once the sandbox stops (its processes are gone then; this frees the daemon's side). */
    private void watch(Sandbox sandbox) {
        Thread t = new Thread(() -> {
            try {
                while (isTracked(sandbox.id()) && sandbox.awaitStop(WATCH).isEmpty()) {
                    // still running
                }
            } catch (SandboxException e) {
                // gone from the engine, or the engine is closing: either way the state ends
            }
            release(sandbox.id());
        }, "paddock-code-watch-" + sandbox.id());
        t.setDaemon(true);
        t.start();
    }

    private synchronized boolean isTracked(SandboxId id) {
        return entries.containsKey(id);
    }

    /** Opens a shell session in the sandbox; its id is returned. At most {@link #MAX_PER_SANDBOX} per sandbox. */
    public String openShell(Sandbox sandbox, Map<String, String> env) {
        Entry e = entry(sandbox);
        synchronized (e) {
            if (e.shells.size() >= MAX_PER_SANDBOX) {
                throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "sandbox " + sandbox.id() + " already has "
                        + e.shells.size() + " shell sessions (the limit is " + MAX_PER_SANDBOX + "); delete one first");
            }
        }
        ShellSession s = e.interpreter.shell(env);
        byte[] b = new byte[9];
        RANDOM.nextBytes(b);
        String id = "sh-" + HexFormat.of().formatHex(b);
        synchronized (e) {
            e.shells.put(id, s);
        }
        return id;
    }

    /** The shell session with this id in the sandbox; {@code NOT_FOUND} naming it otherwise. */
    public ShellSession shell(Sandbox sandbox, String id) {
        Entry e = entry(sandbox);
        synchronized (e) {
            ShellSession s = e.shells.get(id);
            if (s == null) {
                throw noShell(sandbox, e, id);
            }
            return s;
        }
    }

    /** Closes and forgets the shell session; {@code NOT_FOUND} if there is none. */
    public void closeShell(Sandbox sandbox, String id) {
        Entry e = entry(sandbox);
        ShellSession s;
        synchronized (e) {
            s = e.shells.remove(id);
            if (s == null) {
                throw noShell(sandbox, e, id);
            }
        }
        s.close();
    }

    // @GuardedBy("e")
    private static SandboxException noShell(Sandbox sandbox, Entry e, String id) {
        return new SandboxException(ErrorCode.NOT_FOUND, "no shell session '" + Limits.shorten(id) + "' in sandbox "
                + sandbox.id() + (e.shells.isEmpty() ? " (it has none)" : " (open: " + String.join(", ", e.shells.keySet()) + ")"));
    }

    /** Ends the sandbox's contexts and shells (before it is deleted); nothing if it has none. */
    public void release(SandboxId id) {
        Entry e;
        synchronized (this) {
            e = entries.remove(id);
        }
        if (e != null) {
            e.close();
        }
    }

    /** Ends every sandbox's code state; later calls are {@code UNAVAILABLE}. */
    @Override
    public void close() {
        List<Entry> all;
        synchronized (this) {
            closed = true;
            all = new ArrayList<>(entries.values());
            entries.clear();
        }
        all.forEach(Entry::close);
    }
}
