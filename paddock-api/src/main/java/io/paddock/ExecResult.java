package io.paddock;

import java.nio.charset.StandardCharsets;
import java.util.Objects;

/** The outcome and captured output of a one-shot {@link Sandbox#exec(ExecRequest)}. */
public final class ExecResult {
    private final ExitStatus status;
    private final byte[] stdout;
    private final byte[] stderr;

    public ExecResult(ExitStatus status, byte[] stdout, byte[] stderr) {
        this.status = Objects.requireNonNull(status, "status");
        this.stdout = stdout.clone();
        this.stderr = stderr.clone();
    }

    public ExitStatus status() {
        return status;
    }

    public int exitCode() {
        return status.exitCode();
    }

    public boolean success() {
        return status.success();
    }

    public byte[] stdout() {
        return stdout.clone();
    }

    public byte[] stderr() {
        return stderr.clone();
    }

    public String stdoutText() {
        return new String(stdout, StandardCharsets.UTF_8);
    }

    public String stderrText() {
        return new String(stderr, StandardCharsets.UTF_8);
    }

    @Override
    public String toString() {
        return "ExecResult{" + status.describe() + ", stdout=" + stdout.length + " bytes, stderr=" + stderr.length
                + " bytes" + (status.truncated() ? ", truncated" : "") + "}";
    }
}
