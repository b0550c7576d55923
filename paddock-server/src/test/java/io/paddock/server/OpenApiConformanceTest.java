package io.paddock.server;

import com.fasterxml.jackson.databind.JsonNode;
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
            served.add(r.method() + " " + r.template());
        }
        assertThat(served).isEqualTo(documented());
    }

    @Test
    void everyDocumentedOperationIsRouted() {
        String id = f.createSandboxId();
        for (String op : documented()) {
            String method = op.substring(0, op.indexOf(' '));
            String path = op.substring(op.indexOf(' ') + 1).replace("{id}", id).replace("{name}", "nobody");
            if (path.matches(".*/files(/list|/stat)?$")) {
                path += "?path=/workspace";
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
        conforms("DELETE", "/v1/sandboxes/{id}", f.delete(sb)); // 204 again
    }

    @Test
    void theDocumentIsConsistent() {
        for (Iterator<Map.Entry<String, JsonNode>> it = doc.get("paths").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> p = it.next();
            for (Iterator<Map.Entry<String, JsonNode>> m = p.getValue().fields(); m.hasNext(); ) {
                Map.Entry<String, JsonNode> op = m.next();
                String what = op.getKey() + " " + p.getKey();
                assertThat(op.getValue().has("operationId")).as(what).isTrue();
                if (!p.getKey().equals("/v1/health")) {
                    assertThat(op.getValue().get("responses").has("401")).as(what + " documents 401").isTrue();
                }
                // every $ref resolves
                op.getValue().findValues("$ref").forEach(ref -> assertThat(schemas.resolve(
                        Wire.parse(("{\"$ref\":\"" + ref.asText() + "\"}").getBytes(StandardCharsets.UTF_8)))).isNotNull());
            }
        }
    }
}
