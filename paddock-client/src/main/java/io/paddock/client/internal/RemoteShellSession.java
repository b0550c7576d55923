package io.paddock.client.internal;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.code.ShellResult;
import io.paddock.code.ShellSession;
import io.paddock.code.internal.CodeWire;
import io.paddock.wire.Wire;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;

/** A handle on a shell session in the daemon; each command is one request. Thread-safe: immutable. */
final class RemoteShellSession implements ShellSession {
    private final RemoteCodeInterpreter owner;
    private final String path;
    private final Map<String, String> env;

    RemoteShellSession(RemoteCodeInterpreter owner, String id, Map<String, String> env) {
        this.owner = owner;
        this.path = owner.base() + "/shells/" + Http.encode(id);
        this.env = Map.copyOf(env);
    }

    @Override
    public ShellResult exec(String command) {
        return exec(command, owner.options().timeout());
    }

    @Override
    public ShellResult exec(String command, Duration timeout) {
        Objects.requireNonNull(command, "command");
        if (timeout == null || timeout.isNegative() || timeout.isZero()) {
            throw SandboxException.invalid("timeout", "must be positive, got " + timeout);
        }
        owner.checkOpen();
        owner.enforceShell(command);
        return CodeWire.shellResult(owner.http().call("POST", path + "/exec", null,
                Wire.object().put("command", command).put("timeout_ms", Math.max(1, timeout.toMillis())), null));
    }

    @Override
    public Map<String, String> env() {
        return env;
    }

    /** Asks the daemon; a session it no longer has is not alive. */
    @Override
    public boolean isAlive() {
        try {
            return owner.http().call("GET", path, null, null, Http.CONTROL_TIMEOUT).path("alive").asBoolean();
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.NOT_FOUND) {
                return false;
            }
            throw e;
        }
    }

    /** Closes the session in the daemon; idempotent. */
    @Override
    public void close() {
        owner.http().deleteIfPresent(path);
    }

    @Override
    public String toString() {
        return "ShellSession[" + path.substring(path.lastIndexOf('/') + 1) + ", remote]";
    }
}
