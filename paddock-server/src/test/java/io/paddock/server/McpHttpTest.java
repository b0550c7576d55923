package io.paddock.server;

import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.HttpClientStreamableHttpTransport;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.paddock.LocalOptions;
import io.paddock.testkit.LeakCheckExtension;
import io.paddock.testkit.NodeTests;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The daemon's MCP endpoint ({@code /mcp}, streamable HTTP) on loopback over the real engine: authenticated as
 * the REST API is, each tenant reaching only its own sandboxes; driven by the MCP Java SDK's client and by the
 * official TypeScript SDK's ({@code paddock-mcp/src/test/node/http.test.mjs}).
 */
class McpHttpTest {
    /** The one Node project of the MCP tests (its lockfile pins {@code @modelcontextprotocol/sdk}). */
    static final Path NODE_PROJECT = Path.of("..", "paddock-mcp", "src", "test", "node").toAbsolutePath().normalize();
    private static final String ALICE = newToken();
    private static final String BOB = newToken();

    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    private static Fixture f;

    @BeforeAll
    static void start() {
        f = Fixture.start(b -> b.tenant("alice", ALICE).tenant("bob", BOB).maxSandboxesPerTenant(2)
                .maxFailedAuthPerMinutePerIp(1000), 1000);
    }

    @AfterAll
    static void stop() {
        if (f != null) {
            f.close();
        }
    }

    private static String newToken() {
        byte[] raw = new byte[32];
        new SecureRandom().nextBytes(raw);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
    }

    static McpSyncClient client(String token) {
        HttpClientStreamableHttpTransport transport = HttpClientStreamableHttpTransport.builder(f.server.url().toString())
                .endpoint("/mcp").requestBuilder(HttpRequest.newBuilder().header("Authorization", "Bearer " + token)).build();
        McpSyncClient c = McpClient.sync(transport).requestTimeout(Duration.ofMinutes(2)).build();
        c.initialize();
        return c;
    }

    static CallToolResult call(McpSyncClient c, String tool, Map<String, Object> args) {
        return c.callTool(new McpSchema.CallToolRequest(tool, args, null));
    }

    static String text(CallToolResult r) {
        StringBuilder b = new StringBuilder();
        r.content().stream().filter(McpSchema.TextContent.class::isInstance).forEach(c -> b.append(((McpSchema.TextContent) c).text()));
        return b.toString();
    }

    @Test
    void aTenantReachesOnlyItsOwnSandboxesUnderItsOwnNames() {
        McpSyncClient alice = client(ALICE);
        McpSyncClient bob = client(BOB);
        try {
            assertThat(alice.listTools().tools()).hasSize(8);
            CallToolResult created = call(alice, "sandbox_create", Map.of("name", "web", "memory", "256m"));
            assertThat(created.isError()).as(text(created)).isFalse();
            assertThat(text(created)).contains("\"name\" : \"web\"").doesNotContain("alice-web").doesNotContain("paddock.io/tenant");
            Matcher m = Pattern.compile("created sandbox (\\S+)").matcher(text(created));
            assertThat(m.find()).isTrue();
            String id = m.group(1);

            assertThat(text(call(alice, "run_command", Map.of("sandbox", "web", "command", List.of("echo", "mine")))))
                    .contains("mine");
            // a context made over MCP is the daemon's, the one the REST API lists (and ends with the sandbox)
            assertThat(call(alice, "run_code", Map.of("sandbox", "web", "language", "python", "context", "nb", "code", "y = 6")).isError())
                    .isFalse();
            assertThat(text(call(alice, "run_code", Map.of("sandbox", id, "language", "python", "context", "nb", "code", "y * 7"))))
                    .contains("--- value ---\n42\n");
            HttpResponse<String> contexts = f.send(HttpRequest.newBuilder(f.uri("/v1/sandboxes/" + id + "/code/contexts"))
                    .header("Authorization", "Bearer " + ALICE).build());
            assertThat(contexts.statusCode()).isEqualTo(200);
            assertThat(contexts.body()).contains("\"nb\"");
            assertThat(text(call(bob, "run_code", Map.of("sandbox", id, "language", "python", "context", "nb", "code", "y"))))
                    .startsWith("NOT_FOUND: ");
            // bob: as unknown as a missing sandbox, by id and by name, for every tool; his list is empty
            for (String ref : List.of(id, "web")) {
                CallToolResult r = call(bob, "run_command", Map.of("sandbox", ref, "command", List.of("true")));
                assertThat(r.isError()).isTrue();
                assertThat(text(r)).startsWith("NOT_FOUND: ");
                assertThat(text(call(bob, "sandbox_destroy", Map.of("sandbox", ref)))).startsWith("NOT_FOUND: ");
                assertThat(text(call(bob, "read_file", Map.of("sandbox", ref, "path", "/etc/hostname")))).startsWith("NOT_FOUND: ");
            }
            assertThat(text(call(bob, "sandbox_list", Map.of()))).startsWith("0 sandboxes");
            assertThat(text(call(alice, "sandbox_list", Map.of()))).startsWith("1 sandbox").contains(id);
            // reserved labels and the tenant's cap hold as over REST
            CallToolResult reserved = call(alice, "sandbox_create", Map.of("labels", Map.of("paddock.io/tenant", "bob")));
            assertThat(text(reserved)).startsWith("INVALID_ARGUMENT: labels");
            CallToolResult second = call(alice, "sandbox_create", Map.of("memory", "128m"));
            assertThat(second.isError()).as(text(second)).isFalse();
            CallToolResult third = call(alice, "sandbox_create", Map.of("memory", "128m"));
            assertThat(text(third)).startsWith("RESOURCE_EXHAUSTED: ");
            for (String line : text(call(alice, "sandbox_list", Map.of())).split("\n")) {
                Matcher idm = Pattern.compile("\"id\" : \"(\\S+)\"").matcher(line);
                if (idm.find()) {
                    assertThat(call(alice, "sandbox_destroy", Map.of("sandbox", idm.group(1))).isError()).isFalse();
                }
            }
            assertThat(text(call(alice, "sandbox_list", Map.of("state", "RUNNING")))).startsWith("0 sandboxes");
        } finally {
            alice.closeGracefully();
            bob.closeGracefully();
        }
    }

    @Test
    void requestsNeedTheBearerTokenAndSessionsStayWithTheirCaller() throws Exception {
        String init = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-03-26\","
                + "\"capabilities\":{},\"clientInfo\":{\"name\":\"raw\",\"version\":\"1\"}}}";
        HttpRequest.Builder post = HttpRequest.newBuilder(f.uri("/mcp")).header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream").POST(HttpRequest.BodyPublishers.ofString(init));
        HttpResponse<String> none = f.send(post.copy().build());
        assertThat(none.statusCode()).isEqualTo(401);
        assertThat(none.body()).contains("PERMISSION_DENIED").contains("Authorization: Bearer");
        assertThat(none.headers().firstValue("WWW-Authenticate")).hasValue("Bearer realm=\"paddock\"");
        assertThat(f.send(post.copy().header("Authorization", "Bearer wrong").build()).statusCode()).isEqualTo(401);

        HttpResponse<String> opened = f.send(post.copy().header("Authorization", "Bearer " + ALICE).build());
        assertThat(opened.statusCode()).as(opened.body()).isEqualTo(200);
        String session = opened.headers().firstValue("mcp-session-id").orElseThrow();
        String list = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{}}";
        HttpRequest.Builder onSession = HttpRequest.newBuilder(f.uri("/mcp")).header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream").header("mcp-session-id", session)
                .POST(HttpRequest.BodyPublishers.ofString(list));
        assertThat(f.send(onSession.copy().header("Authorization", "Bearer " + BOB).build()).statusCode()).isEqualTo(404);
        HttpResponse<String> own = f.send(onSession.copy().header("Authorization", "Bearer " + ALICE).build());
        assertThat(own.statusCode()).isEqualTo(200);
        assertThat(own.body()).contains("sandbox_create");
        // the REST API is where it was
        assertThat(f.send(f.request("/v1/sandboxes").build()).statusCode()).isEqualTo(200);
        assertThatThrownBy(() -> client("not-a-token")).isInstanceOf(RuntimeException.class);
    }

    @Test
    void theTypeScriptSdkClientCallsTheToolsOverStreamableHttp() throws Exception {
        NodeTests.test(NODE_PROJECT, "http.test.mjs", Map.of("PADDOCK_MCP_URL", f.server.url() + "/mcp",
                "PADDOCK_MCP_TOKEN", ALICE), 300);
    }
}
