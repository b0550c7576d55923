package io.paddock.network.internal.egress;

import io.paddock.network.internal.egress.EgressProxy.Client;
import io.paddock.network.internal.egress.EgressProxy.EgressSecret;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The proxy on loopback: sandboxes are source addresses of 127.0.0.0/8 (127.0.0.1 is sandbox A, 127.0.0.3 sandbox
 * B, 127.0.0.2 nobody), the real servers are {@link EchoUpstream}s with certificates of a {@link TestPki}, and
 * {@link EgressProxy.Upstreams} maps the test names to them. Every log line of the package, DEBUG included, is
 * captured and searched for the secret values after each test.
 */
class EgressProxyTest {
    private static final InetAddress A = address("127.0.0.1");
    private static final InetAddress STRANGER = address("127.0.0.2");
    private static final InetAddress B = address("127.0.0.3");

    private static final String API = "api.egress.test";
    private static final String OTHER_HOST = "other.egress.test";
    private static final String NO_SECRET_HOST = "nosecret.egress.test";
    private static final String UNTRUSTED_HOST = "untrusted.egress.test";
    private static final String MISMATCH_HOST = "mismatch.egress.test";

    private static final String TOKEN = "sk-live-TOKEN-VALUE-4f1e9a";
    private static final String KEY = "key VALUE 77aa0c3d";
    private static final String OTHER = "other-VALUE-5e2b";
    private static final String UNTRUSTED = "untrusted-VALUE-0d0d";
    private static final String MISMATCH = "mismatch-VALUE-6c6c";
    private static final String B_TOKEN = "b-TOKEN-VALUE-91c3";
    private static final List<String> VALUES = List.of(TOKEN, KEY, OTHER, UNTRUSTED, MISMATCH, B_TOKEN);

    private static final String TOKEN_PH = placeholder();
    private static final String KEY_PH = placeholder();
    private static final String OTHER_PH = placeholder();
    private static final String UNTRUSTED_PH = placeholder();
    private static final String MISMATCH_PH = placeholder();
    private static final String B_PH = placeholder();

    private static final TestPki UPSTREAM_CA = new TestPki("Egress test upstream CA");
    private static final TestPki ROGUE_CA = new TestPki("Egress test rogue CA");

    private final CertificateAuthority ca = CertificateAuthority.ephemeral();
    private final SSLContext sandboxTls = TestPki.trusting(ca.certificate());
    private final List<String> resolved = new CopyOnWriteArrayList<>();
    private final Map<InetAddress, Client> sandboxes = Map.of(
            A, client("A", List.of(
                    new EgressSecret(API, TOKEN_PH, TOKEN),
                    new EgressSecret("API.Egress.Test.", KEY_PH, KEY),
                    new EgressSecret(OTHER_HOST, OTHER_PH, OTHER),
                    new EgressSecret(UNTRUSTED_HOST, UNTRUSTED_PH, UNTRUSTED),
                    new EgressSecret(MISMATCH_HOST, MISMATCH_PH, MISMATCH))),
            B, client("B", List.of(new EgressSecret(API, B_PH, B_TOKEN))));
    private LogCapture logs;
    private EchoUpstream upstream;
    private EchoUpstream rogue;
    private EchoUpstream plainUpstream;
    private EgressProxy proxy;

    @BeforeEach
    void setUp() throws IOException {
        logs = LogCapture.start();
        upstream = new EchoUpstream(TestPki.serving(UPSTREAM_CA.issue(API, OTHER_HOST, NO_SECRET_HOST)));
        rogue = new EchoUpstream(TestPki.serving(ROGUE_CA.issue(UNTRUSTED_HOST)));
        plainUpstream = new EchoUpstream(null);
    }

    @AfterEach
    void tearDown() throws IOException {
        if (proxy != null) {
            proxy.close();
        }
        upstream.close();
        rogue.close();
        plainUpstream.close();
        logs.close();
        assertThat(Thread.getAllStackTraces().keySet()).filteredOn(Thread::isAlive)
                .extracting(Thread::getName).noneMatch(n -> n.startsWith("paddock-egress-"));
        assertThat(logs.lines()).isNotEmpty();
        for (String value : VALUES) {
            assertThat(logs.lines()).noneMatch(line -> line.contains(value));
        }
    }

    private void start(EgressProxy.Limits limits) {
        proxy = EgressProxy.start(new InetSocketAddress(A, 0), ca, TestPki.trusting(UPSTREAM_CA.certificate()),
                this::resolve, source -> Optional.ofNullable(sandboxes.get(source)), limits);
    }

    private void start() {
        start(EgressProxy.Limits.defaults());
    }

    private InetSocketAddress resolve(String host, int port) throws IOException {
        resolved.add(host + ":" + port);
        if (port == 80 && Set.of(API, OTHER_HOST, NO_SECRET_HOST).contains(host)) {
            return plainUpstream.address();
        }
        if (port == 443) {
            switch (host) {
                case API, OTHER_HOST, NO_SECRET_HOST, MISMATCH_HOST:
                    return upstream.address();
                case UNTRUSTED_HOST:
                    return rogue.address();
                default:
                    break;
            }
        }
        throw new UnknownHostException(host + ":" + port);
    }

    @Test
    void aPlaceholderInAHeaderBecomesTheValueUpstreamAndNowhereElse() throws IOException {
        start();
        String body = "token=" + TOKEN_PH;
        String response = tls(A, API, "POST /v1/things?key=" + TOKEN_PH + " HTTP/1.1\r\n"
                + "Host: " + API + "\r\n"
                + "Authorization: Bearer " + TOKEN_PH + "\r\n"
                + "X-Api-Key: " + KEY_PH + "\r\n"
                + "X-Both: " + TOKEN_PH + "," + KEY_PH + "\r\n"
                + "X-Other-Host: " + OTHER_PH + "\r\n"
                + "X-" + TOKEN_PH + ": name\r\n"
                + "Connection: keep-alive\r\n"
                + "Content-Length: " + body.length() + "\r\n\r\n" + body);

        assertThat(upstream.heads).hasSize(1);
        List<String> lines = List.of(upstream.heads.get(0).split("\r\n"));
        assertThat(lines.get(0)).isEqualTo("POST /v1/things?key=" + TOKEN_PH + " HTTP/1.1"); // never the request line
        assertThat(lines).contains("Host: " + API, "Authorization: Bearer " + TOKEN, "X-Api-Key: " + KEY,
                "X-Both: " + TOKEN + "," + KEY,
                "X-Other-Host: " + OTHER_PH, // another host's placeholder stays one
                "X-" + TOKEN_PH + ": name", // never a name
                "Connection: close");
        assertThat(lines).filteredOn(l -> l.toLowerCase().startsWith("connection:")).hasSize(1);
        assertThat(upstream.bodies).containsExactly(body); // never the body
        // the sandbox gets the upstream's answer, byte for byte: nothing added, and no value anywhere in it
        assertThat(response).isEqualTo(String.format(EchoUpstream.RESPONSE_HEAD, 5 + body.length()) + "echo:" + body);
        assertThat(VALUES).noneMatch(response::contains);
        assertThat(proxy.stats().forwarded()).isEqualTo(1);
        assertThat(logs.lines()).anyMatch(l -> l.contains("4 placeholder(s) replaced") && l.contains(API));
    }

    @Test
    void eachSandboxGetsOnlyItsOwnSecrets() throws IOException {
        start();
        tls(B, API, get(API, "Authorization: Bearer " + TOKEN_PH, "X-B: " + B_PH));

        assertThat(upstream.heads).singleElement().satisfies(head -> assertThat(head)
                .contains("Authorization: Bearer " + TOKEN_PH, "X-B: " + B_TOKEN).doesNotContain(TOKEN));
    }

    @Test
    void aHostWithoutASecretOfTheSandboxIsRefusedBeforeAnyUpstream() {
        start();
        assertThatThrownBy(() -> tls(A, NO_SECRET_HOST, get(NO_SECRET_HOST, "X: " + TOKEN_PH)))
                .isInstanceOf(IOException.class);
        assertThatThrownBy(() -> tls(B, OTHER_HOST, get(OTHER_HOST, "X: " + OTHER_PH)))
                .isInstanceOf(IOException.class);

        assertThat(resolved).isEmpty();
        assertThat(upstream.accepted).hasValue(0);
        assertThat(proxy.stats().refused()).isEqualTo(2);
        assertThat(logs.lines()).noneMatch(l -> l.contains("INFO") && l.contains(NO_SECRET_HOST));
    }

    @Test
    void aStrangerIsClosedAtOnce() throws IOException {
        start();
        assertThatThrownBy(() -> tls(STRANGER, API, get(API, "Authorization: Bearer " + TOKEN_PH)))
                .isInstanceOf(IOException.class);
        assertThat(plain(STRANGER, get(API, "Authorization: Bearer " + TOKEN_PH))).isEmpty();

        assertThat(resolved).isEmpty();
        assertThat(proxy.stats().refused()).isEqualTo(2);
    }

    @Test
    void plainHttpFollowsTheSameRules() throws IOException {
        start();
        String response = plain(A, get("API.egress.test.:80", "Authorization: Bearer " + TOKEN_PH,
                "X-Other-Host: " + OTHER_PH));
        assertThat(plain(A, get(NO_SECRET_HOST, "Authorization: Bearer " + TOKEN_PH))).isEmpty();
        assertThat(plain(B, get(OTHER_HOST, "Authorization: Bearer " + OTHER_PH))).isEmpty();

        assertThat(response).isEqualTo(String.format(EchoUpstream.RESPONSE_HEAD, 5) + "echo:");
        assertThat(plainUpstream.heads).singleElement().satisfies(head -> assertThat(head)
                .contains("Authorization: Bearer " + TOKEN, "X-Other-Host: " + OTHER_PH));
        assertThat(resolved).containsExactly(API + ":80");
    }

    @Test
    void theUpstreamsCertificateAndNameAreVerifiedBeforeAnythingIsSent() throws IOException {
        start();
        String untrusted = tls(A, UNTRUSTED_HOST, get(UNTRUSTED_HOST, "Authorization: Bearer " + UNTRUSTED_PH));
        String mismatch = tls(A, MISMATCH_HOST, get(MISMATCH_HOST, "Authorization: Bearer " + MISMATCH_PH));

        assertThat(untrusted).startsWith("HTTP/1.1 502 ").doesNotContain(UNTRUSTED);
        assertThat(mismatch).startsWith("HTTP/1.1 502 ").doesNotContain(MISMATCH);
        assertThat(resolved).containsExactly(UNTRUSTED_HOST + ":443", MISMATCH_HOST + ":443");
        assertThat(rogue.heads).isEmpty();
        assertThat(upstream.heads).isEmpty();
        assertThat(proxy.stats().upstreamFailures()).isEqualTo(2);
        assertThat(proxy.stats().forwarded()).isZero();
    }

    @Test
    void aClientHelloWithoutAServerNameIsRefused() {
        start();
        assertThatThrownBy(() -> tls(A, null, get(API, "Authorization: Bearer " + TOKEN_PH)))
                .isInstanceOf(IOException.class);
        assertThat(resolved).isEmpty();
        assertThat(proxy.stats().refused()).isEqualTo(1);
    }

    @Test
    void garbageIsRefusedAndTheProxyKeepsServing() throws IOException {
        start();
        byte[] random = new byte[256];
        new SecureRandom().nextBytes(random);
        random[0] = 0;
        List<byte[]> garbage = new ArrayList<>(List.of(
                random,
                bytes("\u0016\u0003\u0001\u00ff\u00ff"), // a record longer than TLS allows
                bytes("\u0016\u0003\u0001\u0000\u0004\u0002\u0000\u0000\u0000"), // a ServerHello, not a ClientHello
                bytes("\u0016\u0003\u0001\u0000\u0004\u0001\u0000\u0000\u0001\u0000"), // a hello too short for itself
                bytes("\u0017\u0003\u0003\u0000\u0001\u0000"), // application data first
                bytes("GET http://" + API + "/ HTTP/1.1\r\nHost: " + API + "\r\n\r\n"), // absolute form
                bytes("GET / HTTP/1.1\r\nHost: " + API + "\nX-Smuggled: 1\r\n\r\n"), // a bare LF
                bytes("GET / HTTP/1.1\r\nHost : " + API + "\r\n\r\n"), // space before the colon
                bytes("GET / HTTP/1.1\r\nHost: " + API + "\r\n folded\r\n\r\n"),
                bytes("GET / HTTP/1.1\r\nHost: " + API + "\r\nHost: " + API + "\r\n\r\n"),
                bytes("GET / HTTP/2.0\r\nHost: " + API + "\r\n\r\n"),
                bytes("GET / HTTP/1.1\r\nHost: " + API + "\r\nX: " + "a".repeat(RequestHead.MAX_BYTES) + "\r\n\r\n")));
        for (byte[] bytes : garbage) {
            assertThat(raw(A, bytes)).doesNotContain("HTTP/1.1 200");
        }
        assertThat(resolved).isEmpty();
        assertThat(proxy.stats().refused()).isEqualTo(garbage.size());

        assertThat(tls(A, API, get(API, "Authorization: Bearer " + TOKEN_PH))).startsWith("HTTP/1.1 200 OK");
        assertThat(plain(A, get(API, "Authorization: Bearer " + TOKEN_PH))).startsWith("HTTP/1.1 200 OK");
    }

    @Test
    void theRequestMustBeForTheServerNameItsSecretsAreFor() throws IOException {
        start();
        // a front end shared by several names routes by Host: this host's secrets must not go to another
        String misdirected = tls(A, API, get(OTHER_HOST, "Authorization: Bearer " + TOKEN_PH));
        String absolute = tls(A, API, "GET https://" + OTHER_HOST + "/ HTTP/1.1\r\nHost: " + API
                + "\r\nAuthorization: Bearer " + TOKEN_PH + "\r\n\r\n");
        String noHost = tls(A, API, "GET / HTTP/1.1\r\nAuthorization: Bearer " + TOKEN_PH + "\r\n\r\n");

        assertThat(misdirected).startsWith("HTTP/1.1 421 ");
        assertThat(absolute).startsWith("HTTP/1.1 400 ");
        assertThat(noHost).startsWith("HTTP/1.1 400 ");
        assertThat(resolved).isEmpty();
        assertThat(upstream.accepted).hasValue(0);
    }

    @Test
    void aHostPortInTheHostFieldStillNamesTheHost() throws IOException {
        start();
        assertThat(tls(A, API, get(API + ":443", "Authorization: Bearer " + TOKEN_PH))).startsWith("HTTP/1.1 200");
        assertThat(upstream.heads).singleElement().satisfies(h -> assertThat(h).contains("Bearer " + TOKEN));
    }

    @Test
    void aConnectionThatDragsOnBeforeItsRequestIsCut() throws IOException {
        start(new EgressProxy.Limits(16, 16, Duration.ofMillis(300), Duration.ofSeconds(30)));
        for (byte[] partial : List.of(bytes("\u0016\u0003\u0001"), bytes("GET / HT"), new byte[0])) {
            long started = System.nanoTime();
            try (Socket socket = connect(A)) {
                socket.getOutputStream().write(partial);
                assertThat(readUntilClosed(socket.getInputStream())).isEmpty();
            }
            assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(3));
        }
        assertThat(resolved).isEmpty();
    }

    @Test
    void anIdleExchangeIsCut() throws IOException {
        start(new EgressProxy.Limits(16, 16, Duration.ofSeconds(5), Duration.ofMillis(300)));
        long started = System.nanoTime();
        assertThat(tls(A, API, "GET /hang HTTP/1.1\r\nHost: " + API + "\r\n\r\n")).isEmpty();
        assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(3));
        assertThat(upstream.heads).hasSize(1);
    }

    @Test
    void aSandboxCannotHoldMoreThanItsShareOfConnections() throws IOException {
        start(new EgressProxy.Limits(16, 2, Duration.ofSeconds(10), Duration.ofSeconds(10)));
        String request = get(API, "Authorization: Bearer " + TOKEN_PH);
        try (Socket first = connect(A); Socket second = connect(A)) {
            // the proxy accepts in order: the first two are counted before the third is looked at
            assertThat(first.isConnected() && second.isConnected()).isTrue();
            assertThat(plain(A, request)).isEmpty();
            assertThat(plain(B, request)).startsWith("HTTP/1.1 200");
        }
        // once A's connections are gone, it may connect again
        long deadline = System.nanoTime() + Duration.ofSeconds(3).toNanos();
        String response = "";
        while (response.isEmpty() && System.nanoTime() < deadline) {
            response = plain(A, request);
        }
        assertThat(response).startsWith("HTTP/1.1 200");
    }

    /**
     * Issue 32 breach 8: one tenant's sandboxes together hold at most their tenant's share, so that another tenant's
     * requests still get through while they hold every connection they may (before, 9 sandboxes of one tenant at 32
     * idle connections each took all 256).
     */
    @Test
    void aTenantsSandboxesTogetherCannotHoldMoreThanTheTenantsShare() throws IOException {
        InetAddress c = address("127.0.0.4");
        Map<InetAddress, Client> tenants = Map.of(
                A, client("A", "one", List.of(new EgressSecret(API, TOKEN_PH, TOKEN))),
                c, client("C", "one", List.of(new EgressSecret(API, TOKEN_PH, TOKEN))),
                B, client("B", "two", List.of(new EgressSecret(API, B_PH, B_TOKEN))));
        proxy = EgressProxy.start(new InetSocketAddress(A, 0), ca, TestPki.trusting(UPSTREAM_CA.certificate()),
                this::resolve, source -> Optional.ofNullable(tenants.get(source)),
                new EgressProxy.Limits(16, 8, 2, Duration.ofSeconds(10), Duration.ofSeconds(10)));
        try (Socket first = connect(A); Socket second = connect(c)) {
            assertThat(first.isConnected() && second.isConnected()).isTrue();
            assertThat(plain(c, get(API, "Authorization: Bearer " + TOKEN_PH))).as("the tenant's share is taken").isEmpty();
            assertThat(plain(A, get(API, "Authorization: Bearer " + TOKEN_PH))).isEmpty();
            assertThat(plain(B, get(API, "Authorization: Bearer " + B_PH))).as("another tenant").startsWith("HTTP/1.1 200");
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(3).toNanos();
        String response = "";
        while (response.isEmpty() && System.nanoTime() < deadline) {
            response = plain(c, get(API, "Authorization: Bearer " + TOKEN_PH));
        }
        assertThat(response).as("once its connections are gone").startsWith("HTTP/1.1 200");
        assertThat(EgressProxy.Limits.defaults().maxConnectionsPerTenant()).isLessThan(EgressProxy.Limits.defaults().maxConnections());
        assertThat(EgressProxy.Limits.defaults().setupTimeout()).isLessThanOrEqualTo(Duration.ofSeconds(8));
    }

    @Test
    void closeEndsEveryConnection() throws Exception {
        start(new EgressProxy.Limits(16, 16, Duration.ofSeconds(30), Duration.ofSeconds(30)));
        try (Socket held = connect(A)) {
            Thread hanging = new Thread(() -> {
                try {
                    tls(A, API, "GET /hang HTTP/1.1\r\nHost: " + API + "\r\n\r\n");
                } catch (IOException e) {
                    // ended by the close, as it should
                }
            });
            hanging.start();
            long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
            while (upstream.heads.isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertThat(upstream.heads).hasSize(1);
            proxy.close();
            hanging.join(3000);
            assertThat(hanging.isAlive()).isFalse();
            assertThat(readUntilClosed(held.getInputStream())).isEmpty();
        }
        assertThatThrownBy(() -> connect(A)).isInstanceOf(IOException.class);
    }

    @Test
    void aSecretsValueIsNeverInItsToString() {
        EgressSecret secret = new EgressSecret(API, TOKEN_PH, TOKEN);
        assertThat(secret.toString()).contains(API, TOKEN_PH).doesNotContain(TOKEN);
        assertThatThrownBy(() -> new EgressSecret(API, TOKEN_PH, "line\r\nX-Injected: 1"))
                .isInstanceOf(IllegalArgumentException.class).message().doesNotContain("Injected");
        assertThatThrownBy(() -> new EgressSecret(API, "short", TOKEN)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new EgressSecret("198.51.100.7", TOKEN_PH, TOKEN))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(new EgressSecret("API.Egress.Test.", TOKEN_PH, TOKEN).host()).isEqualTo(API);
        // there is a log line to check (the proxy's start), and none of this test's values is in one
        start();
    }

    // ---- helpers

    private static String get(String host, String... headers) {
        StringBuilder request = new StringBuilder("GET /v1/models HTTP/1.1\r\nHost: " + host + "\r\n");
        for (String header : headers) {
            request.append(header).append("\r\n");
        }
        return request.append("\r\n").toString();
    }

    /** A request over TLS with {@code sni} (none when null), trusting only the proxy's CA and checking the name. */
    private String tls(InetAddress from, String sni, String request) throws IOException {
        Socket raw = connect(from);
        try (SSLSocket socket = (SSLSocket) sandboxTls.getSocketFactory().createSocket(raw,
                sni == null ? "127.0.0.1" : sni, proxy.address().getPort(), true)) {
            SSLParameters parameters = socket.getSSLParameters();
            if (sni != null) {
                parameters.setEndpointIdentificationAlgorithm("HTTPS");
                parameters.setServerNames(List.of(new SNIHostName(sni)));
            } else {
                parameters.setServerNames(List.of());
            }
            socket.setSSLParameters(parameters);
            socket.startHandshake();
            socket.getOutputStream().write(bytes(request));
            socket.getOutputStream().flush();
            return readUntilClosed(socket.getInputStream());
        }
    }

    /** A plain HTTP request; "" when the proxy closed the connection without an answer. */
    private String plain(InetAddress from, String request) throws IOException {
        return raw(from, bytes(request));
    }

    /** Sends {@code bytes} and returns all that comes back; "" when the proxy closed or reset the connection. */
    private String raw(InetAddress from, byte[] bytes) throws IOException {
        try (Socket socket = connect(from)) {
            try {
                socket.getOutputStream().write(bytes);
            } catch (SocketTimeoutException e) {
                throw e;
            } catch (IOException e) {
                return ""; // closed while we were still writing
            }
            return readUntilClosed(socket.getInputStream());
        }
    }

    /** Everything until the end of the stream; "" for a reset. A hang fails the test (read timeout). */
    private static String readUntilClosed(InputStream in) throws IOException {
        try {
            return new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
        } catch (SocketTimeoutException e) {
            throw e;
        } catch (SocketException | SSLException e) {
            return ""; // reset, or TLS cut without close_notify
        }
    }

    private Socket connect(InetAddress from) throws IOException {
        Socket socket = new Socket();
        try {
            socket.bind(new InetSocketAddress(from, 0));
            socket.connect(proxy.address(), 2000);
            socket.setSoTimeout(5000);
            return socket;
        } catch (IOException e) {
            socket.close();
            throw e;
        }
    }

    private static Client client(String id, String tenant, List<EgressSecret> secrets) {
        return new Client() {
            @Override
            public String id() {
                return id;
            }

            @Override
            public String tenant() {
                return tenant;
            }

            @Override
            public List<EgressSecret> secrets() {
                return secrets;
            }
        };
    }

    private static Client client(String id, List<EgressSecret> secrets) {
        return new Client() {
            @Override
            public String id() {
                return id;
            }

            @Override
            public List<EgressSecret> secrets() {
                return secrets;
            }
        };
    }

    private static String placeholder() {
        byte[] random = new byte[16];
        new SecureRandom().nextBytes(random);
        return "paddock-egress-" + HexFormat.of().formatHex(random);
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.ISO_8859_1);
    }

    private static InetAddress address(String dotted) {
        try {
            return InetAddress.getByName(dotted);
        } catch (UnknownHostException e) {
            throw new AssertionError(e);
        }
    }
}
