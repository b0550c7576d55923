package io.paddock.init.internal;

import io.paddock.TerminalSize;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The init protocol's codec (docs/PROTOCOL.md, version 1): encodes every engine→init message, split into
 * frames of at most {@value #MAX_IN_FRAME} bytes, and decodes every init→engine message. Pure functions,
 * checked against the golden vectors in {@code src/test/resources/golden}.
 */
public final class Frames {
    public static final int MAGIC = 0x50444B31;
    public static final int VERSION = 1;
    public static final int HEADER = 9;
    public static final int MAX_IN_FRAME = 4096;
    public static final int MAX_IN_PAYLOAD = MAX_IN_FRAME - HEADER;
    public static final int MAX_OUT_FRAME = 1024 * 1024 + 64;
    public static final int MAX_MESSAGE = 2 * 1024 * 1024;
    public static final int MORE = 0x80;
    /** 2^64-1 on the wire: no cap, read everything. */
    public static final long U64_NONE = -1L;

    // engine -> init
    public static final int HELLO = 0x01, SPAWN = 0x02, STDIN = 0x03, STDIN_CLOSE = 0x04, SIGNAL = 0x05,
            WINDOW = 0x06, DEADLINE = 0x07, PING = 0x08, RELEASE = 0x09, SHUTDOWN = 0x0A, DEADLINE_IN = 0x0B,
            RESIZE = 0x0C,
            F_READ = 0x10, F_WRITE_OPEN = 0x11, F_WRITE_DATA = 0x12, F_WRITE_END = 0x13, F_WRITE_ABORT = 0x14, F_LIST = 0x15,
            F_STAT = 0x16, F_MKDIR = 0x17, F_REMOVE = 0x18, F_MOVE = 0x19, F_CANCEL = 0x1A;
    // init -> engine
    public static final int HELLO_ACK = 0x41, SPAWNED = 0x42, DATA = 0x43, EXIT = 0x44, WINDOW_ACK = 0x45,
            PONG = 0x46, LOG = 0x47, F_INFO = 0x50, F_DATA = 0x51, F_END = 0x52, F_OK = 0x53, F_ERROR = 0x54,
            F_ENTRIES = 0x55;

    public static final int HELLO_ORPHAN_DIE = 1;
    public static final int SPAWN_STDIN_PIPE = 1, SPAWN_ENTRYPOINT = 2, SPAWN_PTY = 4;
    public static final int WRITE_CREATE_PARENTS = 1, WRITE_FAIL_IF_EXISTS = 2;
    public static final int STREAM_STDIN = 0, STREAM_STDOUT = 1, STREAM_STDERR = 2;

    private Frames() {
    }

    /** A malformed init→engine message or frame. */
    public static final class MalformedException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        public MalformedException(String message) {
            super(message);
        }
    }

    // ------------------------------------------------------------------ encoding

    /** Growable big-endian payload builder. */
    static final class Payload {
        private byte[] b = new byte[64];
        private int n;

        private void ensure(int more) {
            if (n + more > b.length) {
                long want = Math.max((long) b.length * 2, (long) n + more);
                if (want > MAX_MESSAGE) {
                    if ((long) n + more > MAX_MESSAGE) {
                        throw new IllegalArgumentException("message over " + MAX_MESSAGE + " bytes");
                    }
                    want = MAX_MESSAGE;
                }
                b = java.util.Arrays.copyOf(b, (int) want);
            }
        }

        Payload u8(int v) {
            ensure(1);
            b[n++] = (byte) v;
            return this;
        }

        Payload u32(long v) {
            ensure(4);
            b[n++] = (byte) (v >>> 24);
            b[n++] = (byte) (v >>> 16);
            b[n++] = (byte) (v >>> 8);
            b[n++] = (byte) v;
            return this;
        }

        Payload u64(long v) {
            u32(v >>> 32);
            return u32(v & 0xFFFFFFFFL);
        }

        Payload raw(byte[] src, int off, int len) {
            ensure(len);
            System.arraycopy(src, off, b, n, len);
            n += len;
            return this;
        }

        Payload bytes(byte[] v) {
            u32(v.length);
            return raw(v, 0, v.length);
        }

        Payload str(String s) {
            return bytes(s.getBytes(StandardCharsets.UTF_8));
        }

        Payload strs(List<String> l) {
            u32(l.size());
            for (String s : l) {
                str(s);
            }
            return this;
        }
    }

    /**
     * One message as frames: every frame but the last carries {@value #MAX_IN_PAYLOAD} payload bytes and the
     * MORE bit, so that each fits in one atomic pipe write.
     */
    public static byte[] encode(int type, int channel, byte[] payload, int off, int len) {
        int frames = Math.max(1, (len + MAX_IN_PAYLOAD - 1) / MAX_IN_PAYLOAD);
        byte[] out = new byte[len + frames * HEADER];
        int o = 0;
        int left = len;
        do {
            int part = Math.min(left, MAX_IN_PAYLOAD);
            left -= part;
            putInt(out, o, part + 5);
            out[o + 4] = (byte) (type | (left > 0 ? MORE : 0));
            putInt(out, o + 5, channel);
            System.arraycopy(payload, off, out, o + HEADER, part);
            off += part;
            o += HEADER + part;
        } while (left > 0);
        return out;
    }

    static byte[] encode(int type, int channel, Payload p) {
        return encode(type, channel, p.b, 0, p.n);
    }

    private static void putInt(byte[] b, int o, int v) {
        b[o] = (byte) (v >>> 24);
        b[o + 1] = (byte) (v >>> 16);
        b[o + 2] = (byte) (v >>> 8);
        b[o + 3] = (byte) v;
    }

    public static byte[] hello(byte[] nonce16, boolean orphanDie) {
        if (nonce16.length != 16) {
            throw new IllegalArgumentException("nonce must be 16 bytes");
        }
        return encode(HELLO, 0, new Payload().u32(VERSION).raw(nonce16, 0, 16).u32(orphanDie ? HELLO_ORPHAN_DIE : 0));
    }

    public static byte[] spawn(int channel, SpawnRequest r) {
        Duration t = r.timeout();
        long timeoutMs = t == null ? 0 : Math.max(1, t.toMillis());
        Payload p = new Payload()
                .u32((r.stdinPipe() ? SPAWN_STDIN_PIPE : 0) | (r.entrypoint() ? SPAWN_ENTRYPOINT : 0)
                        | (r.terminal() != null ? SPAWN_PTY : 0))
                .u32(r.uid()).u32(r.gid()).u64(timeoutMs)
                .u64(cap(r.stdoutCap())).u64(cap(r.stderrCap()))
                .u32(r.stdoutWindow()).u32(r.stderrWindow())
                .str(r.cwd()).strs(r.argv()).strs(r.env())
                .u32(r.rlimits().size());
        for (SpawnRequest.Rlimit l : r.rlimits()) {
            p.u32(l.resource()).u64(rlim(l.soft())).u64(rlim(l.hard()));
        }
        if (r.terminal() != null) {
            p.u32(r.terminal().rows()).u32(r.terminal().columns());
        }
        return encode(SPAWN, channel, p);
    }

    private static long cap(long v) {
        return v == Long.MAX_VALUE || v < 0 ? U64_NONE : v;
    }

    private static long rlim(long v) {
        return v == Long.MAX_VALUE || v < 0 ? U64_NONE : v;
    }

    public static byte[] stdin(int channel, byte[] b, int off, int len) {
        return encode(STDIN, channel, b, off, len);
    }

    public static byte[] stdinClose(int channel) {
        return encode(STDIN_CLOSE, channel, new Payload());
    }

    public static byte[] signal(int channel, int signal, int scope) {
        return encode(SIGNAL, channel, new Payload().u32(signal).u8(scope));
    }

    public static byte[] window(int channel, int stream, long increment) {
        if (increment <= 0 || increment > 0xFFFFFFFFL) {
            throw new IllegalArgumentException("window increment out of range: " + increment);
        }
        return encode(WINDOW, channel, new Payload().u8(stream).u32(increment));
    }

    /** DEADLINE: absolute, on the init's CLOCK_MONOTONIC. Engines send {@link #deadlineIn} instead. */
    public static byte[] deadline(long monotonicNanos) {
        return encode(DEADLINE, 0, new Payload().u64(monotonicNanos));
    }

    /** DEADLINE_IN: nanoseconds from receipt, on whatever monotonic clock the init has; 0 = none. */
    public static byte[] deadlineIn(long nanosFromNow) {
        if (nanosFromNow < 0) {
            throw new IllegalArgumentException("negative deadline: " + nanosFromNow);
        }
        return encode(DEADLINE_IN, 0, new Payload().u64(nanosFromNow));
    }

    public static byte[] ping(byte[] payload) {
        return encode(PING, 0, payload, 0, payload.length);
    }

    /** RESIZE: the size of an exec's pseudo-terminal. */
    public static byte[] resize(int channel, TerminalSize size) {
        return encode(RESIZE, channel, new Payload().u32(size.rows()).u32(size.columns()));
    }

    public static byte[] release(int channel) {
        return encode(RELEASE, channel, new Payload());
    }

    public static byte[] shutdown() {
        return encode(SHUTDOWN, 0, new Payload());
    }

    public static byte[] fRead(int channel, byte[] path, long offset, long limit, long window) {
        return encode(F_READ, channel, new Payload().bytes(path).u64(offset).u64(limit).u32(window));
    }

    public static byte[] fWriteOpen(int channel, byte[] path, int mode, int flags) {
        return encode(F_WRITE_OPEN, channel, new Payload().bytes(path).u32(mode).u32(flags));
    }

    public static byte[] fWriteData(int channel, byte[] b, int off, int len) {
        return encode(F_WRITE_DATA, channel, b, off, len);
    }

    public static byte[] fWriteEnd(int channel) {
        return encode(F_WRITE_END, channel, new Payload());
    }

    public static byte[] fWriteAbort(int channel) {
        return encode(F_WRITE_ABORT, channel, new Payload());
    }

    /** Stops a download or listing the engine no longer reads; the init answers nothing. */
    public static byte[] fCancel(int channel) {
        return encode(F_CANCEL, channel, new Payload());
    }

    public static byte[] fList(int channel, byte[] path) {
        return encode(F_LIST, channel, new Payload().bytes(path));
    }

    public static byte[] fStat(int channel, byte[] path) {
        return encode(F_STAT, channel, new Payload().bytes(path));
    }

    public static byte[] fMkdir(int channel, byte[] path, int mode, boolean parents) {
        return encode(F_MKDIR, channel, new Payload().bytes(path).u32(mode).u8(parents ? 1 : 0));
    }

    public static byte[] fRemove(int channel, byte[] path, boolean recursive) {
        return encode(F_REMOVE, channel, new Payload().bytes(path).u8(recursive ? 1 : 0));
    }

    public static byte[] fMove(int channel, byte[] from, byte[] to) {
        return encode(F_MOVE, channel, new Payload().bytes(from).bytes(to));
    }

    // ------------------------------------------------------------------ decoding

    /** One init→engine frame; {@code payload} is only valid during the dispatch call. */
    public record Frame(int type, int channel, ByteBuffer payload) {
    }

    /** Bounds-checked reads; any short or oversized field throws {@link MalformedException}. */
    public static final class Reader {
        private final ByteBuffer b;

        public Reader(ByteBuffer payload) {
            this.b = payload.duplicate();
        }

        public int u8() {
            try {
                return b.get() & 0xFF;
            } catch (BufferUnderflowException e) {
                throw new MalformedException("payload too short");
            }
        }

        public long u32() {
            try {
                return b.getInt() & 0xFFFFFFFFL;
            } catch (BufferUnderflowException e) {
                throw new MalformedException("payload too short");
            }
        }

        public int i32() {
            return (int) u32();
        }

        public long u64() {
            try {
                return b.getLong();
            } catch (BufferUnderflowException e) {
                throw new MalformedException("payload too short");
            }
        }

        public byte[] raw(int n) {
            if (n < 0 || n > b.remaining()) {
                throw new MalformedException("payload too short");
            }
            byte[] out = new byte[n];
            b.get(out);
            return out;
        }

        public byte[] bytes() {
            long n = u32();
            if (n > b.remaining()) {
                throw new MalformedException("field length " + n + " past the end of the payload");
            }
            return raw((int) n);
        }

        public String str() {
            return new String(bytes(), StandardCharsets.UTF_8);
        }

        public byte[] rest() {
            return raw(b.remaining());
        }

        public int remaining() {
            return b.remaining();
        }
    }

    public record HelloAck(int magic, byte[] nonce, int version, String buildId) {
    }

    public static HelloAck decodeHelloAck(ByteBuffer p) {
        Reader r = new Reader(p);
        return new HelloAck(r.i32(), r.raw(16), r.i32(), r.str());
    }

    public record Spawned(int pid, long stdinWindow) {
    }

    public static Spawned decodeSpawned(ByteBuffer p) {
        Reader r = new Reader(p);
        return new Spawned(r.i32(), r.u32());
    }

    /** DATA / WINDOW header: the stream byte; the rest of the payload follows in the buffer. */
    public static int stream(ByteBuffer p) {
        if (!p.hasRemaining()) {
            throw new MalformedException("payload too short");
        }
        return p.get(p.position()) & 0xFF;
    }

    public record Window(int stream, long increment) {
    }

    public static Window decodeWindow(ByteBuffer p) {
        Reader r = new Reader(p);
        return new Window(r.u8(), r.u32());
    }

    public static ExitReport decodeExit(ByteBuffer p) {
        Reader r = new Reader(p);
        int kind = r.u8();
        int code = r.i32();
        long flags = r.u32();
        long durationNs = r.u64();
        long user = r.u64();
        long sys = r.u64();
        long rss = r.u64();
        String message = r.str();
        ExitReport.Kind k = switch (kind) {
            case 1 -> ExitReport.Kind.EXITED;
            case 2 -> ExitReport.Kind.SIGNALED;
            case 3 -> ExitReport.Kind.FAILED_TO_START;
            default -> throw new MalformedException("unknown exit kind " + kind);
        };
        return new ExitReport(k, code, (flags & 1) != 0, (flags & 2) != 0, (flags & 4) != 0, (flags & 8) != 0,
                Duration.ofNanos(Math.max(0, durationNs)), user, sys, rss, message);
    }

    /** A file info record as sent by the init; names and link targets are bytes. */
    public record WireFileInfo(int type, int mode, long size, long mtimeNanos, byte[] name, byte[] link) {
        public String nameString() {
            return new String(name, StandardCharsets.UTF_8);
        }

        public String linkString() {
            return new String(link, StandardCharsets.UTF_8);
        }
    }

    static WireFileInfo readInfo(Reader r) {
        return new WireFileInfo(r.u8(), r.i32(), r.u64(), r.u64(), r.bytes(), r.bytes());
    }

    public static WireFileInfo decodeInfo(ByteBuffer p) {
        return readInfo(new Reader(p));
    }

    public static List<WireFileInfo> decodeEntries(ByteBuffer p) {
        Reader r = new Reader(p);
        long count = r.u32();
        // Every entry takes at least 29 bytes: a count beyond that is a lie, not a reason to allocate.
        if (count > r.remaining() / 29) {
            throw new MalformedException("entry count " + count + " does not fit the payload");
        }
        List<WireFileInfo> out = new ArrayList<>((int) count);
        for (long i = 0; i < count; i++) {
            out.add(readInfo(r));
        }
        return out;
    }

    public record FileError(int errno, String message) {
    }

    public static FileError decodeFileError(ByteBuffer p) {
        Reader r = new Reader(p);
        return new FileError(r.i32(), r.str());
    }

    public static long decodeOk(ByteBuffer p) {
        return new Reader(p).u32();
    }

    public record Log(int level, String message) {
    }

    public static Log decodeLog(ByteBuffer p) {
        Reader r = new Reader(p);
        return new Log(r.u8(), r.str());
    }
}
