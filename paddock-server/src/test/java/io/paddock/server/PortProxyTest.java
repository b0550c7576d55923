package io.paddock.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.NetworkPolicy;
import io.paddock.SandboxId;
import io.paddock.server.internal.UrlTokens;
import io.paddock.wire.Wire;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.net.http.WebSocketHandshakeException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.HexFormat;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The daemon's port proxy, end to end over loopback: a real {@link PaddockServer} over {@link FakePaddock},
 * whose sandboxes' ports are a real HTTP and WebSocket server ({@link Backend}) on 127.0.0.1. Port 8000 of
 * every sandbox is that server; 8001 is a port where nothing listens; 8002 is exposed nowhere.
 */
class PortProxyTest {
    private static final String OPERATOR = newToken();
    private static final String ALICE = newToken();
    private static final String BOB = newToken();
    private static final String DOMAIN = "ports.test";

    @TempDir
    static Path dataDir;
    private static Backend backend;
    private static FakePaddock paddock;
    private static PaddockServer server;
    private static final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    static void start() throws Exception {
        backend = new Backend();
        int closed;
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            closed = s.getLocalPort(); // free once closed: nothing listens there
        }
        paddock = new FakePaddock();
        paddock.route(8000, backend.port);
        paddock.route(8001, closed);
        server = PaddockServer.start(ServerOptions.builder().port(0).token(OPERATOR).tenant("alice", ALICE)
                .tenant("bob", BOB).dataDir(dataDir).portDomain(DOMAIN).maxFailedAuthPerMinutePerIp(100_000).build(), paddock);
    }

    @AfterAll
    static void stop() throws Exception {
        server.close();
        backend.close();
    }

    private static String newToken() {
        byte[] raw = new byte[32];
        new SecureRandom().nextBytes(raw);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
    }

    // ---- helpers ----

    private static URI uri(String pathAndQuery) {
        return URI.create(server.url() + pathAndQuery);
    }

    private static HttpRequest.Builder request(String token, String pathAndQuery) {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri(pathAndQuery)).timeout(Duration.ofSeconds(60));
        return token == null ? b : b.header("Authorization", "Bearer " + token);
    }

    private static HttpResponse<String> send(HttpRequest r) {
        try {
            return http.send(r, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static HttpResponse<String> get(String token, String pathAndQuery) {
        return send(request(token, pathAndQuery).GET().build());
    }

    private static HttpResponse<String> post(String token, String pathAndQuery, String body) {
        return send(request(token, pathAndQuery).POST(HttpRequest.BodyPublishers.ofString(body)).build());
    }

    private static JsonNode json(HttpResponse<String> r) {
        return Wire.parse(r.body().getBytes(StandardCharsets.UTF_8));
    }

    /** A sandbox of {@code token}'s with ports 8000 and 8001 exposed. */
    private static String create(String token) {
        HttpResponse<String> r = post(token, "/v1/sandboxes", "{\"ports\":[8000,8001],\"timeout_ms\":600000}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        return json(r).get("id").asText();
    }

    private static JsonNode signedUrl(String token, String id, int port, String body) {
        HttpResponse<String> r = post(token, "/v1/sandboxes/" + id + "/ports/" + port + "/url", body);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return json(r);
    }

    private static void assertError(HttpResponse<String> r, int status, String code, String... inMessage) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        JsonNode e = json(r).get("error");
        assertThat(e.get("code").asText()).as(r.body()).isEqualTo(code);
        if (inMessage.length > 0) {
            assertThat(e.get("message").asText()).contains(inMessage);
        }
    }

    private static String header(JsonNode echo, String name) {
        JsonNode h = echo.get("headers").get(name);
        return h == null ? null : h.get(0).asText();
    }

    // ---- the owner's path route ----

    @Test
    void getAndPostReachTheSandboxWithTheirPathQueryAndBody() {
        String id = create(ALICE);
        String port = "/v1/sandboxes/" + id + "/ports/8000";
        HttpResponse<String> r = send(request(ALICE, port + "/a/b%20c?x=1&y=%20").header("X-Test", "t")
                .header("Cookie", "app=1; paddock_token=secret; paddock_session=s").GET().build());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode echo = json(r);
        assertThat(echo.get("method").asText()).isEqualTo("GET");
        assertThat(echo.get("path").asText()).isEqualTo("/a/b%20c");
        assertThat(echo.get("query").asText()).isEqualTo("x=1&y=%20");
        assertThat(header(echo, "x-test")).isEqualTo("t");
        assertThat(header(echo, "cookie")).isEqualTo("app=1"); // the daemon's cookies (its port hosts', its dashboard's) stay out
        assertThat(header(echo, "x-forwarded-for")).isEqualTo("127.0.0.1");
        assertThat(header(echo, "x-forwarded-proto")).isEqualTo("http");
        assertThat(header(echo, "x-forwarded-host")).isEqualTo(server.url().getAuthority());
        assertThat(header(echo, "host")).isEqualTo("127.0.0.1:" + backend.port);
        assertThat(echo.get("headers").has("authorization")).isFalse();
        // the sandbox's headers come back, not the daemon's defaults
        assertThat(r.headers().firstValue("X-Backend")).hasValue("yes");
        assertThat(r.headers().firstValue("Cache-Control")).hasValue("max-age=60");

        HttpResponse<String> p = send(request(ALICE, port + "/submit").header("Content-Type", "text/plain")
                .POST(HttpRequest.BodyPublishers.ofString("hello body")).build());
        assertThat(p.statusCode()).isEqualTo(200);
        assertThat(json(p).get("method").asText()).isEqualTo("POST");
        assertThat(json(p).get("body").asText()).isEqualTo("hello body");
        assertThat(header(json(p), "content-type")).isEqualTo("text/plain");

        for (String method : new String[] {"PUT", "PATCH", "DELETE"}) {
            HttpResponse<String> m = send(request(ALICE, port + "/m").method(method,
                    HttpRequest.BodyPublishers.ofString(method.toLowerCase())).build());
            assertThat(json(m).get("method").asText()).isEqualTo(method);
            assertThat(json(m).get("body").asText()).isEqualTo(method.toLowerCase());
        }
        HttpResponse<String> head = send(request(ALICE, port + "/h").method("HEAD", HttpRequest.BodyPublishers.noBody()).build());
        assertThat(head.statusCode()).isEqualTo(200);
        assertThat(head.body()).isEmpty();

        HttpResponse<String> options = send(request(ALICE, port + "/o").method("OPTIONS", HttpRequest.BodyPublishers.noBody()).build());
        assertThat(json(options).get("method").asText()).isEqualTo("OPTIONS");
        // no path after the port is "/"; so is a trailing slash
        assertThat(json(get(ALICE, port)).get("path").asText()).isEqualTo("/");
        assertThat(json(get(ALICE, port + "/")).get("path").asText()).isEqualTo("/");
        // GET .../url is the sandbox's own /url: only a POST there asks the daemon for a signed URL
        assertThat(json(get(ALICE, port + "/url")).get("path").asText()).isEqualTo("/url");
    }

    @Test
    void hopByHopHeadersAndThoseConnectionNamesStayBehind() throws Exception {
        String id = create(OPERATOR);
        RawHttp.Reply r = RawHttp.exchange(server.url(), "GET /v1/sandboxes/" + id + "/ports/8000/raw HTTP/1.1\r\nHost: h\r\n"
                + "Authorization: Bearer " + OPERATOR + "\r\nConnection: keep-alive, X-Secret\r\nX-Secret: s\r\n"
                + "Keep-Alive: timeout=5\r\nTE: trailers\r\nProxy-Authorization: Basic eDp5\r\nX-Forwarded-For: 10.1.2.3\r\n"
                + "X-Kept: k", out -> { }, 10_000);
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        JsonNode h = Wire.parse(r.body().getBytes(StandardCharsets.UTF_8)).get("headers");
        assertThat(h.has("x-secret")).isFalse();
        assertThat(h.has("keep-alive")).isFalse();
        assertThat(h.has("te")).isFalse();
        assertThat(h.has("proxy-authorization")).isFalse();
        assertThat(h.has("authorization")).isFalse();
        assertThat(h.get("x-kept").get(0).asText()).isEqualTo("k");
        assertThat(h.get("x-forwarded-for").get(0).asText()).isEqualTo("10.1.2.3, 127.0.0.1");
        assertThat(h.get("x-forwarded-host").get(0).asText()).isEqualTo("h");
    }

    @Test
    void bodiesStreamBothWays() throws Exception {
        String id = create(ALICE);
        String port = "/v1/sandboxes/" + id + "/ports/8000";

        // download: the sandbox sends "first|" and waits until the client has it before it sends the rest
        backend.firstSeen = new java.util.concurrent.CountDownLatch(1);
        HttpResponse<InputStream> down = http.send(request(ALICE, port + "/stream").GET().build(),
                HttpResponse.BodyHandlers.ofInputStream());
        try (InputStream in = down.body()) {
            assertThat(new String(in.readNBytes(6), StandardCharsets.UTF_8)).isEqualTo("first|");
            backend.firstSeen.countDown();
            assertThat(new String(in.readAllBytes(), StandardCharsets.UTF_8)).isEqualTo("second");
        }

        // upload: the client sends "part1" and the rest only once the sandbox has read it (a raw client: java.net.http
        // may hold a chunk back while its publisher waits for the next one)
        backend.part1Read = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch read = backend.part1Read;
        RawHttp.Reply up = RawHttp.exchange(server.url(), "POST " + port + "/upload HTTP/1.1\r\nHost: h\r\n"
                + "Authorization: Bearer " + ALICE + "\r\nTransfer-Encoding: chunked", out -> {
                    out.write("5\r\npart1\r\n".getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                    boolean seen;
                    try {
                        seen = read.await(10, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        throw new IOException(e);
                    }
                    out.write(((seen ? "5\r\npart2" : "5\r\nLATE!") + "\r\n0\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                }, 20_000);
        assertThat(up.status()).isEqualTo(200);
        assertThat(up.body()).isEqualTo("part1part2");
    }

    @Test
    void aHundredMegabyteDownloadArrivesWhole() throws Exception {
        String id = create(ALICE);
        int mb = 100;
        MessageDigest expected = MessageDigest.getInstance("SHA-256");
        byte[] chunk = Backend.pattern(1 << 20);
        for (int i = 0; i < mb; i++) {
            expected.update(chunk);
        }
        HttpResponse<InputStream> r = http.send(request(ALICE, "/v1/sandboxes/" + id + "/ports/8000/big?mb=" + mb).GET().build(),
                HttpResponse.BodyHandlers.ofInputStream());
        assertThat(r.statusCode()).isEqualTo(200);
        MessageDigest got = MessageDigest.getInstance("SHA-256");
        long total = 0;
        try (InputStream in = r.body()) {
            byte[] buf = new byte[1 << 16];
            for (int n; (n = in.read(buf)) >= 0; ) {
                got.update(buf, 0, n);
                total += n;
            }
        }
        assertThat(total).isEqualTo((long) mb << 20);
        assertThat(HexFormat.of().formatHex(got.digest())).isEqualTo(HexFormat.of().formatHex(expected.digest()));
    }

    // ---- WebSockets ----

    /** A java.net.http WebSocket that queues text, binary (byte[]) and the close status (Integer). */
    private static final class Ws implements WebSocket.Listener {
        final BlockingQueue<Object> events = new LinkedBlockingQueue<>();
        private final StringBuilder text = new StringBuilder();
        private final ByteArrayOutputStream binary = new ByteArrayOutputStream();
        WebSocket socket;

        static Ws open(URI httpUri, String token, String... protocols) {
            Ws w = new Ws();
            WebSocket.Builder b = http.newWebSocketBuilder().connectTimeout(Duration.ofSeconds(10));
            if (token != null) {
                b.header("Authorization", "Bearer " + token);
            }
            if (protocols.length > 0) {
                b.subprotocols(protocols[0], java.util.Arrays.copyOfRange(protocols, 1, protocols.length));
            }
            try {
                w.socket = b.buildAsync(URI.create(httpUri.toString().replaceFirst("^http", "ws")), w).join();
            } catch (CompletionException e) {
                if (e.getCause() instanceof WebSocketHandshakeException h) {
                    System.err.println("handshake refused: " + h.getResponse().statusCode() + " " + h.getResponse().body());
                }
                throw e;
            }
            return w;
        }

        @Override
        public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
            text.append(data);
            if (last) {
                events.add(text.toString());
                text.setLength(0);
            }
            ws.request(1);
            return null;
        }

        @Override
        public CompletionStage<?> onBinary(WebSocket ws, ByteBuffer data, boolean last) {
            byte[] b = new byte[data.remaining()];
            data.get(b);
            binary.writeBytes(b);
            if (last) {
                events.add(binary.toByteArray());
                binary.reset();
            }
            ws.request(1);
            return null;
        }

        @Override
        public CompletionStage<?> onClose(WebSocket ws, int statusCode, String reason) {
            events.add(statusCode);
            return null;
        }

        @Override
        public void onError(WebSocket ws, Throwable error) {
            events.add(error);
        }

        Object next() throws InterruptedException {
            Object o = events.poll(20, TimeUnit.SECONDS);
            assertThat(o).as("a message within 20 s").isNotNull();
            return o;
        }
    }

    /**
     * Issue 32: one tenant's sandboxes have at most their share of the port proxy's relays at once (here 2), the
     * next gets 429 RESOURCE_EXHAUSTED before anything connects; another tenant's and the operator's go on, and
     * the tenant's share comes back once its WebSockets close. Before, there was no per-tenant cap.
     */
    @Test
    void aTenantsRelaysAreCappedWhileOthersGoOn() throws Exception {
        try (PaddockServer capped = PaddockServer.start(ServerOptions.builder().port(0).token(OPERATOR).tenant("alice", ALICE)
                .tenant("bob", BOB).dataDir(dataDir.resolve("capped")).maxPortConnectionsPerTenant(2)
                .maxFailedAuthPerMinutePerIp(100_000).build(), paddock)) {
            java.util.function.BiFunction<String, String, String> make = (token, ignored) -> {
                HttpResponse<String> r = send(HttpRequest.newBuilder(URI.create(capped.url() + "/v1/sandboxes"))
                        .header("Authorization", "Bearer " + token).POST(HttpRequest.BodyPublishers.ofString(
                                "{\"ports\":[8000],\"timeout_ms\":600000}")).build());
                assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
                return json(r).get("id").asText();
            };
            String a1 = make.apply(ALICE, "");
            String a2 = make.apply(ALICE, "");
            String b1 = make.apply(BOB, "");
            URI base = capped.url();
            Ws first = Ws.open(base.resolve("/v1/sandboxes/" + a1 + "/ports/8000/ws"), ALICE);
            Ws second = Ws.open(base.resolve("/v1/sandboxes/" + a2 + "/ports/8000/ws"), ALICE);
            HttpResponse<String> over = send(HttpRequest.newBuilder(base.resolve("/v1/sandboxes/" + a1 + "/ports/8000/"))
                    .header("Authorization", "Bearer " + ALICE).GET().build());
            assertError(over, 429, "RESOURCE_EXHAUSTED", "alice", "2 port-proxy");
            HttpResponse<String> theirs = send(HttpRequest.newBuilder(base.resolve("/v1/sandboxes/" + b1 + "/ports/8000/"))
                    .header("Authorization", "Bearer " + BOB).GET().build());
            assertThat(theirs.statusCode()).as("another tenant: " + theirs.body()).isEqualTo(200);
            first.socket.sendClose(WebSocket.NORMAL_CLOSURE, "bye").join();
            assertThat(first.next()).isEqualTo(1000);
            second.socket.sendClose(WebSocket.NORMAL_CLOSURE, "bye").join();
            assertThat(second.next()).isEqualTo(1000);
            long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
            int status = 0;
            while (status != 200 && System.nanoTime() < deadline) {
                status = send(HttpRequest.newBuilder(base.resolve("/v1/sandboxes/" + a1 + "/ports/8000/"))
                        .header("Authorization", "Bearer " + ALICE).GET().build()).statusCode();
            }
            assertThat(status).as("the share, back once the WebSockets closed").isEqualTo(200);
        }
    }

    @Test
    void aWebSocketIsRelayedBothWays() throws Exception {
        String id = create(ALICE);
        backend.upgrades.clear();
        Ws ws = Ws.open(uri("/v1/sandboxes/" + id + "/ports/8000/ws"), ALICE, "chat", "other");
        assertThat(ws.socket.getSubprotocol()).isEqualTo("chat");
        JsonNode upgrade = backend.upgrades.poll(5, TimeUnit.SECONDS);
        assertThat(upgrade.has("authorization")).isFalse();
        assertThat(upgrade.get("x-forwarded-for").get(0).asText()).isEqualTo("127.0.0.1");

        ws.socket.sendText("hello", true).join();
        assertThat(ws.next()).isEqualTo("echo:hello");
        // a message in pieces, and a large binary one (over the daemon's 1 MiB frame size): relayed, not refused
        ws.socket.sendText("hel", false).join();
        ws.socket.sendText("lo again", true).join();
        assertThat(ws.next()).isEqualTo("echo:hello again");
        byte[] big = Backend.pattern(3 << 20);
        ws.socket.sendBinary(ByteBuffer.wrap(big), true).join();
        assertThat((byte[]) ws.next()).isEqualTo(big);

        ws.socket.sendClose(WebSocket.NORMAL_CLOSURE, "bye").join();
        assertThat(ws.next()).isEqualTo(1000);
    }

    @Test
    void aWebSocketNeedsTheOwnersToken() {
        String id = create(ALICE);
        URI u = uri("/v1/sandboxes/" + id + "/ports/8000/ws");
        assertThatThrownBy(() -> Ws.open(u, null)).isInstanceOf(CompletionException.class)
                .hasCauseInstanceOf(WebSocketHandshakeException.class)
                .satisfies(e -> assertThat(((WebSocketHandshakeException) e.getCause()).getResponse().statusCode()).isEqualTo(401));
        assertThatThrownBy(() -> Ws.open(u, BOB)).hasCauseInstanceOf(WebSocketHandshakeException.class)
                .satisfies(e -> assertThat(((WebSocketHandshakeException) e.getCause()).getResponse().statusCode()).isEqualTo(404));
    }

    // ---- who may ----

    @Test
    void theOwnersTokenIsNeeded() {
        String id = create(ALICE);
        String path = "/v1/sandboxes/" + id + "/ports/8000/echo";
        assertError(get(null, path), 401, "PERMISSION_DENIED", "Authorization");
        assertError(get("wrong-" + ALICE, path), 401, "PERMISSION_DENIED");
        // another tenant's token: the sandbox does not exist, as on every sandbox route
        HttpResponse<String> foreign = get(BOB, path);
        assertError(foreign, 404, "NOT_FOUND", id);
        assertThat(foreign.body().replace(id, "X")).isEqualTo(get(BOB, "/v1/sandboxes/sb-" + "a".repeat(26)
                + "/ports/8000/echo").body().replace("sb-" + "a".repeat(26), "X"));
        assertThat(get(ALICE, path).statusCode()).isEqualTo(200);
        assertThat(get(OPERATOR, path).statusCode()).isEqualTo(200); // the operator manages every sandbox
        assertError(post(BOB, "/v1/sandboxes/" + id + "/ports/8000/url", ""), 404, "NOT_FOUND");
    }

    @Test
    void aPortNotExposedIs400NamingTheExposedOnes() {
        String id = create(ALICE);
        assertError(get(ALICE, "/v1/sandboxes/" + id + "/ports/8002/"), 400, "INVALID_ARGUMENT", "8002", "[8000, 8001]");
        assertError(post(ALICE, "/v1/sandboxes/" + id + "/ports/8002/url", ""), 400, "INVALID_ARGUMENT", "[8000, 8001]");
        assertError(get(ALICE, "/v1/sandboxes/" + id + "/ports/http/"), 400, "INVALID_ARGUMENT", "port");
        assertError(get(ALICE, "/v1/sandboxes/" + id + "/ports/70000/"), 400, "INVALID_ARGUMENT", "port");
    }

    @Test
    void aPortWhereNothingListensIs502() {
        String id = create(ALICE);
        HttpResponse<String> r = get(ALICE, "/v1/sandboxes/" + id + "/ports/8001/");
        assertError(r, 502, "UNAVAILABLE", "port 8001", id, "nothing is listening");
        assertThatThrownBy(() -> Ws.open(uri("/v1/sandboxes/" + id + "/ports/8001/ws"), ALICE))
                .hasCauseInstanceOf(WebSocketHandshakeException.class)
                .satisfies(e -> assertThat(((WebSocketHandshakeException) e.getCause()).getResponse().statusCode()).isEqualTo(502));
    }

    @Test
    void aStoppedSandboxsPortsAreNotServed() {
        String id = create(ALICE);
        paddock.sandbox(id).destroy();
        assertError(get(ALICE, "/v1/sandboxes/" + id + "/ports/8000/"), 409, "FAILED_PRECONDITION", "stopped");
    }

    @Test
    void exchangesEndWhenTheSandboxStops() throws Exception {
        String id = create(ALICE);
        HttpResponse<InputStream> r = http.send(request(ALICE, "/v1/sandboxes/" + id + "/ports/8000/hang").GET().build(),
                HttpResponse.BodyHandlers.ofInputStream());
        Ws ws = Ws.open(uri("/v1/sandboxes/" + id + "/ports/8000/ws"), ALICE);
        try (InputStream in = r.body()) {
            assertThat(in.read()).isEqualTo('x');
            paddock.sandbox(id).destroy();
            CompletableFuture<Object> rest = CompletableFuture.supplyAsync(() -> {
                try {
                    return in.readAllBytes();
                } catch (IOException e) {
                    return e;
                }
            });
            // the response is cut (an error, not a clean end) within the watch's period
            assertThat(rest.get(10, TimeUnit.SECONDS)).isInstanceOf(IOException.class);
        }
        assertThat(ws.next()).isEqualTo(1001);
    }

    @Test
    void aQuietAnswerOutlivesTheDaemonsIdleTimeout() throws Exception {
        // the daemon's idle timeout (connections, headers) is for clients; a sandbox that answers slowly is
        // the proxy's watch's business (5 minutes of no progress), so a quiet stream is not cut after it
        try (PaddockServer quick = PaddockServer.start(ServerOptions.builder().port(0).token(OPERATOR)
                .idleTimeout(Duration.ofMillis(500)).build(), paddock)) {
            String id = create(OPERATOR);
            HttpResponse<InputStream> r = http.send(HttpRequest.newBuilder(URI.create(quick.url() + "/v1/sandboxes/" + id
                    + "/ports/8000/hang")).header("Authorization", "Bearer " + OPERATOR).GET().build(),
                    HttpResponse.BodyHandlers.ofInputStream());
            try (InputStream in = r.body()) {
                assertThat(in.read()).isEqualTo('x');
                CompletableFuture<Object> rest = CompletableFuture.supplyAsync(() -> {
                    try {
                        return in.readAllBytes();
                    } catch (IOException e) {
                        return e;
                    }
                });
                Thread.sleep(2500);
                assertThat(rest).as("still streaming after 5 idle timeouts").isNotDone();
                paddock.sandbox(id).destroy();
                assertThat(rest.get(10, TimeUnit.SECONDS)).isInstanceOf(IOException.class);
            }
        }
    }

    // ---- network policy ----

    @Test
    void theNetworkPolicyIsReplaced() {
        String id = create(ALICE);
        HttpResponse<String> r = send(request(ALICE, "/v1/sandboxes/" + id + "/network").header("Content-Type", "application/json")
                .method("PATCH", HttpRequest.BodyPublishers.ofString("{\"mode\":\"allow\",\"allow\":[\"api.example.com\",\"198.18.0.0/24\"]}"))
                .build());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(json(r).get("id").asText()).isEqualTo(id);
        assertThat(json(r).get("labels").has("paddock.io/tenant")).isFalse(); // the tenant's view
        assertThat(paddock.sandbox(id).network).isEqualTo(NetworkPolicy.allow("api.example.com", "198.18.0.0/24"));
        HttpResponse<String> open = send(request(ALICE, "/v1/sandboxes/" + id + "/network")
                .method("PATCH", HttpRequest.BodyPublishers.ofString("\"open\"")).build());
        assertThat(open.statusCode()).isEqualTo(200);
        assertThat(paddock.sandbox(id).network).isEqualTo(NetworkPolicy.open());

        assertError(send(request(ALICE, "/v1/sandboxes/" + id + "/network")
                .method("PATCH", HttpRequest.BodyPublishers.ofString("{\"mode\":\"sometimes\"}")).build()), 400,
                "INVALID_ARGUMENT", "sometimes");
        assertError(send(request(BOB, "/v1/sandboxes/" + id + "/network")
                .method("PATCH", HttpRequest.BodyPublishers.ofString("\"open\"")).build()), 404, "NOT_FOUND");
        assertThat(paddock.sandbox(id).network).isEqualTo(NetworkPolicy.open());
        assertError(send(request(ALICE, "/v1/sandboxes/" + id + "/network")
                .method("PUT", HttpRequest.BodyPublishers.ofString("\"open\"")).build()), 405, "INVALID_ARGUMENT", "PATCH");
        // a sandbox made without a network cannot gain one (the engine's rule, passed on)
        HttpResponse<String> none = post(ALICE, "/v1/sandboxes", "{}");
        String bare = json(none).get("id").asText();
        assertError(send(request(ALICE, "/v1/sandboxes/" + bare + "/network")
                .method("PATCH", HttpRequest.BodyPublishers.ofString("\"open\"")).build()), 409, "FAILED_PRECONDITION");
    }

    // ---- signed URLs ----

    @Test
    void aSignedUrlWorksWithoutHeaders() throws Exception {
        String id = create(ALICE);
        JsonNode u = signedUrl(ALICE, id, 8000, "");
        String url = u.get("url").asText();
        String path = u.get("path").asText();
        assertThat(url).isEqualTo(server.url() + path);
        assertThat(path).matches("/v1/p/[A-Za-z0-9_-]+/");
        Instant expires = Instant.parse(u.get("expires_at").asText());
        assertThat(expires).isBetween(Instant.now().plus(Duration.ofMinutes(9)), Instant.now().plus(Duration.ofMinutes(11)));
        assertThat(u.get("host_url").asText()).startsWith("http://8000-" + id + "." + DOMAIN + ":" + server.url().getPort()
                + "/?paddock_token=");

        HttpResponse<String> r = send(HttpRequest.newBuilder(URI.create(url + "some/page?q=1"))
                .header("Referer", url + "index.html").header("Authorization", "Basic YXBwOnB3").GET().build());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode echo = json(r);
        assertThat(echo.get("path").asText()).isEqualTo("/some/page");
        assertThat(echo.get("query").asText()).isEqualTo("q=1");
        assertThat(echo.get("headers").has("authorization")).isFalse();
        assertThat(echo.get("headers").has("referer")).isFalse(); // it holds the token
        assertThat(echo.toString()).doesNotContain(path.substring(6, path.length() - 1));
        assertThat(json(send(HttpRequest.newBuilder(URI.create(url.substring(0, url.length() - 1))).GET().build()))
                .get("path").asText()).isEqualTo("/");

        // and a WebSocket through it
        Ws ws = Ws.open(URI.create(url + "ws"), null);
        ws.socket.sendText("via link", true).join();
        assertThat(ws.next()).isEqualTo("echo:via link");
        ws.socket.sendClose(WebSocket.NORMAL_CLOSURE, "").join();

        // the operator may ask too; the port must be exposed
        assertThat(signedUrl(OPERATOR, id, 8000, "{}").get("url").asText()).startsWith(server.url() + "/v1/p/");
    }

    @Test
    void aTamperedOrUnknownTokenIsRefusedAlike() {
        String id = create(ALICE);
        String path = signedUrl(ALICE, id, 8000, "").get("path").asText();
        String token = path.substring("/v1/p/".length(), path.length() - 1);
        char c = token.charAt(token.length() / 2);
        String tampered = token.substring(0, token.length() / 2) + (c == 'A' ? 'B' : 'A') + token.substring(token.length() / 2 + 1);
        HttpResponse<String> t = get(null, "/v1/p/" + tampered + "/");
        assertError(t, 403, "PERMISSION_DENIED", "not valid");
        HttpResponse<String> unknown = get(null, "/v1/p/" + newToken() + newToken() + "/");
        assertThat(unknown.statusCode()).isEqualTo(403);
        assertThat(unknown.body()).isEqualTo(t.body());
        assertThat(get(null, "/v1/p/!!/").statusCode()).isEqualTo(403);
        assertThat(get(null, "/v1/p/" + token.substring(0, 20) + "/").body()).isEqualTo(t.body());
        // a token made with another key (another daemon's) is no better
        String foreign = UrlTokens.withKey(new byte[32]).sign(new SandboxId(id), 8000, Instant.now().plusSeconds(60));
        assertThat(get(null, "/v1/p/" + foreign + "/").body()).isEqualTo(t.body());
        // answers never hold the token
        assertThat(t.body()).doesNotContain(tampered);
        // and the real one works
        assertThat(get(null, path).statusCode()).isEqualTo(200);
    }

    @Test
    void anExpiredTokenIsRefused() throws Exception {
        String id = create(ALICE);
        String path = signedUrl(ALICE, id, 8000, "{\"expires_in_ms\":1}").get("path").asText();
        Thread.sleep(20);
        assertError(get(null, path), 403, "PERMISSION_DENIED", "expired");
        // minted with the daemon's own key (from its data directory), expired a minute ago
        Path keyFile = dataDir.resolve(UrlTokens.KEY_FILE);
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(keyFile))).isEqualTo("rw-------");
        UrlTokens same = UrlTokens.withKey(Files.readAllBytes(keyFile));
        String old = same.sign(new SandboxId(id), 8000, Instant.now().minusSeconds(60));
        assertError(get(null, "/v1/p/" + old + "/"), 403, "PERMISSION_DENIED", "expired");
        String fresh = same.sign(new SandboxId(id), 8000, Instant.now().plusSeconds(60));
        assertThat(get(null, "/v1/p/" + fresh + "/").statusCode()).isEqualTo(200);

        assertError(post(ALICE, "/v1/sandboxes/" + id + "/ports/8000/url", "{\"expires_in_ms\":0}"), 400,
                "INVALID_ARGUMENT", "expires_in_ms");
        assertError(post(ALICE, "/v1/sandboxes/" + id + "/ports/8000/url", "{\"expires_in_ms\":604800001}"), 400,
                "INVALID_ARGUMENT", "expires_in_ms");
        assertError(post(ALICE, "/v1/sandboxes/" + id + "/ports/8000/url", "{\"ttl\":5}"), 400, "INVALID_ARGUMENT", "ttl");
    }

    @Test
    void aUrlDiesWithItsSandbox() {
        String id = create(ALICE);
        String path = signedUrl(ALICE, id, 8000, "").get("path").asText();
        assertThat(get(null, path).statusCode()).isEqualTo(200);
        assertThat(send(request(ALICE, "/v1/sandboxes/" + id).DELETE().build()).statusCode()).isEqualTo(204);
        assertError(get(null, path), 410, "NOT_FOUND", "stopped");
        paddock.purge(id);
        assertError(get(null, path), 404, "NOT_FOUND", "no longer exists");
    }

    // ---- host-name routing ----

    private static RawHttp.Reply atHost(String host, String pathAndQuery, String... headers) throws IOException {
        StringBuilder head = new StringBuilder("GET " + pathAndQuery + " HTTP/1.1\r\nHost: " + host);
        for (String h : headers) {
            head.append("\r\n").append(h);
        }
        return RawHttp.exchange(server.url(), head.toString(), out -> { }, 10_000);
    }

    @Test
    void aPortHostTakesASignedTokenOnceThenItsCookie() throws Exception {
        String id = create(ALICE);
        JsonNode u = signedUrl(ALICE, id, 8000, "");
        String token = u.get("path").asText().replaceAll("^/v1/p/|/$", "");
        String host = "8000-" + id + "." + DOMAIN + ":" + server.url().getPort();

        RawHttp.Reply first = atHost(host, "/app/?a=1&paddock_token=" + token + "&b=2");
        assertThat(first.status()).as(first.body()).isEqualTo(200);
        JsonNode echo = Wire.parse(first.body().getBytes(StandardCharsets.UTF_8));
        assertThat(echo.get("path").asText()).isEqualTo("/app/");
        assertThat(echo.get("query").asText()).isEqualTo("a=1&b=2"); // the token is not passed on
        String cookie = first.headers().get("set-cookie");
        assertThat(cookie).startsWith("paddock_token=" + token + ";").contains("HttpOnly", "SameSite=Lax", "Path=/")
                .doesNotContain("Domain");

        RawHttp.Reply next = atHost(host, "/style.css", "Cookie: theme=dark; paddock_token=" + token);
        assertThat(next.status()).as(next.body()).isEqualTo(200);
        JsonNode again = Wire.parse(next.body().getBytes(StandardCharsets.UTF_8));
        assertThat(again.get("headers").get("cookie").get(0).asText()).isEqualTo("theme=dark");
        assertThat(again.get("headers").get("x-forwarded-host").get(0).asText()).isEqualTo(host);

        // nothing, or a token of another port or sandbox: refused
        RawHttp.Reply none = atHost(host, "/");
        assertThat(none.status()).isEqualTo(401);
        assertThat(none.headers().get("www-authenticate")).startsWith("Bearer");
        String other = signedUrl(ALICE, id, 8001, "").get("path").asText().replaceAll("^/v1/p/|/$", "");
        assertThat(atHost(host, "/?paddock_token=" + other).status()).isEqualTo(403);
        assertThat(atHost(host, "/", "Cookie: paddock_token=" + other).status()).isEqualTo(401);
        assertThat(atHost(host, "/?paddock_token=" + token + "x").status()).isEqualTo(403);

        // the owner's bearer token works, another tenant's does not; neither reaches the sandbox
        RawHttp.Reply bearer = atHost(host, "/b", "Authorization: Bearer " + ALICE);
        assertThat(bearer.status()).isEqualTo(200);
        assertThat(Wire.parse(bearer.body().getBytes(StandardCharsets.UTF_8)).get("headers").has("authorization")).isFalse();
        assertThat(atHost(host, "/b", "Authorization: Bearer " + BOB).status()).isEqualTo(404);
        assertThat(atHost(host, "/b", "Authorization: Bearer nope").status()).isEqualTo(401);

        // any path on a port host is the sandbox's, the API's included
        RawHttp.Reply api = atHost(host, "/v1/sandboxes", "Cookie: paddock_token=" + token);
        assertThat(Wire.parse(api.body().getBytes(StandardCharsets.UTF_8)).get("path").asText()).isEqualTo("/v1/sandboxes");
        // a host under the domain that names no port: 404; the daemon's own host is the API as ever
        assertThat(atHost("www." + DOMAIN, "/").status()).isEqualTo(404);
        assertThat(atHost(DOMAIN, "/v1/sandboxes", "Authorization: Bearer " + ALICE).status()).isEqualTo(200);
    }

    @Test
    void aSandboxSetsCookiesOnlyForItsOwnHost() throws Exception {
        String id = create(ALICE);
        String host = "8000-" + id + "." + DOMAIN;
        // RawHttp keeps one value per header name: ask the daemon with java.net.http for the full list
        HttpResponse<String> viaPath = get(ALICE, "/v1/sandboxes/" + id + "/ports/8000/cookies");
        assertThat(viaPath.headers().allValues("Set-Cookie")).containsExactly("app=1; Path=/; HttpOnly");
        RawHttp.Reply viaHost = atHost(host, "/cookies", "Authorization: Bearer " + ALICE);
        assertThat(viaHost.headers().get("set-cookie")).isEqualTo("app=1; Path=/; HttpOnly");
    }

    @Test
    void tokensAreNeverInTheDaemonsAnswersOrLogs() {
        // the log side: failures are logged with the path's token replaced
        assertThat(io.paddock.server.internal.PortApi.redact("/v1/p/abc123/x/y")).isEqualTo("/v1/p/<token>/x/y");
        assertThat(io.paddock.server.internal.PortApi.redact("/v1/p/abc123")).isEqualTo("/v1/p/<token>");
        assertThat(io.paddock.server.internal.PortApi.redact("/v1/sandboxes")).isEqualTo("/v1/sandboxes");
    }
}
