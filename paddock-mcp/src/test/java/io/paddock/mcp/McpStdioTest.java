package io.paddock.mcp;

import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.ServerParameters;
import io.modelcontextprotocol.client.transport.StdioClientTransport;
import io.modelcontextprotocol.json.McpJsonDefaults;
import io.modelcontextprotocol.spec.McpError;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.paddock.LocalOptions;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The stdio server, spawned as its own process over an embedded engine (real sandboxes), driven by the MCP
 * Java SDK's own client.
 */
class McpStdioTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    private static McpSyncClient client;
    private static final List<McpSchema.ProgressNotification> PROGRESS = new java.util.concurrent.CopyOnWriteArrayList<>();

    @BeforeAll
    static void start() {
        List<String> argv = StdioTestMain.command();
        StdioClientTransport transport = new StdioClientTransport(ServerParameters.builder(argv.get(0))
                .args(argv.subList(1, argv.size())).build(), McpJsonDefaults.getMapper());
        transport.setStdErrorHandler(line -> System.err.println("[mcp server] " + line));
        client = McpClient.sync(transport).requestTimeout(Duration.ofMinutes(2)).initializationTimeout(Duration.ofMinutes(1))
                .progressConsumer(PROGRESS::add)
                .clientInfo(McpSchema.Implementation.builder("paddock-java-test", "1").build()).build();
        McpSchema.InitializeResult init = client.initialize();
        assertThat(init.serverInfo().name()).isEqualTo("paddock");
        assertThat(init.instructions()).contains("sandbox_create");
    }

    @AfterAll
    static void stop() {
        if (client != null) {
            client.closeGracefully();
        }
    }

    static CallToolResult call(String tool, Map<String, Object> args) {
        return client.callTool(new McpSchema.CallToolRequest(tool, args, null));
    }

    static String text(CallToolResult r) {
        StringBuilder b = new StringBuilder();
        for (McpSchema.Content c : r.content()) {
            if (c instanceof McpSchema.TextContent t) {
                b.append(t.text());
            }
        }
        return b.toString();
    }

    static String create(Map<String, Object> args) {
        CallToolResult r = call("sandbox_create", args);
        assertThat(r.isError()).as(text(r)).isFalse();
        Matcher m = Pattern.compile("created sandbox (\\S+)").matcher(text(r));
        assertThat(m.find()).as(text(r)).isTrue();
        return m.group(1);
    }

    @Test
    @SuppressWarnings("unchecked")
    void listsEveryToolWithItsSchema() {
        List<McpSchema.Tool> tools = client.listTools().tools();
        assertThat(tools).extracting(McpSchema.Tool::name).containsExactlyElementsOf(PaddockMcp.TOOLS);
        for (McpSchema.Tool t : tools) {
            assertThat(t.inputSchema()).as(t.name()).containsEntry("type", "object");
            assertThat(t.description()).as(t.name()).isNotBlank();
        }
        McpSchema.Tool run = tools.stream().filter(t -> t.name().equals("run_command")).findFirst().orElseThrow();
        assertThat((List<Object>) run.inputSchema().get("required")).containsExactlyInAnyOrder("sandbox", "command");
        assertThat(run.annotations().readOnlyHint()).isFalse();
    }

    @Test
    void createsRunsMovesFilesAndDestroysASandbox() {
        String id = create(Map.of("name", "mcp-java", "labels", Map.of("via", "java"), "memory", "512m"));
        try {
            CallToolResult byName = call("run_command", Map.of("sandbox", "mcp-java", "command", List.of("sh", "-c", "echo $X; cat"),
                    "env", Map.of("X", "from env"), "stdin", "from stdin"));
            assertThat(byName.isError()).as(text(byName)).isFalse();
            assertThat(text(byName)).startsWith("exited with code 0").contains("--- stdout ---\nfrom env\nfrom stdin");

            CallToolResult failed = call("run_command", Map.of("sandbox", id, "command", List.of("sh", "-c", "echo no >&2; exit 7")));
            assertThat(failed.isError()).isTrue();
            assertThat(text(failed)).startsWith("exited with code 7").contains("--- stderr ---\nno\n");

            CallToolResult slow = call("run_command", Map.of("sandbox", id, "command", List.of("sleep", "30"), "timeout_seconds", 1));
            assertThat(slow.isError()).isTrue();
            assertThat(text(slow)).startsWith("timed out after");

            assertThat(call("write_file", Map.of("sandbox", id, "path", "/workspace/a/b/c.txt", "content", "hi\n")).isError()).isFalse();
            assertThat(text(call("read_file", Map.of("sandbox", id, "path", "a/b/c.txt")))).isEqualTo("hi\n");
            assertThat(call("write_file", Map.of("sandbox", id, "path", "bin.dat", "content", "AAEC/w==", "base64", true)).isError()).isFalse();
            assertThat(text(call("read_file", Map.of("sandbox", id, "path", "bin.dat")))).endsWith("AAEC/w==");
            assertThat(text(call("list_files", Map.of("sandbox", id)))).contains("directory\t").contains("\ta/").contains("\tbin.dat");

            CallToolResult listed = call("sandbox_list", Map.of("labels", Map.of("via", "java")));
            assertThat(text(listed)).startsWith("1 sandbox").contains(id).contains("\"name\" : \"mcp-java\"");
        } finally {
            CallToolResult destroyed = call("sandbox_destroy", Map.of("sandbox", id));
            assertThat(destroyed.isError()).as(text(destroyed)).isFalse();
        }
        assertThat(call("sandbox_destroy", Map.of("sandbox", id)).isError()).as("destroying twice succeeds").isFalse();
        assertThat(text(call("sandbox_list", Map.of("labels", Map.of("via", "java"), "state", "running")))).startsWith("0 sandboxes");
    }

    @Test
    void runCodeReturnsTextAndPlotsAsImages() {
        String id = create(Map.of("memory", "768m"));
        try {
            CallToolResult r = call("run_code", Map.of("sandbox", id, "language", "python", "code",
                    "import matplotlib.pyplot as plt\nplt.plot([1, 2], [3, 4]); plt.show()\nprint('drawn')\n6 * 7\n"));
            assertThat(r.isError()).as(text(r)).isFalse();
            assertThat(text(r)).startsWith("python: exited with code 0").contains("--- stdout ---\ndrawn\n");
            List<McpSchema.ImageContent> images = r.content().stream().filter(McpSchema.ImageContent.class::isInstance)
                    .map(McpSchema.ImageContent.class::cast).toList();
            assertThat(images).hasSize(1);
            assertThat(images.get(0).mimeType()).isEqualTo("image/png");
            byte[] png = Base64.getDecoder().decode(images.get(0).data());
            assertThat(new String(png, 1, 3, java.nio.charset.StandardCharsets.US_ASCII)).isEqualTo("PNG");

            CallToolResult failed = call("run_code", Map.of("sandbox", id, "language", "c", "code", "int main(void) { return nope; }"));
            assertThat(failed.isError()).isTrue();
            assertThat(text(failed)).startsWith("c: compilation failed").contains("nope");

            // a named context keeps its state between calls, as a notebook does
            assertThat(call("run_code", Map.of("sandbox", id, "language", "python", "context", "nb", "code", "import math\nx = 41")).isError()).isFalse();
            CallToolResult cell = call("run_code", Map.of("sandbox", id, "language", "python", "context", "nb", "code", "math.floor(x + 1.5)"));
            assertThat(cell.isError()).as(text(cell)).isFalse();
            assertThat(text(cell)).contains("--- value ---\n42\n");
            assertThat(text(call("run_code", Map.of("sandbox", id, "language", "bash", "context", "nb", "code", "echo"))))
                    .startsWith("INVALID_ARGUMENT: language: context 'nb' runs python");
            CallToolResult fresh = call("run_code", Map.of("sandbox", id, "language", "python", "code", "print(x)"));
            assertThat(fresh.isError()).isTrue();
            assertThat(text(fresh)).contains("NameError");

            CallToolResult unknown = call("run_code", Map.of("sandbox", id, "language", "cobol", "code", "x"));
            assertThat(unknown.isError()).isTrue();
            assertThat(text(unknown)).startsWith("INVALID_ARGUMENT: ").contains("python");
        } finally {
            call("sandbox_destroy", Map.of("sandbox", id));
        }
    }

    @Test
    void longRunsReportProgressWhenTheClientAsks() throws InterruptedException {
        String id = create(Map.of());
        try {
            PROGRESS.clear();
            CallToolResult r = client.callTool(new McpSchema.CallToolRequest("run_command",
                    Map.of("sandbox", id, "command", List.of("sleep", "6")), Map.of("progressToken", "sleep-6")));
            assertThat(r.isError()).as(text(r)).isFalse();
            for (int i = 0; i < 40 && PROGRESS.isEmpty(); i++) {
                Thread.sleep(50);
            }
            assertThat(PROGRESS).isNotEmpty();
            assertThat(PROGRESS.get(0).progressToken()).isEqualTo("sleep-6");
            assertThat(PROGRESS.get(0).message()).isEqualTo("run_command running for 5 s");
            // no token, no progress
            PROGRESS.clear();
            assertThat(call("run_command", Map.of("sandbox", id, "command", List.of("sleep", "6"))).isError()).isFalse();
            Thread.sleep(200);
            assertThat(PROGRESS).isEmpty();
        } finally {
            call("sandbox_destroy", Map.of("sandbox", id));
        }
    }

    @Test
    void failuresAreToolErrorsWithClearMessagesAndMisuseIsAProtocolError() {
        CallToolResult unknown = call("read_file", Map.of("sandbox", "sb-nope", "path", "/etc/hostname"));
        assertThat(unknown.isError()).isTrue();
        assertThat(text(unknown)).startsWith("NOT_FOUND: ");

        CallToolResult badSpec = call("sandbox_create", Map.of("memory", "lots"));
        assertThat(badSpec.isError()).isTrue();
        assertThat(text(badSpec)).startsWith("INVALID_ARGUMENT: memory");

        CallToolResult schema = call("run_command", Map.of("sandbox", "x", "command", "ls -l")); // a string, not an argv
        assertThat(schema.isError()).isTrue();
        assertThat(text(schema)).contains("command");

        assertThatThrownBy(() -> call("no_such_tool", Map.of())).isInstanceOf(McpError.class).hasMessageContaining("Unknown tool");
    }
}
