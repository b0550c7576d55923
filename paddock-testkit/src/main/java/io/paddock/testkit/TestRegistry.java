package io.paddock.testkit;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.fail;

/**
 * A real registry for tests, as paddock-image's tests start it: Debian's {@code docker-registry} serving plain
 * http on a free 127.0.0.1 port and storing into a temporary directory; {@link #pushBusybox} puts a small
 * image there the way the acceptance scripts do (an OCI layout made by {@code umoci} from busybox-static,
 * copied by {@code skopeo}). {@link #close()} kills it and removes the directory. Missing tools are installed
 * with apt-get when the tests run as root; otherwise the test fails saying how (never skipped). Shared by the
 * image layer's, the daemon's and the remote SDK's tests; a registry that wants a password too
 * ({@link #startWithHtpasswd}), or answers upload locations relative to itself ({@link #startWithRelativeUrls}).
 */
public final class TestRegistry implements AutoCloseable {
    private static final List<String> TOOLS = List.of("docker-registry", "skopeo", "umoci", "busybox", "htpasswd");
    private static final String INSTALL = "apt-get install -y docker-registry skopeo umoci busybox-static apache2-utils";

    private final Path dir;
    private final Process process;
    private final int port;
    /** {@code user:password} for skopeo when the registry wants them; null otherwise. */
    private final String credentials;

    private TestRegistry(Path dir, Process process, int port, String credentials) {
        this.dir = dir;
        this.process = process;
        this.port = port;
        this.credentials = credentials;
    }

    public static TestRegistry start() {
        return start(null, null);
    }

    /** A registry that wants {@code user} and {@code password} (htpasswd, bcrypt) for everything. */
    public static TestRegistry startWithHtpasswd(String user, String password) {
        return start(user, password);
    }

    /** A registry that answers upload Locations relative to itself ({@code http.relativeurls}). */
    public static TestRegistry startWithRelativeUrls() {
        return start(null, null, true);
    }

    private static TestRegistry start(String user, String password) {
        return start(user, password, false);
    }

    private static TestRegistry start(String user, String password, boolean relativeUrls) {
        ensureTools();
        try {
            Path dir = Files.createTempDirectory("paddock-registry-");
            String auth = "";
            if (user != null) {
                Process h = new ProcessBuilder("htpasswd", "-Bbn", user, password).redirectErrorStream(true).start();
                String line = new String(h.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
                if (h.waitFor() != 0) {
                    fail("htpasswd failed: " + line);
                }
                Files.writeString(dir.resolve("htpasswd"), line + "\n");
                auth = "auth:\n  htpasswd:\n    realm: test\n    path: " + dir.resolve("htpasswd") + "\n";
            }
            for (int attempt = 0; ; attempt++) {
                int port = freePort();
                Path config = dir.resolve("config.yml");
                Files.writeString(config, "version: 0.1\n"
                        + "log:\n  level: warn\n  accesslog:\n    disabled: true\n"
                        + "storage:\n  filesystem:\n    rootdirectory: " + dir.resolve("storage") + "\n"
                        + "  delete:\n    enabled: true\n"
                        + "http:\n  addr: 127.0.0.1:" + port + "\n  secret: paddock-test\n"
                        + (relativeUrls ? "  relativeurls: true\n" : "") + auth);
                Path log = dir.resolve("registry.log");
                Process p = new ProcessBuilder("docker-registry", "serve", config.toString())
                        .redirectErrorStream(true).redirectOutput(log.toFile()).start();
                if (awaitReady(p, port)) {
                    return new TestRegistry(dir, p, port, user == null ? null : user + ":" + password);
                }
                p.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                if (attempt == 2) {
                    fail("docker-registry did not start; its log:\n" + Files.readString(log));
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot start docker-registry: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** {@code 127.0.0.1:<port>}: the registry part of image references. */
    public String host() {
        return "127.0.0.1:" + port;
    }

    public int port() {
        return port;
    }

    /** Where the registry's filesystem driver keeps the bytes of the blob {@code sha256:<hex>}. */
    public Path blobData(String hex) {
        return dir.resolve("storage/docker/registry/v2/blobs/sha256").resolve(hex.substring(0, 2)).resolve(hex)
                .resolve("data");
    }

    /**
     * Pushes a one-layer busybox image as {@code host()/repositoryAndTag}: {@code /bin/busybox} with
     * {@code sh cat ls echo test mkdir env true id rm sleep} linked to it, {@code /hello.txt} holding {@code hello-from-umoci}, and
     * {@code GREETING=umoci} in its environment.
     */
    public void pushBusybox(String repositoryAndTag) {
        Path work = null;
        try {
            work = Files.createTempDirectory(dir, "umoci-");
            run(work, "umoci", "init", "--layout", "L");
            run(work, "umoci", "new", "--image", "L:t");
            run(work, "umoci", "unpack", "--rootless", "--image", "L:t", "B");
            Path rootfs = work.resolve("B/rootfs");
            Files.createDirectories(rootfs.resolve("bin"));
            Files.createDirectories(rootfs.resolve("tmp"));
            Files.copy(busybox(), rootfs.resolve("bin/busybox"));
            for (String c : List.of("sh", "cat", "ls", "echo", "test", "mkdir", "env", "true", "id", "rm", "sleep")) {
                Files.createSymbolicLink(rootfs.resolve("bin").resolve(c), Path.of("busybox"));
            }
            Files.writeString(rootfs.resolve("hello.txt"), "hello-from-umoci\n");
            run(work, "umoci", "repack", "--image", "L:t", "B");
            run(work, "umoci", "config", "--image", "L:t", "--config.env", "GREETING=umoci");
            List<String> copy = new ArrayList<>(List.of("skopeo", "copy", "-q", "--dest-tls-verify=false"));
            if (credentials != null) {
                copy.add("--dest-creds=" + credentials);
            }
            copy.addAll(List.of("oci:L:t", "docker://" + host() + "/" + repositoryAndTag));
            run(work, copy.toArray(String[]::new));
        } catch (IOException e) {
            throw new IllegalStateException("cannot make the busybox image: " + e, e);
        } finally {
            if (work != null) {
                deleteTree(work);
            }
        }
    }

    /** Whether the registry holds {@code repository:tag} (a manifest GET answers 200). */
    public boolean has(String repository, String tag) {
        try {
            HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://" + host() + "/v2/" + repository + "/manifests/" + tag))
                    .header("Accept", "application/vnd.oci.image.manifest.v1+json");
            if (credentials != null) {
                b.header("Authorization", "Basic " + java.util.Base64.getEncoder()
                        .encodeToString(credentials.getBytes(StandardCharsets.UTF_8)));
            }
            HttpResponse<Void> r = HttpClient.newHttpClient().send(b.build(), HttpResponse.BodyHandlers.discarding());
            return r.statusCode() == 200;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private static Path busybox() {
        for (String p : List.of("/bin/busybox", "/usr/bin/busybox")) {
            if (Files.isRegularFile(Path.of(p))) {
                return Path.of(p);
            }
        }
        throw new IllegalStateException("no busybox binary: " + INSTALL);
    }

    private static boolean awaitReady(Process p, int port) throws InterruptedException {
        HttpClient c = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (System.nanoTime() < deadline) {
            if (!p.isAlive()) {
                return false;
            }
            try {
                HttpResponse<Void> r = c.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v2/"))
                        .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.discarding());
                if (r.statusCode() == 200 || r.statusCode() == 401) {
                    return true;
                }
            } catch (IOException notYet) {
                // still starting
            }
            Thread.sleep(50);
        }
        return false;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            return s.getLocalPort();
        }
    }

    /** Installs the tools as root when one is missing; fails the test saying how otherwise. */
    private static synchronized void ensureTools() {
        if (missingTools().isEmpty()) {
            return;
        }
        String outcome = "";
        if (isRoot()) {
            try {
                Process p = new ProcessBuilder("/bin/sh", "-c", "DEBIAN_FRONTEND=noninteractive " + INSTALL
                        + " || (apt-get update && DEBIAN_FRONTEND=noninteractive " + INSTALL + ")")
                        .redirectErrorStream(true).start();
                String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                if (p.waitFor() != 0) {
                    outcome = "; installing them as root failed:\n" + tail(out, 2000);
                }
            } catch (IOException e) {
                outcome = "; installing them as root failed: " + e;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        List<String> missing = missingTools();
        if (!missing.isEmpty()) {
            fail("the image tests need " + missing + " on the PATH: on Debian or Ubuntu run `sudo " + INSTALL + "`" + outcome);
        }
    }

    private static List<String> missingTools() {
        List<String> missing = new ArrayList<>();
        String path = System.getenv().getOrDefault("PATH", "/usr/bin:/bin");
        for (String tool : TOOLS) {
            boolean found = Stream.of(path.split(":")).anyMatch(d -> !d.isEmpty() && Files.isExecutable(Path.of(d, tool)));
            if (!found) {
                missing.add(tool);
            }
        }
        return missing;
    }

    private static boolean isRoot() {
        try {
            return ((Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid")) == 0;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /** Runs a tool, failing the test with its output when it exits non-zero. */
    /** Runs a command in {@code cwd}, failing the test with its output unless it exits 0; returns its output. */
    public static String run(Path cwd, String... command) {
        try {
            Process p = new ProcessBuilder(command).directory(cwd.toFile()).redirectErrorStream(true).start();
            p.getOutputStream().close();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                fail(String.join(" ", command) + " did not finish within 60 s");
            }
            if (p.exitValue() != 0) {
                fail(String.join(" ", command) + " exited " + p.exitValue() + ":\n" + tail(out, 4000));
            }
            return out;
        } catch (IOException e) {
            throw new IllegalStateException("cannot run " + command[0] + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static String tail(String s, int n) {
        return s.length() <= n ? s : s.substring(s.length() - n);
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        deleteTree(dir);
    }

    public static void deleteTree(Path root) {
        if (!Files.exists(root, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (Stream<Path> s = Files.walk(root)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot remove " + root + ": " + e, e);
        }
    }
}
