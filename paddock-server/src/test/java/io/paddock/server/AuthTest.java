package io.paddock.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.wire.Wire;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocketHandshakeException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;

import static io.paddock.server.Fixture.json;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A61: every endpoint but health needs the bearer token, from the header only; guessing is rate-limited. */
class AuthTest {
    private static Fixture f;
    private static String id;

    @BeforeAll
    static void start() {
        f = Fixture.start(b -> b.maxFailedAuthPerMinutePerIp(100_000), 1000);
        id = f.createSandboxId();
    }

    @AfterAll
    static void stop() {
        f.close();
    }

    /** Every (method, path) of the document, with a real sandbox id. */
    static List<String[]> operations() {
        JsonNode doc = Wire.parse(PaddockServer.resource("/io/paddock/server/openapi.json"));
        List<String[]> ops = new ArrayList<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = doc.get("paths").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> p = it.next();
            for (Iterator<String> m = p.getValue().fieldNames(); m.hasNext(); ) {
                String method = m.next();
                String path = p.getKey().replace("{id}", id).replace("{name}", "some-name")
                        .replace("{context}", "some-context").replace("{shell}", "some-shell").replace("{port}", "8000")
                        .replace("{path}", "x").replace("{token}", "some-token");
                if (path.contains("/files") && !path.endsWith("mkdir") && !path.endsWith("remove") && !path.endsWith("move")) {
                    path += "?path=/workspace/x";
                }
                ops.add(new String[] {method.toUpperCase(), path});
            }
        }
        return ops;
    }

    private static HttpRequest.Builder unauthenticated(String method, String pathAndQuery) {
        HttpRequest.Builder b = HttpRequest.newBuilder(f.uri(pathAndQuery));
        HttpRequest.BodyPublisher body = method.equals("GET") || method.equals("DELETE")
                ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString("{\"path\":\"/tmp\"}");
        return b.method(method, body);
    }

    private static void assertUnauthorized(HttpResponse<String> r, String what) {
        assertThat(r.statusCode()).as(what + ": " + r.body()).isEqualTo(401);
        assertThat(r.headers().firstValue("WWW-Authenticate")).as(what).hasValueSatisfying(v -> assertThat(v).startsWith("Bearer"));
        JsonNode e = json(r).get("error");
        assertThat(e.get("code").asText()).as(what).isEqualTo("PERMISSION_DENIED");
        assertThat(e.get("message").asText()).as(what).isNotBlank().doesNotContain(f.token);
    }

    @Test
    void everyEndpointButHealthNeedsTheToken() {
        List<String[]> ops = operations();
        assertThat(ops).hasSizeGreaterThan(15);
        String q = URLEncoder.encode(f.token, StandardCharsets.UTF_8);
        for (String[] op : ops) {
            String method = op[0];
            String path = op[1];
            if (path.equals("/v1/health")) {
                continue;
            }
            if (path.startsWith("/v1/p/")) {
                // a signed port URL: its token is the credential, and a made-up one is refused without a bearer token
                HttpResponse<String> r = f.send(unauthenticated(method, path).build());
                assertThat(r.statusCode()).as(method + " " + path + ": " + r.body()).isEqualTo(403);
                assertThat(json(r).get("error").get("code").asText()).isEqualTo("PERMISSION_DENIED");
                r = f.send(unauthenticated(method, path).header("Authorization", "Bearer " + f.token).build());
                assertThat(r.statusCode()).as(method + " " + path + " with the daemon's token: " + r.body()).isEqualTo(403);
                continue;
            }
            String sep = path.contains("?") ? "&" : "?";
            assertUnauthorized(f.send(unauthenticated(method, path).build()), method + " " + path + " without a token");
            assertUnauthorized(f.send(unauthenticated(method, path).header("Authorization", "Bearer wrong-" + f.token).build()),
                    method + " " + path + " with a wrong token");
            assertUnauthorized(f.send(unauthenticated(method, path).header("Authorization", "Basic " + f.token).build()),
                    method + " " + path + " with another scheme");
            assertUnauthorized(f.send(unauthenticated(method, path + sep + "token=" + q).build()),
                    method + " " + path + " with ?token=");
            assertUnauthorized(f.send(unauthenticated(method, path + sep + "access_token=" + q).build()),
                    method + " " + path + " with ?access_token=");
        }
        // and unknown paths do not reveal that they are unknown
        assertUnauthorized(f.send(unauthenticated("GET", "/v2/secret").build()), "an unknown path");
        // the token is still right: the same calls with it pass authentication
        assertThat(f.get("/v1/sandboxes/" + id).statusCode()).isEqualTo(200);
    }

    /**
     * A refusal sent before the request body is read must say {@code Connection: close}: the connection
     * cannot carry another request, and a client that reused it before the server closed it got no answer.
     */
    @Test
    void aRefusalBeforeTheBodyIsReadClosesTheConnectionAndSaysSo() throws Exception {
        java.util.concurrent.CountDownLatch answered = new java.util.concurrent.CountDownLatch(1);
        RawHttp.Reply r = RawHttp.exchange(f.server.url(),
                "POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4096",
                out -> {
                    try {
                        answered.await(); // the body comes only after the answer
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }, 30_000);
        answered.countDown();
        assertThat(r.status()).isEqualTo(401);
        assertThat(r.headers().get("connection")).isEqualToIgnoringCase("close");
        // an answer to a request that had all of its body read keeps the connection
        assertThat(f.get("/v1/sandboxes/" + id).headers().firstValue("Connection")).isEmpty();
    }

    @Test
    void healthNeedsNoToken() {
        HttpResponse<String> r = f.send(HttpRequest.newBuilder(f.uri("/v1/health")).GET().build());
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(json(r).get("status").asText()).isEqualTo("ok");
    }

    /**
     * The Kubernetes Deployment's probes (plain manifest and Helm chart) are HTTP GETs the daemon answers 200 without
     * a token: a probe of an authenticated path gets 401 and the pod never becomes Ready (issue 37, defect 2).
     */
    @Test
    void theDeploymentsProbesAreAnsweredWithoutAToken() throws Exception {
        java.util.regex.Pattern probe = java.util.regex.Pattern.compile(
                "(readinessProbe|livenessProbe):\\s*\\n\\s*httpGet:\\s*\\n\\s*path:\\s*(\\S+)");
        for (String file : List.of("../deploy/kubernetes/30-daemon.yaml", "../deploy/helm/paddock/templates/daemon.yaml")) {
            String text = java.nio.file.Files.readString(java.nio.file.Path.of(file));
            java.util.regex.Matcher m = probe.matcher(text);
            List<String> kinds = new ArrayList<>();
            while (m.find()) {
                kinds.add(m.group(1));
                HttpResponse<String> r = f.send(HttpRequest.newBuilder(f.uri(m.group(2))).GET().build());
                assertThat(r.statusCode()).as(file + " " + m.group(1) + " GET " + m.group(2) + ": " + r.body())
                        .isEqualTo(200);
            }
            assertThat(kinds).as(file + ": HTTP probes").containsExactlyInAnyOrder("readinessProbe", "livenessProbe");
        }
    }

    @Test
    void theWebSocketUpgradeNeedsTheToken() {
        assertThatThrownBy(() -> WsClient.connect(f.http, f.uri("/v1/sandboxes/" + id + "/exec/stream"), null, true))
                .isInstanceOf(CompletionException.class)
                .hasCauseInstanceOf(WebSocketHandshakeException.class)
                .satisfies(e -> assertThat(((WebSocketHandshakeException) e.getCause()).getResponse().statusCode())
                        .isEqualTo(401));
        assertThatThrownBy(() -> WsClient.connect(f.http, f.uri("/v1/sandboxes/" + id + "/exec/stream?token="
                + URLEncoder.encode(f.token, StandardCharsets.UTF_8)), null, true))
                .hasCauseInstanceOf(WebSocketHandshakeException.class);
    }

    @Test
    void bruteForceIsRateLimited() {
        // a second server over the same engine, with a small budget
        try (PaddockServer small = PaddockServer.start(ServerOptions.builder().port(0).token(f.token)
                .maxFailedAuthPerMinutePerIp(5).build(), f.paddock)) {
            HttpRequest.Builder get = HttpRequest.newBuilder(java.net.URI.create(small.url() + "/v1/sandboxes")).GET();
            for (int i = 0; i < 5; i++) {
                assertUnauthorized(f.send(get.copy().header("Authorization", "Bearer guess-" + i).build()), "guess " + i);
            }
            HttpResponse<String> limited = f.send(get.copy().header("Authorization", "Bearer guess-6").build());
            assertThat(limited.statusCode()).isEqualTo(429);
            assertThat(json(limited).get("error").get("code").asText()).isEqualTo("RESOURCE_EXHAUSTED");
            assertThat(limited.headers().firstValue("Retry-After")).hasValueSatisfying(v ->
                    assertThat(Integer.parseInt(v)).isBetween(1, 60));
            // while limited, even the right token gets 429: the limit is no oracle
            assertThat(f.send(get.copy().header("Authorization", "Bearer " + f.token).build()).statusCode()).isEqualTo(429);
            // health stays open
            assertThat(f.send(HttpRequest.newBuilder(java.net.URI.create(small.url() + "/v1/health")).build()).statusCode())
                    .isEqualTo(200);
        }
    }
}
