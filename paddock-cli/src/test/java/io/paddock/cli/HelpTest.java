package io.paddock.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** Every command answers --help and -h with its own usage (a usage error says to try it, so it must work). */
class HelpTest {
    @Test
    void everyCommandHasHelp() {
        CommandLine root = new CommandLine(new Main());
        assertThat(root.getSubcommands()).containsKeys("run", "serve", "create", "exec", "code", "ls", "rm", "cp", "logs", "port", "bench", "volume", "mcp", "audit");
        for (String name : root.getSubcommands().keySet()) {
            if (name.equals("help")) {
                continue;
            }
            for (String flag : new String[] {"--help", "-h"}) {
                StringWriter out = new StringWriter();
                StringWriter err = new StringWriter();
                CommandLine cli = new CommandLine(new Main());
                cli.setOut(new PrintWriter(out));
                cli.setErr(new PrintWriter(err));
                int code = cli.execute(name, flag);
                String primary = root.getSubcommands().get(name).getCommandName();
                assertThat(code).as(name + " " + flag + ": " + err).isZero();
                assertThat(out.toString()).as(name + " " + flag).startsWith("Usage: paddock " + primary);
            }
        }
    }

    @Test
    void volumeSubcommandsHaveHelpAndCreateAndRunTakeVolumes() {
        for (String sub : new String[] {"create", "ls", "rm"}) {
            StringWriter out = new StringWriter();
            CommandLine cli = new CommandLine(new Main());
            cli.setOut(new PrintWriter(out));
            assertThat(cli.execute("volume", sub, "--help")).isZero();
            assertThat(out.toString()).startsWith("Usage: paddock volume " + sub);
        }
        for (String cmd : new String[] {"create", "run"}) {
            StringWriter out = new StringWriter();
            CommandLine cli = new CommandLine(new Main());
            cli.setOut(new PrintWriter(out));
            assertThat(cli.execute(cmd, "--help")).isZero();
            assertThat(out.toString()).contains("--volume=NAME:/PATH[:ro]");
        }
    }

    /** Where builds' RUN steps may connect is said by the daemon's and the local image commands' help. */
    @Test
    void serveAndImageBuildSayWhereRunStepsMayConnect() {
        for (String[] cmd : new String[][] {{"serve", "--help"}, {"image", "build", "--help"}}) {
            StringWriter out = new StringWriter();
            CommandLine cli = new CommandLine(new Main());
            cli.setOut(new PrintWriter(out));
            assertThat(cli.execute(cmd)).isZero();
            assertThat(out.toString().replaceAll("\\s+", " ")).as(String.join(" ", cmd)).contains("--build-allow=ENTRY,...")
                    .contains("apt-sources (the hosts of this host's apt sources)");
        }
    }

    /**
     * The {@code paddock} script's help, version and no-argument forms install nothing, even as root with every
     * tool missing; a command that runs does (which shows the fake apt-get would have seen an install).
     */
    @Test
    void helpAndVersionNeverInstall(@TempDir Path bin) throws Exception {
        Path script = Path.of("..", "paddock").toAbsolutePath().normalize();
        assertThat(script).exists();
        Path calls = bin.resolve("apt-get.calls");
        // A PATH with no JDK, Maven or compiler: only what the scripts themselves use, a root id and an apt-get
        // that records its calls and fails.
        for (String tool : new String[] {"bash", "readlink", "dirname", "sort"}) {
            Files.createSymbolicLink(bin.resolve(tool), whichOnHost(tool));
        }
        stub(bin.resolve("id"), "echo 0");
        stub(bin.resolve("apt-get"), "echo \"$*\" >> '" + calls + "'; exit 1");
        String[][] helps = {{"--help"}, {"--version"}, {"-V"}, {"run", "--help"}, {"run", "-h"}, {"bench", "--help"},
            {"help"}, {"help", "run"}, {}, {"run", "--image", "x", "--help", "--", "sh"}};
        for (String[] args : helps) {
            String err = runScript(script, bin, args);
            assertThat(calls).as("paddock " + String.join(" ", args) + ": " + err).doesNotExist();
            assertThat(err).as("paddock " + String.join(" ", args)).contains("missing:").doesNotContain("installing");
        }
        String err = runScript(script, bin, "run", "--", "--help");
        assertThat(calls).as("paddock run -- --help (a command's argument, so it runs): " + err).exists();
    }

    private static String runScript(Path script, Path bin, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(whichOnHost("bash").toString(), script.toString()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().put("PATH", bin.toString());
        Process p = pb.start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        return out;
    }

    private static void stub(Path path, String body) throws IOException {
        Files.writeString(path, "#!" + whichOnHost("sh") + "\n" + body + "\n");
        Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    private static Path whichOnHost(String tool) {
        for (String dir : System.getenv("PATH").split(":")) {
            Path p = Path.of(dir, tool);
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        throw new AssertionError(tool + " is not on this host's PATH");
    }
}
