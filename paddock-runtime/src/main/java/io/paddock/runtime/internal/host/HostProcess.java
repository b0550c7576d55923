package io.paddock.runtime.internal.host;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Runs host commands: argv only, cleared environment, bounded time and output. */
public final class HostProcess {
    /** The only environment host commands get: nothing of the daemon's (tokens, JAVA_TOOL_OPTIONS, …) leaks. */
    public static final Map<String, String> BASE_ENV =
            Map.of("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG", "C.UTF-8");
    private static final int MAX_OUTPUT = 64 * 1024;

    /** The exit code and (combined, truncated) output of a finished command. */
    public record Result(int exitCode, String output) {
        public boolean ok() {
            return exitCode == 0;
        }
    }

    private HostProcess() {
    }

    /**
     * Finds a host binary: {@code $envVar} when set (it must be executable), else {@code name} on the usual
     * system paths; otherwise FAILED_PRECONDITION with {@code notInstalled} (which says how to install it).
     */
    public static Path locate(String name, String envVar, String notInstalled) {
        String override = System.getenv(envVar);
        if (override != null && !override.isBlank()) {
            Path p = Path.of(override);
            if (java.nio.file.Files.isExecutable(p)) {
                return p;
            }
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, envVar + "=" + override + " is not an executable file");
        }
        for (String dir : List.of("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")) {
            Path p = Path.of(dir, name);
            if (java.nio.file.Files.isExecutable(p)) {
                return p;
            }
        }
        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, notInstalled);
    }

    /** Runs argv to completion with stdin closed, capturing stdout and stderr together. */
    public static Result run(List<String> argv, Duration timeout) {
        ProcessBuilder pb = builder(argv).redirectErrorStream(true).redirectInput(ProcessBuilder.Redirect.from(devNull()));
        return collect(start(pb, argv), argv, timeout, java.util.concurrent.CompletableFuture.completedFuture(null));
    }

    /** Runs argv to completion with {@code input} as its stdin, capturing stdout and stderr together. */
    public static Result run(List<String> argv, byte[] input, Duration timeout) {
        Process p = start(builder(argv).redirectErrorStream(true), argv);
        // Written by another thread, so that a command which answers before reading all of it cannot block us.
        java.util.concurrent.CompletableFuture<Void> writer = java.util.concurrent.CompletableFuture.runAsync(() -> {
            try (java.io.OutputStream out = p.getOutputStream()) {
                out.write(input);
            } catch (IOException e) {
                // it exited early; its output says why
            }
        });
        return collect(p, argv, timeout, writer);
    }

    /** Reads a started process's output to its end, waits for its exit (and for {@code writer}), kills it on failure. */
    private static Result collect(Process p, List<String> argv, Duration timeout,
                                  java.util.concurrent.CompletableFuture<Void> writer) {
        try (InputStream in = p.getInputStream()) {
            String out = readBounded(in);
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                throw new SandboxException(ErrorCode.UNAVAILABLE, argv.get(0) + " did not finish within " + timeout);
            }
            writer.join();
            return new Result(p.exitValue(), out);
        } catch (IOException e) {
            p.destroyForcibly();
            throw new SandboxException(ErrorCode.INTERNAL, "reading the output of " + argv.get(0) + " failed: " + e, e);
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new SandboxException(ErrorCode.UNAVAILABLE, "interrupted while running " + argv.get(0));
        }
    }

    /**
     * Runs argv with its stdio connected to files (FIFOs, a log), waits for it to exit and returns its code.
     * Used for {@code runc run -d}, whose container keeps the descriptors after runc exits.
     */
    static int runWithFiles(List<String> argv, Path stdin, Path stdout, Path stderrAppend, Duration timeout) {
        ProcessBuilder pb = builder(argv)
                .redirectInput(ProcessBuilder.Redirect.from(stdin.toFile()))
                .redirectOutput(ProcessBuilder.Redirect.to(stdout.toFile()))
                .redirectError(ProcessBuilder.Redirect.appendTo(stderrAppend.toFile()));
        Process p = start(pb, argv);
        try {
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                throw new SandboxException(ErrorCode.UNAVAILABLE, argv.get(0) + " did not finish within " + timeout);
            }
            return p.exitValue();
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new SandboxException(ErrorCode.UNAVAILABLE, "interrupted while running " + argv.get(0));
        }
    }

    /**
     * A host process that runs until closed, for what it holds (a namespace): started, its first line of output
     * read (stdout and stderr together), and ended by closing its stdin, which it must wait on.
     */
    record Held(Process process, String firstLine) implements AutoCloseable {
        @Override
        public void close() {
            try {
                process.getOutputStream().close();
                if (!process.waitFor(10, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            } catch (IOException e) {
                process.destroyForcibly();
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Ends {@link #hold}'s processes that print nothing in time. */
    private static final java.util.concurrent.ScheduledExecutorService WATCHDOG =
            java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "paddock-host-watchdog");
                t.setDaemon(true);
                return t;
            });
    /** How long {@link #hold} waits for a helper's first line: it prints it at once, unless the host is stuck. */
    static final Duration HOLD_TIMEOUT = Duration.ofSeconds(30);

    /**
     * Starts argv as a {@link Held} process and reads its first line: UNAVAILABLE if none came within
     * {@code timeout} (the process is killed), empty text if it ended before one.
     */
    static Held hold(List<String> argv, Duration timeout) {
        Process p = start(builder(argv).redirectErrorStream(true), argv);
        // The watchdog says it fired before it kills: a future still running its kill can yet be cancelled, and the
        // read it ends (null) would then pass for a process that ended by itself (1 CI run in 4 read it so).
        java.util.concurrent.atomic.AtomicBoolean fired = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.ScheduledFuture<?> watchdog = WATCHDOG.schedule(() -> {
            fired.set(true);
            p.destroyForcibly();
        }, timeout.toMillis(), TimeUnit.MILLISECONDS);
        try {
            java.io.BufferedReader out = new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream(),
                    StandardCharsets.UTF_8));
            String line = out.readLine();
            watchdog.cancel(false);
            if (fired.get()) {
                throw new SandboxException(ErrorCode.UNAVAILABLE, argv.get(0) + " printed nothing within " + timeout);
            }
            return new Held(p, line == null ? "" : line.strip());
        } catch (IOException | RuntimeException e) {
            watchdog.cancel(false);
            p.destroyForcibly();
            throw e instanceof SandboxException se ? se
                    : new SandboxException(ErrorCode.INTERNAL, "cannot read from " + argv.get(0) + ": " + e, e);
        }
    }

    /** argv with the cleared environment ({@link #BASE_ENV}) and {@code /} as its directory; not started. */
    static ProcessBuilder builder(List<String> argv) {
        ProcessBuilder pb = new ProcessBuilder(List.copyOf(argv));
        pb.environment().clear();
        pb.environment().putAll(BASE_ENV);
        pb.directory(Path.of("/").toFile());
        return pb;
    }

    private static Process start(ProcessBuilder pb, List<String> argv) {
        try {
            return pb.start();
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "cannot run " + argv.get(0) + ": " + e.getMessage(), e);
        }
    }

    private static java.io.File devNull() {
        return new java.io.File("/dev/null");
    }

    private static String readBounded(InputStream in) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buf = new byte[8192];
        int n;
        while ((n = in.read(buf)) > 0) {
            if (out.size() < MAX_OUTPUT) {
                out.write(buf, 0, Math.min(n, MAX_OUTPUT - out.size()));
            }
        }
        return out.toString(StandardCharsets.UTF_8).trim();
    }
}
