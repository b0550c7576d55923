package io.paddock.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;

import static org.assertj.core.api.Assertions.assertThat;

/** Every command answers --help and -h with its own usage (a usage error says to try it, so it must work). */
class HelpTest {
    @Test
    void everyCommandHasHelp() {
        CommandLine root = new CommandLine(new Main());
        assertThat(root.getSubcommands()).containsKeys("run", "serve", "create", "exec", "code", "ls", "rm", "cp", "logs", "port", "bench");
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
}
