package io.paddock.server;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.List;
import java.util.regex.Pattern;

import static io.paddock.server.Fixture.json;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The dashboard's page and session over plain HTTP, on a real daemon over the real engine: the page needs no token
 * and forbids framing and inline script; a login gives a strict cookie and a CSRF token; the cookie alone, a forged
 * or ended session, a session on any other route, and a destroy without the CSRF token are all refused.
 */
class DashboardTest {
    private static final String ALICE = newToken();
    private static Fixture f;

    @BeforeAll
    static void start() {
        f = Fixture.start(b -> b.tenant("alice", ALICE).maxFailedAuthPerMinutePerIp(100_000), 1000);
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

    /** A signed-in dashboard: its cookie (name=value) and its CSRF token. */
    record Session(String cookie, String csrf, JsonNode login) {
    }

    private static HttpResponse<String> postLogin(String body, String contentType, String... headers) {
        HttpRequest.Builder b = HttpRequest.newBuilder(f.uri("/ui/login")).header("Content-Type", contentType)
                .POST(HttpRequest.BodyPublishers.ofString(body));
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return f.send(b.build());
    }

    private static Session login(String token) {
        HttpResponse<String> r = postLogin("{\"token\":\"" + token + "\"}", "application/json");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        String setCookie = r.headers().firstValue("Set-Cookie").orElseThrow();
        return new Session(setCookie.substring(0, setCookie.indexOf(';')), json(r).get("csrf_token").asText(), json(r));
    }

    /** A request as the page makes it: the cookie, and the CSRF header when {@code csrf} is not null. */
    private static HttpResponse<String> call(String cookie, String csrf, String method, String path) {
        HttpRequest.Builder b = HttpRequest.newBuilder(f.uri(path)).header("Cookie", cookie)
                .method(method, HttpRequest.BodyPublishers.noBody());
        if (csrf != null) {
            b.header("X-Paddock-CSRF", csrf);
        }
        return f.send(b.build());
    }

    private static HttpResponse<String> call(Session s, String method, String path) {
        return call(s.cookie(), s.csrf(), method, path);
    }

    private static String state(String id) {
        return json(f.get("/v1/sandboxes/" + id)).get("state").asText();
    }

    private static void assertRefused(HttpResponse<String> r, int status) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        assertThat(json(r).get("error").get("code").asText()).isEqualTo("PERMISSION_DENIED");
    }

    @Test
    void thePageNeedsNoTokenAndForbidsFramingInlineScriptAndOtherOrigins() {
        for (String path : List.of("/ui", "/ui/")) {
            HttpResponse<String> page = f.send(HttpRequest.newBuilder(f.uri(path)).GET().build());
            assertThat(page.statusCode()).isEqualTo(200);
            assertThat(page.headers().firstValue("Content-Type")).hasValue("text/html; charset=utf-8");
            String csp = page.headers().firstValue("Content-Security-Policy").orElseThrow();
            assertThat(csp).contains("default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "object-src 'none'")
                    .doesNotContain("unsafe-inline", "unsafe-eval");
            assertThat(page.headers().firstValue("X-Frame-Options")).hasValue("DENY");
            assertThat(page.headers().firstValue("X-Content-Type-Options")).hasValue("nosniff");
            assertThat(page.headers().firstValue("Cross-Origin-Opener-Policy")).hasValue("same-origin");
            assertThat(page.headers().firstValue("Cache-Control")).hasValue("no-store");
            assertThat(page.body()).contains("<form id=\"login-form\"", "<script src=\"/ui/app.js\" defer></script>");
            // no inline script, event handler or style attribute: the CSP would refuse them anyway
            assertThat(Pattern.compile("<script(?![^>]*\\bsrc=)").matcher(page.body()).find()).isFalse();
            assertThat(Pattern.compile("\\son[a-z]+\\s*=", Pattern.CASE_INSENSITIVE).matcher(page.body()).find()).isFalse();
            assertThat(page.body()).doesNotContain("style=");
        }
        HttpResponse<String> js = f.send(HttpRequest.newBuilder(f.uri("/ui/app.js")).GET().build());
        assertThat(js.headers().firstValue("Content-Type")).hasValue("text/javascript; charset=utf-8");
        assertThat(js.body()).contains("textContent").doesNotContain(".innerHTML", "outerHTML", "insertAdjacentHTML",
                "document.write", "eval(");
        assertThat(f.send(HttpRequest.newBuilder(f.uri("/ui/app.css")).GET().build()).headers().firstValue("Content-Type"))
                .hasValue("text/css; charset=utf-8");
        assertThat(f.send(HttpRequest.newBuilder(f.uri("/ui/none")).GET().build()).statusCode()).isEqualTo(404);
        HttpResponse<String> post = f.send(HttpRequest.newBuilder(f.uri("/ui"))
                .POST(HttpRequest.BodyPublishers.noBody()).build());
        assertThat(post.statusCode()).isEqualTo(405);
        assertThat(post.headers().firstValue("Allow")).hasValue("GET, HEAD");
    }

    @Test
    void aLoginGivesAStrictHttpOnlyCookieAndACsrfTokenAndNeverEchoesTheToken() {
        HttpResponse<String> r = postLogin("{\"token\":\"" + f.token + "\"}", "application/json");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        List<String> cookies = r.headers().allValues("Set-Cookie");
        assertThat(cookies).hasSize(1);
        // plain HTTP on loopback: not Secure (a browser would keep it; so would curl)
        assertThat(cookies.get(0)).matches("paddock_session=[A-Za-z0-9_-]{43}; Path=/; HttpOnly; SameSite=Strict");
        JsonNode body = json(r);
        assertThat(body.get("operator").asBoolean()).isTrue();
        assertThat(body.get("tenant").isNull()).isTrue();
        assertThat(body.get("csrf_token").asText()).matches("[A-Za-z0-9_-]{43}");
        assertThat(r.body() + cookies).doesNotContain(f.token);
        assertThat(r.headers().firstValue("Content-Security-Policy")).isPresent();

        // behind a TLS proxy the cookie is Secure
        HttpResponse<String> tls = postLogin("{\"token\":\"" + f.token + "\"}", "application/json", "X-Forwarded-Proto", "https");
        assertThat(tls.headers().firstValue("Set-Cookie").orElseThrow()).endsWith("; HttpOnly; SameSite=Strict; Secure");

        Session alice = login(ALICE);
        assertThat(alice.login().get("operator").asBoolean()).isFalse();
        assertThat(alice.login().get("tenant").asText()).isEqualTo("alice");
        JsonNode who = json(call(alice, "GET", "/ui/session"));
        assertThat(who.get("tenant").asText()).isEqualTo("alice");
    }

    @Test
    void badLoginsAreRefused() {
        assertRefused(postLogin("{\"token\":\"wrong\"}", "application/json"), 401);
        // a form (what a cross-site page can post without asking) is not a login
        HttpResponse<String> form = postLogin("token=" + f.token, "application/x-www-form-urlencoded");
        assertThat(form.statusCode()).isEqualTo(415);
        assertThat(form.headers().firstValue("Set-Cookie")).isEmpty();
        HttpResponse<String> text = postLogin("{\"token\":\"" + f.token + "\"}", "text/plain");
        assertThat(text.statusCode()).isEqualTo(415);
        assertThat(text.headers().firstValue("Set-Cookie")).isEmpty();
        assertThat(postLogin("{}", "application/json").statusCode()).isEqualTo(400);
        assertThat(postLogin("{\"token\":", "application/json").statusCode()).isEqualTo(400);
        assertThat(postLogin("{\"token\":\"" + "x".repeat(9000) + "\"}", "application/json").statusCode()).isEqualTo(413);
        assertThat(f.send(HttpRequest.newBuilder(f.uri("/ui/login")).GET().build()).statusCode()).isEqualTo(405);
    }

    @Test
    void aSessionReadsWhatTheDashboardShows() {
        String id = f.createSandboxId();
        Session s = login(f.token);
        JsonNode list = json(call(s, "GET", "/v1/sandboxes?limit=1000"));
        assertThat(list.get("sandboxes").findValuesAsText("id")).contains(id);
        assertThat(call(s, "GET", "/v1/sandboxes/" + id).statusCode()).isEqualTo(200);
        assertThat(call(s, "GET", "/v1/sandboxes/" + id + "/logs").statusCode()).isEqualTo(200);
        HttpResponse<String> u = call(s, "GET", "/v1/sandboxes/" + id + "/usage");
        assertThat(u.statusCode()).as(u.body()).isEqualTo(200);
        JsonNode usage = json(u);
        assertThat(usage.get("memory_bytes").asLong()).isPositive();
        assertThat(usage.get("memory_limit_bytes").asLong()).isGreaterThanOrEqualTo(128L << 20);
        assertThat(usage.get("processes").asLong()).isPositive();
        assertThat(call(s, "GET", "/v1/version").statusCode()).isEqualTo(200);
        assertThat(call(s, "GET", "/v1/images").statusCode()).isEqualTo(200);
    }

    @Test
    void theCookieAloneAuthorizesNothingNotEvenAReadAndDestroyNeedsTheCsrfToken() {
        String id = f.createSandboxId();
        Session s = login(f.token);
        Session other = login(f.token);
        assertRefused(call(s.cookie(), null, "GET", "/v1/sandboxes"), 403);
        assertRefused(call(s.cookie(), null, "GET", "/ui/session"), 403);
        assertRefused(call(s.cookie(), "", "GET", "/v1/sandboxes"), 403);

        // CSRF on destroy: the cookie alone, a wrong token, another session's token: refused, the sandbox lives
        assertRefused(call(s.cookie(), null, "DELETE", "/v1/sandboxes/" + id), 403);
        assertRefused(call(s.cookie(), "x" + s.csrf(), "DELETE", "/v1/sandboxes/" + id), 403);
        assertRefused(call(s.cookie(), other.csrf(), "DELETE", "/v1/sandboxes/" + id), 403);
        assertThat(state(id)).isEqualTo("RUNNING");
        // with it, the destroy goes through
        assertThat(call(s, "DELETE", "/v1/sandboxes/" + id).statusCode()).isEqualTo(204);
        assertThat(state(id)).isEqualTo("STOPPED");
    }

    @Test
    void aForgedSessionIsRefusedAsAFailedAuthentication() {
        Session s = login(f.token);
        byte[] raw = new byte[32];
        new SecureRandom().nextBytes(raw);
        String forged = "paddock_session=" + Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
        assertRefused(call(forged, s.csrf(), "GET", "/v1/sandboxes"), 401);
        assertRefused(call(forged, s.csrf(), "GET", "/ui/session"), 401);
        String value = s.cookie().substring("paddock_session=".length());
        String altered = "paddock_session=" + (value.charAt(0) == 'A' ? 'B' : 'A') + value.substring(1);
        assertRefused(call(altered, s.csrf(), "GET", "/v1/sandboxes"), 401);
        // the CSRF token is no session id
        assertRefused(call("paddock_session=" + s.csrf(), s.csrf(), "GET", "/v1/sandboxes"), 401);
        // a second session cookie makes neither count (then the request has no credential at all)
        assertRefused(call(s.cookie() + "; " + forged, s.csrf(), "GET", "/v1/sandboxes"), 401);
        // the real one still works
        HttpResponse<String> real = call(s, "GET", "/v1/sandboxes");
        assertThat(real.statusCode()).as(real.body()).isEqualTo(200);

        // a forged session spends the address's failure budget like a wrong token does
        try (Fixture strict = Fixture.start(b -> b.maxFailedAuthPerMinutePerIp(2), 10)) {
            for (int i = 0; i < 2; i++) {
                HttpResponse<String> r = strict.send(HttpRequest.newBuilder(strict.uri("/v1/sandboxes")).header("Cookie", forged)
                        .header("X-Paddock-CSRF", "x").GET().build());
                assertThat(r.statusCode()).isEqualTo(401);
            }
            HttpResponse<String> blocked = strict.send(HttpRequest.newBuilder(strict.uri("/ui/session")).header("Cookie", forged)
                    .header("X-Paddock-CSRF", "x").GET().build());
            assertThat(blocked.statusCode()).isEqualTo(429);
            assertThat(blocked.headers().firstValue("Retry-After")).isPresent();
        }
    }

    /**
     * Credentials are read exactly as sent, whatever came before on the connection. Jetty's parser caches the
     * header lines it has seen on a connection and by default matches them ignoring case, so a cookie or
     * token that differed from an earlier one only in case was read as the earlier one: the forged-session
     * test failed whenever its real session id began with 'a' (its altered copy began with 'A').
     */
    @Test
    void aCredentialDifferingOnlyInCaseFromTheConnectionsLastOneIsReadAsSent() {
        Session s = login(f.token);
        String value = s.cookie().substring("paddock_session=".length());
        String swapped = swapCase(value);
        for (int i = 0; i < 3; i++) { // one client, so one kept-alive connection: each request follows the other
            assertRefused(call("paddock_session=" + swapped, s.csrf(), "GET", "/v1/sandboxes"), 401);
            HttpResponse<String> real = call(s, "GET", "/v1/sandboxes");
            assertThat(real.statusCode()).as("the real session right after its case-swapped copy: %s", real.body())
                    .isEqualTo(200);
        }
        for (int i = 0; i < 3; i++) {
            assertThat(f.send(f.request("/v1/sandboxes").GET().build()).statusCode()).as("the real token").isEqualTo(200);
            HttpResponse<String> wrong = f.send(HttpRequest.newBuilder(f.uri("/v1/sandboxes"))
                    .header("Authorization", "Bearer " + swapCase(f.token)).GET().build());
            assertThat(wrong.statusCode()).as("the token's case-swapped copy right after the real one: %s", wrong.body())
                    .isEqualTo(401);
        }
    }

    private static String swapCase(String s) {
        StringBuilder b = new StringBuilder(s.length());
        for (char c : s.toCharArray()) {
            b.append(Character.isUpperCase(c) ? Character.toLowerCase(c) : Character.toUpperCase(c));
        }
        return b.toString();
    }

    @Test
    void aSessionReachesOnlyTheDashboardsRoutesAndABearerTokenWinsOverACookie() {
        String id = f.createSandboxId();
        Session s = login(f.token);
        HttpResponse<String> create = f.send(HttpRequest.newBuilder(f.uri("/v1/sandboxes")).header("Cookie", s.cookie())
                .header("X-Paddock-CSRF", s.csrf()).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(Fixture.SMALL + "}")).build());
        assertRefused(create, 403);
        assertThat(json(create).get("error").get("message").asText()).contains("Authorization: Bearer");
        HttpResponse<String> exec = f.send(HttpRequest.newBuilder(f.uri("/v1/sandboxes/" + id + "/exec"))
                .header("Cookie", s.cookie()).header("X-Paddock-CSRF", s.csrf()).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"argv\":[\"true\"]}")).build());
        assertRefused(exec, 403);
        for (String path : List.of("/v1/openapi.json", "/v1/sandboxes/" + id + "/files?path=/etc/hostname",
                "/v1/volumes", "/v1/codebases", "/v1/sandboxes/" + id + "/ports/8000/")) {
            assertRefused(call(s, "GET", path), 403);
        }
        assertRefused(call(s, "POST", "/v1/sandboxes/" + id + "/pause"), 403);
        assertThat(state(id)).isEqualTo("RUNNING");

        // with an Authorization header the request is a bearer one, whatever cookie it carries
        HttpResponse<String> bearer = f.send(f.request("/v1/sandboxes/" + id).header("Cookie", "paddock_session=forged").GET().build());
        assertThat(bearer.statusCode()).isEqualTo(200);
        HttpResponse<String> wrongBearer = f.send(HttpRequest.newBuilder(f.uri("/v1/sandboxes/" + id))
                .header("Authorization", "Bearer wrong").header("Cookie", s.cookie()).header("X-Paddock-CSRF", s.csrf())
                .GET().build());
        assertThat(wrongBearer.statusCode()).isEqualTo(401);
    }

    @Test
    void aTenantsSessionSeesAndDestroysOnlyItsOwn() {
        String operators = f.createSandboxId();
        HttpResponse<String> created = f.send(HttpRequest.newBuilder(f.uri("/v1/sandboxes"))
                .header("Authorization", "Bearer " + ALICE).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(Fixture.SMALL + "}")).build());
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        String alices = json(created).get("id").asText();
        Session alice = login(ALICE);
        List<String> seen = json(call(alice, "GET", "/v1/sandboxes?limit=1000")).get("sandboxes").findValuesAsText("id");
        assertThat(seen).contains(alices).doesNotContain(operators);
        assertThat(call(alice, "GET", "/v1/sandboxes/" + operators).statusCode()).isEqualTo(404);
        assertThat(call(alice, "GET", "/v1/sandboxes/" + operators + "/usage").statusCode()).isEqualTo(404);
        assertThat(call(alice, "DELETE", "/v1/sandboxes/" + operators).statusCode()).isEqualTo(404);
        assertThat(state(operators)).isEqualTo("RUNNING");
        assertThat(call(alice, "DELETE", "/v1/sandboxes/" + alices).statusCode()).isEqualTo(204);
        assertThat(state(alices)).isEqualTo("STOPPED");
    }

    @Test
    void aLogoutEndsTheSession() {
        Session s = login(f.token);
        assertRefused(call(s.cookie(), null, "POST", "/ui/logout"), 403); // logging out needs the CSRF token too
        HttpResponse<String> out = call(s, "POST", "/ui/logout");
        assertThat(out.statusCode()).isEqualTo(204);
        assertThat(out.headers().firstValue("Set-Cookie")).hasValueSatisfying(c -> assertThat(c)
                .startsWith("paddock_session=;").contains("Max-Age=0"));
        assertRefused(call(s, "GET", "/v1/sandboxes"), 401);
        assertRefused(call(s, "GET", "/ui/session"), 401);
    }

}
