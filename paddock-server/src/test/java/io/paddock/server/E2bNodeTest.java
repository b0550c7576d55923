package io.paddock.server;

import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.SandboxInfo;
import io.paddock.SandboxQuery;
import io.paddock.SandboxState;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * E2B's official npm SDKs ({@code e2b}, {@code @e2b/code-interpreter}), unchanged, against a real daemon on
 * loopback with its E2B listener: the {@code node --test} suites of {@code paddock-e2b/src/test/node} (installed
 * with {@code npm ci} from the committed lockfile into that directory's {@code node_modules}, reused while the
 * lockfile is unchanged). The SDKs use a tenant's token; a second tenant checks isolation. Both tiers: the
 * files and code suites run on runc and on runsc. Fails on any failing node test, printing the suites' output.
 */
class E2bNodeTest {
    private static final Path NODE_DIR = Path.of("..", "paddock-e2b", "src", "test", "node").toAbsolutePath().normalize();
    private static final long MAX_UPLOAD = 8L << 20;
    private static Paddock paddock;
    private static PaddockServer server;
    private static String alice;
    private static String bob;

    @BeforeAll
    static void start() {
        paddock = Paddock.local(LocalOptions.builder().maxSandboxes(64).build());
        alice = token();
        bob = token();
        server = PaddockServer.start(ServerOptions.builder().port(0).token(token()).tenant("alice", alice).tenant("bob", bob)
                .e2b("127.0.0.1", 0).e2bTemplate("code-interpreter-v1", "host") // the code image takes minutes to build
                .maxUploadBytes(MAX_UPLOAD).build(), paddock);
    }

    @AfterAll
    static void stop() {
        List<String> left = new ArrayList<>();
        if (server != null) {
            server.close();
        }
        if (paddock != null) {
            for (SandboxInfo i : paddock.list(SandboxQuery.builder().state(SandboxState.RUNNING, SandboxState.PAUSED).build())) {
                left.add(i.id().value() + " " + i.labels());
                paddock.get(i.id()).destroy();
            }
            paddock.close();
        }
        assertThat(left).as("sandboxes the node suites left behind").isEmpty();
    }

    private static String token() {
        byte[] raw = new byte[32];
        new SecureRandom().nextBytes(raw);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
    }

    @Test
    void officialSdksPassTheNodeSuites() throws Exception {
        requireCommand("node");
        requireCommand("npm");
        install();
        String url = server.e2bUrl().orElseThrow().toString();
        List<String> tiers = new ArrayList<>(List.of("runc"));
        if (onPath("runsc")) {
            tiers.add("runsc");
        }
        List<String> argv = new ArrayList<>(List.of("node", "--test", "--test-reporter=spec", "--test-force-exit", "--test-timeout=120000"));
        String only = System.getProperty("e2b.node.tests", "");
        if (!only.isBlank()) { // -De2b.node.tests=test/files.test.mjs,... runs only those suites
            argv.addAll(List.of(only.split(",")));
        }
        Result r = run(argv, Map.of(
                "E2B_API_URL", url, "E2B_SANDBOX_URL", url, "E2B_API_KEY", alice,
                "PADDOCK_E2B_OTHER_KEY", bob, "PADDOCK_E2B_RUNTIMES", String.join(",", tiers),
                "PADDOCK_E2B_MAX_UPLOAD", Long.toString(MAX_UPLOAD)), 240);
        if (r.exit != 0) {
            fail("node --test failed (exit " + r.exit + ") against " + url + ":\n" + r.output);
        }
        System.out.println(r.output);
    }

    /** npm ci, unless node_modules was installed from this very lockfile. */
    private static void install() throws Exception {
        Path lock = NODE_DIR.resolve("package-lock.json");
        Path installed = NODE_DIR.resolve("node_modules/.package-lock.json");
        Path stamp = NODE_DIR.resolve("node_modules/.paddock-lock");
        String want = Files.readString(lock, StandardCharsets.UTF_8);
        if (Files.exists(installed) && Files.exists(stamp) && Files.readString(stamp, StandardCharsets.UTF_8).equals(want)) {
            return;
        }
        Result r = run(List.of("npm", "ci", "--no-audit", "--no-fund"), Map.of(), 300);
        if (r.exit != 0) {
            fail("npm ci failed in " + NODE_DIR + " (exit " + r.exit + "); it needs the npm registry:\n" + r.output);
        }
        Files.writeString(stamp, want, StandardCharsets.UTF_8);
    }

    private static void requireCommand(String command) {
        if (!onPath(command)) {
            fail(command + " is missing: the E2B compatibility tests run E2B's npm SDKs. Install Node.js 18+ and npm"
                    + " (apt-get install -y nodejs npm, or scripts/prereqs.sh test as root)");
        }
    }

    private static boolean onPath(String command) {
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
            if (Files.isExecutable(Path.of(dir, command))) {
                return true;
            }
        }
        return false;
    }

    private record Result(int exit, String output) {
    }

    private static Result run(List<String> argv, Map<String, String> env, long timeoutSeconds) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(argv).directory(NODE_DIR.toFile()).redirectErrorStream(true);
        pb.environment().putAll(env);
        pb.environment().remove("E2B_DOMAIN");
        pb.environment().remove("E2B_DEBUG");
        Process p = pb.start();
        StringBuilder out = new StringBuilder();
        Thread reader = new Thread(() -> {
            try {
                out.append(new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
            } catch (IOException e) {
                out.append("\n(reading the output failed: ").append(e.getMessage()).append(')');
            }
        });
        reader.start();
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            reader.join(5000);
            fail(String.join(" ", argv) + " did not finish within " + timeoutSeconds + " s:\n" + out);
        }
        reader.join(10_000);
        return new Result(p.exitValue(), out.toString());
    }
}
