package io.paddock.runtime.internal.host;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** Named pipes: the JDK cannot create them, so {@code mkfifo} does. */
public final class Fifos {
    private Fifos() {
    }

    /** Creates FIFOs readable and writable by root only. */
    public static void create(Path... paths) {
        List<String> argv = new ArrayList<>(List.of("mkfifo", "-m", "0600"));
        for (Path p : paths) {
            argv.add(p.toString());
        }
        HostProcess.Result r = HostProcess.run(argv, Duration.ofSeconds(10));
        if (!r.ok()) {
            throw new SandboxException(ErrorCode.INTERNAL, "mkfifo failed: " + r.output());
        }
    }
}
