package io.paddock.envd;

import com.google.protobuf.Message;
import io.paddock.Sandbox;
import io.paddock.envd.internal.Call;
import io.paddock.envd.internal.Codec;
import io.paddock.envd.internal.ConnectCode;
import io.paddock.envd.internal.ConnectException;
import io.paddock.envd.internal.FilesystemService;
import io.paddock.envd.internal.ProcessService;
import io.paddock.envd.internal.StreamOut;
import io.paddock.envd.internal.Tables;
import io.paddock.envd.internal.Wire;
import io.paddock.envd.internal.proto.FilesystemProto;
import io.paddock.envd.internal.proto.ProcessProto;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * E2B's in-sandbox daemon API, envd's {@code process.Process} and {@code filesystem.Filesystem} Connect-RPC
 * services, served for Paddock sandboxes. The daemon's E2B listener hands each call here with its sandbox; what
 * each call does and what it does not is in docs/COMPAT.md.
 *
 * <p>Connect over HTTP/1.1: unary calls as {@code application/json} or {@code application/proto}, errors as an HTTP
 * status with {@code {"code","message"}}; server-streaming calls as {@code application/connect+json} or
 * {@code application/connect+proto} envelopes ending with an end-of-stream envelope; {@code StreamInput}
 * (client-streaming) from a body of envelopes. Requests may be gzip-compressed; answers are not.
 *
 * <p>Thread-safe: one instance serves every sandbox and many calls at once. It keeps, per sandbox, the processes
 * started through it (so {@code List}, {@code Connect}, {@code SendInput} and {@code SendSignal} find them) and the
 * watchers made through it; a process leaves when it ends, so a destroyed sandbox leaves nothing behind.
 */
public final class Envd {
    private static final String PROCESS = "/process.Process/";
    private static final String FILESYSTEM = "/filesystem.Filesystem/";

    /** How a method is called. */
    private enum Kind { UNARY, SERVER_STREAM, CLIENT_STREAM }

    @FunctionalInterface
    private interface UnaryHandler {
        Message handle(Call c, Message request) throws IOException;
    }

    @FunctionalInterface
    private interface StreamHandler {
        void handle(Call c, Message request, StreamOut out) throws IOException;
    }

    @FunctionalInterface
    private interface ClientStreamHandler {
        Message handle(Call c, List<Message> requests) throws IOException;
    }

    private record Method(Kind kind, Message prototype, UnaryHandler unary, StreamHandler stream,
                          ClientStreamHandler clientStream) {
    }

    private final Map<String, Method> methods;

    public Envd() {
        AtomicInteger n = new AtomicInteger();
        // pumps read commands' output; each lives as long as its command, so the pool is unbounded and idle ones go
        ExecutorService pumps = new ThreadPoolExecutor(0, Integer.MAX_VALUE, 30, TimeUnit.SECONDS, new SynchronousQueue<>(),
                r -> {
                    Thread t = new Thread(r, "paddock-envd-pump-" + n.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
        Tables tables = new Tables();
        ProcessService ps = new ProcessService(tables, pumps);
        FilesystemService fs = new FilesystemService(tables);
        methods = Map.ofEntries(
                unary(PROCESS + "List", ProcessProto.ListRequest.getDefaultInstance(),
                        (c, r) -> ps.list(c, (ProcessProto.ListRequest) r)),
                stream(PROCESS + "Start", ProcessProto.StartRequest.getDefaultInstance(),
                        (c, r, o) -> ps.start(c, (ProcessProto.StartRequest) r, o)),
                stream(PROCESS + "Connect", ProcessProto.ConnectRequest.getDefaultInstance(),
                        (c, r, o) -> ps.connect(c, (ProcessProto.ConnectRequest) r, o)),
                unary(PROCESS + "Update", ProcessProto.UpdateRequest.getDefaultInstance(),
                        (c, r) -> ps.update(c, (ProcessProto.UpdateRequest) r)),
                Map.entry(PROCESS + "StreamInput", new Method(Kind.CLIENT_STREAM,
                        ProcessProto.StreamInputRequest.getDefaultInstance(), null, null,
                        (c, rs) -> ps.streamInput(c, rs.stream().map(ProcessProto.StreamInputRequest.class::cast).toList()))),
                unary(PROCESS + "SendInput", ProcessProto.SendInputRequest.getDefaultInstance(),
                        (c, r) -> ps.sendInput(c, (ProcessProto.SendInputRequest) r)),
                unary(PROCESS + "SendSignal", ProcessProto.SendSignalRequest.getDefaultInstance(),
                        (c, r) -> ps.sendSignal(c, (ProcessProto.SendSignalRequest) r)),
                unary(PROCESS + "CloseStdin", ProcessProto.CloseStdinRequest.getDefaultInstance(),
                        (c, r) -> ps.closeStdin(c, (ProcessProto.CloseStdinRequest) r)),
                unary(FILESYSTEM + "Stat", FilesystemProto.StatRequest.getDefaultInstance(),
                        (c, r) -> fs.stat(c, (FilesystemProto.StatRequest) r)),
                unary(FILESYSTEM + "MakeDir", FilesystemProto.MakeDirRequest.getDefaultInstance(),
                        (c, r) -> fs.makeDir(c, (FilesystemProto.MakeDirRequest) r)),
                unary(FILESYSTEM + "Move", FilesystemProto.MoveRequest.getDefaultInstance(),
                        (c, r) -> fs.move(c, (FilesystemProto.MoveRequest) r)),
                unary(FILESYSTEM + "ListDir", FilesystemProto.ListDirRequest.getDefaultInstance(),
                        (c, r) -> fs.listDir(c, (FilesystemProto.ListDirRequest) r)),
                unary(FILESYSTEM + "Remove", FilesystemProto.RemoveRequest.getDefaultInstance(),
                        (c, r) -> fs.remove(c, (FilesystemProto.RemoveRequest) r)),
                stream(FILESYSTEM + "WatchDir", FilesystemProto.WatchDirRequest.getDefaultInstance(),
                        (c, r, o) -> fs.watchDir(c, (FilesystemProto.WatchDirRequest) r, o)),
                unary(FILESYSTEM + "CreateWatcher", FilesystemProto.CreateWatcherRequest.getDefaultInstance(),
                        (c, r) -> fs.createWatcher(c, (FilesystemProto.CreateWatcherRequest) r)),
                unary(FILESYSTEM + "GetWatcherEvents", FilesystemProto.GetWatcherEventsRequest.getDefaultInstance(),
                        (c, r) -> fs.getWatcherEvents(c, (FilesystemProto.GetWatcherEventsRequest) r)),
                unary(FILESYSTEM + "RemoveWatcher", FilesystemProto.RemoveWatcherRequest.getDefaultInstance(),
                        (c, r) -> fs.removeWatcher(c, (FilesystemProto.RemoveWatcherRequest) r)));
    }

    private static Map.Entry<String, Method> unary(String path, Message prototype, UnaryHandler h) {
        return Map.entry(path, new Method(Kind.UNARY, prototype, h, null, null));
    }

    private static Map.Entry<String, Method> stream(String path, Message prototype, StreamHandler h) {
        return Map.entry(path, new Method(Kind.SERVER_STREAM, prototype, null, h, null));
    }

    /** Whether {@code path} belongs to envd's services: {@code /process.Process/…} or {@code /filesystem.Filesystem/…}. */
    public static boolean owns(String path) {
        return path != null && (path.startsWith(PROCESS) || path.startsWith(FILESYSTEM));
    }

    /**
     * Serves one Connect-RPC call for sandbox {@code sb}; streaming answers write frames as they come, and this
     * returns when the call is over (a {@code Start} when its command ends, its deadline passes or the client goes).
     * Every failure is answered in Connect's form; an {@link IOException} means the client went away mid-answer.
     *
     * @param path    the request path, for example {@code /process.Process/Start}
     * @param headers the request's headers, names in lower case
     * @param body    the request body; read to its end (or to the first malformed byte)
     * @param out     where the answer goes: {@link Response#start} once, then the body
     */
    public void serve(Sandbox sb, String path, Map<String, String> headers, InputStream body, Response out)
            throws IOException {
        Objects.requireNonNull(sb, "sb");
        Objects.requireNonNull(headers, "headers");
        Codec.Selected selected = Codec.select(headers.get("content-type"));
        if (selected == null) {
            byte[] msg = ("unsupported Content-Type \"" + headers.get("content-type") + "\"; Connect takes application/json, "
                    + "application/proto, application/connect+json or application/connect+proto")
                    .getBytes(java.nio.charset.StandardCharsets.UTF_8);
            out.start(415, Map.of("content-type", "text/plain; charset=utf-8"));
            out.body().write(msg);
            out.body().flush();
            return;
        }
        Codec codec = selected.codec();
        boolean streaming = selected.streaming();
        StreamOut stream = streaming ? new StreamOut(out, codec) : null;
        try {
            Method m = methods.get(path);
            if (m == null) {
                throw new ConnectException(ConnectCode.UNIMPLEMENTED, (owns(path) ? "unknown method " : "unknown service ")
                        + path + "; envd serves process.Process and filesystem.Filesystem");
            }
            if (streaming != (m.kind() != Kind.UNARY)) {
                throw ConnectException.invalid(path + " is a " + (streaming ? "unary" : "streaming") + " method, called with "
                        + "Content-Type " + headers.get("content-type"));
            }
            Call call = Call.of(sb, headers, codec);
            switch (m.kind()) {
                case UNARY -> {
                    Message req = codec.parse(Wire.readUnary(body, headers.get("content-encoding")), m.prototype());
                    byte[] answer = codec.write(m.unary().handle(call, req));
                    out.start(200, Map.of("content-type", codec.unaryContentType()));
                    OutputStream o = out.body();
                    o.write(answer);
                    o.flush();
                }
                case SERVER_STREAM -> {
                    Message req = codec.parse(Wire.readSingleEnvelope(body, headers.get("connect-content-encoding")),
                            m.prototype());
                    m.stream().handle(call, req, stream);
                    stream.end(null);
                }
                case CLIENT_STREAM -> {
                    List<Message> reqs = new ArrayList<>();
                    byte[] next;
                    while ((next = Wire.readEnvelope(body, headers.get("connect-content-encoding"))) != null) {
                        reqs.add(codec.parse(next, m.prototype()));
                    }
                    Message answer = m.clientStream().handle(call, reqs);
                    stream.send(answer);
                    stream.end(null);
                }
            }
        } catch (IOException e) {
            throw e;
        } catch (RuntimeException e) {
            ConnectException ce = ConnectException.of(e);
            if (streaming) {
                stream.end(ce);
            } else {
                byte[] json = Wire.errorJson(ce);
                out.start(ce.code().httpStatus(), Map.of("content-type", "application/json"));
                out.body().write(json);
                out.body().flush();
            }
        }
    }

    /** Where one call's answer goes. */
    public interface Response {
        /** Sends the status line and headers; called once, before {@link #body()} is written. */
        void start(int status, Map<String, String> headers) throws IOException;

        OutputStream body();
    }
}
