package io.paddock.bench.host;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * The Debian image for the podman peer: built once with {@code mmdebstrap --variant=minbase bookworm} into a
 * tarball under the cache directory, imported with {@code podman import}, and reused by later runs.
 */
public final class PodmanImage {
    public static final String NAME = "localhost/paddock-bench/bookworm-minbase:latest";

    private PodmanImage() {
    }

    /** Returns the image name, building and importing it if needed; throws with the reason if it cannot. */
    public static String ensure(Path cacheDir, boolean mayBuild, PrintStream log) throws IOException {
        if (Host.run(Duration.ofSeconds(60), "podman", "image", "exists", NAME).ok()) {
            return NAME;
        }
        Path tar = cacheDir.resolve("bookworm-minbase.tar");
        Path tmp = cacheDir.resolve("bookworm-minbase.tar.tmp");
        // Runs before the format was given left a directory here (mmdebstrap inferred it from ".tmp", and the
        // move kept it); podman import then failed "is a directory" on every later run. Start over instead.
        if (Files.exists(tar, LinkOption.NOFOLLOW_LINKS) && !Files.isRegularFile(tar, LinkOption.NOFOLLOW_LINKS)) {
            log.println("the cached " + tar + " is not a tarball (left by an older harness); rebuilding it");
            delete(tar);
        }
        if (!Files.exists(tar)) {
            if (!mayBuild) {
                throw new IOException("the podman image is not built yet and building was not allowed (--no-build)");
            }
            if (!Host.onPath("mmdebstrap")) {
                throw new IOException("mmdebstrap is not installed (apt-get install -y mmdebstrap)");
            }
            Files.createDirectories(cacheDir);
            log.println("building the podman peer's image: mmdebstrap --variant=minbase bookworm (once; cached in "
                    + tar + ")");
            delete(tmp); // an interrupted build's leftover: mmdebstrap will not write a tarball over a directory
            Host.Result r = Host.run(Duration.ofMinutes(15), "mmdebstrap", "--variant=minbase", "--format=tar",
                    "bookworm", tmp.toString()); // the format: mmdebstrap would infer a directory from ".tmp"
            if (!r.ok()) {
                delete(tmp);
                throw new IOException("mmdebstrap failed: " + Host.shorten(r.output()));
            }
            Files.move(tmp, tar, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        }
        Host.Result r = Host.run(Duration.ofMinutes(5), "podman", "import", tar.toString(), NAME);
        if (!r.ok()) {
            throw new IOException("podman import failed: " + Host.shorten(r.output()));
        }
        return NAME;
    }

    /** Deletes a file, or a directory and everything under it (links are deleted, never followed). */
    static void delete(Path path) throws IOException {
        if (!Files.exists(path, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (Stream<Path> all = Files.walk(path)) {
            for (Path p : (Iterable<Path>) all.sorted(Comparator.reverseOrder())::iterator) {
                Files.deleteIfExists(p);
            }
        }
    }
}
