package io.paddock.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.ExecResult;
import io.paddock.Image;
import io.paddock.ImageListener;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.RegistryAuth;
import io.paddock.SandboxId;
import io.paddock.testkit.LeakCheckExtension;
import io.paddock.testkit.TestRegistry;
import io.paddock.wire.Wire;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * E2B templates whose image is built on first use (issue 36, item 3: a fresh daemon serves
 * {@code code-interpreter-v1} without a manual step), with real builds on a real daemon: the first create
 * starts the build and answers 503 saying what is being built; once it is built the same create succeeds and
 * the sandbox runs the template's image. A failing recipe answers 503 with the build's error, and the next
 * create builds again. The built-in code-interpreter template has the code image's recipe by default.
 */
class E2bTemplateTest {
    private static final String RUN = UUID.randomUUID().toString().substring(0, 8);
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);
    private static TestRegistry registry;
    private static Paddock paddock;
    private static PaddockServer server;
    private static String alice;
    private static String tiny;
    private static String broken;

    @BeforeAll
    static void start() {
        registry = TestRegistry.start();
        registry.pushBusybox("paddock-test/busybox-" + RUN + ":1");
        String base = registry.host() + "/paddock-test/busybox-" + RUN + ":1";
        paddock = Paddock.local(LocalOptions.builder().build());
        paddock.images().pull(base, RegistryAuth.none().insecure(), ImageListener.NONE);
        tiny = "paddock-test/e2b-tiny-" + RUN + ":1";
        broken = "paddock-test/e2b-broken-" + RUN + ":1";
        alice = token();
        server = PaddockServer.start(ServerOptions.builder().port(0).token(token()).tenant("alice", alice)
                .e2b("127.0.0.1", 0)
                .e2bTemplate("tiny", tiny, Image.from(base).run("sleep 2; echo made-on-first-use > /made"))
                .e2bTemplate("broken", broken, Image.from(base).run("echo no such tool >&2; exit 3"))
                .e2bPrepareWait(Duration.ZERO).build(), paddock);
    }

    @AfterAll
    static void stop() {
        try {
            if (server != null) {
                server.close();
            }
            if (paddock != null) {
                for (String ref : List.of(tiny, broken, registry.host() + "/paddock-test/busybox-" + RUN + ":1")) {
                    try {
                        paddock.images().remove(ref);
                    } catch (RuntimeException gone) {
                        // never made
                    }
                }
                paddock.close();
            }
        } finally {
            if (registry != null) {
                registry.close();
            }
        }
    }

    private static String token() {
        byte[] raw = new byte[32];
        new SecureRandom().nextBytes(raw);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
    }

    private static HttpResponse<String> create(String template) throws Exception {
        URI uri = URI.create(server.e2bUrl().orElseThrow() + "/sandboxes");
        return HTTP.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(60)).header("X-API-Key", alice)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"templateID\":\"" + template + "\",\"timeout\":120}")).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aTemplatesImageIsBuiltOnFirstUseAndTheCreateSaysSoUntilItIsThere() throws Exception {
        HttpResponse<String> first = create("tiny");
        assertThat(first.statusCode()).as(first.body()).isEqualTo(503);
        assertThat(first.body()).contains("template 'tiny' is being prepared").contains(tiny).contains("try again");
        HttpResponse<String> r = first;
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (r.statusCode() == 503 && System.nanoTime() < deadline) {
            assertThat(r.body()).as("a create while the build runs").contains("is being prepared");
            Thread.sleep(250);
            r = create("tiny");
        }
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        JsonNode created = Wire.parse(r.body().getBytes(java.nio.charset.StandardCharsets.UTF_8));
        SandboxId id = new SandboxId(created.get("sandboxID").asText());
        try {
            assertThat(paddock.images().inspect(tiny).id()).isNotNull();
            ExecResult made = paddock.get(id).exec("cat", "/made");
            assertThat(made.stdoutText()).isEqualTo("made-on-first-use\n");
        } finally {
            paddock.get(id).destroy();
        }
    }

    @Test
    void aFailingBuildIsReportedAndTheNextCreateBuildsAgain() throws Exception {
        HttpResponse<String> r = create("broken");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (r.body().contains("is being prepared") && System.nanoTime() < deadline) {
            Thread.sleep(250);
            r = create("broken");
        }
        assertThat(r.statusCode()).isEqualTo(503);
        assertThat(r.body()).contains("template 'broken': building its image " + broken + " failed")
                .contains("exit code 3").contains("the next create tries again");
        HttpResponse<String> again = create("broken");
        assertThat(again.statusCode()).isEqualTo(503);
        assertThat(again.body()).as("a new build, not the old failure").contains("is being prepared");
        while (again.body().contains("is being prepared") && System.nanoTime() < deadline) {
            Thread.sleep(250); // the second build ends before the leak check looks
            again = create("broken");
        }
        assertThat(again.body()).contains("failed");
    }
}
