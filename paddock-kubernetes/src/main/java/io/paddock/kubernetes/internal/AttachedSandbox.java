package io.paddock.kubernetes.internal;

import io.fabric8.kubernetes.client.dsl.ExecWatch;
import io.paddock.SandboxId;
import io.paddock.runtime.RuntimeSandbox;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.util.function.LongSupplier;

/**
 * A pod's init as the engine sees it: the two byte streams of one attach to the sandbox container's stdin and
 * stdout (Kubernetes' attach API, a WebSocket through the API server and the kubelet), carrying the init protocol
 * unchanged. Closing it ends the attach; the container's stdin stays open ({@code stdinOnce: false}), so the init
 * keeps running for the next attach, which resynchronises with a fresh HELLO (docs/PROTOCOL.md).
 *
 * <p>Out-of-memory kills are not visible per command here (the container's cgroup is the node's); when the
 * stream ends, {@code onEnd} asks the cluster once whether the container was OOM-killed, and {@link #oomKills()}
 * says so from then on.
 */
final class AttachedSandbox implements RuntimeSandbox {
    static final int MAX_MESSAGE = 32 * 1024;
    private final SandboxId id;
    private final ExecWatch watch;
    private final LongSupplier onEnd;
    private final ReadableByteChannel from;
    private final WritableByteChannel to;
    private volatile long ooms;
    private volatile boolean closed;

    AttachedSandbox(SandboxId id, ExecWatch watch, LongSupplier onEnd) {
        this.id = id;
        this.watch = watch;
        this.onEnd = onEnd;
        InputStream in = watch.getOutput();
        OutputStream out = watch.getInput();
        this.from = new ReadableByteChannel() {
            private boolean ended;

            @Override
            public int read(ByteBuffer dst) throws IOException {
                if (closed) {
                    throw new ClosedChannelException();
                }
                int want = dst.remaining();
                if (want == 0) {
                    return 0;
                }
                byte[] b = new byte[Math.min(want, 64 * 1024)];
                int n = in.read(b);
                if (n < 0) {
                    end();
                    return -1;
                }
                dst.put(b, 0, n);
                return n;
            }

            private synchronized void end() {
                if (!ended && !closed) {
                    ended = true;
                    try {
                        ooms = onEnd.getAsLong();
                    } catch (RuntimeException e) {
                        // the pod's status could not be read: the stream's end is what the engine learns
                    }
                }
            }

            @Override
            public boolean isOpen() {
                return !closed;
            }

            @Override
            public void close() {
                AttachedSandbox.this.closeChannel();
            }
        };
        this.to = new WritableByteChannel() {
            @Override
            public int write(ByteBuffer src) throws IOException {
                if (closed) {
                    throw new ClosedChannelException();
                }
                int n = src.remaining();
                byte[] b = new byte[n];
                src.get(b);
                synchronized (this) {
                    // One WebSocket message per 32 KiB at most: servers and proxies on the way cap frames (64 KiB is
                    // common); the init reassembles its frames from any split of the stream.
                    for (int off = 0; off < n; off += MAX_MESSAGE) {
                        out.write(b, off, Math.min(MAX_MESSAGE, n - off));
                        out.flush();
                    }
                }
                return n;
            }

            @Override
            public boolean isOpen() {
                return !closed;
            }

            @Override
            public void close() {
                AttachedSandbox.this.closeChannel();
            }
        };
    }

    @Override
    public SandboxId id() {
        return id;
    }

    @Override
    public ReadableByteChannel fromInit() {
        return from;
    }

    @Override
    public WritableByteChannel toInit() {
        return to;
    }

    @Override
    public long oomKills() {
        return ooms;
    }

    @Override
    public void closeChannel() {
        if (!closed) {
            closed = true;
            watch.close();
        }
    }
}
