package io.paddock.init.internal;

import io.paddock.ErrorCode;
import io.paddock.FileInfo;
import io.paddock.FileType;
import io.paddock.SandboxException;
import io.paddock.SandboxFiles;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * {@link SandboxFiles} over the init's F_* messages. Every operation is done by the init, as the sandbox
 * user, inside the sandbox; paths travel as bytes and are resolved there.
 */
final class InitFiles implements SandboxFiles {
    static final int READ_WINDOW = 256 * 1024;
    static final int READ_LIMIT = (int) io.paddock.SandboxFiles.READ_LIMIT;
    private static final int UPLOAD_CHUNK = 64 * 1024;
    private static final int MAX_LIST_ENTRIES = 1_000_000;

    private final InitClient client;

    InitFiles(InitClient client) {
        this.client = client;
    }

    /** Maps an errno from the init to an error code, as PROTOCOL.md says. */
    static ErrorCode codeFor(int errno) {
        return switch (errno) {
            case 2 -> ErrorCode.NOT_FOUND;                                  // ENOENT
            case 17 -> ErrorCode.ALREADY_EXISTS;                            // EEXIST
            case 1, 13, 30 -> ErrorCode.PERMISSION_DENIED;                  // EPERM, EACCES, EROFS
            case 28, 122, 27 -> ErrorCode.RESOURCE_EXHAUSTED;               // ENOSPC, EDQUOT, EFBIG
            case 39, 21, 20, 22 -> ErrorCode.FAILED_PRECONDITION;           // ENOTEMPTY, EISDIR, ENOTDIR, EINVAL
            default -> ErrorCode.INTERNAL;
        };
    }

    private static byte[] bytes(String path) {
        return path.getBytes(StandardCharsets.UTF_8);
    }

    static FileInfo toFileInfo(String path, Frames.WireFileInfo w) {
        FileType type = switch (w.type()) {
            case 1 -> FileType.FILE;
            case 2 -> FileType.DIRECTORY;
            case 3 -> FileType.SYMLINK;
            default -> FileType.OTHER;
        };
        long ns = w.mtimeNanos();
        Instant mtime = Instant.ofEpochSecond(Math.floorDiv(ns, 1_000_000_000L), Math.floorMod(ns, 1_000_000_000L));
        return new FileInfo(path, w.nameString(), type, w.size(), w.mode() & 07777, mtime,
                type == FileType.SYMLINK ? Optional.of(w.linkString()) : Optional.empty());
    }

    private static String join(String dir, String name) {
        return dir.endsWith("/") ? dir + name : dir + "/" + name;
    }

    /** The state of one file request, fed by the reader thread. */
    private final class Req implements InitClient.Handler {
        final int id = client.newChannel();
        final String path;
        final ReentrantLock lock = new ReentrantLock();
        final Condition changed = lock.newCondition();
        Frames.WireFileInfo info;
        boolean ok;
        boolean end;
        long uploadWindow;
        int errno;
        SandboxException error;
        final List<FileInfo> entries = new ArrayList<>();
        InboundStream data;

        Req(String path) {
            this.path = path;
        }

        @Override
        public void onFrame(int type, ByteBuffer payload) {
            lock.lock();
            try {
                switch (type) {
                    case Frames.F_INFO -> info = Frames.decodeInfo(payload);
                    case Frames.F_DATA -> {
                        if (data != null) {
                            data.offerLocked(payload);
                        }
                    }
                    case Frames.F_END -> {
                        end = true;
                        if (data != null) {
                            data.endLocked();
                        }
                        client.unregister(id);
                    }
                    case Frames.F_OK -> {
                        ok = true;
                        uploadWindow += Frames.decodeOk(payload);
                    }
                    case Frames.WINDOW_ACK -> {
                        Frames.Window w = Frames.decodeWindow(payload);
                        if (w.stream() == Frames.STREAM_STDIN) {
                            uploadWindow += w.increment();
                        }
                    }
                    case Frames.F_ERROR -> {
                        Frames.FileError e = Frames.decodeFileError(payload);
                        errno = e.errno();
                        failLocked(new SandboxException(codeFor(e.errno()), path + ": " + e.message()));
                        client.unregister(id);
                    }
                    case Frames.F_ENTRIES -> {
                        for (Frames.WireFileInfo w : Frames.decodeEntries(payload)) {
                            if (entries.size() >= MAX_LIST_ENTRIES) {
                                failLocked(new SandboxException(ErrorCode.RESOURCE_EXHAUSTED,
                                        path + ": more than " + MAX_LIST_ENTRIES + " entries"));
                                break;
                            }
                            entries.add(toFileInfo(join(path, w.nameString()), w));
                        }
                    }
                    default -> {
                        // unknown to this version: ignored
                    }
                }
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        }

        private void failLocked(SandboxException e) {
            if (error == null) {
                error = e;
            }
            if (data != null) {
                data.failLocked(error);
            }
        }

        @Override
        public void onFailure(SandboxException e) {
            lock.lock();
            try {
                failLocked(e);
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        }

        Req start(byte[] message) {
            client.register(id, this);
            try {
                client.send(message);
            } catch (RuntimeException e) {
                client.unregister(id);
                throw e;
            }
            return this;
        }

        /** Waits until {@code done} holds; throws the request's error if one came first. */
        void await(BooleanSupplier done) {
            lock.lock();
            try {
                while (!done.getAsBoolean()) {
                    if (error != null) {
                        throw error;
                    }
                    changed.await(200, TimeUnit.MILLISECONDS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new SandboxException(ErrorCode.UNAVAILABLE, "interrupted");
            } finally {
                lock.unlock();
            }
        }

        boolean finished() {
            lock.lock();
            try {
                return end || error != null;
            } finally {
                lock.unlock();
            }
        }

        void done() {
            client.unregister(id);
        }
    }

    // ------------------------------------------------------------------ reads

    @Override
    public InputStream openRead(String path) {
        return startRead(path).data;
    }

    private Req startRead(String path) {
        Req r = new Req(path);
        r.data = new InboundStream(r.lock, r.changed, new InboundStream.Credit() {
            @Override
            public void give(long bytes) {
                if (!r.finished()) {
                    client.send(Frames.window(r.id, Frames.STREAM_STDOUT, bytes));
                }
            }

            @Override
            public void unlimited() {
                // Closed before the end: tell the init to stop reading the file, and forget the channel.
                if (!r.finished()) {
                    r.done();
                    client.send(Frames.fCancel(r.id));
                }
            }
        }, READ_WINDOW, false);
        r.start(Frames.fRead(r.id, bytes(path), 0, Frames.U64_NONE, READ_WINDOW));
        try {
            r.await(() -> r.info != null);
        } catch (RuntimeException e) {
            r.done();
            throw e;
        }
        return r;
    }

    /**
     * Reads a whole file into memory: refused with RESOURCE_EXHAUSTED above {@link #READ_LIMIT}, whether
     * the file says so up front or grows while it is read (a tenant's 1 TiB sparse file must not fill the
     * engine's heap: ATTACKS.md A6).
     */
    @Override
    public byte[] read(String path) {
        Req r = startRead(path);
        try (InputStream in = r.data) {
            if (r.info.size() > READ_LIMIT) {
                throw tooBig(path, r.info.size());
            }
            byte[] data = in.readNBytes(READ_LIMIT + 1);
            if (data.length > READ_LIMIT) {
                throw tooBig(path, data.length);
            }
            return data;
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, path + ": " + e.getMessage(), e);
        }
    }

    private static SandboxException tooBig(String path, long size) {
        return new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, path + ": " + size + " bytes is more than read()"
                + " returns (" + READ_LIMIT + " bytes); stream it with openRead()");
    }

    @Override
    public String readString(String path) {
        return new String(read(path), StandardCharsets.UTF_8);
    }

    // ------------------------------------------------------------------ writes

    @Override
    public void write(String path, byte[] data) {
        write(path, new ByteArrayInputStream(data));
    }

    @Override
    public void writeString(String path, String text) {
        write(path, text.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public void write(String path, InputStream data) {
        Req r = new Req(path);
        r.start(Frames.fWriteOpen(r.id, bytes(path), 0644, Frames.WRITE_CREATE_PARENTS));
        boolean committed = false;
        try {
            r.await(() -> r.ok);
            byte[] buf = new byte[UPLOAD_CHUNK];
            while (true) {
                int n;
                try {
                    n = data.read(buf);
                } catch (IOException e) {
                    throw new SandboxException(ErrorCode.INVALID_ARGUMENT,
                            path + ": reading the data to write failed: " + e.getMessage(), e);
                }
                if (n < 0) {
                    break;
                }
                int off = 0;
                while (off < n) {
                    int k;
                    r.lock.lock();
                    try {
                        r.await(() -> r.uploadWindow > 0);
                        k = (int) Math.min(n - off, r.uploadWindow);
                        r.uploadWindow -= k;
                    } finally {
                        r.lock.unlock();
                    }
                    client.send(Frames.fWriteData(r.id, buf, off, k));
                    off += k;
                }
            }
            client.send(Frames.fWriteEnd(r.id));
            committed = true;
            r.await(() -> r.info != null);
        } finally {
            if (!committed && r.error == null && client.isOpen()) {
                try {
                    client.send(Frames.fWriteAbort(r.id));
                } catch (SandboxException ignored) {
                    // channel gone: the init drops the upload with the next HELLO or its exit
                }
            }
            r.done();
        }
    }

    // ------------------------------------------------------------------ the rest

    @Override
    public List<FileInfo> list(String directory) {
        Req r = new Req(directory);
        r.start(Frames.fList(r.id, bytes(directory)));
        try {
            r.await(() -> r.end);
            r.lock.lock();
            try {
                return List.copyOf(r.entries);
            } finally {
                r.lock.unlock();
            }
        } finally {
            r.done();
        }
    }

    @Override
    public FileInfo stat(String path) {
        Req r = new Req(path);
        r.start(Frames.fStat(r.id, bytes(path)));
        try {
            r.await(() -> r.info != null);
            return toFileInfo(path, r.info);
        } finally {
            r.done();
        }
    }

    @Override
    public boolean exists(String path) {
        try {
            stat(path);
            return true;
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.NOT_FOUND) {
                return false;
            }
            // a path through a regular file ("file/x") cannot exist either
            if (e.code() == ErrorCode.FAILED_PRECONDITION && e.getMessage().endsWith(": Not a directory")) {
                return false;
            }
            throw e;
        }
    }

    private void simple(String path, byte[] message, Req r) {
        r.start(message);
        try {
            r.await(() -> r.ok);
        } finally {
            r.done();
        }
    }

    @Override
    public void mkdir(String path) {
        Req r = new Req(path);
        simple(path, Frames.fMkdir(r.id, bytes(path), 0755, true), r);
    }

    @Override
    public void remove(String path) {
        Req r = new Req(path);
        simple(path, Frames.fRemove(r.id, bytes(path), false), r);
    }

    @Override
    public void removeRecursive(String path) {
        Req r = new Req(path);
        simple(path, Frames.fRemove(r.id, bytes(path), true), r);
    }

    @Override
    public void move(String from, String to) {
        Req r = new Req(from);
        simple(from, Frames.fMove(r.id, bytes(from), bytes(to)), r);
    }
}
