package io.paddock.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.wire.Wire;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocketHandshakeException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionException;

import static io.paddock.server.Fixture.json;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A62 (and A57 per tenant): tenants' tokens reach only their own sandboxes, names are scoped per tenant,
 * and one tenant cannot take the engine's whole capacity. A real daemon on loopback over the real engine.
 */
class TenantTest {
    private static final int CAP = 3;
    private static final String UNKNOWN_ID = "sb-" + "a".repeat(26);
    private static Fixture f;
    private static final String ALICE = newToken();
    private static final String BOB = newToken();
    private static final String CAROL = newToken();

    @BeforeAll
    static void start() {
        f = Fixture.start(b -> b.tenant("alice", ALICE).tenant("bob", BOB).tenant("carol", CAROL)
                .maxSandboxesPerTenant(CAP).maxFailedAuthPerMinutePerIp(100_000), 1000);
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

    private static HttpResponse<String> call(String token, String method, String pathAndQuery, String body) {
        HttpRequest.Builder b = HttpRequest.newBuilder(f.uri(pathAndQuery)).header("Authorization", "Bearer " + token);
        if (method.equals("PUT")) {
            b.header("Content-Type", "application/octet-stream").PUT(HttpRequest.BodyPublishers.ofString("x"));
        } else if (method.equals("POST")) {
            b.header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
        } else {
            b.method(method, HttpRequest.BodyPublishers.noBody());
        }
        return f.send(b.build());
    }

    private static JsonNode create(String token, String extra) {
        HttpResponse<String> r = call(token, "POST", "/v1/sandboxes", Fixture.SMALL + extra + "}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        return json(r);
    }

    private static void delete(String token, String id) {
        assertThat(call(token, "DELETE", "/v1/sandboxes/" + id, null).statusCode()).isEqualTo(204);
    }

    private static void assertError(HttpResponse<String> r, int status, String code, String... inMessage) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        JsonNode e = json(r).get("error");
        assertThat(e.get("code").asText()).as(r.body()).isEqualTo(code);
        assertThat(e.get("message").asText()).contains(inMessage);
    }

    /** Every (method, path template) of the document that names one sandbox, by id or by name. */
    private static List<String[]> sandboxOperations() {
        JsonNode doc = Wire.parse(PaddockServer.resource("/io/paddock/server/openapi.json"));
        List<String[]> ops = new ArrayList<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = doc.get("paths").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> p = it.next();
            // A sandbox's routes; codebases and volumes have their own tenant tests (CodebaseApiTest, VolumeApiTest).
            if (!p.getKey().startsWith("/v1/sandboxes/") || !p.getKey().contains("{id}") && !p.getKey().contains("{name}")) {
                continue;
            }
            for (Iterator<String> m = p.getValue().fieldNames(); m.hasNext(); ) {
                ops.add(new String[] {m.next().toUpperCase(), p.getKey()});
            }
        }
        return ops;
    }

    private static String concrete(String template, String id, String name) {
        String path = template.replace("{id}", id).replace("{name}", name)
                .replace("{context}", "some-context").replace("{shell}", "some-shell").replace("{port}", "8000")
                .replace("{path}", "x");
        if (path.contains("/files") && !path.endsWith("mkdir") && !path.endsWith("remove") && !path.endsWith("move")) {
            path += "?path=/workspace/x";
        }
        return path;
    }

    @Test
    void anotherTenantsSandboxIsUnknownOnEveryRoute() throws Exception {
        JsonNode a = create(ALICE, ",\"name\":\"only-a\"");
        String id = a.get("id").asText();
        List<String[]> ops = sandboxOperations();
        assertThat(ops).hasSizeGreaterThan(25);
        Set<String> covered = new HashSet<>();
        for (String[] op : ops) {
            String method = op[0];
            String body = "{\"argv\":[\"true\"],\"path\":\"/workspace\",\"from\":\"/workspace/a\",\"to\":\"/workspace/b\","
                    + "\"timeout_ms\":1000,\"code\":\"print(1)\",\"language\":\"python\",\"command\":\"true\"}";
            HttpResponse<String> foreign = call(BOB, method, concrete(op[1], id, "only-a"), body);
            HttpResponse<String> unknown = call(BOB, method, concrete(op[1], UNKNOWN_ID, "nobody-has-it"), body);
            String what = method + " " + op[1];
            assertThat(foreign.statusCode()).as(what + ": " + foreign.body()).isEqualTo(404);
            assertThat(json(foreign).get("error").get("code").asText()).as(what).isEqualTo("NOT_FOUND");
            assertThat(foreign.body().replace(id, "X").replace("only-a", "N")).as(what)
                    .isEqualTo(unknown.body().replace(UNKNOWN_ID, "X").replace("nobody-has-it", "N"));
            assertThat(foreign.headers().map().keySet()).as(what).isEqualTo(unknown.headers().map().keySet());
            covered.add(op[1]);
        }
        assertThat(covered).contains("/v1/sandboxes/{id}", "/v1/sandboxes/by-name/{name}", "/v1/sandboxes/{id}/exec",
                "/v1/sandboxes/{id}/files", "/v1/sandboxes/{id}/logs", "/v1/sandboxes/{id}/code/run");
        // the WebSocket too
        assertThatThrownBy(() -> WsClient.connect(f.http, f.uri("/v1/sandboxes/" + id + "/exec/stream"), BOB, true))
                .isInstanceOf(CompletionException.class)
                .hasCauseInstanceOf(WebSocketHandshakeException.class)
                .satisfies(e -> assertThat(((WebSocketHandshakeException) e.getCause()).getResponse().statusCode())
                        .isEqualTo(404));
        // and a reusable socket of bob's: alice's sandbox is as unknown to it
        WsClient reusable = WsClient.connect(f.http, f.uri("/v1/exec/stream"), BOB, true);
        reusable.sendText("{\"sandbox_id\":\"" + id + "\",\"argv\":[\"touch\",\"/workspace/bob-was-here\"]}");
        JsonNode refused = reusable.drain(10).last().get("error").get("error");
        assertThat(refused.get("code").asText()).isEqualTo("NOT_FOUND");
        assertThat(refused.get("message").asText().replace(id, "X")).isEqualTo(json(call(BOB, "GET",
                "/v1/sandboxes/" + UNKNOWN_ID, null)).get("error").get("message").asText().replace(UNKNOWN_ID, "X"));
        // none of it touched alice's sandbox (DELETE, timeout, files, code): it runs, as it was
        HttpResponse<String> mine = call(ALICE, "GET", "/v1/sandboxes/" + id, null);
        assertThat(mine.statusCode()).isEqualTo(200);
        assertThat(json(mine).get("state").asText()).isEqualTo("RUNNING");
        assertThat(json(mine).get("expires_at").asText()).isEqualTo(a.get("expires_at").asText());
        assertThat(call(ALICE, "GET", "/v1/sandboxes/" + id + "/files/stat?path=/workspace/b", null).statusCode())
                .isEqualTo(404);
        assertThat(call(ALICE, "GET", "/v1/sandboxes/" + id + "/files/stat?path=/workspace/bob-was-here", null).statusCode())
                .isEqualTo(404);
        delete(ALICE, id);
    }

    @Test
    void namesAreScopedPerTenantAndListsAreFiltered() {
        JsonNode a = create(ALICE, ",\"name\":\"web\",\"labels\":{\"app\":\"x\"}");
        JsonNode b = create(BOB, ",\"name\":\"web\",\"labels\":{\"app\":\"x\"}");
        for (JsonNode n : List.of(a, b)) {
            assertThat(n.get("name").asText()).isEqualTo("web");
            assertThat(n.get("labels")).hasSize(1); // the owner label is the daemon's, not shown to tenants
        }
        String ida = a.get("id").asText();
        String idb = b.get("id").asText();
        assertThat(json(call(ALICE, "GET", "/v1/sandboxes/by-name/web", null)).get("id").asText()).isEqualTo(ida);
        assertThat(json(call(BOB, "GET", "/v1/sandboxes/by-name/web", null)).get("id").asText()).isEqualTo(idb);

        assertThat(ids(call(ALICE, "GET", "/v1/sandboxes", null))).contains(ida).doesNotContain(idb);
        assertThat(ids(call(BOB, "GET", "/v1/sandboxes?label=app=x", null))).containsExactly(idb);
        assertThat(ids(call(BOB, "GET", "/v1/sandboxes?name=web", null))).containsExactly(idb);
        assertThat(ids(call(CAROL, "GET", "/v1/sandboxes?name=web", null))).isEmpty();
        assertThat(json(call(ALICE, "GET", "/v1/sandboxes?name=web", null)).get("sandboxes").get(0).get("name").asText())
                .isEqualTo("web");

        // the operator sees both, as the engine has them
        JsonNode all = json(f.get("/v1/sandboxes?label=app=x"));
        assertThat(ids(all)).contains(ida, idb);
        for (JsonNode n : all.get("sandboxes")) {
            String owner = n.get("labels").get("paddock.io/tenant").asText();
            assertThat(n.get("name").asText()).isEqualTo(owner + "-web");
        }
        assertThat(ids(json(f.get("/v1/sandboxes?label=paddock.io/tenant=bob")))).containsExactly(idb);

        // a name taken by the same tenant is a conflict in its own terms
        assertError(call(ALICE, "POST", "/v1/sandboxes", Fixture.SMALL + ",\"name\":\"web\"}"), 409, "ALREADY_EXISTS", "'web'");
        assertThat(call(ALICE, "POST", "/v1/sandboxes", Fixture.SMALL + ",\"name\":\"web\"}").body()).doesNotContain("alice-");
        // timeout answers in the tenant's terms too
        HttpResponse<String> t = call(BOB, "POST", "/v1/sandboxes/" + idb + "/timeout", "{\"timeout_ms\":60000}");
        assertThat(t.statusCode()).isEqualTo(200);
        assertThat(json(t).get("name").asText()).isEqualTo("web");
        delete(ALICE, ida);
        delete(BOB, idb);
    }

    private static List<String> ids(HttpResponse<String> r) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return ids(json(r));
    }

    private static List<String> ids(JsonNode page) {
        List<String> ids = new ArrayList<>();
        page.get("sandboxes").forEach(n -> ids.add(n.get("id").asText()));
        return ids;
    }

    @Test
    void theOwnerLabelAndTenantPrefixesAreReserved() {
        String labelled = Fixture.SMALL + ",\"labels\":{\"paddock.io/tenant\":\"bob\"}}";
        assertError(call(ALICE, "POST", "/v1/sandboxes", labelled), 400, "INVALID_ARGUMENT", "labels", "paddock.io/tenant");
        assertError(f.post("/v1/sandboxes", labelled), 400, "INVALID_ARGUMENT", "labels", "paddock.io/tenant");
        assertError(call(ALICE, "GET", "/v1/sandboxes?label=paddock.io/tenant=bob", null), 400, "INVALID_ARGUMENT",
                "label", "paddock.io/tenant");
        // the operator cannot take a name inside a tenant's scope
        assertError(f.post("/v1/sandboxes", Fixture.SMALL + ",\"name\":\"bob-web\"}"), 400, "INVALID_ARGUMENT",
                "name", "tenant 'bob'");
        // a tenant's names are shorter by its prefix, and the error says by how much
        String max = "n".repeat(63 - "alice-".length());
        assertError(call(ALICE, "POST", "/v1/sandboxes", Fixture.SMALL + ",\"name\":\"" + max + "x\"}"), 400,
                "INVALID_ARGUMENT", "name", "at most " + max.length());
        String id = create(ALICE, ",\"name\":\"" + max + "\"").get("id").asText();
        assertThat(json(call(ALICE, "GET", "/v1/sandboxes/by-name/" + max, null)).get("id").asText()).isEqualTo(id);
        delete(ALICE, id);
    }

    @Test
    void eachTenantHasItsOwnCap() {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < CAP; i++) {
            ids.add(create(CAROL, "").get("id").asText());
        }
        HttpResponse<String> over = call(CAROL, "POST", "/v1/sandboxes", Fixture.SMALL + "}");
        assertError(over, 429, "RESOURCE_EXHAUSTED", "carol", String.valueOf(CAP));
        assertThat(over.headers().firstValue("Retry-After")).hasValue("1");
        // others are not affected: another tenant and the operator still create
        String other = create(BOB, "").get("id").asText();
        String op = f.createSandboxId();
        // and a destroyed sandbox frees its place
        delete(CAROL, ids.remove(0));
        ids.add(create(CAROL, "").get("id").asText());
        ids.forEach(i -> delete(CAROL, i));
        delete(BOB, other);
        f.delete("/v1/sandboxes/" + op);
    }

    @Test
    void theOperatorManagesEveryTenantsSandboxes() {
        String id = create(ALICE, "").get("id").asText();
        HttpResponse<String> r = f.get("/v1/sandboxes/" + id);
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(json(r).get("labels").get("paddock.io/tenant").asText()).isEqualTo("alice");
        assertThat(f.delete("/v1/sandboxes/" + id).statusCode()).isEqualTo(204);
        // and the operator's own sandboxes are no tenant's
        String mine = f.createSandboxId();
        assertError(call(ALICE, "GET", "/v1/sandboxes/" + mine, null), 404, "NOT_FOUND", mine);
        assertThat(ids(call(ALICE, "GET", "/v1/sandboxes", null))).doesNotContain(mine);
        f.delete("/v1/sandboxes/" + mine);
    }
}
