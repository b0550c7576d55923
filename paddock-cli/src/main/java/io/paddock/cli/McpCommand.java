package io.paddock.cli;

import io.paddock.Paddock;
import io.paddock.mcp.PaddockMcp;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.io.OutputStream;
import java.io.PrintStream;
import java.util.concurrent.Callable;

/**
 * {@code paddock mcp}: Paddock's sandboxes as MCP tools for an AI agent, over stdio. stdout carries only the
 * protocol: everything else this process prints goes to stderr.
 */
@Command(name = "mcp", sortOptions = false,
        description = {"Serve Paddock's sandboxes as Model Context Protocol tools on stdin/stdout, for an MCP client (an "
                + "agent, an IDE).",
                "Tools: sandbox_create, sandbox_list, sandbox_destroy, run_command, run_code, read_file, write_file, "
                + "list_files. With --url or PADDOCK_URL it uses that daemon (token: --token or PADDOCK_TOKEN); "
                + "otherwise it runs the engine in this process (as root), and its sandboxes end when the client "
                + "disconnects. The daemon also serves the same tools over streamable HTTP at /mcp (paddock serve)."})
final class McpCommand implements Callable<Integer> {
    @Option(names = "--url", paramLabel = "URL", description = "A daemon's URL (default: $PADDOCK_URL; when neither is"
            + " set, the engine runs in this process).")
    String url;

    @Option(names = "--token", paramLabel = "TOKEN", description = "The daemon's token (default: $PADDOCK_TOKEN, else the"
            + " local daemon's token file).")
    String token;

    @Override
    public Integer call() throws Exception {
        // stdout is the protocol: keep it for the server and send every stray print (ours, a library's) to stderr.
        OutputStream protocol = new FileOutputStream(FileDescriptor.out);
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true));
        java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.WARNING);
        boolean daemon = url != null || env("PADDOCK_URL") != null;
        try (Paddock paddock = daemon ? connection().connect() : Paddock.local()) {
            System.err.println("paddock: MCP server on stdio, " + (daemon ? "using the daemon" : "with the engine in this"
                    + " process") + "; tools: " + String.join(", ", PaddockMcp.TOOLS));
            PaddockMcp.serveStdio(paddock, System.in, protocol);
        }
        return 0;
    }

    private Connection connection() {
        Connection c = new Connection();
        c.url = url;
        c.token = token;
        return c;
    }

    private static String env(String name) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? null : v;
    }
}
