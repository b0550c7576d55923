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
