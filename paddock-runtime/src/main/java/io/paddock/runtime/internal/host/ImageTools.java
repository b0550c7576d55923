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
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                throw new SandboxException(ErrorCode.DEADLINE_EXCEEDED, "mmdebstrap did not finish within " + timeout);
            }
        } catch (IOException e) {
            p.destroyForcibly();
            throw new SandboxException(ErrorCode.INTERNAL, "reading mmdebstrap's output failed: " + e, e);
        } catch (InterruptedException e) {
            p.destroyForcibly();
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
}
