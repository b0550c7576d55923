package io.paddock.runtime.internal.host;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;

/**
 * A sealed in-memory copy of a host program, held by {@code paddock-sealed-exec} ({@code src/main/c/sealed_exec.c})
 * and executable as {@code /proc/<holder>/fd/<n>}: runc run from it skips the copy of its own binary it otherwise
 * makes in every runc process and container init (CVE-2019-5736's protection; ≈ 1.5 ms of CPU per container here,
 * docs/BENCHMARKS.md). One holder per program per JVM; it exits when the JVM does (its stdin ends). If the holder
 * cannot start or has gone, {@link #path()} is the program itself, as before.
 */
public final class SealedCopy {
    private static final Logger LOG = Logger.getLogger(SealedCopy.class.getName());
    private static final ConcurrentHashMap<Path, SealedCopy> HELD = new ConcurrentHashMap<>();

    private final Path program;
    /** The holder and its copy once it has answered; null until then, or if it could not start. */
    private volatile Held held;
    /** Done once the holder has answered or been given up. */
    final CompletableFuture<Void> settled = new CompletableFuture<>();

    private record Held(Process holder, Path copy) {
    }

    private SealedCopy(Path program) {
        this.program = program;
    }

    /**
     * The copy of {@code program} this JVM holds, made by {@code holderBinary}. The first call starts the holder in
     * the background (copying runc takes a few ms, which a short-lived engine's first sandbox should not wait for);
     * until it has answered, {@link #path()} is the program.
     */
    public static SealedCopy of(Path holderBinary, Path program) {
        return HELD.compute(program, (p, old) -> {
            if (old != null && (old.held == null || old.held.holder().isAlive())) {
                return old;
            }
            SealedCopy c = new SealedCopy(p);
            Thread t = new Thread(() -> {
                c.held = start(holderBinary, p);
                c.settled.complete(null);
            }, "paddock-sealed-copy");
            t.setDaemon(true);
            t.start();
            return c;
        });
    }

    /** What to execute: the sealed copy while its holder lives, else the program. */
    public Path path() {
        Held h = held;
        return h != null && h.holder().isAlive() ? h.copy() : program;
    }

    private static Held start(Path holderBinary, Path program) {
        ProcessBuilder pb = HostProcess.builder(List.of(holderBinary.toString(), program.toString())).redirectErrorStream(true);
        Process p = null;
        try {
            p = pb.start();
            Process started = p;
            // The holder answers at once; a hung one is given up after a while (the program is used meanwhile).
            String line = CompletableFuture.supplyAsync(() -> {
                try {
                    return new BufferedReader(new InputStreamReader(started.getInputStream(), StandardCharsets.UTF_8)).readLine();
                } catch (IOException e) {
                    return null;
                }
            }).get(30, TimeUnit.SECONDS);
            if (line == null || !line.matches("[0-9]+")) {
                throw new IOException(line == null ? "no answer" : line);
            }
            Path copy = Path.of("/proc", Long.toString(p.pid()), "fd", line);
            // A host where another process's fd cannot be executed (a hardened /proc) keeps runc's own file.
            HostProcess.Result check = HostProcess.run(List.of(copy.toString(), "--version"), java.time.Duration.ofSeconds(30));
            if (!check.ok()) {
                throw new IOException("the copy does not run: " + check.output().strip());
            }
            return new Held(p, copy);
        } catch (Exception e) {
            if (p != null) {
                p.destroyForcibly();
            }
            LOG.warning("no sealed copy of " + program + " (it runs from its file, copying itself each time): " + e);
            return null;
        }
    }
}
