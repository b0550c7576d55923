package io.paddock.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.HttpClientStreamableHttpTransport;
import io.modelcontextprotocol.spec.McpSchema;
import io.paddock.server.internal.AuditLog;
import io.paddock.wire.Wire;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.UUID;
import java.util.stream.Stream;

import static io.paddock.server.Fixture.json;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The audit log through a real daemon over the real engine (runc): state-changing calls get one entry each with
 * caller, action, sandbox, outcome and duration; reads get none; no secret, environment value, command, stdin,
 * file content or token is ever written; a tenant reads only its own entries; bad filters are refused.
 */
class AuditTest {
    @TempDir
    static Path data;
    private static final String ALICE = token();
    private static final String BOB = token();
    private static Fixture f;

    @BeforeAll
    static void start() {
        f = Fixture.start(b -> b.tenant("alice", ALICE).tenant("bob", BOB).dataDir(data), 1000);
    }

    @AfterAll
    static void stop() {
        f.close();
    }

    private static String token() {
        byte[] raw = new byte[32];
        new SecureRandom().nextBytes(raw);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
    }

    private static HttpResponse<String> call(String token, String method, String pathAndQuery, String json) {
        HttpRequest.Builder b = HttpRequest.newBuilder(f.uri(pathAndQuery));
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        b.method(method, json == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(json));
        return f.send(b.build());
    }

    private static List<JsonNode> audit(String token, String query) {
        HttpResponse<String> r = call(token, "GET", "/v1/audit" + query, null);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        List<JsonNode> out = new ArrayList<>();
        json(r).get("entries").forEach(out::add);
        return out;
    }

    private static JsonNode only(List<JsonNode> entries, String action, String sandbox) {
        List<JsonNode> found = entries.stream().filter(e -> e.get("action").asText().equals(action)
                && sandbox.equals(e.path("sandbox").asText())).toList();
        assertThat(found).as(action + " of " + sandbox + " in " + entries).hasSize(1);
        return found.get(0);
    }

    private static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    @Test
    void stateChangesAreRecordedWithoutSecretsAndEachTenantReadsItsOwn() throws Exception {
        String run = UUID.randomUUID().toString();
        String secret = "secret-value-" + run;
        String env = "env-value-" + run;
        String argv = "argv-value-" + run;
        String stdin = "stdin-value-" + run;
        String content = "file-content-" + run;
        Instant began = Instant.now();

        HttpResponse<String> created = call(ALICE, "POST", "/v1/sandboxes", Fixture.SMALL + ",\"env\":{\"MODE\":\"" + env
                + "\"},\"secrets\":{\"API_KEY\":\"" + secret + "\"},\"labels\":{\"acc\":\"ops\"}}");
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        String id = json(created).get("id").asText();
        String sb = "/v1/sandboxes/" + id;
        HttpResponse<String> exec = call(ALICE, "POST", sb + "/exec", "{\"argv\":[\"sh\",\"-c\",\"cat >/dev/null; echo "
                + argv + "\"],\"stdin\":\"" + Base64.getEncoder().encodeToString(stdin.getBytes(StandardCharsets.UTF_8)) + "\"}");
        assertThat(exec.statusCode()).as(exec.body()).isEqualTo(200);
        WsClient ws = WsClient.connect(f.http, f.uri(sb + "/exec/stream"), ALICE, true);
        ws.sendText("{\"argv\":[\"echo\",\"" + argv + "\"]}");
        assertThat(ws.drain(30).last().get("type").asText()).isEqualTo("exit");
        WsClient reusable = WsClient.connect(f.http, f.uri("/v1/exec/stream"), ALICE, true);
        reusable.sendText("{\"sandbox_id\":\"" + id + "\",\"argv\":[\"echo\",\"" + argv + "\"]}");
        assertThat(reusable.untilExit(30).last().get("type").asText()).isEqualTo("exit");
        reusable.sendText("{\"sandbox_id\":\"sb-aaaaaaaaaaaaaaaaaaaaaaaaaa\",\"argv\":[\"echo\",\"" + argv + "\"]}");
        assertThat(reusable.drain(30).last().get("type").asText()).isEqualTo("error");
        HttpResponse<String> put = f.send(HttpRequest.newBuilder(f.uri(sb + "/files?path=/workspace/notes.txt"))
                .header("Authorization", "Bearer " + ALICE)
                .PUT(HttpRequest.BodyPublishers.ofString(content)).build());
        assertThat(put.statusCode()).as(put.body()).isEqualTo(204);
        assertThat(call(ALICE, "POST", sb + "/files/mkdir", "{\"path\":\"/workspace/d\"}").statusCode()).isEqualTo(204);
        assertThat(call(ALICE, "POST", sb + "/files/move", "{\"from\":\"/workspace/notes.txt\",\"to\":\"/workspace/d/n.txt\"}")
                .statusCode()).isEqualTo(204);
        assertThat(call(ALICE, "POST", sb + "/pause", null).statusCode()).isEqualTo(200);
        assertThat(call(ALICE, "POST", sb + "/resume", null).statusCode()).isEqualTo(200);
        // reads are not recorded
        assertThat(call(ALICE, "GET", sb, null).statusCode()).isEqualTo(200);
        assertThat(call(ALICE, "GET", sb + "/files?path=/workspace/d/n.txt", null).body()).isEqualTo(content);

        // bob: his own sandbox, and a failed attempt on alice's (answered as an unknown id)
        HttpResponse<String> bobs = call(BOB, "POST", "/v1/sandboxes", Fixture.SMALL + "}");
        assertThat(bobs.statusCode()).isEqualTo(201);
        String bobId = json(bobs).get("id").asText();
        assertThat(call(BOB, "DELETE", sb, null).statusCode()).isEqualTo(404);
        assertThat(call(BOB, "DELETE", "/v1/sandboxes/" + bobId, null).statusCode()).isEqualTo(204);
        assertThat(call(ALICE, "DELETE", sb, null).statusCode()).isEqualTo(204);
        // the operator's own call, with a request id
        HttpResponse<String> op = f.send(f.request("/v1/sandboxes/" + bobId).header("X-Request-Id", "req-" + run).DELETE().build());
        assertThat(op.statusCode()).isEqualTo(204);

        // the operator sees everyone's entries
        List<JsonNode> all = audit(f.token, "?since=" + enc(began.minusSeconds(1).toString()) + "&limit=10000");
        JsonNode create = only(all, "create_sandbox", id);
        assertThat(create.get("caller").asText()).isEqualTo("tenant");
        assertThat(create.get("tenant").asText()).isEqualTo("alice");
        assertThat(create.get("outcome").asText()).isEqualTo("OK");
        assertThat(create.get("status").asInt()).isEqualTo(201);
        assertThat(create.get("duration_ms").asLong()).isBetween(0L, 60_000L);
        assertThat(create.get("remote").asText()).isEqualTo("127.0.0.1");
        assertThat(Instant.parse(create.get("time").asText())).isAfterOrEqualTo(began.minusSeconds(1));
        assertThat(only(all, "exec", id).get("outcome").asText()).isEqualTo("OK");
        // the exec stream of its own (one entry for the upgrade) and a command on a reusable socket (one for it)
        assertThat(all.stream().filter(e -> e.get("action").asText().equals("exec_stream") && id.equals(e.path("sandbox").asText())))
                .extracting(e -> e.path("via").asText("http") + " " + e.get("outcome").asText() + " " + e.path("status").asInt())
                .containsExactlyInAnyOrder("http OK 101", "exec_socket OK 0");
        assertThat(all.stream().filter(e -> "exec_socket".equals(e.path("via").asText())
                        && "sb-aaaaaaaaaaaaaaaaaaaaaaaaaa".equals(e.path("sandbox").asText())))
                .extracting(e -> e.path("tenant").asText() + " " + e.get("outcome").asText()).contains("alice NOT_FOUND");
        assertThat(only(all, "write_file", id).get("path").asText()).isEqualTo("/workspace/notes.txt");
        assertThat(only(all, "mkdir", id).get("path").asText()).isEqualTo("/workspace/d");
        JsonNode move = only(all, "move_file", id);
        assertThat(move.get("path").asText()).isEqualTo("/workspace/notes.txt");
        assertThat(move.get("to").asText()).isEqualTo("/workspace/d/n.txt");
        only(all, "pause_sandbox", id);
        only(all, "resume_sandbox", id);
        List<JsonNode> deletes = all.stream().filter(e -> e.get("action").asText().equals("delete_sandbox")
                && id.equals(e.path("sandbox").asText())).toList();
        assertThat(deletes).extracting(e -> e.path("tenant").asText() + " " + e.get("outcome").asText() + " " + e.get("status").asInt())
                .containsExactly("bob NOT_FOUND 404", "alice OK 204");
        JsonNode operators = all.stream().filter(e -> "req-".concat(run).equals(e.path("request_id").asText())).findFirst().orElseThrow();
        assertThat(operators.get("caller").asText()).isEqualTo("operator");
        assertThat(operators.has("tenant")).isFalse();
        assertThat(operators.get("sandbox").asText()).isEqualTo(bobId);
        assertThat(all).extracting(e -> e.get("action").asText()).doesNotContain("get_sandbox", "read_file", "list_sandboxes",
                "read_audit", "audit");

        // a tenant reads its own entries only, whatever it asks for
        List<JsonNode> alices = audit(ALICE, "?limit=10000");
        assertThat(alices).isNotEmpty().allSatisfy(e -> assertThat(e.get("tenant").asText()).isEqualTo("alice"));
        assertThat(alices).extracting(e -> e.path("sandbox").asText()).doesNotContain(bobId);
        assertThat(audit(ALICE, "?tenant=bob")).isEmpty();
        assertThat(audit(BOB, "?sandbox=" + id)).extracting(e -> e.get("outcome").asText()).containsExactly("NOT_FOUND");

        // filters
        assertThat(audit(f.token, "?tenant=alice&action=create_sandbox&sandbox=" + id)).hasSize(1);
        assertThat(audit(f.token, "?sandbox=" + id + "&limit=2")).extracting(e -> e.get("action").asText())
                .containsExactly("delete_sandbox", "delete_sandbox");
        assertThat(audit(f.token, "?since=" + enc(Instant.now().plusSeconds(3600).toString()))).isEmpty();

        // nothing secret, in the answers or on disk; the file is root's alone
        String answered = call(f.token, "GET", "/v1/audit?limit=10000", null).body();
        StringBuilder onDisk = new StringBuilder();
        try (Stream<Path> files = Files.list(data)) {
            for (Path p : files.filter(p -> p.getFileName().toString().startsWith(AuditLog.FILE)).toList()) {
                onDisk.append(Files.readString(p));
                assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(p))).isEqualTo("rw-------");
            }
        }
        assertThat(onDisk.toString()).contains(id, bobId);
        for (String text : List.of(answered, onDisk.toString())) {
            assertThat(text).doesNotContain(secret).doesNotContain(env).doesNotContain(argv).doesNotContain(stdin)
                    .doesNotContain(content).doesNotContain(ALICE).doesNotContain(BOB).doesNotContain(f.token)
                    .doesNotContain("API_KEY").doesNotContain("MODE");
        }
        for (String line : onDisk.toString().split("\n")) {
            assertThat(Wire.parse(line.getBytes(StandardCharsets.UTF_8)).isObject()).as(line).isTrue();
        }
    }

    @Test
    void mcpToolCallsThatChangeSomethingAreRecordedWithoutTheirArguments() throws Exception {
        String run = UUID.randomUUID().toString();
        String env = "mcp-env-" + run;
        String argv = "mcp-argv-" + run;
        String content = "mcp-content-" + run;
        HttpClientStreamableHttpTransport transport = HttpClientStreamableHttpTransport.builder(f.server.url().toString())
                .endpoint("/mcp").requestBuilder(HttpRequest.newBuilder().header("Authorization", "Bearer " + ALICE)
                        .header("X-Request-Id", "mcp-" + run)).build();
        McpSyncClient alice = McpClient.sync(transport).requestTimeout(java.time.Duration.ofMinutes(2)).build();
        try {
            alice.initialize();
            McpSchema.CallToolResult created = alice.callTool(new McpSchema.CallToolRequest("sandbox_create",
                    java.util.Map.of("memory", "128m", "env", java.util.Map.of("MODE", env)), null));
            assertThat(created.isError()).isFalse();
            String text = ((McpSchema.TextContent) created.content().get(0)).text();
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("created sandbox (\\S+)").matcher(text);
            assertThat(m.find()).isTrue();
            String id = m.group(1);
            assertThat(alice.callTool(new McpSchema.CallToolRequest("run_command", java.util.Map.of("sandbox", id,
                    "command", List.of("echo", argv)), null)).isError()).isFalse();
            assertThat(alice.callTool(new McpSchema.CallToolRequest("write_file", java.util.Map.of("sandbox", id,
                    "path", "/workspace/m.txt", "content", content), null)).isError()).isFalse();
            assertThat(alice.callTool(new McpSchema.CallToolRequest("read_file", java.util.Map.of("sandbox", id,
                    "path", "/workspace/m.txt"), null)).isError()).isFalse();
            assertThat(alice.callTool(new McpSchema.CallToolRequest("sandbox_list", java.util.Map.of(), null)).isError()).isFalse();
            assertThat(alice.callTool(new McpSchema.CallToolRequest("run_command", java.util.Map.of("sandbox", "sb-" + "e".repeat(26),
                    "command", List.of("true")), null)).isError()).isTrue();
            assertThat(alice.callTool(new McpSchema.CallToolRequest("sandbox_destroy", java.util.Map.of("sandbox", id), null))
                    .isError()).isFalse();

            List<JsonNode> mine = audit(ALICE, "?sandbox=" + id);
            assertThat(mine).extracting(e -> e.get("action").asText()).containsExactly("mcp_sandbox_create", "mcp_run_command",
                    "mcp_write_file", "mcp_sandbox_destroy"); // reads (read_file, sandbox_list) are not recorded
            assertThat(mine).allSatisfy(e -> {
                assertThat(e.get("via").asText()).isEqualTo("mcp");
                assertThat(e.get("tenant").asText()).isEqualTo("alice");
                assertThat(e.get("outcome").asText()).isEqualTo("OK");
                assertThat(e.get("request_id").asText()).isEqualTo("mcp-" + run);
                assertThat(e.get("duration_ms").asLong()).isNotNegative();
            });
            List<JsonNode> failed = audit(ALICE, "?action=mcp_run_command&limit=1");
            assertThat(failed.get(0).get("outcome").asText()).isEqualTo("NOT_FOUND");
            assertThat(failed.get(0).has("sandbox")).isFalse();
            String answered = call(f.token, "GET", "/v1/audit?limit=10000", null).body();
            assertThat(answered).contains(id).doesNotContain(env).doesNotContain(argv).doesNotContain(content).doesNotContain(ALICE);
            assertThat(Files.readString(data.resolve(AuditLog.FILE))).doesNotContain(env).doesNotContain(argv)
                    .doesNotContain(content);
        } finally {
            alice.closeGracefully();
        }
    }

    @Test
    void badReadsAreRefusedAndUnauthenticatedCallsAreNotRecorded() {
        for (String q : List.of("?limit=0", "?limit=10001", "?limit=many", "?since=yesterday", "?sandbox=nope",
                "?tenant=Not-A-Name", "?action=DROP%20TABLE", "?limit=1&limit=2")) {
            HttpResponse<String> r = call(f.token, "GET", "/v1/audit" + q, null);
            assertThat(r.statusCode()).as(q + ": " + r.body()).isEqualTo(400);
            assertThat(json(r).get("error").get("code").asText()).isEqualTo("INVALID_ARGUMENT");
        }
        assertThat(call(null, "GET", "/v1/audit", null).statusCode()).isEqualTo(401);
        assertThat(call("wrong", "GET", "/v1/audit", null).statusCode()).isEqualTo(401);
        String marker = "sb-" + "d".repeat(26);
        assertThat(call("wrong", "DELETE", "/v1/sandboxes/" + marker, null).statusCode()).isEqualTo(401);
        assertThat(call(null, "POST", "/v1/sandboxes", "{}").statusCode()).isEqualTo(401);
        assertThat(audit(f.token, "?sandbox=" + marker)).isEmpty();
        // a call refused after authentication is recorded with its code
        assertThat(call(f.token, "POST", "/v1/sandboxes", "{\"cpus\":\"many\"}").statusCode()).isEqualTo(400);
        List<JsonNode> last = audit(f.token, "?action=create_sandbox&limit=1");
        assertThat(last).hasSize(1);
        assertThat(last.get(0).get("outcome").asText()).isEqualTo("INVALID_ARGUMENT");
        assertThat(last.get(0).get("status").asInt()).isEqualTo(400);
        assertThat(last.get(0).has("sandbox")).isFalse();
    }
}
