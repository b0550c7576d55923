package io.paddock.server;

import io.paddock.ErrorCode;
import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.ExecResult;
import io.paddock.NetworkPolicy;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxFiles;
import io.paddock.SandboxId;
import io.paddock.SandboxInfo;
import io.paddock.SandboxLogs;
import io.paddock.SandboxQuery;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;
import io.paddock.StopReason;

import java.net.URI;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A test double of the engine for the daemon's port layer: sandboxes are records, and a sandbox's
 * {@code url(port)} is a real server on 127.0.0.1 ({@link #route}), as the engine's is the sandbox's own
 * address. Only what the daemon's port and sandbox routes call is implemented.
 */
final class FakePaddock implements Paddock {
    private static final SecureRandom RANDOM = new SecureRandom();
    private final Map<SandboxId, FakeSandbox> sandboxes = new ConcurrentHashMap<>();
    /** Sandbox port → the loopback port that stands for it. */
    private final Map<Integer, Integer> ports = new ConcurrentHashMap<>();

    /** Makes every sandbox's {@code port} be served by the loopback server at {@code loopbackPort}. */
    void route(int port, int loopbackPort) {
        ports.put(port, loopbackPort);
    }

    FakeSandbox sandbox(String id) {
        return sandboxes.get(new SandboxId(id));
    }

    /** Forgets a sandbox, as the engine does some time after it stopped. */
    void purge(String id) {
        sandboxes.remove(new SandboxId(id));
    }

    @Override
    public Sandbox create(SandboxSpec spec) {
        StringBuilder id = new StringBuilder("sb-");
        for (int i = 0; i < 26; i++) {
            id.append("abcdefghijklmnopqrstuvwxyz234567".charAt(RANDOM.nextInt(32)));
        }
        FakeSandbox sb = new FakeSandbox(new SandboxId(id.toString()), spec);
        sandboxes.put(sb.id(), sb);
        return sb;
    }

    @Override
    public Sandbox get(SandboxId id) {
        FakeSandbox sb = sandboxes.get(id);
        if (sb == null) {
            throw new SandboxException(ErrorCode.NOT_FOUND, "no sandbox " + id);
        }
        return sb;
    }

    @Override
    public Sandbox getByName(String name) {
        return sandboxes.values().stream().filter(s -> s.state == SandboxState.RUNNING && s.spec.name().equals(Optional.of(name)))
                .findFirst().orElseThrow(() -> new SandboxException(ErrorCode.NOT_FOUND, "no live sandbox named " + name));
    }

    @Override
    public List<SandboxInfo> list(SandboxQuery query) {
        return sandboxes.values().stream().map(FakeSandbox::info).filter(query::matches).toList();
    }

    @Override
    public void close() {
    }

    final class FakeSandbox implements Sandbox {
        private final SandboxId id;
        final SandboxSpec spec;
        private final Instant created = Instant.now();
        private volatile Instant expires;
        volatile SandboxState state = SandboxState.RUNNING;
        volatile NetworkPolicy network;

        FakeSandbox(SandboxId id, SandboxSpec spec) {
            this.id = id;
            this.spec = spec;
            this.network = spec.network();
            this.expires = created.plus(spec.timeout());
        }

        @Override
        public SandboxId id() {
            return id;
        }

        @Override
        public Optional<String> name() {
            return spec.name();
        }

        @Override
        public Map<String, String> labels() {
            return spec.labels();
        }

        @Override
        public SandboxInfo info() {
            return new SandboxInfo(id, spec.name(), spec.labels(), state,
                    state == SandboxState.STOPPED ? Optional.of(StopReason.DESTROYED) : Optional.empty(), created, expires,
                    spec.image(), "fake", Optional.empty());
        }

        @Override
        public URI url(int port) {
            if (!spec.ports().contains(port)) {
                throw SandboxException.invalid("port", "port " + port + " was not exposed when sandbox " + id
                        + " was created (exposed: " + (spec.ports().isEmpty() ? "none" : spec.ports()) + ")");
            }
            if (state != SandboxState.RUNNING) {
                throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "sandbox " + id + " is stopped");
            }
            Integer loopback = ports.get(port);
            return URI.create("http://127.0.0.1:" + (loopback == null ? 1 : loopback) + "/");
        }

        @Override
        public void updateNetwork(NetworkPolicy policy) {
            if (spec.network().isNone() && spec.ports().isEmpty()) {
                throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "sandbox " + id + " has no network");
            }
            network = policy;
        }

        @Override
        public void setTimeout(Duration fromNow) {
            expires = Instant.now().plus(fromNow);
        }

        @Override
        public io.paddock.PauseMode pause() {
            throw new UnsupportedOperationException("not faked");
        }

        @Override
        public void resume() {
            throw new UnsupportedOperationException("not faked");
        }

        @Override
        public void destroy() {
            state = SandboxState.STOPPED;
        }

        @Override
        public ExecResult exec(ExecRequest request) {
            throw new UnsupportedOperationException("the fake runs nothing");
        }

        @Override
        public ExecProcess start(ExecRequest request) {
            throw new UnsupportedOperationException("the fake runs nothing");
        }

        @Override
        public SandboxFiles files() {
            throw new UnsupportedOperationException("the fake has no files");
        }

        @Override
        public SandboxLogs logs() {
            throw new UnsupportedOperationException("the fake has no logs");
        }

        @Override
        public Optional<SandboxInfo> awaitStop(Duration timeout) {
            return state == SandboxState.STOPPED ? Optional.of(info()) : Optional.empty();
        }
    }
}
