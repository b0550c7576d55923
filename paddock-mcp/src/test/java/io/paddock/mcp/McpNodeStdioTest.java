package io.paddock.mcp;

import io.paddock.LocalOptions;
import io.paddock.testkit.LeakCheckExtension;
import io.paddock.testkit.NodeTests;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.file.Path;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * The official MCP TypeScript SDK's client ({@code @modelcontextprotocol/sdk}, pinned by
 * {@code src/test/node/package-lock.json}) spawns the stdio server and calls every tool
 * ({@code src/test/node/stdio.test.mjs}). Needs node and npm ({@code scripts/prereqs.sh test} installs them).
 */
class McpNodeStdioTest {
    static final Path NODE_PROJECT = Path.of("src", "test", "node").toAbsolutePath();

    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    @Test
    void theTypeScriptSdkClientCallsTheToolsOverStdio() throws Exception {
        String argv = StdioTestMain.command().stream().map(McpNodeStdioTest::jsonString).collect(Collectors.joining(",", "[", "]"));
        NodeTests.test(NODE_PROJECT, "stdio.test.mjs", Map.of("PADDOCK_MCP_COMMAND", argv), 300);
    }

    static String jsonString(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }
}
