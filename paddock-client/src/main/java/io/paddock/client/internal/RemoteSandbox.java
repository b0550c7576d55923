package io.paddock.client.internal;

import io.paddock.ErrorCode;
import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.ExecResult;
import io.paddock.ExitStatus;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxFiles;
import io.paddock.SandboxId;
import io.paddock.SandboxInfo;
import io.paddock.SandboxLogs;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;
import io.paddock.internal.Workers;
import io.paddock.wire.Wire;

import java.io.IOException;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/**
 * A handle on one sandbox of the daemon. Its id, name and labels are fixed at creation and cached; every
 * other answer ({@link #info()}, {@link #state()}) is fetched fresh. Thread-safe: it holds no mutable state.
 */
final class RemoteSandbox implements Sandbox {
    /** {@link #awaitStop} polls at first this often, backing off to {@link #POLL_MAX}. */
    private static final Duration POLL_MIN = Duration.ofMillis(10);
    private static final Duration POLL_MAX = Duration.ofMillis(250);

    private final Http http;
    private final SandboxId id;
    private final Optional<String> name;
    private final Map<String, String> labels;
    private final String path;
    private final RemoteFiles files;

    RemoteSandbox(Http http, SandboxInfo info) {
        this.http = http;
        this.id = info.id();
        this.name = info.name();
        this.labels = info.labels();
        this.path = RemotePaddock.sandboxPath(id);
        this.files = new RemoteFiles(http, path);
    }

    /** The client this handle talks through (the code layer's remote interpreter uses it too). */
    Http http() {
        return http;
    }

    /** This sandbox's resource path, {@code /v1/sandboxes/<id>}. */
    String path() {
        return path;
    }

    @Override
    public SandboxId id() {
        return id;
    }

    @Override
    public Optional<String> name() {
        return name;
    }

    @Override
    public Map<String, String> labels() {
        return labels;
    }

    @Override
    public SandboxInfo info() {
        return Wire.sandboxInfo(http.call("GET", path, null, null, Http.CONTROL_TIMEOUT));
    }

    /**
     * Runs the command with {@code POST …/exec}, whose answer holds the output; the daemon buffers it there, so
     * it takes output caps up to {@link #MAX_POST_EXEC_OUTPUT} only. Larger caps (as {@code Paddock.local()}
     * allows) go over the exec stream and are collected here.
     */
    @Override
    public ExecResult exec(ExecRequest request) {
        Objects.requireNonNull(request, "request");
        if (request.outputLimit().bytes() > MAX_POST_EXEC_OUTPUT) {
            return collect(request);
        }
        // No request timeout: the command's own timeout (or the sandbox's lifetime) bounds it.
        return Wire.execResult(http.call("POST", path + "/exec", null, Wire.json(request, true), null));
    }

    /** The largest output cap {@code POST …/exec} accepts (openapi.json). */
    static final long MAX_POST_EXEC_OUTPUT = 16L << 20;

    private ExecResult collect(ExecRequest request) {
        try (ExecProcess p = start(request)) {
            CompletableFuture<byte[]> err = new CompletableFuture<>();
            Workers.pool().execute(() -> {
                try {
                    err.complete(p.stderr().readAllBytes());
                } catch (IOException | RuntimeException e) {
                    err.completeExceptionally(e);
                }
            });
            byte[] out;
            try {
                out = p.stdout().readAllBytes();
            } catch (IOException e) {
                throw new SandboxException(ErrorCode.UNAVAILABLE, "reading the output of " + request.argv().get(0)
                        + " failed: " + e.getMessage(), e);
            }
            ExitStatus status = p.awaitExit();
            try {
                return new ExecResult(status, out, err.get());
            } catch (InterruptedException e) {
                throw Http.interrupted();
            } catch (ExecutionException e) {
                if (e.getCause() instanceof SandboxException se) {
                    throw new SandboxException(se.code(), se.getMessage(), se);
                }
                throw new SandboxException(ErrorCode.UNAVAILABLE, "reading the stderr of " + request.argv().get(0)
                        + " failed: " + e.getCause(), e.getCause());
            }
        }
    }

    @Override
    public ExecProcess start(ExecRequest request) {
        Objects.requireNonNull(request, "request");
        return RemoteExecProcess.start(http, id.value(), path + "/exec/stream", request);
    }

    @Override
    public SandboxFiles files() {
        return files;
    }

    @Override
    public SandboxLogs logs() {
        return Wire.logs(http.call("GET", path + "/logs", null, null, Http.CONTROL_TIMEOUT));
    }

    @Override
    public io.paddock.ResourceUsage usage() {
        return Wire.usage(http.call("GET", path + "/usage", null, null, Http.CONTROL_TIMEOUT));
    }

    /** Polls {@link #info()} with a short backoff (10 ms doubling to 250 ms) until the sandbox is STOPPED. */
    @Override
    public Optional<SandboxInfo> awaitStop(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        long deadline = System.nanoTime() + Math.max(0, timeout.toNanos());
        long pause = POLL_MIN.toNanos();
        while (true) {
            SandboxInfo info = info();
            if (info.state() == SandboxState.STOPPED) {
                return Optional.of(info);
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return Optional.empty();
            }
            try {
                Thread.sleep(Duration.ofNanos(Math.min(pause, left)).toMillis() + 1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new SandboxException(ErrorCode.UNAVAILABLE, "interrupted while waiting for sandbox " + id);
            }
            pause = Math.min(pause * 2, POLL_MAX.toNanos());
        }
    }

    @Override
    public void setTimeout(Duration fromNow) {
        if (fromNow == null || fromNow.isNegative() || fromNow.isZero() || fromNow.compareTo(SandboxSpec.MAX_TIMEOUT) > 0) {
            throw SandboxException.invalid("timeout", "must be between 1ms and " + SandboxSpec.MAX_TIMEOUT.toDays()
                    + " days, got " + fromNow);
        }
        http.call("POST", path + "/timeout", null,
                Wire.object().put("timeout_ms", Math.max(1, fromNow.toMillis())), Http.CONTROL_TIMEOUT);
    }

    @Override
    public io.paddock.PauseMode pause() {
        return Wire.pauseMode(http.call("POST", path + "/pause", null, null, PAUSE_TIMEOUT));
    }

    @Override
    public void resume() {
        http.call("POST", path + "/resume", null, null, PAUSE_TIMEOUT);
    }

    @Override
    public java.util.List<Sandbox> fork(int count) {
        com.fasterxml.jackson.databind.node.ObjectNode body = com.fasterxml.jackson.databind.node.JsonNodeFactory.instance
                .objectNode().put("count", count);
        com.fasterxml.jackson.databind.JsonNode answer = http.call("POST", path + "/fork", null, body, PAUSE_TIMEOUT);
        java.util.List<Sandbox> forks = new java.util.ArrayList<>();
        for (com.fasterxml.jackson.databind.JsonNode info : answer.path("sandboxes")) {
            forks.add(new RemoteSandbox(http, Wire.sandboxInfo(info)));
        }
        return java.util.List.copyOf(forks);
    }

    /** A pause or resume moves the sandbox's memory through the host's disk: seconds per GiB. */
    private static final Duration PAUSE_TIMEOUT = Duration.ofMinutes(6);

    @Override
    public void updateLabels(java.util.Map<String, String> labels) {
        java.util.Objects.requireNonNull(labels, "labels");
        com.fasterxml.jackson.databind.node.ObjectNode body = Wire.object();
        labels.forEach(body.putObject("labels")::put);
        http.call("PATCH", path + "/labels", null, body, Http.CONTROL_TIMEOUT);
    }

    @Override
    public void updateNetwork(io.paddock.NetworkPolicy policy) {
        java.util.Objects.requireNonNull(policy, "policy");
        http.call("PATCH", path + "/network", null, Wire.json(policy), Http.CONTROL_TIMEOUT);
    }

    /** {@code POST …/snapshot}: no time limit of the client's, as a large layer takes its time to copy. */
    @Override
    public io.paddock.ImageInfo snapshot(String tag) {
        Objects.requireNonNull(tag, "tag");
        return io.paddock.wire.ImageWire.imageInfo(http.call("POST", path + "/snapshot", null,
                Wire.object().put("tag", tag), null));
    }

    /**
     * A signed URL from {@code POST …/ports/{port}/url}: it reaches the port through the daemon with no header
     * (a browser can open it), until the sandbox's deadline (at most 7 days) or its end. It is built on this
     * client's base URL, so it goes wherever this client reaches the daemon (a TLS proxy in front included).
     * Anyone holding it can use the port.
     */
    @Override
    public java.net.URI url(int port) {
        if (port < 1 || port > 65535) {
            throw SandboxException.invalid("port", "a port number from 1 to 65535 is expected, got " + port);
        }
        com.fasterxml.jackson.databind.JsonNode r = http.call("POST", path + "/ports/" + port + "/url", null,
                Wire.object(), Http.CONTROL_TIMEOUT);
        String p = r == null ? null : r.path("path").asText(null);
        if (p == null || !p.startsWith("/v1/p/")) {
            throw new SandboxException(ErrorCode.INTERNAL, "the daemon answered POST " + path + "/ports/" + port
                    + "/url without a signed path");
        }
        return http.uri(p, null);
    }

    /** DELETE; idempotent, and a sandbox the daemon no longer knows counts as destroyed. */
    @Override
    public void destroy() {
        try {
            http.call("DELETE", path, null, null, Http.CONTROL_TIMEOUT);
        } catch (SandboxException e) {
            if (e.code() != ErrorCode.NOT_FOUND) {
                throw e;
            }
        }
    }

    @Override
    public String toString() {
        return "RemoteSandbox[" + id + name.map(n -> " " + n).orElse("") + " @ " + http.base() + "]";
    }
}
