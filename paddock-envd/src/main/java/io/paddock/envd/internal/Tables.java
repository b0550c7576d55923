package io.paddock.envd.internal;

import io.paddock.Sandbox;
import io.paddock.SandboxId;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * What envd keeps per sandbox: its started processes (by pid) and its polling watchers (by id). A sandbox's
 * entry goes when it holds neither; processes leave when they end (a destroyed sandbox ends them all), and
 * watchers when removed, when their sandbox is found stopped, or after {@link FilesystemService#WATCHER_IDLE}
 * unused.
 */
public final class Tables {
    private final ConcurrentHashMap<SandboxId, PerSandbox> bySandbox = new ConcurrentHashMap<>();

    /** One sandbox's processes and watchers. */
    static final class PerSandbox {
        final Map<Long, ProcessEntry> processes = new ConcurrentHashMap<>();
        final Map<String, Watcher> watchers = new ConcurrentHashMap<>();
        volatile Sandbox sandbox;

        boolean isEmpty() {
            return processes.isEmpty() && watchers.isEmpty();
        }
    }

    /** Runs {@code f} on the sandbox's table, created if absent, atomically with its removal. */
    <T> T with(Sandbox sb, Function<PerSandbox, T> f) {
        Object[] result = new Object[1];
        bySandbox.compute(sb.id(), (id, t) -> {
            PerSandbox table = t == null ? new PerSandbox() : t;
            table.sandbox = sb;
            result[0] = f.apply(table);
            return table.isEmpty() ? null : table;
        });
        @SuppressWarnings("unchecked")
        T r = (T) result[0];
        return r;
    }

    /** The sandbox's table, or {@code null}; for reads. */
    PerSandbox peek(SandboxId id) {
        return bySandbox.get(id);
    }

    /** Removes a process from its sandbox's table (and the table once empty). */
    void removeProcess(SandboxId id, long pid, ProcessEntry entry) {
        bySandbox.computeIfPresent(id, (k, t) -> {
            t.processes.remove(pid, entry);
            return t.isEmpty() ? null : t;
        });
    }

    void removeWatcher(SandboxId id, String watcherId) {
        bySandbox.computeIfPresent(id, (k, t) -> {
            t.watchers.remove(watcherId);
            return t.isEmpty() ? null : t;
        });
    }

    List<PerSandbox> all() {
        return new ArrayList<>(bySandbox.values());
    }

    SandboxId idOf(PerSandbox t) {
        for (Map.Entry<SandboxId, PerSandbox> e : bySandbox.entrySet()) {
            if (e.getValue() == t) {
                return e.getKey();
            }
        }
        return null;
    }
}
