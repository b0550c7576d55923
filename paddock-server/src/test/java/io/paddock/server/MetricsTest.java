package io.paddock.server;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static io.paddock.server.Fixture.json;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code GET /metrics} on a real daemon over the real engine (runc): Prometheus's own checker ({@code promtool check
 * metrics}) accepts it, what happened is counted (creates, execs, stops, streamed bytes, errors, network bytes), only
 * the operator reads it, and no label value names a sandbox, a tenant or anything a tenant chose.
 */
class MetricsTest {
    private static final String ALICE = token();
    private static Fixture f;

    @BeforeAll
    static void start() {
        f = Fixture.start(b -> b.tenant("alice", ALICE), 1000);
    }

    @AfterAll
    static void stop() {
        f.close();
    }

    private static String token() {
        byte[] raw = new byte[32];
        new SecureRandom().nextBytes(raw);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
    }

    private static HttpResponse<String> metrics(String authorization) {
        HttpRequest.Builder b = HttpRequest.newBuilder(f.uri("/metrics"));
        if (authorization != null) {
            b.header("Authorization", authorization);
        }
        return f.send(b.build());
    }

    private static String scrape() {
        HttpResponse<String> r = metrics("Bearer " + f.token);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(v ->
                assertThat(v).startsWith("text/plain").contains("version=0.0.4"));
        return r.body();
    }

    /** The value of one series, e.g. {@code paddock_sandboxes{state="running",tier="runc"}}; 0 when absent. */
    private static double value(String text, String series) {
        for (String line : text.split("\n")) {
            if (line.startsWith(series + " ")) {
                return Double.parseDouble(line.substring(series.length() + 1).trim());
            }
        }
        return 0;
    }

    /** Runs {@code promtool check metrics} on the text: Prometheus's own linter and parser. */
    static void promtoolAccepts(String text) throws IOException, InterruptedException {
        Path promtool = null;
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin").split(":")) {
            Path p = Path.of(dir, "promtool");
            if (Files.isExecutable(p)) {
                promtool = p;
                break;
            }
        }
        assertThat(promtool).as("promtool is needed to check /metrics: install Debian's prometheus package"
                + " (apt-get install -y prometheus, or scripts/prereqs.sh test)").isNotNull();
        Path in = Files.createTempFile("paddock-metrics", ".txt");
        Path out = Files.createTempFile("paddock-promtool", ".txt");
        try {
            Files.writeString(in, text);
            Process p = new ProcessBuilder(promtool.toString(), "check", "metrics").redirectInput(in.toFile())
                    .redirectErrorStream(true).redirectOutput(out.toFile()).start();
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("promtool finished").isTrue();
            assertThat(p.exitValue()).as("promtool check metrics: " + Files.readString(out)).isZero();
            assertThat(Files.readString(out)).as("promtool's complaints").isBlank();
        } finally {
            Files.delete(in);
            Files.delete(out);
        }
    }

    @Test
    void metricsArePrometheusTextThatPromtoolAcceptsAndCountWhatHappened() throws Exception {
        String before = scrape();
        promtoolAccepts(before); // also with nothing having happened yet
        String label = "label-value-" + UUID.randomUUID();
        String name = "metrics-" + UUID.randomUUID().toString().substring(0, 8);
        String id = f.createSandbox(",\"name\":\"" + name + "\",\"labels\":{\"team\":\"" + label + "\"}").get("id").asText();
        String sb = "/v1/sandboxes/" + id;
        HttpResponse<String> exec = f.post(sb + "/exec", "{\"argv\":[\"true\"]}");
        assertThat(exec.statusCode()).as(exec.body()).isEqualTo(200);
        // an exec stream: stdin in, stdout out
        WsClient ws = WsClient.connect(f.http, f.uri(sb + "/exec/stream"), f.token, true);
        ws.sendText("{\"argv\":[\"cat\"]}");
        ws.sendStdin("hello metrics\n".getBytes(StandardCharsets.UTF_8));
        ws.sendText("{\"type\":\"stdin_close\"}");
        WsClient.Result streamed = ws.drain(30);
        assertThat(new String(streamed.stdout(), StandardCharsets.UTF_8)).isEqualTo("hello metrics\n");
        // a file up and down
        assertThat(f.put(sb + "/files?path=/workspace/m.bin", new byte[1000]).statusCode()).isEqualTo(204);
        assertThat(f.get(sb + "/files?path=/workspace/m.bin").statusCode()).isEqualTo(200);
        // an error answered
        assertThat(f.get("/v1/sandboxes/sb-" + "c".repeat(26)).statusCode()).isEqualTo(404);
        // a tenant's sandbox: the tenant's name must not become a label either
        HttpResponse<String> mine = f.send(HttpRequest.newBuilder(f.uri("/v1/sandboxes")).header("Authorization", "Bearer " + ALICE)
                .POST(HttpRequest.BodyPublishers.ofString(Fixture.SMALL + "}")).build());
        assertThat(mine.statusCode()).as(mine.body()).isEqualTo(201);
        String alices = json(mine).get("id").asText();

        String during = scrape();
        promtoolAccepts(during);
        assertThat(value(during, "paddock_sandboxes{state=\"running\",tier=\"runc\"}"))
                .isGreaterThanOrEqualTo(value(before, "paddock_sandboxes{state=\"running\",tier=\"runc\"}") + 2);
        assertThat(during).contains("paddock_sandboxes{state=\"paused\",tier=\"runc\"} "); // zeros are series too
        assertThat(value(during, "paddock_sandbox_create_seconds_count{origin=\"cold\",tier=\"runc\"}"))
                .isGreaterThanOrEqualTo(value(before, "paddock_sandbox_create_seconds_count{origin=\"cold\",tier=\"runc\"}") + 2);
        assertThat(during).contains("paddock_sandbox_create_seconds_bucket{origin=\"cold\",tier=\"runc\",le=\"0.5\"} ");
        assertThat(during).contains("paddock_sandbox_create_seconds_bucket{origin=\"cold\",tier=\"runc\",le=\"+Inf\"} ");
        assertThat(value(during, "paddock_exec_seconds_count{outcome=\"exited\",tier=\"runc\"}"))
                .isGreaterThanOrEqualTo(value(before, "paddock_exec_seconds_count{outcome=\"exited\",tier=\"runc\"}") + 2);
        assertThat(value(during, "paddock_streamed_bytes_total{direction=\"in\",stream=\"exec\"}"))
                .isGreaterThanOrEqualTo(value(before, "paddock_streamed_bytes_total{direction=\"in\",stream=\"exec\"}") + 14);
        assertThat(value(during, "paddock_streamed_bytes_total{direction=\"out\",stream=\"exec\"}"))
                .isGreaterThanOrEqualTo(value(before, "paddock_streamed_bytes_total{direction=\"out\",stream=\"exec\"}") + 14);
        assertThat(value(during, "paddock_streamed_bytes_total{direction=\"in\",stream=\"file\"}"))
                .isGreaterThanOrEqualTo(value(before, "paddock_streamed_bytes_total{direction=\"in\",stream=\"file\"}") + 1000);
        assertThat(value(during, "paddock_streamed_bytes_total{direction=\"out\",stream=\"file\"}"))
                .isGreaterThanOrEqualTo(value(before, "paddock_streamed_bytes_total{direction=\"out\",stream=\"file\"}") + 1000);
        assertThat(value(during, "paddock_api_errors_total{code=\"NOT_FOUND\"}"))
                .isGreaterThanOrEqualTo(value(before, "paddock_api_errors_total{code=\"NOT_FOUND\"}") + 1);
        assertThat(during).contains("paddock_build_info{version=\"" + PaddockServer.version() + "\"} 1");

        // bounded labels: only these names, and no value that is an id, a name, a label or a tenant
        assertThat(labelNames(during)).isSubsetOf("state", "tier", "origin", "reason", "outcome", "code", "cache", "stream",
                "direction", "version", "le");
        assertThat(during).doesNotContain(id).doesNotContain(alices).doesNotContain(name).doesNotContain(label)
                .doesNotContain("alice").doesNotContain("sb-");

        assertThat(f.delete(sb).statusCode()).isEqualTo(204);
        assertThat(f.send(HttpRequest.newBuilder(f.uri("/v1/sandboxes/" + alices)).header("Authorization", "Bearer " + ALICE)
                .DELETE().build()).statusCode()).isEqualTo(204);
        String after = scrape();
        promtoolAccepts(after);
        assertThat(value(after, "paddock_sandbox_stops_total{reason=\"destroyed\",tier=\"runc\"}"))
                .isGreaterThanOrEqualTo(value(during, "paddock_sandbox_stops_total{reason=\"destroyed\",tier=\"runc\"}") + 2);
        assertThat(value(after, "paddock_sandboxes{state=\"running\",tier=\"runc\"}"))
                .isLessThanOrEqualTo(value(during, "paddock_sandboxes{state=\"running\",tier=\"runc\"}") - 2);
        assertThat(value(after, "paddock_sandboxes{state=\"stopped\",tier=\"runc\"}"))
                .isGreaterThanOrEqualTo(value(during, "paddock_sandboxes{state=\"stopped\",tier=\"runc\"}") + 2);
    }

    @Test
    void aTimeoutAndAFailedExecAreCountedByReasonAndCode() throws Exception {
        String before = scrape();
        HttpResponse<String> created = f.post("/v1/sandboxes", "{\"memory\":\"128m\",\"timeout_ms\":1500}");
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        String id = json(created).get("id").asText();
        String sb = "/v1/sandboxes/" + id;
        assertThat(f.post(sb + "/exec", "{\"argv\":[\"sh\",\"-c\",\"kill -9 $$\"]}").statusCode()).isEqualTo(200);
        assertThat(f.post(sb + "/exec", "{\"argv\":[\"sleep\",\"5\"],\"timeout_ms\":200}").statusCode()).isEqualTo(200);
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!json(f.get(sb)).get("state").asText().equals("STOPPED") && System.nanoTime() < until) {
            Thread.sleep(100);
        }
        assertThat(f.post(sb + "/exec", "{\"argv\":[\"true\"]}").statusCode()).isEqualTo(409);
        // a tier no one has: refused and counted, and the caller's word for it is no label value
        String tier = "tier" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        HttpResponse<String> noTier = f.post("/v1/sandboxes", Fixture.SMALL + ",\"runtime\":\"" + tier + "\"}");
        assertThat(noTier.statusCode()).as(noTier.body()).isEqualTo(400);
        String after = scrape();
        assertThat(after).doesNotContain(tier);
        assertThat(value(after, "paddock_api_errors_total{code=\"INVALID_ARGUMENT\"}"))
                .isGreaterThanOrEqualTo(value(before, "paddock_api_errors_total{code=\"INVALID_ARGUMENT\"}") + 1);
        assertThat(value(after, "paddock_sandbox_stops_total{reason=\"timeout\",tier=\"runc\"}"))
                .isEqualTo(value(before, "paddock_sandbox_stops_total{reason=\"timeout\",tier=\"runc\"}") + 1);
        assertThat(value(after, "paddock_exec_seconds_count{outcome=\"signaled\",tier=\"runc\"}"))
                .isEqualTo(value(before, "paddock_exec_seconds_count{outcome=\"signaled\",tier=\"runc\"}") + 1);
        assertThat(value(after, "paddock_exec_seconds_count{outcome=\"timed_out\",tier=\"runc\"}"))
                .isEqualTo(value(before, "paddock_exec_seconds_count{outcome=\"timed_out\",tier=\"runc\"}") + 1);
        assertThat(value(after, "paddock_exec_failures_total{code=\"FAILED_PRECONDITION\",tier=\"runc\"}"))
                .isEqualTo(value(before, "paddock_exec_failures_total{code=\"FAILED_PRECONDITION\",tier=\"runc\"}") + 1);
        promtoolAccepts(after);
    }

    @Test
    void networkBytesAreCountedAndNeverGoDownWhenASandboxStops() throws Exception {
        String before = scrape();
        // 198.18.0.0/15 is for benchmarks; nothing answers there, but what the sandbox sends is counted on the host side
        String id = f.createSandbox(",\"network\":{\"mode\":\"allow\",\"allow\":[\"198.18.13.2/32\"]}").get("id").asText();
        String sb = "/v1/sandboxes/" + id;
        HttpResponse<String> sent = f.post(sb + "/exec", "{\"argv\":[\"python3\",\"-c\",\"import socket; s = socket.socket("
                + "socket.AF_INET, socket.SOCK_DGRAM); [s.sendto(b'x' * 1000, ('198.18.13.2', 9)) for _ in range(50)]\"]}");
        assertThat(sent.statusCode()).as(sent.body()).isEqualTo(200);
        assertThat(json(sent).get("status").get("exit_code").asInt()).as(sent.body()).isZero();
        String during = scrape();
        double tx = value(during, "paddock_sandbox_network_bytes_total{direction=\"tx\"}")
                - value(before, "paddock_sandbox_network_bytes_total{direction=\"tx\"}");
        assertThat(tx).as("bytes sent by the sandbox").isGreaterThanOrEqualTo(50_000);
        assertThat(f.delete(sb).statusCode()).isEqualTo(204);
        String after = scrape();
        assertThat(value(after, "paddock_sandbox_network_bytes_total{direction=\"tx\"}"))
                .as("a stopped sandbox's bytes stay counted")
                .isGreaterThanOrEqualTo(value(during, "paddock_sandbox_network_bytes_total{direction=\"tx\"}"));
    }

    @Test
    void onlyTheOperatorReadsMetrics() {
        HttpResponse<String> none = metrics(null);
        assertThat(none.statusCode()).isEqualTo(401);
        assertThat(json(none).get("error").get("code").asText()).isEqualTo("PERMISSION_DENIED");
        assertThat(metrics("Bearer wrong-" + f.token).statusCode()).isEqualTo(401);
        assertThat(metrics("Basic " + f.token).statusCode()).isEqualTo(401);
        HttpResponse<String> tenant = metrics("Bearer " + ALICE);
        assertThat(tenant.statusCode()).isEqualTo(403);
        assertThat(json(tenant).get("error").get("message").asText()).contains("operator");
        assertThat(tenant.body()).doesNotContain("paddock_");
        // the token is never taken from the query string
        assertThat(f.send(HttpRequest.newBuilder(f.uri("/metrics?access_token=" + f.token)).build()).statusCode()).isEqualTo(401);
        assertThat(f.send(HttpRequest.newBuilder(f.uri("/metrics")).header("Authorization", "Bearer " + f.token)
                .POST(HttpRequest.BodyPublishers.noBody()).build()).statusCode()).isEqualTo(405);
    }

    private static Set<String> labelNames(String text) {
        Set<String> names = new TreeSet<>();
        Matcher m = Pattern.compile("^[a-z_]+\\{([^}]*)}", Pattern.MULTILINE).matcher(text);
        while (m.find()) {
            for (String pair : m.group(1).split(",")) {
                names.add(pair.substring(0, pair.indexOf('=')));
            }
        }
        return names;
    }
}
