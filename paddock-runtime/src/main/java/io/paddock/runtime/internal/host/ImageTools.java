package io.paddock.runtime.internal.host;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The host programs the image store needs: {@code mknod} for overlay whiteouts (Java cannot make device
 * nodes) and {@code mmdebstrap} for Debian bases. Both are argv-only with the cleared environment.
 */
public final class ImageTools {
    private ImageTools() {
    }

    /** Makes the overlay whiteout {@code path}: a character device 0/0. */
    public static void whiteout(Path path) {
        HostProcess.Result r = HostProcess.run(List.of("mknod", path.toString(), "c", "0", "0"), Duration.ofSeconds(30));
        if (!r.ok()) {
            throw new SandboxException(ErrorCode.INTERNAL, "mknod of the whiteout " + path + " failed: " + r.output());
        }
    }

    /**
     * {@code localedef --prefix=PREFIX --add-to-archive DIR…}: one glibc locale archive
     * ({@code PREFIX/usr/lib/locale/locale-archive}) of the compiled locale directories given.
     *
     * @return empty when localedef succeeded, else what it said
     */
    public static Optional<String> localeArchive(Path localedef, Path prefix, List<Path> localeDirs) {
        List<String> argv = new ArrayList<>(List.of(localedef.toString(), "--prefix=" + prefix, "--add-to-archive"));
        localeDirs.forEach(d -> argv.add(d.toString()));
        HostProcess.Result r = HostProcess.run(argv, Duration.ofSeconds(60));
        return r.ok() ? Optional.empty() : Optional.of(r.output().strip());
    }

    public static Path locateMmdebstrap() {
        return HostProcess.locate("mmdebstrap", "PADDOCK_MMDEBSTRAP",
                "mmdebstrap is not installed; Paddock builds Debian images with it. Install it: sudo apt-get install -y mmdebstrap");
    }

    /**
     * Builds a Debian root filesystem as a tar file with {@code mmdebstrap}: {@code suite} with {@code variant}
     * (minbase, apt, …) and {@code packages}, from {@code mirror} (a URI) or mmdebstrap's default. Each line
     * mmdebstrap prints goes to {@code progress}; {@code options} are {@code --dpkgopt=} options (what a slim
     * image leaves out).
     *
     * @throws SandboxException UNAVAILABLE with mmdebstrap's last lines when it fails (an unknown suite, an
     *                          unknown package, an unreachable mirror)
     */
    public static void mmdebstrap(String suite, String variant, List<String> packages, Optional<String> mirror,
                                  Path tarOut, Duration timeout, Consumer<String> progress, List<String> options) {
        List<String> argv = new ArrayList<>(List.of(locateMmdebstrap().toString(), "--variant=" + variant,
                "--format=tar", "--mode=root", "--verbose"));
        for (String o : options) {
            if (!o.startsWith("--dpkgopt=")) {
                throw new IllegalArgumentException("only --dpkgopt options are passed to mmdebstrap: " + o);
            }
            argv.add(o);
        }
        if (!packages.isEmpty()) {
            argv.add("--include=" + String.join(",", packages));
        }
        // Make the image smaller and reproducible-ish: no apt lists or caches left in it.
        argv.add("--customize-hook=rm -rf \"$1\"/var/lib/apt/lists/* \"$1\"/var/cache/apt/*.bin");
        argv.add(suite);
        argv.add(tarOut.toString());
        mirror.ifPresent(argv::add);
        ProcessBuilder pb = new ProcessBuilder(argv).redirectErrorStream(true)
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        pb.environment().clear();
        pb.environment().putAll(HostProcess.BASE_ENV);
        pb.directory(Path.of("/").toFile());
        Process p;
        try {
            p = pb.start();
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "cannot run mmdebstrap: " + e.getMessage(), e);
        }
        // The timeout is kept while mmdebstrap runs, not only once its output ends: a download that stalls (or a
        // build whose time is up) stops it, its children and their hold on the output with it.
        java.util.concurrent.atomic.AtomicBoolean timedOut = new java.util.concurrent.atomic.AtomicBoolean();
        Thread watchdog = new Thread(() -> {
            try {
                if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                    timedOut.set(true);
                    stop(p);
                }
            } catch (InterruptedException e) {
                // mmdebstrap ended first
            }
        }, "paddock-mmdebstrap-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
        java.util.ArrayDeque<String> tail = new java.util.ArrayDeque<>();
        try (InputStream in = p.getInputStream();
             java.io.BufferedReader r = new java.io.BufferedReader(new java.io.InputStreamReader(in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                progress.accept(line);
                tail.addLast(line);
                if (tail.size() > 15) {
                    tail.removeFirst();
                }
            }
            if (!p.waitFor(STOP_GRACE.toMillis(), TimeUnit.MILLISECONDS)) {
                stop(p); // its output ended and it lingers: it is past its time or about to be
            }
            watchdog.interrupt();
            watchdog.join(STOP_GRACE.toMillis() * 2);
            if (timedOut.get()) {
                deleteQuietly(tarOut);
                throw new SandboxException(ErrorCode.DEADLINE_EXCEEDED, "mmdebstrap did not finish within " + timeout
                        + " and was stopped");
            }
        } catch (IOException e) {
            stop(p);
            throw new SandboxException(ErrorCode.INTERNAL, "reading mmdebstrap's output failed: " + e, e);
        } catch (InterruptedException e) {
            stop(p);
            Thread.currentThread().interrupt();
            throw new SandboxException(ErrorCode.UNAVAILABLE, "interrupted while running mmdebstrap");
        }
        if (p.exitValue() != 0) {
            try {
                Files.deleteIfExists(tarOut);
            } catch (IOException ignored) {
                // the caller's temporary directory goes anyway
            }
            throw new SandboxException(ErrorCode.UNAVAILABLE, "mmdebstrap could not build Debian " + suite
                    + " (exit " + p.exitValue() + "):\n" + String.join("\n", tail));
        }
    }

    /** How long a stopped mmdebstrap has to undo its mounts and end, after SIGTERM, before it is killed. */
    private static final Duration STOP_GRACE = Duration.ofSeconds(20);

    /**
     * Stops mmdebstrap and everything it started: SIGTERM first to all of them, which mmdebstrap answers by
     * unmounting what it mounted in its chroot and removing it; after {@link #STOP_GRACE}, SIGKILL to whatever
     * is left. Waits for them to end.
     */
    private static void stop(Process p) {
        List<ProcessHandle> all = new ArrayList<>(p.descendants().toList()); // they outlive p as orphans otherwise
        all.add(0, p.toHandle());
        all.forEach(ProcessHandle::destroy);
        long deadline = System.nanoTime() + STOP_GRACE.toNanos();
        for (ProcessHandle h : all) {
            try {
                h.onExit().get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (java.util.concurrent.TimeoutException | java.util.concurrent.ExecutionException e) {
                break;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        for (ProcessHandle h : all) {
            h.destroyForcibly();
        }
        for (ProcessHandle h : all) {
            try {
                h.onExit().get(5, TimeUnit.SECONDS);
            } catch (java.util.concurrent.TimeoutException | java.util.concurrent.ExecutionException e) {
                // reported by the caller's failure; a process in uninterruptible sleep ends later
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException ignored) {
            // the caller's temporary directory goes anyway
        }
    }
}
