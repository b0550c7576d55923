package io.paddock.mcp;

import io.paddock.Paddock;
import io.paddock.mcp.internal.McpServers;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Properties;

/**
 * Paddock as a Model Context Protocol server: its sandboxes as MCP tools ({@link #TOOLS}) for AI agents.
 *
 * <pre>{@code
 * try (Paddock paddock = Paddock.local()) {
 *     PaddockMcp.serveStdio(paddock, System.in, System.out);   // until the client closes stdin
 * }
 * }</pre>
 *
 * <p>The same tools are served by the daemon at {@code /mcp} (streamable HTTP, bearer token, each tenant
 * reaching only its own sandboxes). The caller owns the {@code Paddock}. See docs/COMPAT.md, "MCP".
 */
public final class PaddockMcp {
    /** The tools' names. */
    public static final List<String> TOOLS = io.paddock.mcp.internal.PaddockTools.NAMES;

    private PaddockMcp() {
    }

    /**
     * Serves one MCP client over newline-delimited JSON-RPC on {@code in} and {@code out} (stdio) until it
     * closes {@code in}. Nothing else may write to {@code out}. Blocks; interrupting the thread ends it.
     */
    public static void serveStdio(Paddock paddock, InputStream in, OutputStream out) throws InterruptedException {
        McpServers.serveStdio(paddock, version(), in, out);
    }

    /** This build's version. */
    public static String version() {
        Properties p = new Properties();
        try (InputStream in = PaddockMcp.class.getResourceAsStream("/io/paddock/mcp/version.properties")) {
            if (in != null) {
                p.load(in);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        String v = p.getProperty("version", "unknown");
        return v.startsWith("${") ? "unknown" : v;
    }
}
