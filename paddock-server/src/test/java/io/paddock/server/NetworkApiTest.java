package io.paddock.server;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

import static io.paddock.server.Fixture.json;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Networks over REST with real sandboxes (runc): a policy and a port at create, the port reached through the
 * daemon with the owner's token and through a signed URL without one, the policy changed with PATCH, traffic
 * in the info, and the URL dead once the sandbox is gone.
 */
class NetworkApiTest {
    private static Fixture f;
    private static final HttpClient PLAIN = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    static void start() {
        f = Fixture.start();
    }

    @AfterAll
    static void stop() {
        f.close();
    }

    private static HttpResponse<String> plainGet(String url) throws Exception {
        return PLAIN.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(20)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aPortIsServedThroughTheDaemonAndAPolicyChangesWithPatch() throws Exception {
        JsonNode created = f.createSandbox(",\"network\":{\"mode\":\"allow\",\"allow\":[\"198.18.13.2/32\"]},\"ports\":[8000],"
                + "\"entrypoint\":[\"python3\",\"-m\",\"http.server\",\"8000\",\"--directory\",\"/etc\"]");
        String id = created.get("id").asText();
        assertThat(created.get("network").get("allow").get(0).asText()).isEqualTo("198.18.13.2/32");
        assertThat(created.get("ports").get(0).asInt()).isEqualTo(8000);

        String path = "/v1/sandboxes/" + id + "/ports/8000/hostname";
        HttpResponse<String> viaToken = null;
        for (int i = 0; i < 100; i++) {
            viaToken = f.get(path);
            if (viaToken.statusCode() == 200) {
                break;
            }
            Thread.sleep(100);
        }
        assertThat(viaToken.statusCode()).as(viaToken.body()).isEqualTo(200);
        assertThat(viaToken.body()).isEqualTo("sandbox\n");
        assertThat(plainGet(f.uri(path).toString()).statusCode()).as("no token").isEqualTo(401);
        assertThat(f.get("/v1/sandboxes/" + id + "/ports/9000/").statusCode()).as("a port not exposed").isEqualTo(400);

        HttpResponse<String> minted = f.post("/v1/sandboxes/" + id + "/ports/8000/url", "{}");
        assertThat(minted.statusCode()).as(minted.body()).isEqualTo(200);
        String url = json(minted).get("url").asText();
        assertThat(plainGet(url + "hostname").body()).isEqualTo("sandbox\n");
        String tampered = url.replaceFirst("/v1/p/.", "/v1/p/" + (url.contains("/v1/p/A") ? "B" : "A"));
        assertThat(plainGet(tampered + "hostname").statusCode()).isIn(403, 404);

        HttpResponse<String> patched = f.patch("/v1/sandboxes/" + id + "/network", "{\"mode\":\"open\"}");
        assertThat(patched.statusCode()).as(patched.body()).isEqualTo(200);
        assertThat(json(patched).get("network").get("mode").asText()).isEqualTo("open");
        JsonNode info = json(f.get("/v1/sandboxes/" + id));
        assertThat(info.get("network").get("mode").asText()).isEqualTo("open");
        assertThat(info.get("traffic").get("tx_bytes").asLong()).isPositive();
        HttpResponse<String> bad = f.patch("/v1/sandboxes/" + id + "/network", "{\"mode\":\"allow\",\"allow\":[\"10.0.0.1/33\"]}");
        assertThat(bad.statusCode()).isEqualTo(400);
        assertThat(bad.body()).contains("10.0.0.1/33");

        assertThat(f.delete("/v1/sandboxes/" + id).statusCode()).isIn(200, 204);
        assertThat(plainGet(url + "hostname").statusCode()).as("the URL dies with the sandbox").isIn(403, 404, 410);
    }

    @Test
    void aSandboxWithoutANetworkCannotGainOne() {
        String id = f.createSandboxId();
        HttpResponse<String> r = f.patch("/v1/sandboxes/" + id + "/network", "{\"mode\":\"open\"}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(409);
        assertThat(r.body()).contains("without a network");
    }
}
