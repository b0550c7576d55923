package io.paddock.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.server.internal.Route;
import io.paddock.wire.Wire;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;

import static io.paddock.server.Fixture.json;
import static org.assertj.core.api.Assertions.assertThat;

/** The server and openapi.json agree: same routes both ways, documented statuses, schema-valid bodies. */
class OpenApiConformanceTest {
    private static final Path SOURCE = Path.of("src/main/resources/io/paddock/server/openapi.json");
    private static Fixture f;
    private static JsonNode doc;
    private static SchemaChecker schemas;

    @BeforeAll
    static void start() throws Exception {
        f = Fixture.start();
        doc = Wire.parse(Files.readAllBytes(SOURCE));
        schemas = new SchemaChecker(doc);
    }

    @AfterAll
    static void stop() {
        f.close();
    }

    @Test
    void servesTheDocumentVerbatim() throws Exception {
        HttpResponse<byte[]> r = f.http.send(f.request("/v1/openapi.json").GET().build(), HttpResponse.BodyHandlers.ofByteArray());
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith("application/json"));
        assertThat(r.body()).isEqualTo(Files.readAllBytes(SOURCE));
    }

    private static Set<String> documented() {
        Set<String> ops = new TreeSet<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = doc.get("paths").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> p = it.next();
            p.getValue().fieldNames().forEachRemaining(m -> ops.add(m.toUpperCase() + " " + p.getKey()));
        }
        return ops;
    }

    @Test
    void routesAndDocumentMatchBothWays() {
        Set<String> served = new TreeSet<>();
        for (Route r : Route.values()) {
            r.methods().forEach(m -> served.add(m + " " + r.template())); // a proxy route takes any method
        }
        assertThat(served).isEqualTo(documented());
    }

    @Test
    void everyDocumentedOperationIsRouted() {
        String id = f.createSandboxId();
        for (String op : documented()) {
            String method = op.substring(0, op.indexOf(' '));
            String path = op.substring(op.indexOf(' ') + 1).replace("{id}", id).replace("{name}", "nobody")
                    .replace("{context}", "nobody").replace("{shell}", "nobody").replace("{port}", "8000")
                    .replace("{path}", "x").replace("{token}", "nobody");
            if (path.matches(".*/files(/list|/stat)?$")) {
                path += "?path=/workspace";
            }
            if (op.equals("POST /v1/images/prune")) {
                // routed, shown without pruning the host's shared image store: another method gets 405 naming POST
                HttpResponse<String> r = f.get(path);
                assertThat(r.statusCode()).as(op).isEqualTo(405);
                assertThat(r.headers().firstValue("Allow")).as(op).hasValue("POST");
                continue;
            }
            HttpRequest.BodyPublisher body = method.equals("GET") || method.equals("DELETE")
                    ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString("{}");
            HttpResponse<String> r = f.send(f.request(path).method(method, body).build());
            assertThat(r.statusCode()).as(op + ": " + r.body()).isNotEqualTo(405);
            if (r.statusCode() == 404) {
                assertThat(r.body()).as(op).doesNotContain("no such endpoint");
            }
        }
        f.delete("/v1/sandboxes/" + id);
    }

    /** Asserts the status is documented for the operation and the body matches its schema. */
    private static JsonNode conforms(String method, String template, HttpResponse<String> r) {
        JsonNode op = doc.get("paths").get(template).get(method.toLowerCase());
        assertThat(op).as(method + " " + template).isNotNull();
        JsonNode response = schemas.resolve(op.get("responses").get(Integer.toString(r.statusCode())));
        assertThat(response).as(method + " " + template + " documents " + r.statusCode() + " (" + r.body() + ")").isNotNull();
        JsonNode content = response.get("content");
        if (content == null) {
            assertThat(r.body()).as(method + " " + template + " has no body").isEmpty();
            return null;
        }
        if (content.has("application/octet-stream")) {
            assertThat(r.headers().firstValue("Content-Type")).hasValue("application/octet-stream");
            return null;
        }
        assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith("application/json"));
        JsonNode body = json(r);
        List<String> problems = schemas.check(content.get("application/json").get("schema"), body);
        assertThat(problems).as(method + " " + template + " " + r.statusCode() + ": " + r.body()).isEmpty();
        return body;
    }

    @Test
    void mainOperationsAnswerAsDocumented() throws Exception {
        String name = "conf-" + UUID.randomUUID().toString().substring(0, 8);
        conforms("GET", "/v1/health", f.send(HttpRequest.newBuilder(f.uri("/v1/health")).build()));
        conforms("GET", "/v1/health", f.send(HttpRequest.newBuilder(f.uri("/v1/health")) // 431, as documented
                .header("X-Big", "b".repeat(20_000)).build()));
        JsonNode version = conforms("GET", "/v1/version", f.get("/v1/version"));
        assertThat(version.get("api").asText()).isEqualTo(doc.get("info").get("version").asText());
        assertThat(version.get("runtime").asText()).startsWith("runc");

        JsonNode info = conforms("POST", "/v1/sandboxes", f.post("/v1/sandboxes", Fixture.SMALL + ",\"name\":\"" + name
                + "\",\"labels\":{\"k\":\"v\"},\"env\":{\"A\":\"b\"},\"secrets\":{\"S\":\"x\"}}"));
        String id = info.get("id").asText();
        String sb = "/v1/sandboxes/" + id;
        try {
            conforms("GET", "/v1/sandboxes/{id}", f.get(sb));
            conforms("GET", "/v1/sandboxes/by-name/{name}", f.get("/v1/sandboxes/by-name/" + name));
            conforms("GET", "/v1/sandboxes", f.get("/v1/sandboxes?limit=1"));
            conforms("POST", "/v1/sandboxes/{id}/timeout", f.post(sb + "/timeout", "{\"timeout_ms\":120000}"));
            conforms("GET", "/v1/sandboxes/{id}/logs", f.get(sb + "/logs"));
            conforms("GET", "/v1/sandboxes/{id}/usage", f.get(sb + "/usage"));
            conforms("POST", "/v1/sandboxes/{id}/exec", f.post(sb + "/exec", "{\"argv\":[\"echo\",\"x\"]}"));
            conforms("PUT", "/v1/sandboxes/{id}/files", f.put(sb + "/files?path=/workspace/a.txt", new byte[] {1, 2}));
            conforms("GET", "/v1/sandboxes/{id}/files", f.get(sb + "/files?path=/workspace/a.txt"));
            conforms("GET", "/v1/sandboxes/{id}/files/list", f.get(sb + "/files/list?path=/workspace"));
            conforms("GET", "/v1/sandboxes/{id}/files/stat", f.get(sb + "/files/stat?path=/workspace/a.txt"));
            conforms("POST", "/v1/sandboxes/{id}/files/mkdir", f.post(sb + "/files/mkdir", "{\"path\":\"/workspace/d\"}"));
            conforms("POST", "/v1/sandboxes/{id}/files/move", f.post(sb + "/files/move",
                    "{\"from\":\"/workspace/a.txt\",\"to\":\"/workspace/d/b.txt\"}"));
            conforms("POST", "/v1/sandboxes/{id}/files/remove", f.post(sb + "/files/remove",
                    "{\"path\":\"/workspace/d\",\"recursive\":true}"));

            // the WebSocket: 101 is documented; started and exit messages carry what the description says
            assertThat(doc.get("paths").get("/v1/sandboxes/{id}/exec/stream").get("get").get("responses").has("101")).isTrue();
            WsClient ws = WsClient.connect(f.http, f.uri(sb + "/exec/stream"), f.token, true);
            ws.sendText("{\"argv\":[\"true\"]}");
            WsClient.Result r = ws.drain(20);
            assertThat(r.started().get("exec_id").isIntegralNumber()).isTrue();
            assertThat(r.last().get("type").asText()).isEqualTo("exit");
            assertThat(schemas.check(doc.at("/components/schemas/ExitStatus"), r.last().get("status"))).isEmpty();
            WsClient bad = WsClient.connect(f.http, f.uri(sb + "/exec/stream"), f.token, true);
            bad.sendText("{}");
            WsClient.Result e = bad.drain(20);
            assertThat(e.last().get("type").asText()).isEqualTo("error");
            assertThat(schemas.check(doc.at("/components/schemas/Error"), e.last().get("error"))).isEmpty();

            // errors, each documented with the Error schema
            conforms("GET", "/v1/sandboxes/{id}", f.get("/v1/sandboxes/sb-" + "b".repeat(26)));
            conforms("POST", "/v1/sandboxes", f.post("/v1/sandboxes", "{\"cpus\":\"many\"}"));
            conforms("POST", "/v1/sandboxes", f.post("/v1/sandboxes", Fixture.SMALL + ",\"name\":\"" + name + "\"}"));
            conforms("GET", "/v1/version", f.send(HttpRequest.newBuilder(f.uri("/v1/version")).build()));
            conforms("POST", "/v1/sandboxes/{id}/exec", f.post(sb + "/exec", "{\"argv\":[]}"));
            conforms("GET", "/v1/sandboxes/{id}/files", f.get(sb + "/files?path=/workspace/none"));
        } finally {
            conforms("DELETE", "/v1/sandboxes/{id}", f.delete(sb));
        }
        conforms("POST", "/v1/sandboxes/{id}/exec", f.post(sb + "/exec", "{\"argv\":[\"true\"]}")); // 409: stopped
        conforms("GET", "/v1/sandboxes/{id}/usage", f.get(sb + "/usage")); // 409: stopped
        conforms("DELETE", "/v1/sandboxes/{id}", f.delete(sb)); // 204 again
    }

    private static String body(ObjectNode o) {
        return new String(Wire.bytes(o), StandardCharsets.UTF_8);
    }

    private static ObjectNode run(String language, String code) {
        return Wire.object().put("language", language).put("code", code);
    }

    @Test
    void codeOperationsAnswerAsDocumented() {
        JsonNode langs = conforms("GET", "/v1/code/languages", f.get("/v1/code/languages"));
        assertThat(langs.get("languages").findValuesAsText("name")).contains("python", "javascript", "c", "bash");

        JsonNode info = conforms("POST", "/v1/sandboxes", f.post("/v1/sandboxes", "{\"memory\":\"768m\",\"timeout_ms\":300000}"));
        String sb = "/v1/sandboxes/" + info.get("id").asText();
        String code = sb + "/code";
        try {
            // what this sandbox's image can run: the table's rows with a toolchain here, in table order
            JsonNode here = conforms("GET", "/v1/sandboxes/{id}/code/languages", f.get(code + "/languages"));
            List<String> names = here.get("languages").findValuesAsText("name");
            assertThat(names).contains("python", "javascript", "c", "bash");
            assertThat(langs.get("languages").findValuesAsText("name")).containsSubsequence(names);

            // one-shot runs: output, a plot, an artifact with its bytes, a compile failure, an unknown language
            JsonNode r = conforms("POST", "/v1/sandboxes/{id}/code/run", f.post(code + "/run", body(run("python",
                    "import matplotlib.pyplot as plt, os\nopen(os.environ['PADDOCK_ARTIFACTS_DIR'] + '/a.txt', 'w').write('x')\n"
                            + "plt.plot([1, 2]); plt.show()\nprint('hi')").put("artifact_content", true))));
            assertThat(r.get("stdout").asText()).isEqualTo("hi\n");
            assertThat(r.get("plots").get(0).get("width").asInt()).isEqualTo(640);
            assertThat(r.get("plots").get(0).get("mime_type").asText()).isEqualTo("image/png");
            assertThat(r.get("artifacts").get(0).get("content").asText()).isEqualTo("eA==");
            JsonNode compile = conforms("POST", "/v1/sandboxes/{id}/code/run", f.post(code + "/run", body(run("c", "int main( {"))));
            assertThat(compile.get("step").asText()).isEqualTo("COMPILE");
            JsonNode unknown = conforms("POST", "/v1/sandboxes/{id}/code/run", f.post(code + "/run", body(run("cobol", "x"))));
            assertThat(unknown.get("error").get("message").asText()).contains("cobol");
            conforms("POST", "/v1/sandboxes/{id}/code/run", f.post(code + "/run", "{\"language\":\"python\"}"));

            // the policy: refused with the violations listed (nothing ran), and checked without running
            JsonNode refused = conforms("POST", "/v1/sandboxes/{id}/code/run", f.post(code + "/run",
                    body(run("python", "import os\nos.system('touch /tmp/no')").put("policy", "standard"))));
            assertThat(refused.get("error").get("code").asText()).isEqualTo("PERMISSION_DENIED");
            assertThat(refused.get("error").get("violations").get(0).get("line").asInt()).isEqualTo(2);
            JsonNode check = conforms("POST", "/v1/sandboxes/{id}/code/check", f.post(code + "/check",
                    body(run("python", "import ctypes"))));
            assertThat(check.get("policy").asText()).isEqualTo("standard");
            assertThat(check.get("violations")).isNotEmpty();
            conforms("POST", "/v1/sandboxes/{id}/code/install", f.post(code + "/install",
                    "{\"language\":\"python\",\"packages\":[\"six\"]}")); // no source: 409

            // contexts
            HttpResponse<String> created = f.post(code + "/contexts", "{\"language\":\"python\",\"name\":\"conf\"}");
            JsonNode ctx = conforms("POST", "/v1/sandboxes/{id}/code/contexts", created);
            assertThat(created.headers().firstValue("Location")).hasValue(code + "/contexts/" + ctx.get("id").asText());
            conforms("POST", "/v1/sandboxes/{id}/code/contexts", f.post(code + "/contexts", "{\"language\":\"python\",\"name\":\"conf\"}"));
            conforms("POST", "/v1/sandboxes/{id}/code/contexts", f.post(code + "/contexts", "{\"language\":\"c\"}"));
            assertThat(conforms("GET", "/v1/sandboxes/{id}/code/contexts", f.get(code + "/contexts")).get("contexts")).hasSize(1);
            conforms("POST", "/v1/sandboxes/{id}/code/contexts/{context}/run", f.post(code + "/contexts/conf/run", "{\"code\":\"x = 41\"}"));
            JsonNode value = conforms("POST", "/v1/sandboxes/{id}/code/contexts/{context}/run",
                    f.post(code + "/contexts/conf/run", "{\"code\":\"x + 1\"}"));
            assertThat(value.get("results").get(0).get("data").get("text/plain").asText()).isEqualTo("42");
            JsonNode failed = conforms("POST", "/v1/sandboxes/{id}/code/contexts/{context}/run",
                    f.post(code + "/contexts/conf/run", "{\"code\":\"1/0\"}"));
            assertThat(failed.get("error").get("name").asText()).isEqualTo("ZeroDivisionError");
            assertThat(conforms("GET", "/v1/sandboxes/{id}/code/contexts/{context}", f.get(code + "/contexts/conf"))
                    .get("cells").asLong()).isEqualTo(3);
            assertThat(conforms("POST", "/v1/sandboxes/{id}/code/contexts/{context}/restart",
                    f.post(code + "/contexts/conf/restart", "")).get("restarts").asInt()).isEqualTo(1);
            conforms("DELETE", "/v1/sandboxes/{id}/code/contexts/{context}", f.delete(code + "/contexts/conf"));
            JsonNode gone = conforms("GET", "/v1/sandboxes/{id}/code/contexts/{context}", f.get(code + "/contexts/conf"));
            assertThat(gone.get("error").get("message").asText()).contains("conf");
            conforms("DELETE", "/v1/sandboxes/{id}/code/contexts/{context}", f.delete(code + "/contexts/conf"));

            // shells
            HttpResponse<String> opened = f.post(code + "/shells", "{\"env\":{\"A\":\"b\"}}");
            JsonNode shell = conforms("POST", "/v1/sandboxes/{id}/code/shells", opened);
            String sh = code + "/shells/" + shell.get("id").asText();
            assertThat(opened.headers().firstValue("Location")).hasValue(sh);
            conforms("POST", "/v1/sandboxes/{id}/code/shells/{shell}/exec", f.post(sh + "/exec", "{\"command\":\"cd /tmp\"}"));
            JsonNode pwd = conforms("POST", "/v1/sandboxes/{id}/code/shells/{shell}/exec",
                    f.post(sh + "/exec", "{\"command\":\"echo $PWD $A\",\"timeout_ms\":5000}"));
            assertThat(pwd.get("stdout").asText()).isEqualTo("/tmp b\n");
            conforms("POST", "/v1/sandboxes/{id}/code/shells/{shell}/exec",
                    f.post(sh + "/exec", "{\"command\":\"rm -rf /\",\"policy\":\"standard\"}"));
            assertThat(conforms("GET", "/v1/sandboxes/{id}/code/shells/{shell}", f.get(sh)).get("alive").asBoolean()).isTrue();
            conforms("DELETE", "/v1/sandboxes/{id}/code/shells/{shell}", f.delete(sh));
            conforms("POST", "/v1/sandboxes/{id}/code/shells/{shell}/exec", f.post(sh + "/exec", "{\"command\":\"true\"}"));
        } finally {
            conforms("DELETE", "/v1/sandboxes/{id}", f.delete(sb));
        }
        conforms("POST", "/v1/sandboxes/{id}/code/run", f.post(code + "/run", body(run("python", "1")))); // 409: stopped
    }

    /** POSTs with {@code Accept: application/x-ndjson}: the documented 200 stream, every line a {@code CodeEvent}. */
    private static List<JsonNode> streamed(String template, String path, String json) {
        HttpResponse<String> r = f.send(f.request(path).header("Content-Type", "application/json")
                .header("Accept", "application/x-ndjson").POST(HttpRequest.BodyPublishers.ofString(json)).build());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode content = schemas.resolve(doc.get("paths").get(template).get("post").get("responses").get("200")).get("content");
        assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith("application/x-ndjson"));
        JsonNode schema = content.get("application/x-ndjson").get("schema");
        List<JsonNode> events = new ArrayList<>();
        for (String line : r.body().split("\n")) {
            if (line.isEmpty()) {
                continue; // a heartbeat, as documented
            }
            JsonNode event = Wire.parse(line.getBytes(StandardCharsets.UTF_8));
            assertThat(schemas.check(schema, event)).as(template + " event " + line).isEmpty();
            events.add(event);
        }
        assertThat(r.body()).endsWith("\n");
        JsonNode last = events.get(events.size() - 1);
        assertThat(last.get("type").asText()).as(r.body()).isEqualTo("done");
        assertThat(events.subList(0, events.size() - 1)).extracting(e -> e.get("type").asText()).doesNotContain("done", "error");
        return events;
    }

    private static List<String> types(List<JsonNode> events) {
        return events.stream().map(e -> e.get("type").asText()).toList();
    }

    @Test
    void streamedCodeRunsAnswerAsDocumented() {
        JsonNode info = conforms("POST", "/v1/sandboxes", f.post("/v1/sandboxes", "{\"memory\":\"768m\",\"timeout_ms\":300000}"));
        String sb = "/v1/sandboxes/" + info.get("id").asText();
        String code = sb + "/code";
        try {
            List<JsonNode> run = streamed("/v1/sandboxes/{id}/code/run", code + "/run", body(run("python",
                    "import sys, matplotlib.pyplot as plt\nprint('out', flush=True)\nprint('err', file=sys.stderr, flush=True)\n"
                            + "plt.plot([1, 2]); plt.show()")));
            assertThat(types(run)).contains("stdout", "stderr", "plot", "done");
            JsonNode done = run.get(run.size() - 1).get("result");
            assertThat(done.get("stdout").asText()).isEqualTo("out\n");
            assertThat(run.stream().filter(e -> e.get("type").asText().equals("plot")).findFirst().orElseThrow()
                    .get("plot")).isEqualTo(done.get("plots").get(0));

            conforms("POST", "/v1/sandboxes/{id}/code/contexts", f.post(code + "/contexts", "{\"language\":\"python\",\"name\":\"s\"}"));
            List<JsonNode> cell = streamed("/v1/sandboxes/{id}/code/contexts/{context}/run", code + "/contexts/s/run",
                    "{\"code\":\"print('a')\\n41 + 1\"}");
            assertThat(types(cell)).containsExactly("stdout", "result", "done");
            assertThat(cell.get(1).get("output").get("data").get("text/plain").asText()).isEqualTo("42");

            // a failure before any output keeps its status and Error body, streamed or not
            HttpResponse<String> missing = f.send(f.request(code + "/contexts/none/run").header("Content-Type", "application/json")
                    .header("Accept", "application/x-ndjson").POST(HttpRequest.BodyPublishers.ofString("{\"code\":\"1\"}")).build());
            assertThat(missing.statusCode()).isEqualTo(404);
            conforms("POST", "/v1/sandboxes/{id}/code/contexts/{context}/run", missing);
            // the error event (a failure after the stream began) is the Error body, as the document says
            JsonNode event = doc.at("/components/schemas/CodeEvent");
            assertThat(schemas.check(event, io.paddock.code.internal.CodeWire.errorEvent(
                    Wire.error(io.paddock.ErrorCode.UNAVAILABLE, "gone")))).isEmpty();
            assertThat(schemas.check(event, Wire.object().put("type", "stdout"))).isNotEmpty();
        } finally {
            conforms("DELETE", "/v1/sandboxes/{id}", f.delete(sb));
        }
    }

    @Test
    void theDocumentIsConsistent() {
        for (Iterator<Map.Entry<String, JsonNode>> it = doc.get("paths").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> p = it.next();
            for (Iterator<Map.Entry<String, JsonNode>> m = p.getValue().fields(); m.hasNext(); ) {
                Map.Entry<String, JsonNode> op = m.next();
                String what = op.getKey() + " " + p.getKey();
                assertThat(op.getValue().has("operationId")).as(what).isTrue();
                boolean open = op.getValue().has("security") && op.getValue().get("security").isEmpty();
                if (!open) { // health, and signed port URLs, whose token is in the path
                    assertThat(op.getValue().get("responses").has("401")).as(what + " documents 401").isTrue();
                }
                // every $ref resolves
                op.getValue().findValues("$ref").forEach(ref -> assertThat(schemas.resolve(
                        Wire.parse(("{\"$ref\":\"" + ref.asText() + "\"}").getBytes(StandardCharsets.UTF_8)))).isNotNull());
            }
        }
    }
}
