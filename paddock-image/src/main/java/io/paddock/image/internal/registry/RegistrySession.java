package io.paddock.image.internal.registry;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import javax.net.ssl.SSLException;
import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLEncoder;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublisher;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.channels.UnresolvedAddressException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.Set;

/**
 * The HTTP side of one pull or push: one registry, one repository, one scope ({@code repository:<repo>:pull}
 * or {@code …:pull,push}). It answers 401 challenges (Basic with the configured credentials; Bearer by
 * fetching a token from the challenge's realm, cached in the client's {@link TokenCache}) and retries once,
 * follows redirects itself (java.net.http would carry the Authorization header to whatever host a redirect
 * names), and turns transport failures into {@link SandboxException}s that never contain a credential or
 * token.
 *
 * <p>Not thread-safe: a session is confined to the thread running its operation.
 */
final class RegistrySession {
    static final String USER_AGENT = "paddock-registry-client";
    private static final int MAX_REDIRECTS = 10;
    private static final int MAX_ERROR_BODY = 64 * 1024;
    private static final int MAX_TOKEN_BODY = 1 << 20;
    private static final ObjectMapper JSON = new ObjectMapper();

    private final HttpClient http;
    private final Duration timeout;
    private final boolean insecure;
    private final String registry;
    private final String repository;
    private final URI base;
    private final String scope;
    private final Optional<Credentials> credentials;
    private final TokenCache tokens;
    private final Consumer<URI> destinations;

    /** The Authorization header value sent to the registry; null until a challenge asks for one. */
    private String authorization;
    /** The token this session fetched itself; a registry refusing it is final. */
    private String freshToken;

    RegistrySession(HttpClient http, Duration timeout, boolean insecure, String registry, String repository,
                    String actions, Optional<Credentials> credentials, TokenCache tokens, Consumer<URI> destinations) {
        this.http = http;
        this.timeout = timeout;
        this.insecure = insecure;
        this.registry = registry;
        this.repository = repository;
        this.base = URI.create((insecure ? "http" : "https") + "://" + apiHost(registry) + "/");
        this.scope = "repository:" + repository + ":" + actions;
        this.credentials = credentials;
        this.tokens = tokens;
        this.destinations = destinations;
        this.authorization = tokens.get(registry, scope).map(t -> "Bearer " + t).orElse(null);
    }

    /** Docker Hub's API lives on another host than its name. */
    private static String apiHost(String registry) {
        return registry.equals("docker.io") ? "registry-1.docker.io" : registry;
    }

    String registry() {
        return registry;
    }

    String repository() {
        return repository;
    }

    /** {@code <base>/v2/<repository>/<rest>}. */
    URI url(String rest) {
        return base.resolve("v2/" + repository + "/" + rest);
    }

    /**
     * Sends a request to the registry, authenticating when challenged. The caller owns the response body
     * and must close it (see {@link #close}).
     *
     * @param body a replayable publisher (it may be sent twice: once unauthenticated, once after a challenge),
     *             or null for none
     * @throws SandboxException PERMISSION_DENIED when the registry refuses the credentials or wants some and
     *                          none are configured; UNAVAILABLE or DEADLINE_EXCEEDED when it cannot be reached
     */
    HttpResponse<InputStream> send(String method, URI uri, Map<String, String> headers, BodyPublisher body) {
        while (true) {
            String sent = authorization;
            HttpResponse<InputStream> r = exchange(method, uri, headers, body, sent, base, "registry " + registry);
            if (r.statusCode() != 401 || !sameOrigin(r.uri(), base)) {
                return r;
            }
            List<AuthChallenge> challenges = AuthChallenge.parse(r.headers().allValues("WWW-Authenticate"));
            String detail = errorDetail(r);
            authorization = authorize(challenges, sent, detail);
        }
    }

    private String authorize(List<AuthChallenge> challenges, String sent, String detail) {
        Optional<AuthChallenge> bearer = challenges.stream().filter(c -> c.scheme().equals("bearer")).findFirst();
        Optional<AuthChallenge> basic = challenges.stream().filter(c -> c.scheme().equals("basic")).findFirst();
        if (bearer.isPresent()) {
            if (sent != null && sent.startsWith("Bearer ")) {
                String token = sent.substring("Bearer ".length());
                if (token.equals(freshToken)) {
                    throw refused(detail);
                }
                tokens.invalidate(registry, scope, token); // expired or revoked: one fresh try
            } else if (sent != null) {
                throw refused(detail);
            }
            freshToken = fetchToken(bearer.get());
            return "Bearer " + freshToken;
        }
        if (basic.isPresent()) {
            if (credentials.isEmpty()) {
                throw needsCredentials(detail);
            }
            if (sent != null) {
                throw refused(detail);
            }
            return credentials.get().basicAuthorization();
        }
        throw new SandboxException(ErrorCode.PERMISSION_DENIED, "registry " + registry + " answered 401 for "
                + repository + " without an authentication challenge this client understands (Basic or Bearer)");
    }

    private SandboxException refused(String detail) {
        if (credentials.isEmpty()) {
            return needsCredentials(detail);
        }
        return new SandboxException(ErrorCode.PERMISSION_DENIED, "registry " + registry
                + " refused the credentials for " + repository + " (401)" + (detail.isEmpty() ? "" : ": " + detail));
    }

    private SandboxException needsCredentials(String detail) {
        return new SandboxException(ErrorCode.PERMISSION_DENIED, "registry " + registry + " requires credentials for "
                + repository + " (401" + (detail.isEmpty() ? "" : ": " + detail) + "); none are configured for " + registry);
    }

    /** Gets a token from the challenge's realm (the token specification of the distribution project). */
    private String fetchToken(AuthChallenge challenge) {
        String who = "the token service of registry " + registry;
        String realm = challenge.param("realm").orElseThrow(() -> new SandboxException(ErrorCode.UNAVAILABLE,
                "registry " + registry + " asked for a bearer token without naming a realm to get it from"));
        URI realmUri;
        try {
            realmUri = new URI(realm);
        } catch (URISyntaxException e) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "registry " + registry + " named an invalid token realm");
        }
        String scheme = realmUri.getScheme() == null ? "" : realmUri.getScheme().toLowerCase(Locale.ROOT);
        if (!(scheme.equals("https") || scheme.equals("http")) || realmUri.getHost() == null) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "registry " + registry + " named a token realm that is "
                    + "not an http(s) URL");
        }
        if (scheme.equals("http") && !insecure) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "registry " + registry + " sends clients to a plain-http "
                    + "token service (" + realmUri.getHost() + "); refused unless plain http is allowed (--insecure)");
        }
        Set<String> scopes = new LinkedHashSet<>();
        challenge.param("scope").ifPresent(s -> scopes.addAll(List.of(s.trim().split("\\s+"))));
        scopes.remove("");
        scopes.add(scope);
        StringBuilder q = new StringBuilder(realm).append(realm.contains("?") ? '&' : '?');
        challenge.param("service").ifPresent(s -> q.append("service=").append(enc(s)).append('&'));
        for (String s : scopes) {
            q.append("scope=").append(enc(s)).append('&');
        }
        q.setLength(q.length() - 1);
        URI tokenUri;
        try {
            tokenUri = new URI(q.toString());
        } catch (URISyntaxException e) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "registry " + registry + " named an invalid token realm");
        }
        HttpResponse<InputStream> r = exchange("GET", tokenUri, Map.of("Accept", "application/json"), null,
                credentials.map(Credentials::basicAuthorization).orElse(null), tokenUri, who);
        int st = r.statusCode();
        if (st == 401 || st == 403) {
            String detail = errorDetail(r);
            if (credentials.isEmpty()) {
                throw needsCredentials(detail);
            }
            throw new SandboxException(ErrorCode.PERMISSION_DENIED, "registry " + registry + " refused the credentials for "
                    + repository + " (" + st + " from its token service)" + (detail.isEmpty() ? "" : ": " + detail));
        }
        if (st != 200) {
            throw failure(r, "handing out a token for " + repository, who);
        }
        byte[] body = readBody(r, MAX_TOKEN_BODY, who + " answered with more than " + MAX_TOKEN_BODY + " bytes", who);
        JsonNode json;
        try {
            json = JSON.readTree(body);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, who + " answered with something that is not JSON");
        }
        String token = json == null ? "" : json.path("token").asText("");
        if (token.isEmpty()) {
            token = json == null ? "" : json.path("access_token").asText("");
        }
        if (token.isEmpty()) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, who + " answered without a token");
        }
        if (!token.chars().allMatch(c -> c > 0x20 && c < 0x7f)) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, who + " answered with a token that cannot go in a header");
        }
        long seconds = json.path("expires_in").asLong(0);
        tokens.put(registry, scope, token, seconds > 0 ? Duration.ofSeconds(seconds) : TokenCache.DEFAULT_LIFETIME);
        return token;
    }

    private static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    /**
     * Sends one request and follows redirects, sending {@code auth} only to {@code authOrigin}'s scheme, host
     * and port, and never from https down to http unless plain http is allowed.
     */
    private HttpResponse<InputStream> exchange(String method, URI uri, Map<String, String> headers, BodyPublisher body,
                                               String auth, URI authOrigin, String target) {
        URI current = uri;
        String m = method;
        BodyPublisher b = body;
        for (int hop = 0; ; hop++) {
            HttpRequest.Builder rb = HttpRequest.newBuilder(current).timeout(timeout)
                    .method(m, b == null ? HttpRequest.BodyPublishers.noBody() : b)
                    .header("User-Agent", USER_AGENT);
            headers.forEach(rb::header);
            if (auth != null && sameOrigin(current, authOrigin)) {
                rb.header("Authorization", auth);
            }
            HttpResponse<InputStream> r = sendOnce(rb.build(), target);
            int st = r.statusCode();
            Optional<String> location = r.headers().firstValue("Location");
            if (!(st == 301 || st == 302 || st == 303 || st == 307 || st == 308) || location.isEmpty()) {
                return r;
            }
            close(r);
            if (hop >= MAX_REDIRECTS) {
                throw new SandboxException(ErrorCode.UNAVAILABLE, target + " redirected more than " + MAX_REDIRECTS + " times");
            }
            URI next = resolve(current, location.get(), target);
            if (st == 303 || ((st == 301 || st == 302) && !m.equals("GET") && !m.equals("HEAD"))) {
                m = "GET";
                b = null;
            }
            current = next;
        }
    }

    /** Resolves a Location header against the request it answered. */
    URI resolve(URI against, String location, String target) {
        URI next;
        try {
            next = against.resolve(new URI(location));
        } catch (URISyntaxException | IllegalArgumentException e) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, target + " answered with an invalid Location");
        }
        String scheme = next.getScheme() == null ? "" : next.getScheme().toLowerCase(Locale.ROOT);
        if (!(scheme.equals("http") || scheme.equals("https")) || next.getHost() == null) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, target + " answered with a Location that is not an http(s) URL");
        }
        if (scheme.equals("http") && against.getScheme().equalsIgnoreCase("https") && !insecure) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, target + " sent the client from https to plain http ("
                    + next.getHost() + "); refused unless plain http is allowed (--insecure)");
        }
        return next;
    }

    private HttpResponse<InputStream> sendOnce(HttpRequest request, String target) {
        destinations.accept(request.uri()); // every hop: the registry, a redirect's target, a token realm
        try {
            return http.send(request, HttpResponse.BodyHandlers.ofInputStream());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SandboxException(ErrorCode.UNAVAILABLE, "interrupted while talking to " + target, e);
        } catch (IOException e) {
            throw unreachable(e, request.uri(), target);
        }
    }

    /** A transport failure in words: refused, timed out, TLS, unknown host. */
    SandboxException unreachable(IOException e, URI uri, String target) {
        String where = target + (sameOrigin(uri, base) ? "" : " (at " + uri.getHost() + ")");
        if (e instanceof HttpConnectTimeoutException) {
            return new SandboxException(ErrorCode.UNAVAILABLE, "cannot reach " + where + ": connection timed out", e);
        }
        if (e instanceof HttpTimeoutException) {
            return new SandboxException(ErrorCode.DEADLINE_EXCEEDED, where + " did not answer within "
                    + (timeout.toMillis() % 1000 == 0 ? timeout.toSeconds() + " s" : timeout.toMillis() + " ms"), e);
        }
        String text = String.valueOf(e.getMessage());
        if (text.startsWith("Tunnel failed, got: 403")) {
            // the destination gate refused the address the name resolved to at connect time (it passed the check)
            return new SandboxException(ErrorCode.PERMISSION_DENIED, "cannot reach " + where + ": its address at"
                    + " connect time is one connections made for a tenant never go to (this host's own, loopback,"
                    + " private, link-local or the sandboxes' ranges)", e);
        }
        if (text.startsWith("Tunnel failed, got: 429")) {
            // the destination gate: whoever this pull is made for already holds its share of the gate's tunnels
            return new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "cannot reach " + where + ": the pulls and"
                    + " pushes made for this tenant already hold its share of the connections to registries", e);
        }
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SSLException) {
                return new SandboxException(ErrorCode.UNAVAILABLE, "cannot reach " + where + " over https: "
                        + truncate(String.valueOf(t.getMessage()), 200)
                        + "; if it is a plain-http registry, allow plain http with --insecure", e);
            }
            if (t instanceof ConnectException) {
                String msg = t.getMessage();
                return new SandboxException(ErrorCode.UNAVAILABLE, "cannot reach " + where + ": "
                        + (msg == null || msg.isBlank() ? "connection refused" : msg.toLowerCase(Locale.ROOT)), e);
            }
            if (t instanceof UnknownHostException || t instanceof UnresolvedAddressException) {
                return new SandboxException(ErrorCode.UNAVAILABLE, "cannot reach " + where + ": unknown host "
                        + uri.getHost(), e);
            }
        }
        return new SandboxException(ErrorCode.UNAVAILABLE, "cannot reach " + where + ": "
                + truncate(e.getClass().getSimpleName() + (e.getMessage() == null ? "" : " " + e.getMessage()), 200), e);
    }

    private static boolean sameOrigin(URI a, URI b) {
        return a.getScheme().equalsIgnoreCase(b.getScheme()) && a.getHost() != null
                && a.getHost().equalsIgnoreCase(b.getHost()) && port(a) == port(b);
    }

    private static int port(URI u) {
        return u.getPort() >= 0 ? u.getPort() : u.getScheme().equalsIgnoreCase("https") ? 443 : 80;
    }

    /**
     * The body of a small response, at most {@code limit} bytes (a longer one is RESOURCE_EXHAUSTED with
     * {@code tooLarge} as its message). Closes the body.
     */
    byte[] readBody(HttpResponse<InputStream> r, long limit, String tooLarge, String target) {
        try (InputStream in = r.body()) {
            long declared = r.headers().firstValueAsLong("Content-Length").orElse(-1);
            if (declared > limit) {
                throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, tooLarge);
            }
            byte[] b = in.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, limit + 1));
            if (b.length > limit) {
                throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, tooLarge);
            }
            return b;
        } catch (IOException e) {
            throw unreachable(e, r.uri(), target);
        }
    }

    /**
     * The exception for an unexpected status: 403 is PERMISSION_DENIED, 404 NOT_FOUND, anything else
     * UNAVAILABLE; the message has the status and the registry's error codes. Closes the body.
     */
    SandboxException failure(HttpResponse<InputStream> r, String doing, String target) {
        int st = r.statusCode();
        String detail = errorDetail(r);
        String tail = detail.isEmpty() ? "" : ": " + detail;
        return switch (st) {
            case 403 -> new SandboxException(ErrorCode.PERMISSION_DENIED, target + " denied " + doing + " (403)" + tail);
            case 404 -> new SandboxException(ErrorCode.NOT_FOUND, target + " found nothing for " + doing + " (404)" + tail);
            default -> new SandboxException(ErrorCode.UNAVAILABLE, target + " answered " + st + " to " + doing + tail);
        };
    }

    SandboxException failure(HttpResponse<InputStream> r, String doing) {
        return failure(r, doing, "registry " + registry);
    }

    /**
     * The registry's error codes and messages from a {@code {"errors":[{"code","message"}]}} body, joined and
     * truncated, or "" for any other body. Closes the body.
     */
    static String errorDetail(HttpResponse<InputStream> r) {
        byte[] b;
        try (InputStream in = r.body()) {
            b = in.readNBytes(MAX_ERROR_BODY);
        } catch (IOException e) {
            return "";
        }
        try {
            JsonNode json = JSON.readTree(b);
            List<String> parts = new ArrayList<>();
            if (json != null) {
                for (JsonNode e : json.path("errors")) {
                    String code = e.path("code").asText("");
                    String message = e.path("message").asText("");
                    parts.add(code.isEmpty() ? message : message.isEmpty() ? code : code + ": " + message);
                }
            }
            return truncate(String.join("; ", parts), 300);
        } catch (IOException e) {
            return "";
        }
    }

    /** Closes a response body, reading a little first so that the connection can be reused. */
    static void close(HttpResponse<InputStream> r) {
        try (InputStream in = r.body()) {
            in.readNBytes(MAX_ERROR_BODY);
        } catch (IOException ignored) {
            // the connection is dropped instead of reused
        }
    }

    /** {@code s} without control characters, cut to {@code max} characters. */
    static String truncate(String s, int max) {
        if (s == null) {
            return "";
        }
        StringBuilder b = new StringBuilder(Math.min(s.length(), max + 1));
        for (int i = 0; i < s.length() && b.length() < max; i++) {
            char c = s.charAt(i);
            b.append(Character.isISOControl(c) ? ' ' : c);
        }
        return s.length() > max ? b.append('…').toString() : b.toString();
    }
}
