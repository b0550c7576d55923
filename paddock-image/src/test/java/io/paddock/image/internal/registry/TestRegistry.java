package io.paddock.image.internal.registry;

import io.paddock.image.internal.oci.Digest;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.fail;

/**
 * A real registry for tests: Debian's {@code docker-registry} (the distribution project's reference
 * registry) serving plain http on a free 127.0.0.1 port, storing into a temporary directory, optionally with
 * an htpasswd (bcrypt) user. {@link #close()} kills it and removes the directory. When the tools are missing
 * and the tests run as root they are installed with apt-get; otherwise the test fails saying how to install
 * them (never skipped).
 */
final class TestRegistry implements AutoCloseable {
    static final List<String> TOOLS = List.of("docker-registry", "skopeo", "umoci", "htpasswd");
    private static final String INSTALL = "apt-get install -y docker-registry skopeo umoci apache2-utils";

    private final Path dir;
    private final Process process;
    private final int port;

    private TestRegistry(Path dir, Process process, int port) {
        this.dir = dir;
        this.process = process;
        this.port = port;
    }

    static TestRegistry start() {
        return start(null, null, false);
    }

    static TestRegistry startWithHtpasswd(String user, String password) {
        return start(user, password, false);
    }

    /** A registry that answers upload Locations relative to itself (http.relativeurls). */
    static TestRegistry startWithRelativeUrls() {
        return start(null, null, true);
    }

    private static TestRegistry start(String user, String password, boolean relativeUrls) {
        ensureTools();
        Path dir;
        try {
            dir = Files.createTempDirectory("paddock-registry-");
            StringBuilder extra = new StringBuilder();
            if (user != null) {
                String line = run(dir, "htpasswd", "-Bbn", user, password).strip();
                Files.writeString(dir.resolve("htpasswd"), line + "\n");
                extra.append("auth:\n  htpasswd:\n    realm: test\n    path: ").append(dir.resolve("htpasswd")).append('\n');
            }
            for (int attempt = 0; attempt < 3; attempt++) {
                int port = freePort();
                Path config = dir.resolve("config.yml");
                Files.writeString(config, "version: 0.1\n"
                        + "log:\n  level: warn\n  accesslog:\n    disabled: true\n"
                        + "storage:\n  filesystem:\n    rootdirectory: " + dir.resolve("storage") + "\n"
                        + "  delete:\n    enabled: true\n"
                        + "http:\n  addr: 127.0.0.1:" + port + "\n  secret: paddock-test\n"
                        + (relativeUrls ? "  relativeurls: true\n" : "")
                        + extra);
                Path log = dir.resolve("registry.log");
                Process p = new ProcessBuilder("docker-registry", "serve", config.toString())
                        .redirectErrorStream(true).redirectOutput(log.toFile()).start();
                if (awaitReady(p, port)) {
                    return new TestRegistry(dir, p, port);
                }
                p.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                if (attempt == 2) {
                    fail("docker-registry did not start; its log:\n" + Files.readString(log));
                }
            }
            throw new IllegalStateException("unreachable");
        } catch (IOException e) {
            throw new IllegalStateException("cannot start docker-registry: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
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
    static synchronized void ensureTools() {
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
            fail("the registry tests need " + missing + " on the PATH: on Debian or Ubuntu run `sudo " + INSTALL + "`"
                    + outcome);
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

    /** Runs a tool, failing the test with its output when it exits non-zero; returns stdout and stderr. */
    static String run(Path cwd, String... command) {
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

    /** {@code 127.0.0.1:<port>}: the registry part of image references. */
    String host() {
        return "127.0.0.1:" + port;
    }

    int port() {
        return port;
    }

    Path dir() {
        return dir;
    }

    /** Where the registry's filesystem driver keeps a blob's bytes. */
    Path blobData(Digest d) {
        return dir.resolve("storage/docker/registry/v2/blobs/sha256").resolve(d.hex().substring(0, 2))
                .resolve(d.hex()).resolve("data");
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

    static void deleteTree(Path root) {
        if (!Files.exists(root)) {
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
