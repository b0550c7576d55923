package io.paddock.code.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.ErrorCode;
import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.ExitStatus;
import io.paddock.SandboxException;
import io.paddock.Signal;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * One kernel process in the sandbox and its framed channel: requests as JSON lines on its stdin, replies
 * as length-prefixed JSON frames on its stdout, read by one thread into a bounded queue (a slow consumer
 * stops the reader, and the exec's window then stops the kernel). The kernel's stderr is kept as a short
 * tail for diagnostics.
 */
final class KernelProcess {
    static final int MAX_FRAME = 33 << 20;
    private static final int STDERR_TAIL = 8 * 1024;
    /** Put on the queue when the channel ends; {@link #failure} says why. */
    static final JsonNode EOF = Json.MAPPER.createObjectNode().put("type", "__eof__");

    private final ExecProcess process;
    private final BlockingQueue<JsonNode> queue = new LinkedBlockingQueue<>(1024);
    private final StringBuilder stderrTail = new StringBuilder();
    private volatile String failure;

    private KernelProcess(ExecProcess process) {
        this.process = process;
    }

    static KernelProcess start(io.paddock.Sandbox sandbox, ExecRequest request, ExecutorService threads) {
        KernelProcess k = new KernelProcess(sandbox.start(request));
        threads.submit(k::readFrames);
        threads.submit(k::readStderr);
        return k;
    }

    private void readFrames() {
        try (DataInputStream in = new DataInputStream(process.stdout())) {
            while (true) {
                int len = in.readInt();
                if (len < 0 || len > MAX_FRAME) {
                    failure = "the kernel sent a frame of " + len + " bytes (limit " + MAX_FRAME + ")";
                    break;
                }
                byte[] data = new byte[len];
                in.readFully(data);
                JsonNode msg;
                try {
                    msg = Json.MAPPER.readTree(data);
                } catch (IOException e) {
                    failure = "the kernel sent a frame that is not JSON";
                    break;
                }
                if (msg != null && msg.isObject()) {
                    queue.put(msg);
                }
            }
        } catch (EOFException e) {
            failure = "the kernel's process ended";
        } catch (IOException | SandboxException e) {
            failure = "the kernel's channel failed: " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            failure = "interrupted";
        }
        try {
            queue.put(EOF);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void readStderr() {
        byte[] buf = new byte[4096];
        try (InputStream in = process.stderr()) {
            int n;
            while ((n = in.read(buf)) > 0) {
                synchronized (stderrTail) {
                    stderrTail.append(new String(buf, 0, n, StandardCharsets.UTF_8));
                    if (stderrTail.length() > STDERR_TAIL) {
                        stderrTail.delete(0, stderrTail.length() - STDERR_TAIL);
                    }
                }
            }
        } catch (IOException | SandboxException e) {
            // the process ended; the tail is what it is
        }
    }

    void send(ObjectNode request) {
        byte[] line = (Json.write(request) + "\n").getBytes(StandardCharsets.UTF_8);
        try {
            process.stdin().write(line);
            process.stdin().flush();
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot reach the context's kernel: " + e.getMessage(), e);
        }
    }

    /** The next message, or null when {@code nanos} passed. */
    JsonNode poll(long nanos) {
        try {
            return queue.poll(Math.max(0, nanos), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SandboxException(ErrorCode.UNAVAILABLE, "interrupted while waiting for the kernel");
        }
    }

    void interrupt() {
        try {
            process.signal(Signal.SIGINT);
        } catch (SandboxException e) {
            // already gone: the channel's end reports it
        }
    }

    void kill() {
        try {
            process.kill();
        } catch (SandboxException e) {
            // already gone
        }
        try {
            process.close();
        } catch (SandboxException e) {
            // already gone
        }
    }

    Optional<ExitStatus> exitStatus(Duration wait) {
        try {
            return process.awaitExit(wait);
        } catch (SandboxException e) {
            return Optional.empty();
        }
    }

    String failure() {
        return failure == null ? "the kernel's channel ended" : failure;
    }

    String stderrTail() {
        synchronized (stderrTail) {
            return stderrTail.toString().strip();
        }
    }
}
