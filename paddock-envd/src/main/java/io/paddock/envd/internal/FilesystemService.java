package io.paddock.envd.internal;

import com.google.protobuf.Message;
import com.google.protobuf.Timestamp;
import io.paddock.ErrorCode;
import io.paddock.FileInfo;
import io.paddock.FileType;
import io.paddock.SandboxException;
import io.paddock.SandboxFiles;
import io.paddock.SandboxState;
import io.paddock.envd.internal.proto.FilesystemProto.CreateWatcherRequest;
import io.paddock.envd.internal.proto.FilesystemProto.CreateWatcherResponse;
import io.paddock.envd.internal.proto.FilesystemProto.EntryInfo;
import io.paddock.envd.internal.proto.FilesystemProto.FilesystemEvent;
import io.paddock.envd.internal.proto.FilesystemProto.GetWatcherEventsRequest;
import io.paddock.envd.internal.proto.FilesystemProto.GetWatcherEventsResponse;
import io.paddock.envd.internal.proto.FilesystemProto.ListDirRequest;
import io.paddock.envd.internal.proto.FilesystemProto.ListDirResponse;
import io.paddock.envd.internal.proto.FilesystemProto.MakeDirRequest;
import io.paddock.envd.internal.proto.FilesystemProto.MakeDirResponse;
import io.paddock.envd.internal.proto.FilesystemProto.MoveRequest;
import io.paddock.envd.internal.proto.FilesystemProto.MoveResponse;
import io.paddock.envd.internal.proto.FilesystemProto.RemoveRequest;
import io.paddock.envd.internal.proto.FilesystemProto.RemoveResponse;
import io.paddock.envd.internal.proto.FilesystemProto.RemoveWatcherRequest;
import io.paddock.envd.internal.proto.FilesystemProto.RemoveWatcherResponse;
import io.paddock.envd.internal.proto.FilesystemProto.StatRequest;
import io.paddock.envd.internal.proto.FilesystemProto.StatResponse;
import io.paddock.envd.internal.proto.FilesystemProto.WatchDirRequest;
import io.paddock.envd.internal.proto.FilesystemProto.WatchDirResponse;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.UUID;

/**
 * E2B's {@code filesystem.Filesystem} service on a sandbox's {@link SandboxFiles}: every operation runs in the
 * sandbox's init as the sandbox user. Paddock has no inotify path to the engine, so watches poll: {@code WatchDir}
 * lists the directory every {@link #POLL} and streams the difference; {@code CreateWatcher} keeps a snapshot that
 * each {@code GetWatcherEvents} compares with a new one (see {@link DirSnapshot} for what that coalesces).
 */
public final class FilesystemService {
    /** How often a {@code WatchDir} stream looks at its directory. */
    public static final Duration POLL = Duration.ofMillis(250);
    /** The most entries one {@code ListDir} answers. */
    public static final int MAX_LIST = 100_000;
    /** The most watchers a sandbox keeps. */
    public static final int MAX_WATCHERS = 64;
    /** A watcher nobody asked for events for this long is dropped. */
    public static final Duration WATCHER_IDLE = Duration.ofMinutes(30);

    private final Tables tables;

    public FilesystemService(Tables tables) {
        this.tables = tables;
    }

    public Message stat(Call c, StatRequest r) {
        c.checkUser();
        String path = Paths.clean(r.getPath(), "path");
        return StatResponse.newBuilder().setEntry(entry(files(c).stat(path), path)).build();
    }

    /** Creates a directory and its parents; {@code already_exists} when it is there (E2B's SDK answers false). */
    public Message makeDir(Call c, MakeDirRequest r) {
        c.checkUser();
        String path = Paths.clean(r.getPath(), "path");
        SandboxFiles files = files(c);
        FileInfo existing = statOrNull(files, path);
        if (existing != null) {
            if (existing.isDirectory()) {
                throw new ConnectException(ConnectCode.ALREADY_EXISTS, "directory " + path + " already exists");
            }
            throw ConnectException.invalid("path " + path + " already exists and is not a directory");
        }
        files.mkdir(path);
        return MakeDirResponse.newBuilder().setEntry(entry(files.stat(path), path)).build();
    }

    public Message move(Call c, MoveRequest r) {
        c.checkUser();
        String from = Paths.clean(r.getSource(), "source");
        String to = Paths.clean(r.getDestination(), "destination");
        SandboxFiles files = files(c);
        files.move(from, to);
        return MoveResponse.newBuilder().setEntry(entry(files.stat(to), to)).build();
    }

    /** Lists a directory to {@code depth} levels (0 means 1), never descending through a symlink. */
    public Message listDir(Call c, ListDirRequest r) {
        c.checkUser();
        String path = Paths.clean(r.getPath(), "path");
        int depth = Math.max(1, r.getDepth());
        SandboxFiles files = files(c);
        requireDirectory(files, path);
        ListDirResponse.Builder b = ListDirResponse.newBuilder();
        record Level(String dir, int level) {
        }
        Deque<Level> todo = new ArrayDeque<>();
        todo.add(new Level(path, 1));
        while (!todo.isEmpty()) {
            Level l = todo.removeFirst();
            List<FileInfo> list;
            try {
                list = files.list(l.dir());
            } catch (SandboxException e) {
                if (l.level() > 1 && (e.code() == ErrorCode.NOT_FOUND || e.code() == ErrorCode.PERMISSION_DENIED)) {
                    continue; // gone since its parent was listed, or not readable by the sandbox user
                }
                throw e;
            }
            for (FileInfo f : list) {
                if (b.getEntriesCount() >= MAX_LIST) {
                    throw new ConnectException(ConnectCode.RESOURCE_EXHAUSTED, "listing " + path + ": more than "
                            + MAX_LIST + " entries; ask for a smaller depth");
                }
                b.addEntries(entry(f, f.path()));
                if (f.type() == FileType.DIRECTORY && l.level() < depth) {
                    todo.addLast(new Level(f.path(), l.level() + 1));
                }
            }
        }
        return b.build();
    }

    /** Removes a file or a directory with everything under it; a missing path is no error (Go's RemoveAll). */
    public Message remove(Call c, RemoveRequest r) {
        c.checkUser();
        String path = Paths.clean(r.getPath(), "path");
        if (path.equals("/")) {
            throw ConnectException.invalid("path: refusing to remove /");
        }
        files(c).removeRecursive(path);
        return RemoveResponse.getDefaultInstance();
    }

    public void watchDir(Call c, WatchDirRequest r, StreamOut out) throws IOException {
        c.checkUser();
        String path = Paths.clean(r.getPath(), "path");
        SandboxFiles files = files(c);
        requireDirectory(files, path);
        DirSnapshot last = DirSnapshot.take(files, path, r.getRecursive());
        out.send(WatchDirResponse.newBuilder().setStart(WatchDirResponse.StartEvent.getDefaultInstance()).build());
        long keepalive = c.keepalive().toNanos();
        long nextPing = System.nanoTime() + keepalive;
        try {
            while (true) {
                long left = c.nanosLeft();
                if (left <= 0) {
                    out.end(new ConnectException(ConnectCode.DEADLINE_EXCEEDED, "the call's timeout (Connect-Timeout-Ms) "
                            + "passed"));
                    return;
                }
                Thread.sleep(Math.max(1, Math.min(POLL.toMillis(), left / 1_000_000)));
                DirSnapshot now;
                try {
                    now = DirSnapshot.take(files, path, r.getRecursive());
                } catch (SandboxException e) {
                    if (e.code() == ErrorCode.NOT_FOUND) {
                        out.end(new ConnectException(ConnectCode.NOT_FOUND, "the watched directory " + path
                                + " was removed"));
                        return;
                    }
                    throw e;
                }
                for (DirSnapshot.Change ch : now.since(last)) {
                    out.send(WatchDirResponse.newBuilder().setFilesystem(event(path, ch, r.getIncludeEntry())).build());
                    nextPing = System.nanoTime() + keepalive;
                }
                last = now;
                if (System.nanoTime() - nextPing >= 0) {
                    out.send(WatchDirResponse.newBuilder().setKeepalive(WatchDirResponse.KeepAlive.getDefaultInstance())
                            .build());
                    nextPing = System.nanoTime() + keepalive;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            out.end(new ConnectException(ConnectCode.CANCELED, "envd is shutting down"));
        }
    }

    public Message createWatcher(Call c, CreateWatcherRequest r) {
        c.checkUser();
        sweep();
        String path = Paths.clean(r.getPath(), "path");
        SandboxFiles files = files(c);
        requireDirectory(files, path);
        Watcher w = new Watcher(path, r.getRecursive(), r.getIncludeEntry(), DirSnapshot.take(files, path, r.getRecursive()));
        String id = UUID.randomUUID().toString();
        boolean added = tables.with(c.sandbox(), t -> {
            if (t.watchers.size() >= MAX_WATCHERS) {
                return false;
            }
            t.watchers.put(id, w);
            return true;
        });
        if (!added) {
            throw new ConnectException(ConnectCode.RESOURCE_EXHAUSTED, "this sandbox already has " + MAX_WATCHERS
                    + " watchers; remove some with RemoveWatcher");
        }
        return CreateWatcherResponse.newBuilder().setWatcherId(id).build();
    }

    public Message getWatcherEvents(Call c, GetWatcherEventsRequest r) {
        c.checkUser();
        Watcher w = watcher(c, r.getWatcherId());
        w.touch();
        DirSnapshot now;
        try {
            now = DirSnapshot.take(files(c), w.path, w.recursive);
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.NOT_FOUND) {
                tables.removeWatcher(c.sandbox().id(), r.getWatcherId());
                throw new ConnectException(ConnectCode.NOT_FOUND, "the watched directory " + w.path
                        + " was removed; the watcher is gone with it");
            }
            throw e;
        }
        GetWatcherEventsResponse.Builder b = GetWatcherEventsResponse.newBuilder();
        for (DirSnapshot.Change ch : now.since(w.swap(now))) {
            b.addEvents(event(w.path, ch, w.includeEntry));
        }
        return b.build();
    }

    public Message removeWatcher(Call c, RemoveWatcherRequest r) {
        c.checkUser();
        watcher(c, r.getWatcherId());
        tables.removeWatcher(c.sandbox().id(), r.getWatcherId());
        return RemoveWatcherResponse.getDefaultInstance();
    }

    // ------------------------------------------------------------------ internals

    private static SandboxFiles files(Call c) {
        return c.sandbox().files();
    }

    private Watcher watcher(Call c, String id) {
        Tables.PerSandbox t = tables.peek(c.sandbox().id());
        Watcher w = t == null ? null : t.watchers.get(id);
        if (w == null) {
            throw new ConnectException(ConnectCode.NOT_FOUND, "watcher \"" + id + "\" not found");
        }
        return w;
    }

    /** Drops watchers unused for {@link #WATCHER_IDLE} and those of sandboxes that have stopped. */
    private void sweep() {
        for (Tables.PerSandbox t : tables.all()) {
            boolean stopped;
            try {
                SandboxState s = t.sandbox.state();
                stopped = s == SandboxState.STOPPED || s == SandboxState.STOPPING;
            } catch (RuntimeException e) {
                stopped = true;
            }
            io.paddock.SandboxId id = t.sandbox.id();
            for (var e : t.watchers.entrySet()) {
                if (stopped || e.getValue().idleNanos() > WATCHER_IDLE.toNanos()) {
                    tables.removeWatcher(id, e.getKey());
                }
            }
        }
    }

    private static FileInfo statOrNull(SandboxFiles files, String path) {
        try {
            return files.stat(path);
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.NOT_FOUND) {
                return null;
            }
            throw e;
        }
    }

    /** The path must exist ({@code not_found}) and be a directory, or a symlink the init resolves to one. */
    private static void requireDirectory(SandboxFiles files, String path) {
        FileInfo f = files.stat(path);
        if (f.type() != FileType.DIRECTORY && f.type() != FileType.SYMLINK) {
            throw ConnectException.invalid("path " + path + " is not a directory");
        }
    }

    private static FilesystemEvent event(String dir, DirSnapshot.Change ch, boolean includeEntry) {
        FilesystemEvent.Builder e = FilesystemEvent.newBuilder().setName(ch.name()).setType(ch.type());
        if (includeEntry && ch.now() != null) {
            e.setEntry(entry(ch.now(), Paths.join(dir, ch.name())));
        }
        return e.build();
    }

    /** envd's {@code EntryInfo}; Paddock's file info has no owner or group, so those are empty. */
    static EntryInfo entry(FileInfo f, String path) {
        EntryInfo.Builder b = EntryInfo.newBuilder()
                .setName(f.name())
                .setPath(path)
                .setSize(f.size())
                .setMode(f.mode() & 07777)
                .setPermissions(permissions(f))
                .setModifiedTime(Timestamp.newBuilder().setSeconds(f.modifiedAt().getEpochSecond())
                        .setNanos(f.modifiedAt().getNano()));
        switch (f.type()) {
            case FILE -> b.setType(io.paddock.envd.internal.proto.FilesystemProto.FileType.FILE_TYPE_FILE);
            case DIRECTORY -> b.setType(io.paddock.envd.internal.proto.FilesystemProto.FileType.FILE_TYPE_DIRECTORY);
            case SYMLINK -> b.setType(io.paddock.envd.internal.proto.FilesystemProto.FileType.FILE_TYPE_SYMLINK);
            case OTHER -> b.setType(io.paddock.envd.internal.proto.FilesystemProto.FileType.FILE_TYPE_UNSPECIFIED);
        }
        f.symlinkTarget().ifPresent(b::setSymlinkTarget);
        return b.build();
    }

    /** Go's {@code FileMode.String()} as envd reports it: {@code -rw-r--r--}, {@code drwxr-xr-x}, {@code Lrwxrwxrwx}. */
    static String permissions(FileInfo f) {
        StringBuilder s = new StringBuilder(switch (f.type()) {
            case FILE -> "-";
            case DIRECTORY -> "d";
            case SYMLINK -> "L";
            case OTHER -> "?";
        });
        String rwx = "rwxrwxrwx";
        for (int i = 0; i < 9; i++) {
            s.append((f.mode() & (1 << (8 - i))) != 0 ? rwx.charAt(i) : '-');
        }
        return s.toString();
    }
}
