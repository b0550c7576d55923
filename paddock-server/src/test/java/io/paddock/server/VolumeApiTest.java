package io.paddock.server;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.UUID;

import static io.paddock.server.Fixture.json;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Volumes over REST with real sandboxes (runc): create, list, get and delete; a volume mounted at create, its
 * files kept across sandboxes, delete refused (409) while mounted; names scoped per tenant: a tenant sees, gets,
 * deletes and mounts only its own, and another tenant's answers as an unknown one does.
 */
class VolumeApiTest {
    private static final String ALICE = newToken();
    private static final String BOB = newToken();
    private static Fixture f;

    @BeforeAll
    static void start() {
        f = Fixture.start(b -> b.tenant("alice", ALICE).tenant("bob", BOB), 1000);
    }

    @AfterAll
    static void stop() {
        f.close();
    }

    private static String newToken() {
        byte[] raw = new byte[32];
        new SecureRandom().nextBytes(raw);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
    }

    private static HttpResponse<String> call(String token, String method, String path, String body) {
        HttpRequest.Builder b = HttpRequest.newBuilder(f.uri(path)).header("Authorization", "Bearer " + token);
        if (body != null) {
            b.header("Content-Type", "application/json").method(method, HttpRequest.BodyPublishers.ofString(body));
        } else {
            b.method(method, HttpRequest.BodyPublishers.noBody());
        }
        return f.send(b.build());
    }

    private static void assertError(HttpResponse<String> r, int status, String code, String... words) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        assertThat(json(r).get("error").get("code").asText()).isEqualTo(code);
        for (String w : words) {
            assertThat(r.body()).contains(w);
        }
    }

    private static String exec(String token, String id, String script) {
        com.fasterxml.jackson.databind.node.ObjectNode body = io.paddock.wire.Wire.object();
        body.putArray("argv").add("sh").add("-c").add(script);
        HttpResponse<String> r = call(token, "POST", "/v1/sandboxes/" + id + "/exec",
                new String(io.paddock.wire.Wire.bytes(body), java.nio.charset.StandardCharsets.UTF_8));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode n = json(r);
        return new String(Base64.getDecoder().decode(n.get("stdout").asText()));
    }

    @Test
    void theOperatorCreatesMountsAndRemovesAVolume() {
        String name = "api-" + UUID.randomUUID().toString().substring(0, 8);
        HttpResponse<String> created = f.post("/v1/volumes", "{\"name\":\"" + name + "\",\"size\":\"16m\"}");
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        assertThat(json(created).get("size_bytes").asLong()).isEqualTo(16L << 20);
        assertError(f.post("/v1/volumes", "{\"name\":\"" + name + "\"}"), 409, "ALREADY_EXISTS", name);
        assertError(f.post("/v1/volumes", "{\"name\":\"Bad_Name\"}"), 400, "INVALID_ARGUMENT", "name");
        assertError(f.post("/v1/volumes", "{\"name\":\"x\",\"size\":\"lots\"}"), 400, "INVALID_ARGUMENT", "size");
        assertError(f.post("/v1/volumes", "{\"name\":\"x\",\"sise\":1}"), 400, "INVALID_ARGUMENT", "sise");
        assertError(f.post("/v1/volumes", "{\"name\":\"alice-x\"}"), 400, "INVALID_ARGUMENT", "tenant 'alice'");

        String id = f.createSandbox(",\"volumes\":[{\"name\":\"" + name + "\",\"path\":\"/data\"}]").get("id").asText();
        assertThat(exec(f.token, id, "echo kept > /data/f; cat /data/f")).isEqualTo("kept\n");
        JsonNode info = json(f.get("/v1/volumes/" + name));
        assertThat(info.get("sandboxes").get(0).asText()).isEqualTo(id);
        assertThat(info.get("used_bytes").asLong()).isEqualTo(5);
        assertError(f.delete("/v1/volumes/" + name), 409, "FAILED_PRECONDITION", id);
        assertThat(f.delete("/v1/sandboxes/" + id).statusCode()).isEqualTo(204);

        String ro = f.createSandbox(",\"volumes\":[{\"name\":\"" + name + "\",\"path\":\"/data\",\"read_only\":true}]")
                .get("id").asText();
        assertThat(exec(f.token, ro, "cat /data/f; echo y > /data/g || echo refused")).isEqualTo("kept\nrefused\n");
        assertThat(f.delete("/v1/sandboxes/" + ro).statusCode()).isEqualTo(204);

        assertThat(json(f.get("/v1/volumes")).get("volumes").findValuesAsText("name")).contains(name);
        assertThat(f.delete("/v1/volumes/" + name).statusCode()).isEqualTo(204);
        assertError(f.get("/v1/volumes/" + name), 404, "NOT_FOUND", name);
        assertError(f.delete("/v1/volumes/" + name), 404, "NOT_FOUND", name);
        HttpResponse<String> unknown = f.post("/v1/sandboxes", Fixture.SMALL + ",\"volumes\":[{\"name\":\"" + name
                + "\",\"path\":\"/data\"}]}");
        assertError(unknown, 400, "INVALID_ARGUMENT", "no volume named");
    }

    @Test
    void aTenantSeesAndMountsOnlyItsOwnVolumes() {
        assertThat(call(ALICE, "POST", "/v1/volumes", "{\"name\":\"data\",\"size\":16777216}").statusCode()).isEqualTo(201);
        try {
            JsonNode mine = json(call(ALICE, "GET", "/v1/volumes", null)).get("volumes");
            assertThat(mine.findValuesAsText("name")).containsExactly("data");
            assertThat(json(call(BOB, "GET", "/v1/volumes", null)).get("volumes")).isEmpty();
            assertThat(json(f.get("/v1/volumes")).get("volumes").findValuesAsText("name")).contains("alice-data");
            // Bob's 'data' is another volume: unknown until he makes it, and his own once he does
            assertError(call(BOB, "GET", "/v1/volumes/data", null), 404, "NOT_FOUND", "'data'");
            assertError(call(BOB, "DELETE", "/v1/volumes/data", null), 404, "NOT_FOUND", "'data'");
            assertError(call(BOB, "GET", "/v1/volumes/alice-data", null), 404, "NOT_FOUND");
            HttpResponse<String> bobs = call(BOB, "POST", "/v1/sandboxes", Fixture.SMALL
                    + ",\"volumes\":[{\"name\":\"data\",\"path\":\"/data\"}]}");
            assertError(bobs, 400, "INVALID_ARGUMENT", "no volume");
            HttpResponse<String> alices = call(ALICE, "POST", "/v1/sandboxes", Fixture.SMALL
                    + ",\"volumes\":[{\"name\":\"data\",\"path\":\"/data\"}]}");
            assertThat(alices.statusCode()).as(alices.body()).isEqualTo(201);
            String id = json(alices).get("id").asText();
            assertThat(exec(ALICE, id, "echo hers > /data/f; cat /data/f")).isEqualTo("hers\n");
            JsonNode got = json(call(ALICE, "GET", "/v1/volumes/data", null));
            assertThat(got.get("name").asText()).isEqualTo("data");
            assertThat(got.get("sandboxes").get(0).asText()).isEqualTo(id);
            assertError(call(ALICE, "DELETE", "/v1/volumes/data", null), 409, "FAILED_PRECONDITION", id);
            assertThat(call(ALICE, "DELETE", "/v1/sandboxes/" + id, null).statusCode()).isEqualTo(204);
        } finally {
            assertThat(call(ALICE, "DELETE", "/v1/volumes/data", null).statusCode()).isEqualTo(204);
        }
    }
}
