package io.paddock.server;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;

import static io.paddock.server.Fixture.json;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Codebases over REST with real sandboxes (runc): an upload (what the daemon's walk leaves out), a sandbox on it,
 * its diff and commit over HTTP, removal refused while mounted, a tar that climbs out refused whole (upload
 * traversal), and tenants who see and mount only their own codebases. The remote SDK's side is
 * paddock-client's RemoteCodebasesTest.
 */
class CodebaseApiTest {
    private static final String ALICE = "alice-token-0123456789abcdef0123456789";
    private static final String BOB = "bob-token-0123456789abcdef0123456789ab";
    /** Codebases outlive a daemon: each run names its own. */
    private static final String RUN = Long.toString(ProcessHandle.current().pid());
    private static final String PROJ = "proj" + RUN;
    private static Fixture f;

    @BeforeAll
    static void start() {
        f = Fixture.start(b -> b.tenant("alice", ALICE).tenant("bob", BOB), 1000);
    }

    @AfterAll
    static void stop() {
        f.close();
    }

    private static HttpResponse<String> as(String token, String method, String path, String body) {
        HttpRequest.Builder b = HttpRequest.newBuilder(f.uri(path)).header("Authorization", "Bearer " + token);
        b.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (body != null) {
            b.header("Content-Type", "application/json");
        }
        return f.send(b.build());
    }

    private static String stdout(HttpResponse<String> exec) {
        return new String(java.util.Base64.getDecoder().decode(json(exec).get("stdout").asText()), StandardCharsets.UTF_8);
    }

    private static byte[] tar(String... nameAndContent) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (TarArchiveOutputStream t = new TarArchiveOutputStream(out)) {
            for (int i = 0; i < nameAndContent.length; i += 2) {
                byte[] data = nameAndContent[i + 1].getBytes(StandardCharsets.UTF_8);
                TarArchiveEntry e = new TarArchiveEntry(nameAndContent[i]);
                e.setSize(data.length);
                t.putArchiveEntry(e);
                t.write(data);
                t.closeArchiveEntry();
            }
        }
        return out.toByteArray();
    }

    @Test
    void anUploadedCodebaseIsWorkedOnReviewedAndCommittedOverHttp() throws Exception {
        String cb = "api-cb" + RUN;
        HttpResponse<String> up = f.send(f.request("/v1/codebases/" + cb + "?ignore=*.tmp").header("Content-Type", "application/x-tar")
                .POST(HttpRequest.BodyPublishers.ofByteArray(tar("main.py", "print('hi')", "out/.keep", "", "scratch.tmp", "junk")))
                .build());
        assertThat(up.statusCode()).as(up.body()).isEqualTo(201);
        assertThat(json(up).get("skipped").get(0).get("path").asText()).isEqualTo("scratch.tmp");
        assertThat(json(f.get("/v1/codebases")).get("codebases").findValuesAsText("name")).contains(cb);

        JsonNode sb = f.createSandbox(",\"codebase\":{\"name\":\"" + cb + "\",\"preset\":\"read-only\",\"rules\":[\"out/**:write\"]}");
        String id = sb.get("id").asText();
        HttpResponse<String> exec = f.post("/v1/sandboxes/" + id + "/exec", "{\"argv\":[\"sh\",\"-c\","
                + "\"echo r > /workspace/out/r.txt; echo x >> /workspace/main.py; ls -a /workspace\"]}");
        assertThat(stdout(exec)).contains("main.py").doesNotContain("scratch.tmp");
        JsonNode diff = json(f.get("/v1/sandboxes/" + id + "/codebase/diff"));
        assertThat(diff.get("changes")).hasSize(1);
        assertThat(diff.get("changes").get(0).get("path").asText()).isEqualTo("out/r.txt");
        assertThat(diff.get("changes").get(0).get("kind").asText()).isEqualTo("added");
        HttpResponse<String> busy = f.delete("/v1/codebases/" + cb);
        assertThat(busy.statusCode()).isEqualTo(409);
        assertThat(busy.body()).contains(id);
        HttpResponse<String> commit = f.post("/v1/sandboxes/" + id + "/codebase/commit", "{}");
        assertThat(commit.statusCode()).as(commit.body()).isEqualTo(200);
        assertThat(json(commit).get("revision").asInt()).isEqualTo(2);
        f.delete("/v1/sandboxes/" + id);
        assertThat(f.get("/v1/sandboxes/" + id + "/codebase/diff").statusCode()).isIn(404, 409);
        assertThat(f.delete("/v1/codebases/" + cb).statusCode()).isEqualTo(204);
        assertThat(f.get("/v1/codebases/" + cb).statusCode()).isEqualTo(404);
    }

    @Test
    void aTarThatClimbsOutIsRefusedWhole() throws Exception {
        HttpResponse<String> r = f.send(f.request("/v1/codebases/evil-" + RUN).header("Content-Type", "application/x-tar")
                .POST(HttpRequest.BodyPublishers.ofByteArray(tar("ok.txt", "fine", "../../escaped.txt", "bad"))).build());
        assertThat(r.statusCode()).isEqualTo(400);
        assertThat(r.body()).contains("codebase upload");
        assertThat(f.get("/v1/codebases/evil-" + RUN).statusCode()).isEqualTo(404);
    }

    @Test
    void tenantsSeeAndMountOnlyTheirOwnCodebases() throws Exception {
        HttpResponse<String> up = f.send(HttpRequest.newBuilder(f.uri("/v1/codebases/" + PROJ)).header("Authorization", "Bearer " + ALICE)
                .header("Content-Type", "application/x-tar").POST(HttpRequest.BodyPublishers.ofByteArray(tar("a.txt", "alice"))).build());
        assertThat(up.statusCode()).as(up.body()).isEqualTo(201);
        assertThat(json(up).get("name").asText()).isEqualTo(PROJ);
        assertThat(json(as(ALICE, "GET", "/v1/codebases", null)).get("codebases").get(0).get("name").asText()).isEqualTo(PROJ);
        assertThat(json(as(BOB, "GET", "/v1/codebases", null)).get("codebases")).isEmpty();
        assertThat(as(BOB, "GET", "/v1/codebases/" + PROJ, null).statusCode()).isEqualTo(404);
        assertThat(as(BOB, "DELETE", "/v1/codebases/" + PROJ, null).statusCode()).isEqualTo(404);
        HttpResponse<String> bobs = as(BOB, "POST", "/v1/sandboxes", Fixture.SMALL + ",\"codebase\":{\"name\":\"" + PROJ + "\"}}");
        assertThat(bobs.statusCode()).isEqualTo(400);
        assertThat(bobs.body()).contains("codebase");
        HttpResponse<String> alices = as(ALICE, "POST", "/v1/sandboxes", Fixture.SMALL + ",\"codebase\":{\"name\":\"" + PROJ + "\",\"preset\":\"read-only\"}}");
        assertThat(alices.statusCode()).as(alices.body()).isEqualTo(201);
        String id = json(alices).get("id").asText();
        HttpResponse<String> exec = as(ALICE, "POST", "/v1/sandboxes/" + id + "/exec", "{\"argv\":[\"cat\",\"/workspace/a.txt\"]}");
        assertThat(stdout(exec)).isEqualTo("alice");
        assertThat(as(BOB, "GET", "/v1/sandboxes/" + id + "/codebase/diff", null).statusCode()).isEqualTo(404);
        assertThat(as(ALICE, "DELETE", "/v1/sandboxes/" + id, null).statusCode()).isIn(200, 204);
        assertThat(as(ALICE, "DELETE", "/v1/codebases/" + PROJ, null).statusCode()).isEqualTo(204);
        // the operator may not take a tenant's prefix
        assertThat(f.send(f.request("/v1/codebases/alice-x" + RUN).header("Content-Type", "application/x-tar")
                .POST(HttpRequest.BodyPublishers.ofByteArray(tar("a", "b"))).build()).statusCode()).isEqualTo(400);
    }
}
