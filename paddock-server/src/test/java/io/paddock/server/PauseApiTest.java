package io.paddock.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.wire.Wire;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;

import static io.paddock.server.Fixture.json;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Pause, resume and fork over REST with real sandboxes (runsc and runc), the answers checked against
 * openapi.json: a gVisor sandbox is checkpointed and comes back with its files, its forks have them too and
 * their own from then on; runc freezes and its fork is refused with the reason.
 */
class PauseApiTest {
    private static Fixture f;
    private static JsonNode doc;
    private static SchemaChecker schemas;

    @BeforeAll
    static void start() throws Exception {
        f = Fixture.start();
        doc = Wire.parse(Files.readAllBytes(Path.of("src/main/resources/io/paddock/server/openapi.json")));
        schemas = new SchemaChecker(doc);
    }

    @AfterAll
    static void stop() {
        f.close();
    }

    private static String exec(String id, String script) {
        HttpResponse<String> r = f.post("/v1/sandboxes/" + id + "/exec", "{\"argv\":[\"sh\",\"-c\",\"" + script + "\"]}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return new String(Base64.getDecoder().decode(json(r).get("stdout").asText()), StandardCharsets.UTF_8);
    }

    private static void assertSchema(String schema, HttpResponse<String> r) {
        assertThat(schemas.check(doc.at("/components/schemas/" + schema), json(r))).as(r.body()).isEmpty();
    }

    @Test
    void gvisorPausesResumesAndForks() {
        String id = f.createSandbox(",\"runtime\":\"runsc\"").get("id").asText();
        exec(id, "echo before > /tmp/v");

        HttpResponse<String> paused = f.post("/v1/sandboxes/" + id + "/pause", "");
        assertThat(paused.statusCode()).as(paused.body()).isEqualTo(200);
        assertSchema("PauseResult", paused);
        assertThat(json(paused).get("mode").asText()).isEqualTo("CHECKPOINTED");
        assertThat(json(paused).get("sandbox").get("state").asText()).isEqualTo("PAUSED");
        HttpResponse<String> refused = f.post("/v1/sandboxes/" + id + "/exec", "{\"argv\":[\"true\"]}");
        assertThat(refused.statusCode()).isEqualTo(409);
        assertThat(refused.body()).contains("paused");

        HttpResponse<String> resumed = f.post("/v1/sandboxes/" + id + "/resume", "");
        assertThat(resumed.statusCode()).as(resumed.body()).isEqualTo(200);
        assertSchema("SandboxInfo", resumed);
        assertThat(json(resumed).get("state").asText()).isEqualTo("RUNNING");
        assertThat(exec(id, "cat /tmp/v")).isEqualTo("before\n");

        HttpResponse<String> forked = f.post("/v1/sandboxes/" + id + "/fork", "{\"count\":2}");
        assertThat(forked.statusCode()).as(forked.body()).isEqualTo(201);
        assertSchema("ForkResult", forked);
        JsonNode forks = json(forked).get("sandboxes");
        assertThat(forks).hasSize(2);
        String a = forks.get(0).get("id").asText();
        String b = forks.get(1).get("id").asText();
        assertThat(a).isNotEqualTo(b).isNotEqualTo(id);
        exec(a, "echo a > /tmp/v");
        assertThat(exec(b, "cat /tmp/v")).isEqualTo("before\n");
        assertThat(exec(id, "cat /tmp/v")).isEqualTo("before\n");
        assertThat(exec(a, "cat /tmp/v")).isEqualTo("a\n");
        assertThat(json(f.get("/v1/sandboxes/" + id)).get("state").asText()).isEqualTo("RUNNING");

        HttpResponse<String> badCount = f.post("/v1/sandboxes/" + id + "/fork", "{\"count\":0}");
        assertThat(badCount.statusCode()).isEqualTo(400);
        assertThat(badCount.body()).contains("count");
        for (String s : new String[] {a, b}) {
            assertThat(f.delete("/v1/sandboxes/" + s).statusCode()).isIn(200, 204);
        }
    }

    @Test
    void onTimeoutPausePausesAtTheDeadline() throws Exception {
        HttpResponse<String> created = f.post("/v1/sandboxes", "{\"memory\":\"128m\",\"pids\":64,\"timeout_ms\":1500,"
                + "\"runtime\":\"runc\",\"on_timeout\":\"pause\"}");
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        String id = json(created).get("id").asText();
        String state = "";
        for (int i = 0; i < 300 && !state.equals("PAUSED"); i++) {
            Thread.sleep(50);
            state = json(f.get("/v1/sandboxes/" + id)).get("state").asText();
        }
        assertThat(state).isEqualTo("PAUSED");
        assertThat(f.post("/v1/sandboxes/" + id + "/resume", "").statusCode()).isEqualTo(200);
        assertThat(exec(id, "echo on")).isEqualTo("on\n");
        assertThat(f.delete("/v1/sandboxes/" + id).statusCode()).isIn(200, 204);
        HttpResponse<String> bad = f.post("/v1/sandboxes", Fixture.SMALL + ",\"on_timeout\":\"never\"}");
        assertThat(bad.statusCode()).isEqualTo(400);
        assertThat(bad.body()).contains("on_timeout");
    }

    @Test
    void runcFreezesAndItsForkIsRefused() {
        String id = f.createSandbox(",\"runtime\":\"runc\"").get("id").asText();
        HttpResponse<String> paused = f.post("/v1/sandboxes/" + id + "/pause", "");
        assertThat(paused.statusCode()).as(paused.body()).isEqualTo(200);
        assertThat(json(paused).get("mode").asText()).isEqualTo("FROZEN");
        assertThat(json(paused).get("note").asText()).contains("resident");
        HttpResponse<String> fork = f.post("/v1/sandboxes/" + id + "/fork", "{\"count\":1}");
        assertThat(fork.statusCode()).as(fork.body()).isEqualTo(409);
        assertThat(fork.body()).contains("FAILED_PRECONDITION").contains("gVisor");
        assertSchema("Error", fork);
        assertThat(f.post("/v1/sandboxes/" + id + "/resume", "").statusCode()).isEqualTo(200);
        assertThat(exec(id, "echo on")).isEqualTo("on\n");
        assertThat(f.post("/v1/sandboxes/sb-aaaaaaaaaaaaaaaaaaaaaaaaaa/fork", "{}").statusCode()).isEqualTo(404);
    }
}
