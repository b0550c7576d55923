package io.paddock.envd.internal;

import io.paddock.ErrorCode;
import io.paddock.FileInfo;
import io.paddock.FileType;
import io.paddock.SandboxException;
import io.paddock.SandboxFiles;
import io.paddock.envd.internal.proto.FilesystemProto.EventType;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * What a watched directory held at one poll: each entry under it by its name relative to it ({@code a.txt},
 * {@code sub/b.txt} when recursive), with what a change shows in. Two snapshots' difference is the events envd's
 * inotify watcher would have reported, coalesced over the poll interval: a created file is one {@code CREATE}
 * however often it was written since, a rename is a {@code REMOVE} of the old name and a {@code CREATE} of the new.
 * Immutable.
 */
public final class DirSnapshot {
    /** The most entries a watch covers; a bigger tree is {@code resource_exhausted} (watch a smaller one). */
    public static final int MAX_ENTRIES = 10_000;

    private final Map<String, FileInfo> entries;

    DirSnapshot(Map<String, FileInfo> entries) {
        this.entries = Collections.unmodifiableMap(new TreeMap<>(entries));
    }

    /**
     * Lists {@code dir} (and, when {@code recursive}, every directory under it, never through a symlink).
     * A directory that vanishes between its listing and its own is skipped; the watched one missing is
     * {@code NOT_FOUND}.
     */
    public static DirSnapshot take(SandboxFiles files, String dir, boolean recursive) {
        Map<String, FileInfo> found = new LinkedHashMap<>();
        Deque<String> todo = new ArrayDeque<>();
        todo.add("");
        while (!todo.isEmpty()) {
            String rel = todo.removeFirst();
            List<FileInfo> list;
            try {
                list = files.list(rel.isEmpty() ? dir : Paths.join(dir, rel));
            } catch (SandboxException e) {
                if (!rel.isEmpty() && (e.code() == ErrorCode.NOT_FOUND || e.code() == ErrorCode.FAILED_PRECONDITION)) {
                    continue;
                }
                throw e;
            }
            for (FileInfo f : list) {
                String name = rel.isEmpty() ? f.name() : rel + "/" + f.name();
                found.put(name, f);
                if (found.size() > MAX_ENTRIES) {
                    throw new ConnectException(ConnectCode.RESOURCE_EXHAUSTED, "watching " + dir + ": more than "
                            + MAX_ENTRIES + " entries; Paddock watches by polling, watch a smaller directory");
                }
                if (recursive && f.type() == FileType.DIRECTORY) {
                    todo.addLast(name);
                }
            }
        }
        return new DirSnapshot(found);
    }

    public Map<String, FileInfo> entries() {
        return entries;
    }

    /** One change: the entry's relative name, what happened, and the entry as it is now (absent once gone). */
    public record Change(String name, EventType type, FileInfo now) {
    }

    /** What changed from {@code before} to this snapshot: removals, then creations, writes and mode changes. */
    public List<Change> since(DirSnapshot before) {
        List<Change> out = new ArrayList<>();
        for (String name : before.entries.keySet()) {
            if (!entries.containsKey(name)) {
                out.add(new Change(name, EventType.EVENT_TYPE_REMOVE, null));
            }
        }
        for (Map.Entry<String, FileInfo> e : entries.entrySet()) {
            FileInfo old = before.entries.get(e.getKey());
            FileInfo now = e.getValue();
            if (old == null || old.type() != now.type()) {
                if (old != null) {
                    out.add(new Change(e.getKey(), EventType.EVENT_TYPE_REMOVE, null));
                }
                out.add(new Change(e.getKey(), EventType.EVENT_TYPE_CREATE, now));
                continue;
            }
            boolean written = old.size() != now.size() || !Objects.equals(old.modifiedAt(), now.modifiedAt())
                    || !old.symlinkTarget().equals(now.symlinkTarget());
            if (written && now.type() != FileType.DIRECTORY) {
                out.add(new Change(e.getKey(), EventType.EVENT_TYPE_WRITE, now));
            }
            if (old.mode() != now.mode()) {
                out.add(new Change(e.getKey(), EventType.EVENT_TYPE_CHMOD, now));
            }
        }
        return out;
    }
}
