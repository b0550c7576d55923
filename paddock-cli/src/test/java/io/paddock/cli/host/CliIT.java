package io.paddock.cli.host;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs the real {@code paddock} command (the shaded jar the build produced) as a user would, against the
 * real engine and a real daemon on loopback, and checks its output and exit codes.
 */
class CliIT {
    private static final Path JAR = Path.of(System.getProperty("paddock.jar", "target/paddock.jar"));

    @TempDir
    static Path dataDir;
    private static Process daemon;
    private static String url;
    private static String token;
    /** A tenant of the daemon (dataDir/tenants): it sees only the sandboxes it creates. */
    private static final String ALICE = "alice-token-" + "Q7v2".repeat(8);

    record Result(int code, String out, String err) {
    }

    static Result paddock(Map<String, String> env, String stdin, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-jar", JAR.toString()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().putAll(env);
        Path out = Files.createTempFile("paddock-cli-out", ".txt");
        Path err = Files.createTempFile("paddock-cli-err", ".txt");
        pb.redirectOutput(out.toFile()).redirectError(err.toFile());
        Process p = pb.start();
        if (stdin != null) {
            p.getOutputStream().write(stdin.getBytes(StandardCharsets.UTF_8));
        }
        p.getOutputStream().close();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("paddock " + String.join(" ", args) + " did not finish");
        }
        Result r = new Result(p.exitValue(), Files.readString(out), Files.readString(err));
        Files.delete(out);
        Files.delete(err);
        return r;
    }

    static Result paddock(String... args) throws IOException, InterruptedException {
        return paddock(Map.of(), null, args);
    }

    static Result remote(String... args) throws IOException, InterruptedException {
        return paddock(Map.of("PADDOCK_URL", url, "PADDOCK_TOKEN", token), null, args);
    }

    private static int port;

    /** Starts {@code paddock serve} on the test's port and data directory; waits until it listens. */
    static Process serve(String log) throws Exception {
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-jar",
                JAR.toString(), "serve", "--listen", "127.0.0.1:" + port, "--data-dir", dataDir.toString())
                .redirectErrorStream(true).redirectOutput(dataDir.resolve(log).toFile()).start();
        long until = System.nanoTime() + 60_000_000_000L;
        while (System.nanoTime() < until && !Files.readString(dataDir.resolve(log)).contains("listening on")) {
            Thread.sleep(100);
        }
        assertThat(Files.readString(dataDir.resolve(log))).contains("listening on " + url);
        return p;
    }

    @BeforeAll
    static void startDaemon() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        url = "http://127.0.0.1:" + port;
        Path tenants = dataDir.resolve("tenants");
        Files.writeString(tenants, "# NAME TOKEN\nalice " + ALICE + "\n");
        Files.setPosixFilePermissions(tenants, java.util.Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE));
        daemon = serve("serve.log");
        assertThat(Files.readString(dataDir.resolve("serve.log"))).contains("loaded 1 tenant from " + tenants)
                .doesNotContain(ALICE);
        assertThat(Files.readString(dataDir.resolve("serve.log")))
                .doesNotContain(Files.exists(dataDir.resolve("token")) ? Files.readString(dataDir.resolve("token")).trim() : "\0");
        token = Files.readString(dataDir.resolve("token")).trim();
        assertThat(Files.getPosixFilePermissions(dataDir.resolve("token")))
                .containsExactlyInAnyOrder(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE);
    }

    @AfterAll
    static void stopDaemon() throws Exception {
        if (daemon != null) {
            Result left = remote("ls", "--json");
            daemon.destroy();
            daemon.waitFor(30, TimeUnit.SECONDS);
            assertThat(left.out().trim()).as("tests leave no sandbox on the daemon").isEqualTo("[ ]");
        }
    }

    /**
     * {@code paddock mcp} from the shaded jar, over the daemon as a tenant, driven by the official MCP TypeScript
     * SDK's client (paddock-mcp's Node project): stdout carries the protocol alone, and every tool works remotely.
     */
    @Test
    void mcpServesTheToolsOnStdioOverTheDaemon() throws Exception {
        String argv = "[\"" + Path.of(System.getProperty("java.home"), "bin", "java") + "\",\"-jar\",\""
                + JAR.toAbsolutePath() + "\",\"mcp\"]";
        io.paddock.testkit.NodeTests.test(Path.of("..", "paddock-mcp", "src", "test", "node").toAbsolutePath().normalize(),
                "stdio.test.mjs", Map.of("PADDOCK_MCP_COMMAND", argv, "PADDOCK_URL", url, "PADDOCK_TOKEN", ALICE), 300);
    }

    @Test
    void runStreamsOutputAndPassesTheExitCode() throws Exception {
        Result hello = paddock("run", "--", "echo", "hello");
        assertThat(hello.code()).isZero();
        assertThat(hello.out()).isEqualTo("hello\n");
        Result code = paddock("run", "--", "sh", "-c", "echo out; echo err >&2; exit 7");
        assertThat(code.code()).isEqualTo(7);
        assertThat(code.out()).isEqualTo("out\n");
        assertThat(code.err()).isEqualTo("err\n");
        assertThat(paddock("run", "--image", "host", "--lang", "python", "--code", "print(6*7)").out()).isEqualTo("42\n");
        assertThat(paddock(Map.of(), "from stdin", "run", "-i", "--", "cat").out()).isEqualTo("from stdin");
        // -t: a terminal of $COLUMNS x $LINES when there is none here; one stream, the terminal's line endings
        Result tty = paddock(Map.of("COLUMNS", "90", "LINES", "33"), null, "run", "-t", "--", "sh", "-c",
                "stty size; echo err >&2; test -t 0 && exit 3");
        assertThat(tty.out()).isEqualTo("33 90\r\nerr\r\n");
        assertThat(tty.code()).isEqualTo(3);
    }

    @Test
    void runReportsOomAndTimeoutWithConventionalCodes() throws Exception {
        Result oom = paddock("run", "--memory", "64m", "--", "python3", "-c", "b = bytearray(512 << 20)");
        assertThat(oom.code()).isEqualTo(137);
        assertThat(oom.err()).contains("out of memory");
        Result slow = paddock("run", "--timeout", "1s", "--", "sh", "-c", "trap '' TERM; sleep 100");
        assertThat(slow.code()).isEqualTo(124);
        assertThat(slow.err()).contains("timed out after 1s");
    }

    @Test
    void runCodeInAnyLanguageAndSaveItsArtifacts() throws Exception {
        Path out = dataDir.resolve("artifacts");
        Result py = paddock("run", "--image", "host", "--lang", "python", "--artifacts", out.toString(), "--code", String.join("\n",
                "import matplotlib.pyplot as plt, os",
                "plt.plot([1, 3, 2]); plt.show()",
                "os.makedirs(os.environ['PADDOCK_ARTIFACTS_DIR'] + '/sub')",
                "open(os.environ['PADDOCK_ARTIFACTS_DIR'] + '/sub/r.csv', 'w').write('a,b\\n')",
                "print('hi')",
                "6 * 7"));
        assertThat(py.code()).as(py.err()).isZero();
        assertThat(py.out()).isEqualTo("hi\n42\n");
        assertThat(py.err()).contains("saved 1 plot and 1 artifact in " + out.toRealPath());
        byte[] png = Files.readAllBytes(out.resolve("plot-1.png"));
        assertThat(png).startsWith(0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n');
        assertThat(Files.readString(out.resolve("sub/r.csv"))).isEqualTo("a,b\n");

        Result c = paddock(Map.of(), "#include <stdio.h>\nint main(void) { puts(\"from c\"); return 3; }\n",
                "run", "--image", "host", "--lang", "c", "--code", "-");
        assertThat(c.out()).isEqualTo("from c\n");
        assertThat(c.code()).isEqualTo(3);
        Result broken = paddock("run", "--image", "host", "--lang", "c", "--code", "int main(void) { return x; }");
        assertThat(broken.code()).isEqualTo(1);
        assertThat(broken.err()).contains("undeclared").contains("compiling failed");
        Result slow = paddock("run", "--image", "host", "--lang", "python", "--timeout", "1s", "--code", "while True: pass");
        assertThat(slow.code()).isEqualTo(124);
        assertThat(slow.err()).contains("timed out after 1s");
    }

    /** {@code paddock code} prints a cell's output as it comes: the first line long before the cell ends. */
    private static void assertLive(String id) throws Exception {
        List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-jar",
                JAR.toString(), "code", id, "--context", "nb", "--code",
                "import time\nprint('first', flush=True)\ntime.sleep(1.5)\nprint('second', flush=True)");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD);
        pb.environment().putAll(Map.of("PADDOCK_URL", url, "PADDOCK_TOKEN", token));
        Process p = pb.start();
        p.getOutputStream().close();
        try (java.io.BufferedReader out = new java.io.BufferedReader(
                new java.io.InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            assertThat(out.readLine()).isEqualTo("first");
            long first = System.nanoTime();
            assertThat(out.readLine()).isEqualTo("second");
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(p.exitValue()).isZero();
            assertThat(System.nanoTime() - first).as("ns between the first line and the end")
                    .isGreaterThan(1_000_000_000L);
        } finally {
            p.destroyForcibly();
        }
    }

    @Test
    void codeCellsRunInADaemonContextThatPersistsBetweenInvocations() throws Exception {
        String id = remote("create", "--memory", "512m").out().trim();
        try {
            assertThat(remote("code", id, "--lang", "python", "--code", "print(6 * 7)").out()).isEqualTo("42\n");
            Result first = remote("code", id, "--context", "nb", "--lang", "python", "--code", "import math\nx = 41");
            assertThat(first.code()).as(first.err()).isZero();
            assertThat(remote("code", id, "--context", "nb", "--code", "math.floor(x + 1.5)").out()).isEqualTo("42\n");
            Result err = remote("code", id, "--context", "nb", "--code", "undefined_name");
            assertThat(err.code()).isEqualTo(1);
            assertThat(err.err()).contains("NameError");
            Path out = dataDir.resolve("cell-artifacts");
            Result plot = remote("code", id, "--context", "nb", "--artifacts", out.toString(), "--code",
                    "import matplotlib.pyplot as plt\nplt.plot([x, 1])");
            assertThat(plot.code()).as(plot.err()).isZero();
            assertThat(Files.readAllBytes(out.resolve("plot-1.png"))).startsWith(0x89, 'P', 'N', 'G');
            assertLive(id);
            assertThat(remote("code", id, "--contexts").out()).contains("nb").contains("python");
            Result langs = remote("code", id, "--languages");
            assertThat(langs.code()).as(langs.err()).isZero();
            assertThat(langs.out()).startsWith("LANGUAGE").containsPattern("(?m)^python\\s+py,python3\\s+yes\\s+yes\\s+pip")
                    .containsPattern("(?m)^c\\s").doesNotContain("cobol");
            assertThat(remote("code", id, "--context", "nb", "--restart").code()).isZero();
            assertThat(remote("code", id, "--context", "nb", "--code", "'x' in dir()").out()).isEqualTo("False\n");
            assertThat(remote("code", id, "--context", "nb", "--remove").code()).isZero();
            Result gone = remote("code", id, "--context", "nb", "--code", "1");
            assertThat(gone.code()).isEqualTo(2);
            assertThat(gone.err()).contains("no context 'nb'").contains("--lang");
            Result unknown = remote("code", id, "--lang", "cobol", "--code", "x");
            assertThat(unknown.code()).isEqualTo(2);
            assertThat(unknown.err()).contains("unknown language 'cobol'");
        } finally {
            assertThat(remote("rm", id).code()).isZero();
        }
    }

    @Test
    void badUsageSaysWhatIsWrong() throws Exception {
        Result size = paddock("run", "--memory", "lots", "--", "true");
        assertThat(size.code()).isEqualTo(2);
        assertThat(size.err()).contains("memory").contains("not a size");
        Result lang = paddock("run", "--lang", "cobol", "--code", "x");
        assertThat(lang.code()).isEqualTo(2);
        assertThat(lang.err()).contains("unknown language 'cobol'");
        Result missing = paddock("run", "--", "no-such-command");
        assertThat(missing.code()).isEqualTo(127);
        assertThat(paddock("--version").out()).startsWith("paddock ");
    }

    @Test
    void daemonCommandsCreateExecListCopyLogsRemove() throws Exception {
        Result created = remote("create", "--memory", "128m", "--label", "suite=cli", "--name", "cli-test",
                "--", "sh", "-c", "echo from-entrypoint; exec sleep 600");
        assertThat(created.code()).as(created.err()).isZero();
        String id = created.out().trim();
        assertThat(id).matches("sb-[a-z2-7]{26}");
        try {
            assertThat(remote("exec", id, "--", "python3", "-c", "print(6*7)").out()).isEqualTo("42\n");
            assertThat(remote("exec", "cli-test", "--", "sh", "-c", "exit 5").code()).isEqualTo(5);
            assertThat(paddock(Map.of("PADDOCK_URL", url, "PADDOCK_TOKEN", token), "piped", "exec", "-i", id, "--", "cat").out())
                    .isEqualTo("piped");
            // -t without a terminal here: $COLUMNS x $LINES
            assertThat(paddock(Map.of("PADDOCK_URL", url, "PADDOCK_TOKEN", token, "COLUMNS", "100", "LINES", "40"), null,
                    "exec", "-t", id, "--", "sh", "-c", "test -t 0 && test -t 1 && stty size").out()).isEqualTo("40 100\r\n");
            assertThat(typedIntoATerminal(id)).contains("33 77\r\n", "hi2\r\n", "rc=4").doesNotContain("-icanon");

            Result ls = remote("ls", "--label", "suite=cli");
            assertThat(ls.out()).contains(id).contains("cli-test").contains("RUNNING");
            assertThat(remote("ls", "--json", "--label", "suite=cli").out()).contains("\"id\" : \"" + id + "\"");

            Path local = dataDir.resolve("up.txt");
            Files.writeString(local, "uploaded");
            assertThat(remote("cp", local.toString(), id + ":/workspace/").code()).isZero();
            assertThat(remote("exec", id, "--", "cat", "/workspace/up.txt").out()).isEqualTo("uploaded");
            Path back = dataDir.resolve("down.txt");
            assertThat(remote("cp", id + ":/workspace/up.txt", back.toString()).code()).isZero();
            assertThat(Files.readString(back)).isEqualTo("uploaded");

            long until = System.nanoTime() + 10_000_000_000L;
            Result logs;
            do {
                logs = remote("logs", id);
            } while (!logs.out().contains("from-entrypoint") && System.nanoTime() < until);
            assertThat(logs.out()).isEqualTo("from-entrypoint\n");
        } finally {
            Result rm = remote("rm", id);
            assertThat(rm.code()).isZero();
            assertThat(rm.out().trim()).isEqualTo(id);
        }
        assertThat(remote("rm", "sb-" + "c".repeat(26)).code()).isEqualTo(1);
    }

    /** ATTACKS.md R1 at the daemon level: SIGKILL the real daemon process; a new one adopts its sandboxes. */
    @Test
    void sandboxesSurviveTheDaemonBeingKilled() throws Exception {
        String id = remote("create", "--memory", "128m", "--label", "suite=crash").out().trim();
        assertThat(remote("exec", id, "--", "sh", "-c", "echo kept > /workspace/kept").code()).isZero();
        daemon.destroyForcibly();
        daemon.waitFor(30, TimeUnit.SECONDS);
        assertThat(remote("ls").code()).as("the daemon is down").isEqualTo(125);
        daemon = serve("serve-2.log");
        Result ls = remote("ls", "--label", "suite=crash");
        assertThat(ls.out()).contains(id).contains("RUNNING");
        assertThat(remote("exec", id, "--", "cat", "/workspace/kept").out()).isEqualTo("kept\n");
        assertThat(remote("rm", id).code()).isZero();
    }

    /**
     * {@code exec -t} as a person at a terminal uses it: script(1) gives the CLI a real terminal of 77 x 33,
     * lines are typed into an interactive bash, and afterwards the local terminal is back in canonical mode.
     */
    private static String typedIntoATerminal(String id) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java") + " -jar " + JAR;
        String inner = "stty rows 33 cols 77; " + java + " exec -t " + id + " -- sh -c 'stty size; exec bash --norc -i';"
                + " echo rc=$?; stty -a";
        ProcessBuilder pb = new ProcessBuilder("script", "-qec", inner, "/dev/null").redirectErrorStream(true);
        pb.environment().putAll(Map.of("PADDOCK_URL", url, "PADDOCK_TOKEN", token));
        Process p = pb.start();
        java.io.InputStream out = p.getInputStream();
        StringBuilder seen = new StringBuilder();
        byte[] buf = new byte[4096];
        // Type only once the shell is there: a raw terminal passes keys on as they come.
        for (String line : List.of("echo hi$((1+1))\n", "exit 4\n")) {
            long until = System.nanoTime() + 60_000_000_000L;
            while (!seen.toString().contains(line.startsWith("echo") ? "$ " : "hi2\r\n") && System.nanoTime() < until) {
                int n = out.read(buf);
                if (n < 0) {
                    break;
                }
                seen.append(new String(buf, 0, n, StandardCharsets.UTF_8));
            }
            p.getOutputStream().write(line.getBytes(StandardCharsets.UTF_8));
            p.getOutputStream().flush();
        }
        seen.append(new String(out.readAllBytes(), StandardCharsets.UTF_8));
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).as(seen.toString()).isTrue();
        return seen.toString();
    }

    /** ATTACKS.md A62 through the CLI: a tenant's token lists, names and reaches only its own sandboxes. */
    @Test
    void aTenantSeesOnlyItsOwnSandboxes() throws Exception {
        Map<String, String> alice = Map.of("PADDOCK_URL", url, "PADDOCK_TOKEN", ALICE);
        String theirs = remote("create", "--memory", "128m", "--label", "suite=tenants").out().trim();
        Result created = paddock(alice, null, "create", "--memory", "128m", "--label", "suite=tenants", "--name", "web");
        assertThat(created.code()).as(created.err()).isZero();
        String mine = created.out().trim();
        try {
            assertThat(paddock(alice, null, "ls").out()).contains(mine).contains("web").doesNotContain(theirs);
            assertThat(paddock(alice, null, "exec", "web", "--", "echo", "hi").out()).isEqualTo("hi\n");
            Result foreign = paddock(alice, null, "exec", theirs, "--", "true");
            assertThat(foreign.code()).isEqualTo(125);
            assertThat(foreign.err()).contains("no sandbox " + theirs);
            assertThat(paddock(alice, null, "rm", theirs).code()).isEqualTo(1);
            // the operator sees both; the tenant's name carries its prefix there
            assertThat(remote("ls", "--label", "suite=tenants").out()).contains(mine, theirs, "alice-web");
        } finally {
            assertThat(paddock(alice, null, "rm", mine).code()).isZero();
            assertThat(remote("rm", theirs).code()).isZero();
        }
    }

    /**
     * {@code paddock audit}, as the acceptance runs it: a create with a secret, an exec and a destroy are there by
     * id, the secret is not (neither in what the command prints nor in the file); a tenant reads only its own.
     */
    @Test
    void auditShowsWhatChangedWithoutSecretsAndATenantReadsOnlyItsOwn() throws Exception {
        String secret = "topsecret-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
        Result created = remote("create", "--memory", "128m", "--secret", "ACC_SECRET=" + secret, "--label", "acc=ops");
        assertThat(created.code()).as(created.err()).isZero();
        String id = created.out().trim();
        assertThat(remote("exec", id, "--", "true").code()).isZero();
        assertThat(remote("rm", id).code()).isZero();
        Map<String, String> alice = Map.of("PADDOCK_URL", url, "PADDOCK_TOKEN", ALICE);
        Result hers = paddock(alice, null, "create", "--memory", "128m");
        assertThat(hers.code()).as(hers.err()).isZero();
        assertThat(paddock(alice, null, "rm", hers.out().trim()).code()).isZero();

        Result json = remote("audit", "--json");
        assertThat(json.code()).as(json.err()).isZero();
        List<String> lines = json.out().lines().toList();
        assertThat(lines).allSatisfy(l -> assertThat(l).startsWith("{").endsWith("}"));
        assertThat(lines).anySatisfy(l -> assertThat(l).contains("\"action\":\"create_sandbox\"", id))
                .anySatisfy(l -> assertThat(l).contains("\"action\":\"exec_stream\"", id))
                .anySatisfy(l -> assertThat(l).contains("\"action\":\"delete_sandbox\"", id));
        assertThat(json.out()).doesNotContain(secret).contains(hers.out().trim());
        try (java.util.stream.Stream<Path> files = Files.list(dataDir)) {
            for (Path f : files.filter(f -> f.getFileName().toString().startsWith("audit.log")).toList()) {
                assertThat(Files.readString(f)).doesNotContain(secret).doesNotContain(ALICE).doesNotContain(token);
            }
        }
        Result table = remote("audit", "--sandbox", id, "--since", "1h");
        assertThat(table.code()).as(table.err()).isZero();
        assertThat(table.out().lines().toList()).hasSize(4); // the heading, create, exec stream, delete
        assertThat(table.out()).contains("(operator)", "create_sandbox", "delete_sandbox", "OK");
        assertThat(remote("audit", "--action", "delete_sandbox", "--limit", "1", "--json").out().lines().toList()).hasSize(1);

        Result own = paddock(alice, null, "audit", "--json");
        assertThat(own.code()).as(own.err()).isZero();
        assertThat(own.out()).contains(hers.out().trim()).doesNotContain(id);
        assertThat(own.out().lines().toList()).isNotEmpty().allSatisfy(l -> assertThat(l).contains("\"tenant\":\"alice\""));

        Result bad = remote("audit", "--since", "last tuesday");
        assertThat(bad.code()).isEqualTo(2);
        assertThat(bad.err()).contains("since");
        Result badLimit = remote("audit", "--limit", "0");
        assertThat(badLimit.code()).isEqualTo(2);
        assertThat(badLimit.err()).contains("limit");
    }

    @Test
    void remoteCommandsExplainAMissingTokenOrDaemon() throws Exception {
        Result wrong = paddock(Map.of("PADDOCK_URL", url, "PADDOCK_TOKEN", "tok-Zq81xWrong"), null, "ls");
        assertThat(wrong.code()).isEqualTo(125);
        assertThat(wrong.err()).isNotBlank().doesNotContain("tok-Zq81xWrong");
        Result down = paddock(Map.of("PADDOCK_URL", "http://127.0.0.1:1", "PADDOCK_TOKEN", token), null, "ls");
        assertThat(down.code()).isEqualTo(125);
        assertThat(down.err()).contains("127.0.0.1:1").doesNotContain(token);
    }
}
