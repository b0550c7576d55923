package io.paddock.envd.internal;

/**
 * A watcher made by {@code CreateWatcher}: the directory, how it is watched, and the snapshot its next
 * {@code GetWatcherEvents} is compared with (that call takes a new one: events are computed when asked, so an
 * unpolled watcher costs no work). Thread-safe.
 */
final class Watcher {
    final String path;
    final boolean recursive;
    final boolean includeEntry;
    // @GuardedBy("this")
    private DirSnapshot last;
    private volatile long lastUsedNanos;

    Watcher(String path, boolean recursive, boolean includeEntry, DirSnapshot first) {
        this.path = path;
        this.recursive = recursive;
        this.includeEntry = includeEntry;
        this.last = first;
        touch();
    }

    synchronized DirSnapshot swap(DirSnapshot next) {
        DirSnapshot before = last;
        last = next;
        return before;
    }

    void touch() {
        lastUsedNanos = System.nanoTime();
    }

    long idleNanos() {
        return System.nanoTime() - lastUsedNanos;
    }
}
