package io.paddock;

import java.nio.charset.StandardCharsets;

/**
 * The output of a sandbox's entrypoint so far. The daemon keeps the most recent {@code limit} bytes of
 * each stream; {@code truncated} says whether older output was dropped.
 */
public record SandboxLogs(byte[] stdout, byte[] stderr, boolean stdoutTruncated, boolean stderrTruncated) {
    public SandboxLogs {
        stdout = stdout.clone();
        stderr = stderr.clone();
    }

    @Override
    public byte[] stdout() {
        return stdout.clone();
    }

    @Override
    public byte[] stderr() {
        return stderr.clone();
    }

    public String stdoutText() {
        return new String(stdout, StandardCharsets.UTF_8);
    }

    public String stderrText() {
        return new String(stderr, StandardCharsets.UTF_8);
    }
}
