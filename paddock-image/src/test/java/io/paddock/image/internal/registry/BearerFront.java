package io.paddock.image.internal.registry;

import io.paddock.testkit.TestRegistry;
import com.sun.net.httpserver.HttpExchange;

import java.io.IOException;
import java.net.URI;
import java.net.URLDecoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A registry front that does what Docker Hub, GHCR or Harbor do: it requires {@code Authorization: Bearer
 * <token>} and proxies to a real registry behind it; without a token granting the request's scope it answers
 * 401 with {@code WWW-Authenticate: Bearer realm=".../token",service="test",scope="repository:<repo>:pull"}. Its
 * token endpoint checks Basic credentials and hands out tokens for the scopes asked. Optionally it redirects
 * blob downloads to a second server (another origin, like a CDN) that records the Authorization headers it
 * receives.
 */
final class BearerFront implements AutoCloseable {
    private static final Pattern REPO = Pattern.compile("^/v2/(.+?)/(manifests|blobs|tags)/.*");

    private final String registry;
    private final String user;
    private final String password;
    private final HttpClient http = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).build();
    private final Map<String, Set<String>> tokens = new ConcurrentHashMap<>();
    private final AtomicInteger issued = new AtomicInteger();
    final List<String> scopesAsked = new CopyOnWriteArrayList<>();
    final List<String> cdnAuthorizations = new CopyOnWriteArrayList<>();
    final AtomicInteger cdnRequests = new AtomicInteger();
    final Set<String> deniedRepositories = ConcurrentHashMap.newKeySet();
    volatile boolean redirectBlobs;
    private final FakeServer front;
    private final FakeServer cdn;

    BearerFront(TestRegistry behind, String user, String password) {
        this.registry = "http://" + behind.host();
        this.user = user;
        this.password = password;
        this.front = new FakeServer(this::front);
        this.cdn = new FakeServer(this::cdn);
    }

    /** {@code 127.0.0.1:<port>} of the front: the registry part of references through it. */
    String host() {
        return front.host();
    }

    int tokensIssued() {
        return issued.get();
    }

    private void front(HttpExchange ex) throws IOException {
        String path = ex.getRequestURI().getRawPath();
        if (path.equals("/token")) {
            token(ex);
            return;
        }
        Matcher m = REPO.matcher(path);
        String repo = m.matches() ? m.group(1) : "";
        String method = ex.getRequestMethod();
        String action = method.equals("GET") || method.equals("HEAD") ? "pull" : "push";
        String auth = ex.getRequestHeaders().getFirst("Authorization");
        Set<String> granted = auth != null && auth.startsWith("Bearer ") ? tokens.getOrDefault(auth.substring(7), Set.of()) : Set.of();
        if (!granted.contains("repository:" + repo + ":" + action) || deniedRepositories.contains(repo)) {
            FakeServer.respond(ex, 401, Map.of("Content-Type", "application/json", "WWW-Authenticate",
                    "Bearer realm=\"http://" + front.host() + "/token\",service=\"test\",scope=\"repository:" + repo + ":pull\""),
                    "{\"errors\":[{\"code\":\"UNAUTHORIZED\",\"message\":\"authentication required\"}]}".getBytes(StandardCharsets.UTF_8));
            return;
        }
        if (redirectBlobs && method.equals("GET") && path.contains("/blobs/sha256:")) {
            FakeServer.respond(ex, 307, Map.of("Location", "http://" + cdn.host() + path), null);
            return;
        }
        proxy(ex, path + (ex.getRequestURI().getRawQuery() == null ? "" : "?" + ex.getRequestURI().getRawQuery()));
    }

    private void token(HttpExchange ex) throws IOException {
        String expected = "Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
        if (!expected.equals(ex.getRequestHeaders().getFirst("Authorization"))) {
            FakeServer.respond(ex, 401, Map.of("Content-Type", "application/json"),
                    "{\"details\":\"incorrect username or password\"}".getBytes(StandardCharsets.UTF_8));
            return;
        }
        Map<String, List<String>> q = query(ex.getRequestURI().getRawQuery());
        if (!List.of("test").equals(q.get("service"))) {
            FakeServer.respond(ex, 400, Map.of(), "bad service".getBytes(StandardCharsets.UTF_8));
            return;
        }
        List<String> grants = new ArrayList<>();
        for (String scope : q.getOrDefault("scope", List.of())) {
            scopesAsked.add(scope);
            String[] parts = scope.split(":"); // repository:<name>:<actions>
            for (String a : parts[2].split(",")) {
                grants.add(parts[0] + ":" + parts[1] + ":" + a);
            }
        }
        String token = "tok-" + issued.incrementAndGet() + "-" + Long.toHexString(Double.doubleToLongBits(Math.random()));
        tokens.put(token, Set.copyOf(grants));
        boolean push = grants.stream().anyMatch(g -> g.endsWith(":push"));
        // Both field names of the token specification: access_token (OAuth 2) for push tokens, token for pull.
        String body = "{\"" + (push ? "access_token" : "token") + "\":\"" + token + "\",\"expires_in\":300}";
        FakeServer.respond(ex, 200, Map.of("Content-Type", "application/json"), body.getBytes(StandardCharsets.UTF_8));
    }

    private void cdn(HttpExchange ex) throws IOException {
        cdnRequests.incrementAndGet();
        String auth = ex.getRequestHeaders().getFirst("Authorization");
        cdnAuthorizations.add(auth == null ? "" : auth);
        proxy(ex, ex.getRequestURI().getRawPath());
    }

    private void proxy(HttpExchange ex, String pathAndQuery) throws IOException {
        byte[] body = ex.getRequestBody().readAllBytes();
        HttpRequest.Builder rb = HttpRequest.newBuilder(URI.create(registry + pathAndQuery))
                .method(ex.getRequestMethod(), body.length == 0 ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofByteArray(body));
        for (String h : List.of("Content-Type", "Accept")) {
            String v = ex.getRequestHeaders().getFirst(h);
            if (v != null) {
                rb.header(h, v);
            }
        }
        HttpResponse<byte[]> r;
        try {
            r = http.send(rb.build(), HttpResponse.BodyHandlers.ofByteArray());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
        Map<String, String> headers = new LinkedHashMap<>();
        for (String h : List.of("Content-Type", "Docker-Content-Digest", "Location", "Range", "Docker-Upload-UUID")) {
            r.headers().firstValue(h).ifPresent(v -> headers.put(h, v.replace(registry, "http://" + front.host())));
        }
        FakeServer.respond(ex, r.statusCode(), headers, r.body());
    }

    private static Map<String, List<String>> query(String raw) {
        Map<String, List<String>> out = new LinkedHashMap<>();
        if (raw == null) {
            return out;
        }
        for (String kv : raw.split("&")) {
            int eq = kv.indexOf('=');
            String k = URLDecoder.decode(eq < 0 ? kv : kv.substring(0, eq), StandardCharsets.UTF_8);
            String v = eq < 0 ? "" : URLDecoder.decode(kv.substring(eq + 1), StandardCharsets.UTF_8);
            out.computeIfAbsent(k, x -> new ArrayList<>()).add(v);
        }
        return Collections.unmodifiableMap(out);
    }

    @Override
    public void close() {
        front.close();
        cdn.close();
    }
}
