package io.paddock.server;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * openapi.json passes a linter nobody here wrote: Redocly's CLI ({@code @redocly/cli lint}) with its recommended
 * rules, pinned by the node project in {@code src/test/openapi-lint} (package-lock.json). Any error or warning
 * fails the test with the linter's output; the rules set aside, each with its reason, are in that directory's
 * {@code redocly.yaml} and {@code .redocly.lint-ignore.yaml}. Needs Node.js (20.19+) and npm, and the npm
 * registry for {@code npm ci} unless npm's cache has the package; {@code scripts/prereqs.sh test} installs them.
 */
class OpenApiLintTest {
    private static final Path PROJECT = Path.of("src/test/openapi-lint");
    /** Relative to {@link #PROJECT}, as .redocly.lint-ignore.yaml names it. */
    private static final String DOCUMENT = "../../main/resources/io/paddock/server/openapi.json";
    private static final Pattern WARNINGS = Pattern.compile("You have \\d+ warnings?");

    private record Run(int exitCode, String output) {
    }

    @Test
    void redoclyFindsNoProblem() throws Exception {
        assertThat(PROJECT.resolve(DOCUMENT)).isRegularFile();
        String npm = npmVersion();
        String node = run(List.of("node", "--version"), 60).output().strip();
        Matcher v = Pattern.compile("v(\\d+)\\.(\\d+)\\..*").matcher(node);
        int major = v.matches() ? Integer.parseInt(v.group(1)) : 0;
        int minor = v.matches() ? Integer.parseInt(v.group(2)) : 0;
        assertThat(major == 20 && minor >= 19 || major == 22 && minor >= 12 || major > 22) // its package.json's engines
                .as("@redocly/cli 2.77 needs Node.js 20.19+ or 22.12+; node --version says " + node).isTrue();
        Run install = run(List.of("npm", "ci", "--no-audit", "--no-fund"), 300);
        if (install.exitCode() != 0) {
            fail("npm ci failed in " + PROJECT.toAbsolutePath() + " (npm " + npm + "; @redocly/cli needs Node.js 20.19+):\n"
                    + install.output());
        }
        Run lint = run(List.of("npx", "--no-install", "@redocly/cli", "lint", "--format=stylish", DOCUMENT), 120);
        if (lint.exitCode() != 0 || WARNINGS.matcher(lint.output()).find()
                || !lint.output().contains("Your API description is valid")) {
            fail("redocly lint found problems in openapi.json (fix the document; a rule that does not fit is set aside "
                    + "with its reason in " + PROJECT.resolve("redocly.yaml") + " or .redocly.lint-ignore.yaml there):\n"
                    + lint.output());
        }
    }

    /** npm's version; fails with what to install when npm is missing. */
    private static String npmVersion() throws Exception {
        try {
            Run v = run(List.of("npm", "--version"), 60);
            assertThat(v.exitCode()).as("npm --version: " + v.output()).isZero();
            return v.output().strip();
        } catch (IOException e) {
            return fail("npm is missing, and this test needs it (with Node.js 20.19 or later) to run @redocly/cli: "
                    + "run scripts/prereqs.sh test as root, or install nodejs and npm (" + e.getMessage() + ")");
        }
    }

    private static Run run(List<String> command, long timeoutSeconds) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(new ArrayList<>(command)).directory(PROJECT.toFile()).redirectErrorStream(true);
        Map<String, String> env = pb.environment();
        env.put("NO_COLOR", "1");
        env.put("REDOCLY_TELEMETRY", "off");
        env.put("REDOCLY_SUPPRESS_UPDATE_NOTICE", "true");
        env.put("npm_config_update_notifier", "false");
        Process p = pb.start();
        p.getOutputStream().close();
        byte[][] out = new byte[1][];
        Thread reader = new Thread(() -> {
            try {
                out[0] = p.getInputStream().readAllBytes();
            } catch (IOException e) {
                out[0] = ("(reading its output failed: " + e + ")").getBytes(StandardCharsets.UTF_8);
            }
        });
        reader.start();
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            reader.join(5_000);
            return fail(String.join(" ", command) + " did not finish in " + timeoutSeconds + " s");
        }
        reader.join();
        return new Run(p.exitValue(), new String(out[0], StandardCharsets.UTF_8));
    }
}
