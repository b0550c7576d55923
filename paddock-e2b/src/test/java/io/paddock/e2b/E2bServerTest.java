package io.paddock.e2b;

import io.paddock.ErrorCode;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxInfo;
import io.paddock.SandboxQuery;
import io.paddock.SandboxSpec;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The listener's routing, authentication and error shapes, over an {@link E2bAccess} that has no sandboxes
 * (the SDKs' behaviour against real sandboxes is E2bNodeTest's, in paddock-server).
 */
class E2bServerTest {
    private static final String KEY = "k".repeat(40);
    private static E2bServer server;
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    @BeforeAll
    static void start() {
        E2bAccess access = new E2bAccess() {
            @Override
            public Holder authenticate(String clientAddress, String apiKey) {
                if (!KEY.equals(apiKey)) {
                    throw new SandboxException(ErrorCode.PERMISSION_DENIED, "wrong");
                }
                return new Holder() {
                    @Override
                    public Sandbox create(SandboxSpec spec) {
                        throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "full");
                    }

                    @Override
                    public Sandbox get(String id) {
                        throw new SandboxException(ErrorCode.NOT_FOUND, "no sandbox " + id);
                    }

                    @Override
                    public List<SandboxInfo> list(SandboxQuery.Builder query) {
                        return List.of();
                    }

                    @Override
                    public SandboxInfo view(SandboxInfo info) {
                        return info;
                    }
                };
            }

            @Override
            public Sandbox sandbox(String id) {
                throw new SandboxException(ErrorCode.NOT_FOUND, "no sandbox " + id);
            }
        };
        server = E2bServer.start(E2bOptions.builder().port(0).key(new byte[32]).maxJsonBytes(1024).build(), access);
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    private static HttpResponse<String> send(HttpRequest.Builder b) throws Exception {
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static HttpRequest.Builder req(String path) {
        return HttpRequest.newBuilder(URI.create(server.url() + path));
    }

    @Test
    void controlPlaneAnswersInE2bsShapes() throws Exception {
        assertThat(send(req("/health")).statusCode()).isEqualTo(204);
        HttpResponse<String> noKey = send(req("/v2/sandboxes"));
        assertThat(noKey.statusCode()).isEqualTo(401);
        assertThat(noKey.body()).contains("\"code\":401").contains("X-API-Key");
        assertThat(send(req("/v2/sandboxes").header("X-API-Key", "wrong")).statusCode()).isEqualTo(401);
        assertThat(send(req("/v2/sandboxes").header("X-API-Key", KEY)).body()).isEqualTo("[]");
        HttpResponse<String> unknown = send(req("/sandboxes/0123456789abcdef0123456789abcdef").header("X-API-Key", KEY));
        assertThat(unknown.statusCode()).isEqualTo(404);
        assertThat(unknown.body()).contains("\"code\":404");
        HttpResponse<String> metrics = send(req("/sandboxes/abc/metrics").header("X-API-Key", KEY));
        assertThat(metrics.statusCode()).isEqualTo(501);
        assertThat(metrics.body()).contains("GET /sandboxes/abc/metrics").contains("not supported by Paddock");
        HttpResponse<String> big = send(req("/sandboxes").header("X-API-Key", KEY)
                .POST(HttpRequest.BodyPublishers.ofString("{\"templateID\":\"" + "x".repeat(2000) + "\"}")));
        assertThat(big.statusCode()).isEqualTo(413);
        HttpResponse<String> template = send(req("/sandboxes").header("X-API-Key", KEY)
                .POST(HttpRequest.BodyPublishers.ofString("{\"templateID\":\"nope\"}")));
        assertThat(template.statusCode()).isEqualTo(404);
        assertThat(template.body()).contains("nope").contains("base, code-interpreter-v1");
        HttpResponse<String> full = send(req("/sandboxes").header("X-API-Key", KEY)
                .POST(HttpRequest.BodyPublishers.ofString("{\"templateID\":\"base\"}")));
        assertThat(full.statusCode()).isEqualTo(429);
        HttpResponse<String> mcp = send(req("/v2/sandboxes").header("X-API-Key", KEY)
                .POST(HttpRequest.BodyPublishers.ofString("{\"templateID\":\"base\",\"mcp\":{}}")));
        assertThat(mcp.statusCode()).isEqualTo(400);
        assertThat(mcp.body()).contains("'mcp' is not supported");
    }

    /** A fresh daemon builds the code interpreter's image on first use: its template comes with the code image's recipe. */
    @Test
    void theCodeInterpretersTemplateHasTheCodeImagesRecipeUnlessServedOtherwise() {
        E2bOptions defaults = E2bOptions.builder().key(new byte[32]).build();
        assertThat(defaults.image(E2bOptions.CODE_TEMPLATE)).contains(io.paddock.code.CodeImages.FULL);
        assertThat(defaults.recipe(E2bOptions.CODE_TEMPLATE)).isPresent();
        assertThat(defaults.recipe(E2bOptions.CODE_TEMPLATE).orElseThrow().steps())
                .isEqualTo(io.paddock.code.CodeImages.full().steps());
        assertThat(defaults.recipe(E2bOptions.BASE_TEMPLATE)).isEmpty();
        E2bOptions asHost = E2bOptions.builder().key(new byte[32]).template(E2bOptions.CODE_TEMPLATE, "host").build();
        assertThat(asHost.recipe(E2bOptions.CODE_TEMPLATE)).isEmpty();
        assertThatThrownBy(() -> E2bOptions.builder().template("t", "host", io.paddock.code.CodeImages.full()))
                .hasMessageContaining("'host' is not built");
    }

    /**
     * A body over the limit, still being sent when the refusal is decided, gets the 413 answer, not a reset: the
     * listener reads it to the end before it answers and closes (the E2B SDK's upload saw "fetch failed" under load).
     */
    @Test
    void aBodyOverTheLimitStillBeingSentGetsTheRefusalNotAReset() throws Exception {
        int length = 4 << 20;
        URI url = server.url();
        try (java.net.Socket s = new java.net.Socket(url.getHost(), url.getPort())) {
            s.setSoTimeout(30_000);
            java.io.OutputStream out = s.getOutputStream();
            out.write(("POST /sandboxes HTTP/1.1\r\nHost: " + url.getHost() + "\r\nX-API-Key: " + KEY
                    + "\r\nContent-Type: application/json\r\nContent-Length: " + length + "\r\n\r\n")
                    .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            out.flush();
            byte[] chunk = new byte[64 << 10];
            java.util.Arrays.fill(chunk, (byte) ' ');
            for (int sent = 0; sent < length; sent += chunk.length) {
                out.write(chunk); // a reset connection fails here: "Connection reset" or "Broken pipe"
                Thread.sleep(5);
            }
            out.flush();
            String answer = new String(s.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            assertThat(answer).startsWith("HTTP/1.1 413").contains("larger than the limit of 1024 bytes");
        }
    }

    @Test
    void inSandboxCallsNeedTheSandboxsToken() throws Exception {
        String id = "0123456789abcdef0123456789abcdef";
        HttpResponse<String> none = send(req("/files?path=/etc/hostname").header("E2b-Sandbox-Id", id)
                .header("E2b-Sandbox-Port", "49983"));
        assertThat(none.statusCode()).isEqualTo(401);
        assertThat(none.body()).contains("\"code\":401");
        assertThat(send(req("/files?path=/x").header("E2b-Sandbox-Id", id).header("X-Access-Token", "pdk_x"))
                .statusCode()).isEqualTo(401);
        HttpResponse<String> code = send(req("/contexts").header("E2b-Sandbox-Id", id).header("E2b-Sandbox-Port", "49999"));
        assertThat(code.statusCode()).isEqualTo(401);
        assertThat(code.headers().firstValue("Content-Type").orElse("")).startsWith("text/plain");
    }
}
