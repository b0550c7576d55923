package io.paddock.testkit;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs a Node test file of a committed npm project ({@code package.json} with its {@code package-lock.json})
 * with {@code node --test}, after {@code npm ci} when its dependencies are missing or older than the lockfile,
 * and fails unless every Node test passed and at least one ran (a skipped one counts as a failure here: the
 * JUnit test that runs it is the one that sets what it needs).
 */
public final class NodeTests {
    private static final Pattern COUNT = Pattern.compile("^# (pass|fail|skipped|cancelled|todo) (\\d+)$", Pattern.MULTILINE);

    private NodeTests() {
    }

    /** {@code npm ci} in {@code project} unless its node_modules already holds exactly its lockfile's packages. */
    public static synchronized void install(Path project) throws IOException, InterruptedException {
        Path lock = project.resolve("package-lock.json");
        Path stamp = project.resolve("node_modules/.paddock-lock-sha256");
        String sha = sha256(Files.readAllBytes(lock));
        if (Files.exists(stamp) && Files.readString(stamp).equals(sha)) {
            return;
        }
        String out = run(project, List.of("npm", "ci", "--no-audit", "--no-fund"), Map.of(), 600);
        Files.writeString(stamp, sha);
        System.err.println(out);
    }

    /**
     * Runs {@code node --test FILE} in {@code project} with {@code env} added to this process's environment,
     * and returns its output; fails (with that output) unless it passed with no test failed or skipped.
     */
    public static String test(Path project, String file, Map<String, String> env, int timeoutSeconds)
            throws IOException, InterruptedException {
        install(project);
        List<String> argv = new ArrayList<>(List.of("node", "--test", "--test-reporter=tap", file));
        String out = run(project, argv, env, timeoutSeconds);
        System.err.println(out);
        Matcher m = COUNT.matcher(out);
        int pass = -1;
        int bad = 0;
        while (m.find()) {
            int n = Integer.parseInt(m.group(2));
            if (m.group(1).equals("pass")) {
                pass = n;
            } else if (!m.group(1).equals("todo")) {
                bad += n;
            }
        }
        assertThat(pass).as("node tests passed, in:\n" + out).isPositive();
        assertThat(bad).as("node tests failed, skipped or cancelled, in:\n" + out).isZero();
        return out;
    }

    private static String run(Path dir, List<String> argv, Map<String, String> env, int timeoutSeconds)
            throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(argv).directory(dir.toFile()).redirectErrorStream(true);
        pb.environment().putAll(env);
        Path log = Files.createTempFile("paddock-node-", ".log");
        try {
            pb.redirectOutput(log.toFile());
            Process p = pb.start();
            if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                p.waitFor();
                throw new AssertionError(String.join(" ", argv) + " did not finish in " + timeoutSeconds + " s:\n"
                        + Files.readString(log, StandardCharsets.UTF_8));
            }
            String out = Files.readString(log, StandardCharsets.UTF_8);
            if (p.exitValue() != 0) {
                throw new AssertionError(String.join(" ", argv) + " exited with " + p.exitValue() + ":\n" + out);
            }
            return out;
        } finally {
            Files.deleteIfExists(log);
        }
    }

    private static String sha256(byte[] data) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
