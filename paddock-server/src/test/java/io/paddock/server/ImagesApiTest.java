package io.paddock.server;

import io.paddock.testkit.TestRegistry;
import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.wire.Wire;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Stream;

import static io.paddock.server.Fixture.json;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The image endpoints over a real daemon and engine on loopback, with a real registry ({@code docker-registry})
 * holding a busybox image made by umoci: pull (plain and streamed), list, inspect, remove (refused while a
 * sandbox uses the image), a Dockerfile build whose context is a tar body, streamed progress, the tenants'
 * rules, hostile contexts, and every answer against openapi.json's schemas.
 */
class ImagesApiTest {
    private static final String RUN = UUID.randomUUID().toString().substring(0, 8);
    private static final String ALICE = newToken();
    private static final String BOB = newToken();
    private static final String CAROL = newToken();
    /** Two tenants of this run only (the store is the host's, and its records outlive a run), 4 MiB of images each. */
    private static final String DAVE_NAME = "q" + RUN;
    private static final String DAVE = newToken();
    private static final String ERIN_NAME = "r" + RUN;
    private static final String FRANK = newToken();
    private static final String FRANK_NAME = "s" + RUN;
    private static final String ERIN = newToken();
    private static TestRegistry registry;
    private static Fixture f;
    private static JsonNode doc;
    private static SchemaChecker schemas;
    /** The pulled busybox: {@code 127.0.0.1:<port>/paddock-test/busybox-<run>:1}. */
    private static String base;
    private static final List<String> made = new ArrayList<>();

    @BeforeAll
    static void start() throws IOException {
        registry = TestRegistry.start();
        registry.pushBusybox("paddock-test/busybox-" + RUN + ":1");
        base = registry.host() + "/paddock-test/busybox-" + RUN + ":1";
        f = Fixture.start(b -> b.tenant("alice", ALICE).tenant("bob", BOB).tenant("carol", CAROL)
                .tenantQuota("carol", io.paddock.server.internal.TenantQuota.DEFAULT.with("builds=1").with("build-time=20s")
                        .with("build-cpus=0.5").with("build-memory=96m"))
                .tenant(DAVE_NAME, DAVE).tenantQuota(DAVE_NAME, io.paddock.server.internal.TenantQuota.DEFAULT.with("image-bytes=4m"))
                .tenant(ERIN_NAME, ERIN).tenantQuota(ERIN_NAME, io.paddock.server.internal.TenantQuota.DEFAULT.with("image-bytes=4m"))
                .tenant(FRANK_NAME, FRANK).tenantQuota(FRANK_NAME, io.paddock.server.internal.TenantQuota.DEFAULT.with("image-bytes=4m"))
                .maxFailedAuthPerMinutePerIp(100_000).maxRegistryConnectionsPerTenant(2), 1000);
        doc = Wire.parse(Files.readAllBytes(Path.of("src/main/resources/io/paddock/server/openapi.json")));
        schemas = new SchemaChecker(doc);
        HttpResponse<String> pulled = post(f.token, "/v1/images/pull", "{\"ref\":\"" + base + "\",\"insecure\":true}");
        assertThat(pulled.statusCode()).as(pulled.body()).isEqualTo(200);
        made.add(base);
    }

    @AfterAll
    static void stop() {
        try {
            if (f != null) {
                for (String ref : made) {
                    try {
                        f.paddock.images().remove(ref);
                    } catch (RuntimeException gone) {
                        // removed by the test, or never made
                    }
                }
                f.close();
            }
        } finally {
            if (registry != null) {
                registry.close();
            }
        }
    }

    private static String newToken() {
        byte[] raw = new byte[32];
        new SecureRandom().nextBytes(raw);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
    }

    private static String q(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    private static HttpRequest.Builder as(String token, String pathAndQuery) {
        return HttpRequest.newBuilder(f.uri(pathAndQuery)).timeout(java.time.Duration.ofSeconds(120))
                .header("Authorization", "Bearer " + token);
    }

    private static HttpResponse<String> post(String token, String path, String json) {
        return f.send(as(token, path).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)).build());
    }

    private static HttpResponse<String> get(String token, String path) {
        return f.send(as(token, path).GET().build());
    }

    private static HttpResponse<String> delete(String token, String path) {
        return f.send(as(token, path).DELETE().build());
    }

    private static HttpResponse<String> build(String token, String pathAndQuery, byte[] tar, boolean streamed) {
        HttpRequest.Builder b = as(token, pathAndQuery).header("Content-Type", "application/x-tar")
                .POST(HttpRequest.BodyPublishers.ofByteArray(tar));
        if (streamed) {
            b.header("Accept", "application/x-ndjson");
        }
        return f.send(b.build());
    }

    /** Asserts the status is documented for the operation and the (JSON) body matches its schema. */
    private static JsonNode conforms(String method, String template, HttpResponse<String> r) {
        JsonNode op = doc.get("paths").get(template).get(method.toLowerCase());
        JsonNode response = schemas.resolve(op.get("responses").get(Integer.toString(r.statusCode())));
        assertThat(response).as(method + " " + template + " documents " + r.statusCode() + " (" + r.body() + ")").isNotNull();
        JsonNode content = response.get("content");
        if (content == null) {
            assertThat(r.body()).isEmpty();
            return null;
        }
        assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith("application/json"));
        JsonNode body = json(r);
        assertThat(schemas.check(content.get("application/json").get("schema"), body)).as(r.body()).isEmpty();
        return body;
    }

    /** The events of a streamed answer, each checked against {@code ImageEvent}; the last is {@code done}. */
    private static List<JsonNode> events(HttpResponse<String> r) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith("application/x-ndjson"));
        List<JsonNode> events = new ArrayList<>();
        for (String line : r.body().split("\n")) {
            if (line.isEmpty()) {
                continue; // a heartbeat
            }
            JsonNode e = Wire.parse(line.getBytes(StandardCharsets.UTF_8));
            assertThat(schemas.check(doc.at("/components/schemas/ImageEvent"), e)).as(line).isEmpty();
            events.add(e);
        }
        assertThat(events.get(events.size() - 1).get("type").asText()).as(r.body()).isEqualTo("done");
        return events;
    }

    private static void assertError(HttpResponse<String> r, int status, String code, String... inMessage) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        JsonNode e = json(r).get("error");
        assertThat(e.get("code").asText()).as(r.body()).isEqualTo(code);
        if (inMessage.length > 0) {
            assertThat(e.get("message").asText()).as(r.body()).contains(inMessage);
        }
    }

    @Test
    void pullListInspectAndRemoveAnswerAsDocumented() {
        JsonNode info = conforms("POST", "/v1/images/pull", post(f.token, "/v1/images/pull",
                "{\"ref\":\"" + base + "\",\"insecure\":true}"));
        assertThat(info.get("names").toString()).contains(base);
        assertThat(info.get("env").toString()).contains("GREETING=umoci");
        String id = info.get("id").asText();

        // streamed: every line an ImageEvent, the layers reported (already here: cached), the image last
        List<JsonNode> events = events(f.send(as(f.token, "/v1/images/pull").header("Content-Type", "application/json")
                .header("Accept", "application/x-ndjson")
                .POST(HttpRequest.BodyPublishers.ofString("{\"ref\":\"" + base + "\",\"insecure\":true}")).build()));
        assertThat(events).anySatisfy(e -> {
            assertThat(e.get("type").asText()).isEqualTo("layer");
            assertThat(e.get("complete").asBoolean()).isTrue();
        });
        assertThat(events.get(events.size() - 1).get("image").get("id").asText()).isEqualTo(id);

        JsonNode list = conforms("GET", "/v1/images", get(f.token, "/v1/images"));
        assertThat(list.get("images").findValues("id").stream().map(JsonNode::asText)).contains(id);
        // a tenant sees the host's images too
        assertThat(conforms("GET", "/v1/images", get(ALICE, "/v1/images")).get("images").toString()).contains(base);

        assertThat(conforms("GET", "/v1/image", get(f.token, "/v1/image?ref=" + q(base))).get("id").asText()).isEqualTo(id);
        assertThat(conforms("GET", "/v1/image", get(f.token, "/v1/image?ref=" + q(id))).get("id").asText()).isEqualTo(id);
        assertThat(conforms("GET", "/v1/image", get(BOB, "/v1/image?ref=" + q(id.substring(7, 19)))).get("id").asText()).isEqualTo(id);
        assertError(get(f.token, "/v1/image?ref=" + q("paddock-test/none-" + RUN + ":1")), 404, "NOT_FOUND");
        conforms("GET", "/v1/image", get(f.token, "/v1/image?ref=" + q("paddock-test/none-" + RUN + ":1")));
        assertError(get(f.token, "/v1/image"), 400, "INVALID_ARGUMENT", "ref");
        conforms("DELETE", "/v1/image", delete(f.token, "/v1/image?ref=" + q("paddock-test/none-" + RUN + ":1")));

        // a second name for the same image: removing it removes only the name
        String second = registry.host() + "/paddock-test/busybox-" + RUN + ":second";
        registry.pushBusybox("paddock-test/busybox-" + RUN + ":second");
        made.add(second);
        conforms("POST", "/v1/images/pull", post(f.token, "/v1/images/pull", "{\"ref\":\"" + second + "\",\"insecure\":true}"));
        conforms("DELETE", "/v1/image", delete(f.token, "/v1/image?ref=" + q(second)));
        assertThat(get(f.token, "/v1/image?ref=" + q(second)).statusCode()).isEqualTo(404);
        assertThat(get(f.token, "/v1/image?ref=" + q(base)).statusCode()).isEqualTo(200);

        // bad requests name their field; a tag the registry lacks is 404
        assertError(post(f.token, "/v1/images/pull", "{\"ref\":\"" + base + "\",\"config_file\":\"/root/.docker/config.json\"}"),
                400, "INVALID_ARGUMENT", "config_file");
        assertError(post(f.token, "/v1/images/pull", "{\"ref\":\"" + base + "\",\"username\":\"u\"}"), 400, "INVALID_ARGUMENT", "password");
        HttpResponse<String> missing = post(f.token, "/v1/images/pull", "{\"ref\":\"" + registry.host()
                + "/paddock-test/none-" + RUN + ":1\",\"insecure\":true}");
        assertThat(missing.statusCode()).as(missing.body()).isEqualTo(404);
        conforms("POST", "/v1/images/pull", missing);
        // push: to the registry, read back there
        JsonNode pushed = conforms("POST", "/v1/images/push", post(f.token, "/v1/images/push", "{\"ref\":\"" + base
                + "\",\"target\":\"" + registry.host() + "/paddock-test/pushed-" + RUN + ":1\",\"insecure\":true}"));
        assertThat(pushed.get("id").asText()).isEqualTo(id);
        assertThat(registry.has("paddock-test/pushed-" + RUN, "1")).isTrue();
        conforms("POST", "/v1/images/push", post(f.token, "/v1/images/push", "{\"ref\":\"paddock-test/none-" + RUN
                + ":1\",\"target\":\"" + registry.host() + "/x:1\",\"insecure\":true}"));
    }

    /** One series of the daemon's /metrics; 0 when absent. */
    private static double metric(String series) {
        HttpResponse<String> r = get(f.token, "/metrics");
        assertThat(r.statusCode()).isEqualTo(200);
        return r.body().lines().filter(l -> l.startsWith(series + " ")).mapToDouble(l -> Double.parseDouble(
                l.substring(series.length() + 1).trim())).findFirst().orElse(0);
    }

    @Test
    void pullsTheirLayersAndBuildStepsAreCountedInMetricsByOutcomeAndCache() {
        double ok = metric("paddock_image_pulls_total{code=\"OK\"}");
        double notFound = metric("paddock_image_pulls_total{code=\"NOT_FOUND\"}");
        double hits = metric("paddock_image_layers_pulled_total{cache=\"hit\"}");
        // the image is stored already (pulled at start): its layers are cache hits, nothing is downloaded
        assertThat(post(f.token, "/v1/images/pull", "{\"ref\":\"" + base + "\",\"insecure\":true}").statusCode()).isEqualTo(200);
        assertThat(post(f.token, "/v1/images/pull", "{\"ref\":\"" + registry.host() + "/paddock-test/none-" + RUN
                + ":1\",\"insecure\":true}").statusCode()).isEqualTo(404);
        assertThat(metric("paddock_image_pulls_total{code=\"OK\"}")).isEqualTo(ok + 1);
        assertThat(metric("paddock_image_pulls_total{code=\"NOT_FOUND\"}")).isEqualTo(notFound + 1);
        assertThat(metric("paddock_image_layers_pulled_total{cache=\"hit\"}")).isGreaterThanOrEqualTo(hits + 1);
        // the start's pull downloaded the layer, unless this host's store had it from an earlier run
        assertThat(metric("paddock_image_layers_pulled_total{cache=\"miss\"}")
                + metric("paddock_image_layers_pulled_total{cache=\"hit\"}")).isGreaterThanOrEqualTo(2);

        // a build twice: the second time every step with a layer (COPY, RUN) is a cache hit; FROM has no layer
        String tag = "paddock-test/counted-" + RUN + ":1";
        made.add(tag);
        String last = "RUN echo counted-" + RUN + "\n";
        assertThat(build(f.token, "/v1/images/build?tag=" + q(tag), context(last), false).statusCode()).isEqualTo(200);
        double stepHits = metric("paddock_image_build_steps_total{cache=\"hit\"}");
        double stepMisses = metric("paddock_image_build_steps_total{cache=\"miss\"}");
        assertThat(stepMisses).as("the first build ran its last step").isGreaterThanOrEqualTo(1);
        assertThat(build(f.token, "/v1/images/build?tag=" + q(tag), context(last), false).statusCode()).isEqualTo(200);
        assertThat(metric("paddock_image_build_steps_total{cache=\"hit\"}")).isGreaterThanOrEqualTo(stepHits + 3);
        assertThat(metric("paddock_image_build_steps_total{cache=\"miss\"}")).isLessThanOrEqualTo(stepMisses + 1);
    }

    @Test
    void anImageInUseIsNotRemoved() {
        JsonNode sb = f.createSandbox(",\"image\":\"" + base + "\"");
        assertThat(sb.get("image").asText()).isEqualTo(base);
        String path = "/v1/sandboxes/" + sb.get("id").asText();
        JsonNode r = json(f.post(path + "/exec", "{\"argv\":[\"sh\",\"-c\",\"cat /hello.txt; echo $GREETING\"]}"));
        assertThat(new String(Base64.getDecoder().decode(r.get("stdout").asText()), StandardCharsets.UTF_8))
                .isEqualTo("hello-from-umoci\numoci\n");
        HttpResponse<String> refused = delete(f.token, "/v1/image?ref=" + q(base));
        assertError(refused, 409, "FAILED_PRECONDITION", "in use");
        conforms("DELETE", "/v1/image", refused);
        assertThat(f.delete(path).statusCode()).isEqualTo(204);
    }

    private static byte[] context(String extraDockerfileLines) {
        return new Tar().file("Dockerfile", "FROM " + base + "\nCOPY hello.txt /opt/hello.txt\n"
                        + "RUN echo building-" + RUN + " && echo hi > /x\n" + extraDockerfileLines)
                .file("hello.txt", "copied-" + RUN + "\n").bytes();
    }

    @Test
    void aDockerfileBuildStreamsItsProgressAndMakesARunnableImage() {
        String tag = "paddock-test/built-" + RUN + ":1";
        made.add(tag);
        // the last step is this test's own, so it runs (the others may come from the cache) and prints the build arg
        String last = "ARG NUMBER\nRUN echo streamed-$NUMBER-" + RUN + "\n";
        List<JsonNode> events = events(build(f.token, "/v1/images/build?tag=" + q(tag) + "&build_arg=NUMBER%3D42",
                context(last), true));
        List<String> steps = events.stream().filter(e -> e.get("type").asText().equals("step"))
                .map(e -> e.get("index").asInt() + "/" + e.get("count").asInt() + " " + e.get("description").asText()).toList();
        assertThat(steps).anySatisfy(s -> assertThat(s).contains("COPY"))
                .anySatisfy(s -> assertThat(s).contains("RUN echo building-" + RUN));
        assertThat(events).as(events.toString()).anySatisfy(e -> assertThat(e.path("line").asText()).isEqualTo("streamed-42-" + RUN));
        JsonNode image = events.get(events.size() - 1).get("image");
        assertThat(image.get("names").toString()).contains(tag);

        JsonNode sb = f.createSandbox(",\"image\":\"" + tag + "\"");
        JsonNode r = json(f.post("/v1/sandboxes/" + sb.get("id").asText() + "/exec", "{\"argv\":[\"cat\",\"/x\",\"/opt/hello.txt\"]}"));
        assertThat(new String(Base64.getDecoder().decode(r.get("stdout").asText()), StandardCharsets.UTF_8))
                .isEqualTo("hi\ncopied-" + RUN + "\n");
        f.delete("/v1/sandboxes/" + sb.get("id").asText());

        // the same build again, as one JSON answer: every step cached
        JsonNode again = conforms("POST", "/v1/images/build", build(f.token, "/v1/images/build?tag=" + q(tag)
                + "&build_arg=NUMBER%3D42", context(last), false));
        assertThat(again.get("id").asText()).isEqualTo(image.get("id").asText());
        conforms("DELETE", "/v1/image", delete(f.token, "/v1/image?ref=" + q(tag)));
        assertThat(get(f.token, "/v1/image?ref=" + q(tag)).statusCode()).isEqualTo(404);

        // a FROM that is not here: 404, before any step runs
        HttpResponse<String> noBase = build(f.token, "/v1/images/build?tag=" + q(tag), new Tar()
                .file("Dockerfile", "FROM paddock-test/none-" + RUN + ":1\nRUN true\n").bytes(), false);
        assertError(noBase, 404, "NOT_FOUND");
        conforms("POST", "/v1/images/build", noBase);
    }

    /**
     * ATTACKS.md A83g: a tenant runs at most its {@code builds} at once (429 naming the key), and a build past its
     * {@code build-time} is stopped (504 DEADLINE_EXCEEDED naming the key); once it has ended the tenant builds again.
     * The operator's builds are not counted.
     */
    @Test
    void a83g_aTenantsBuildsStopAtTheirCountAndTime() throws Exception {
        String slowTag = "carol/slow-" + RUN + ":1";
        byte[] slow = new Tar().file("Dockerfile", "FROM " + base + "\nRUN echo slow-" + RUN
                + " && echo started-" + RUN + " && sleep 120\n").bytes();
        HttpRequest request = as(CAROL, "/v1/images/build?tag=" + q(slowTag)).header("Content-Type", "application/x-tar")
                .header("Accept", "application/x-ndjson").POST(HttpRequest.BodyPublishers.ofByteArray(slow)).build();
        HttpResponse<java.util.stream.Stream<String>> streamed = f.http.send(request, HttpResponse.BodyHandlers.ofLines());
        assertThat(streamed.statusCode()).isEqualTo(200);
        java.util.Iterator<String> lines = streamed.body().iterator();
        List<String> seen = new ArrayList<>();
        while (lines.hasNext() && seen.stream().noneMatch(l -> l.contains("\"line\":\"started-" + RUN))) {
            seen.add(lines.next());
        }
        assertThat(seen).as("the slow step runs").anySatisfy(l -> assertThat(l).contains("\"line\":\"started-" + RUN));
        long began = System.nanoTime();
        byte[] quick = new Tar().file("Dockerfile", "FROM " + base + "\nRUN echo quick-" + RUN + "\n").bytes();
        String quickTag = "carol/quick-" + RUN + ":1";
        HttpResponse<String> second = build(CAROL, "/v1/images/build?tag=" + q(quickTag), quick, false);
        assertError(second, 429, "RESOURCE_EXHAUSTED", "builds=1", "tenants file");
        conforms("POST", "/v1/images/build", second);
        // the operator is not held to it
        String opTag = "paddock-test/op-quick-" + RUN + ":1";
        made.add(opTag);
        assertThat(build(f.token, "/v1/images/build?tag=" + q(opTag), quick, false).statusCode()).isEqualTo(200);
        // the slow build is stopped at its time, well before its sleep ends, and says why
        while (lines.hasNext()) {
            seen.add(lines.next());
        }
        String last = seen.get(seen.size() - 1);
        assertThat(last).contains("DEADLINE_EXCEEDED").contains("build-time=20s");
        assertThat(java.time.Duration.ofNanos(System.nanoTime() - began)).isLessThan(java.time.Duration.ofSeconds(60));
        assertThat(get(f.token, "/v1/image?ref=" + q(slowTag)).statusCode()).isEqualTo(404);
        // back under its count, the tenant builds again
        made.add(quickTag);
        HttpResponse<String> again = build(CAROL, "/v1/images/build?tag=" + q(quickTag), quick, false);
        assertThat(again.statusCode()).as(again.body()).isEqualTo(200);
    }

    /**
     * ATTACKS.md A83h: what a tenant's builds bring into the shared image store is charged to it, at most its
     * {@code image-bytes}. A RUN step writing more than the tenant has left fails 429 naming the key, and so does a
     * build whose second layer takes it past, leaving nothing charged and no layer of its own behind; a build under the
     * quota succeeds; removing the tenant's image frees its bytes, so the next build fits; another tenant with the same
     * quota, and the operator, build meanwhile, and a layer already stored costs its second builder nothing.
     */
    /**
     * A tenant's snapshots are its images too: their layers count against its {@code image-bytes} as its pulls' and
     * builds' do (before, a tenant could fill the store with snapshots of a sandbox writing up to its disk).
     */
    @Test
    void a83h_aTenantsSnapshotsAreChargedToItsImageBytes() throws IOException {
        io.paddock.Images images = f.paddock.images();
        HttpResponse<String> created = post(FRANK, "/v1/sandboxes", "{\"image\":\"" + base + "\",\"memory\":\"128m\","
                + "\"pids\":64,\"disk\":\"64m\",\"timeout_ms\":120000}");
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        String id = json(created).get("id").asText();
        try {
            String path = "/v1/sandboxes/" + id;
            HttpResponse<String> wrote = post(FRANK, path + "/exec", "{\"argv\":[\"sh\",\"-c\","
                    + "\"busybox head -c 8388608 /dev/urandom > /big\"]}");
            assertThat(wrote.statusCode()).as(wrote.body()).isEqualTo(200);
            String big = FRANK_NAME + "/big-snapshot:1";
            HttpResponse<String> tooBig = post(FRANK, path + "/snapshot", "{\"tag\":\"" + big + "\"}");
            assertError(tooBig, 429, "RESOURCE_EXHAUSTED", "image-bytes=4m", "tenants file", FRANK_NAME);
            conforms("POST", "/v1/sandboxes/{id}/snapshot", tooBig);
            assertThat(get(f.token, "/v1/image?ref=" + q(big)).statusCode()).as("no image of it").isEqualTo(404);
            assertThat(images.ownedBytes(FRANK_NAME)).as("nothing stays charged").isEqualTo(io.paddock.ByteSize.bytes(0));

            assertThat(post(FRANK, path + "/exec", "{\"argv\":[\"sh\",\"-c\",\"rm /big; busybox head -c 1048576"
                    + " /dev/urandom > /small\"]}").statusCode()).isEqualTo(200);
            String small = FRANK_NAME + "/small-snapshot:1";
            made.add(small);
            HttpResponse<String> fits = post(FRANK, path + "/snapshot", "{\"tag\":\"" + small + "\"}");
            assertThat(fits.statusCode()).as(fits.body()).isEqualTo(200);
            assertThat(images.ownedBytes(FRANK_NAME).bytes()).as("the snapshot's layer is the tenant's")
                    .isBetween(1L << 20, 4L << 20);
        } finally {
            delete(FRANK, "/v1/sandboxes/" + id);
        }
        assertThat(delete(FRANK, "/v1/image?ref=" + q(FRANK_NAME + "/small-snapshot:1")).statusCode()).isEqualTo(204);
        assertThat(images.ownedBytes(FRANK_NAME)).as("freed with its image").isEqualTo(io.paddock.ByteSize.bytes(0));
    }

    @Test
    void a83h_aTenantsImagesAndBuildCacheStopAtItsImageBytes() throws IOException {
        io.paddock.Images images = f.paddock.images();
        Path layers = io.paddock.LocalOptions.builder().build().storageDir().resolve("images").resolve("layers");
        Set<String> before = layerDirs(layers);

        // one RUN step writing 8 MiB: its writable layer was cut to the 4 MiB left (and 1 MiB for the filesystem)
        String big = DAVE_NAME + "/big:1";
        HttpResponse<String> tooBig = build(DAVE, "/v1/images/build?tag=" + q(big), new Tar().file("Dockerfile",
                "FROM " + base + "\nRUN busybox head -c 8388608 /dev/urandom > /big-" + RUN + "\n").bytes(), false);
        assertError(tooBig, 429, "RESOURCE_EXHAUSTED", "image-bytes=4m", "tenants file", DAVE_NAME,
                "filled its writable layer"); // stopped by the step's disk, not after the layer was made
        conforms("POST", "/v1/images/build", tooBig);
        // two steps of 1 MiB (each ~2 MiB stored: its files and its compressed blob): the second passes the quota
        String two = DAVE_NAME + "/two:1";
        HttpResponse<String> past = build(DAVE, "/v1/images/build?tag=" + q(two), new Tar().file("Dockerfile",
                "FROM " + base + "\nRUN busybox head -c 1048576 /dev/urandom > /one-" + RUN
                        + "\nRUN busybox head -c 1048576 /dev/urandom > /two-" + RUN + "\n").bytes(), false);
        assertError(past, 429, "RESOURCE_EXHAUSTED", "image-bytes=4m", "tenants file");
        assertThat(images.ownedBytes(DAVE_NAME)).as("nothing stays charged").isEqualTo(io.paddock.ByteSize.bytes(0));
        assertThat(layerDirs(layers)).as("no layer of the failed builds is left").isEqualTo(before);
        assertThat(get(f.token, "/v1/image?ref=" + q(big)).statusCode()).isEqualTo(404);
        assertThat(get(f.token, "/v1/image?ref=" + q(two)).statusCode()).isEqualTo(404);

        // under its quota the tenant builds; its layer is charged to it
        String ok = DAVE_NAME + "/ok:1";
        made.add(ok);
        HttpResponse<String> fits = build(DAVE, "/v1/images/build?tag=" + q(ok), new Tar().file("Dockerfile",
                "FROM " + base + "\nRUN busybox head -c 1048576 /dev/urandom > /ok-" + RUN + "\n").bytes(), false);
        assertThat(fits.statusCode()).as(fits.body()).isEqualTo(200);
        long held = images.ownedBytes(DAVE_NAME).bytes();
        assertThat(held).isBetween(2L << 20, 3L << 20);
        // the next would pass it
        String second = DAVE_NAME + "/second:1";
        made.add(second);
        byte[] secondContext = new Tar().file("Dockerfile", "FROM " + base + "\nRUN busybox head -c 1048576 /dev/urandom > /second-"
                + RUN + "\n").bytes();
        assertError(build(DAVE, "/v1/images/build?tag=" + q(second), secondContext, false), 429, "RESOURCE_EXHAUSTED",
                "image-bytes=4m");
        assertThat(images.ownedBytes(DAVE_NAME).bytes()).isEqualTo(held);

        // another tenant with the same quota, and the operator, are not held to this one's
        String erins = ERIN_NAME + "/app:1";
        made.add(erins);
        HttpResponse<String> erin = build(ERIN, "/v1/images/build?tag=" + q(erins), new Tar().file("Dockerfile",
                "FROM " + base + "\nRUN busybox head -c 1048576 /dev/urandom > /erin-" + RUN + "\n").bytes(), false);
        assertThat(erin.statusCode()).as(erin.body()).isEqualTo(200);
        assertThat(images.ownedBytes(ERIN_NAME).bytes()).isBetween(2L << 20, 3L << 20);
        String op = "paddock-test/op-big-" + RUN + ":1";
        made.add(op);
        HttpResponse<String> operator = build(f.token, "/v1/images/build?tag=" + q(op), new Tar().file("Dockerfile",
                "FROM " + base + "\nRUN busybox head -c 8388608 /dev/urandom > /op-" + RUN + "\n").bytes(), false);
        assertThat(operator.statusCode()).as(operator.body()).isEqualTo(200);

        // removing its image frees its bytes: the next build fits
        assertThat(delete(DAVE, "/v1/image?ref=" + q(ok)).statusCode()).isEqualTo(204);
        assertThat(images.ownedBytes(DAVE_NAME)).isEqualTo(io.paddock.ByteSize.bytes(0));
        // a name the tenant's pull wrote (under its registry's name) is its to remove, and no one else's; the pull is
        // made through the engine's charged images, as the daemon makes a tenant's (whose pulls may not reach loopback)
        registry.pushBusybox("paddock-test/pulled-" + RUN + ":1");
        String pulledRef = registry.host() + "/paddock-test/pulled-" + RUN + ":1";
        made.add(pulledRef);
        images.chargedTo(DAVE_NAME, io.paddock.ByteSize.mib(4)).pull(pulledRef, io.paddock.RegistryAuth.none().insecure(),
                io.paddock.ImageListener.NONE);
        assertThat(images.nameOwner(pulledRef)).hasValue(DAVE_NAME);
        assertError(delete(ERIN, "/v1/image?ref=" + q(pulledRef)), 403, "PERMISSION_DENIED", "pulled by it");
        assertThat(delete(DAVE, "/v1/image?ref=" + q(pulledRef)).statusCode()).isEqualTo(204);
        assertThat(get(f.token, "/v1/image?ref=" + q(pulledRef)).statusCode()).isEqualTo(404);
        assertThat(images.ownedBytes(DAVE_NAME)).isEqualTo(io.paddock.ByteSize.bytes(0));
        HttpResponse<String> again = build(DAVE, "/v1/images/build?tag=" + q(second), secondContext, false);
        assertThat(again.statusCode()).as(again.body()).isEqualTo(200);
        long daves = images.ownedBytes(DAVE_NAME).bytes();
        // the same step built by another tenant reuses the stored layer, which costs it nothing
        long erinBefore = images.ownedBytes(ERIN_NAME).bytes();
        String copy = ERIN_NAME + "/copy:1";
        made.add(copy);
        assertThat(build(ERIN, "/v1/images/build?tag=" + q(copy), secondContext, false).statusCode()).isEqualTo(200);
        assertThat(images.ownedBytes(ERIN_NAME).bytes()).isEqualTo(erinBefore);
        assertThat(images.ownedBytes(DAVE_NAME).bytes()).isEqualTo(daves);

        // once no image needs its layer (the operator removed both names), it is only the tenant's build cache: a
        // tenant at its maximum gives that up before anything is refused (here a maximum of 1m, below what it holds)
        images.remove(second);
        images.remove(copy);
        assertThat(images.ownedBytes(DAVE_NAME).bytes()).isEqualTo(daves);
        registry.pushBusybox("paddock-test/pulled2-" + RUN + ":1");
        String pulled2 = registry.host() + "/paddock-test/pulled2-" + RUN + ":1";
        made.add(pulled2);
        io.paddock.Images atMaximum = images.chargedTo(DAVE_NAME, io.paddock.ByteSize.mib(1));
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> atMaximum.pull(pulled2,
                io.paddock.RegistryAuth.none().insecure(), io.paddock.ImageListener.NONE))
                .isInstanceOfSatisfying(io.paddock.SandboxException.class, e -> {
                    assertThat(e.code()).isEqualTo(io.paddock.ErrorCode.RESOURCE_EXHAUSTED);
                    // not refused before it started: the cache went first, then the pull itself was too big
                    assertThat(e.getMessage()).startsWith("'" + DAVE_NAME + "' holds 0 bytes").contains("the pull fetched");
                });
        assertThat(images.ownedBytes(DAVE_NAME)).isEqualTo(io.paddock.ByteSize.bytes(0));
        assertThat(get(f.token, "/v1/image?ref=" + q(pulled2)).statusCode()).isEqualTo(404);
    }

    private static Set<String> layerDirs(Path layers) throws IOException {
        try (Stream<Path> s = Files.list(layers)) {
            return new HashSet<>(s.map(p -> p.getFileName().toString()).filter(n -> !n.startsWith(".")).toList());
        }
    }

    @Test
    void tenantsNameImagesOnlyInTheirNamespaceAndNeitherRemoveOthersNorPrune() {
        HttpResponse<String> outside = build(ALICE, "/v1/images/build?tag=" + q("app-" + RUN + ":1"), context(""), false);
        assertError(outside, 403, "PERMISSION_DENIED", "alice/");
        conforms("POST", "/v1/images/build", outside);
        // refused before the context is unpacked, but after its body is read: a client streaming it sees the answer
        assertThat(outside.headers().firstValue("Connection")).isEmpty();

        String mine = "alice/app-" + RUN + ":1";
        made.add(mine);
        JsonNode built = conforms("POST", "/v1/images/build", build(ALICE, "/v1/images/build?tag=" + q(mine), context(""), false));
        assertThat(built.get("names").toString()).contains(mine);

        assertError(delete(BOB, "/v1/image?ref=" + q(mine)), 403, "PERMISSION_DENIED");
        HttpResponse<String> notHers = delete(ALICE, "/v1/image?ref=" + q(base));
        assertError(notHers, 403, "PERMISSION_DENIED");
        conforms("DELETE", "/v1/image", notHers);
        assertError(delete(ALICE, "/v1/image?ref=" + q(built.get("id").asText())), 403, "PERMISSION_DENIED");
        HttpResponse<String> prune = post(ALICE, "/v1/images/prune", "{}");
        assertError(prune, 403, "PERMISSION_DENIED", "operator");
        conforms("POST", "/v1/images/prune", prune);
        // a pull that would land in another tenant's namespace is refused before the registry is asked
        assertError(post(BOB, "/v1/images/pull", "{\"ref\":\"docker.io/alice/app-" + RUN + ":1\"}"), 403, "PERMISSION_DENIED");
        // a tenant may not make the daemon speak plain HTTP (A65: it would reach services on the daemon's host)
        HttpResponse<String> plain = post(BOB, "/v1/images/pull", "{\"ref\":\"" + base + "\",\"insecure\":true}");
        assertError(plain, 403, "PERMISSION_DENIED", "plain-HTTP");
        conforms("POST", "/v1/images/pull", plain);
        assertError(post(BOB, "/v1/images/push", "{\"ref\":\"" + base + "\",\"target\":\"" + base
                + "-copy\",\"insecure\":true}"), 403, "PERMISSION_DENIED", "plain-HTTP");
        // nor over HTTPS to its own loopback, a private range or the metadata service (A65)
        for (String registry : List.of("127.0.0.1:5000", "localhost:5000", "10.1.2.3", "169.254.169.254", "[::1]:5000")) {
            assertError(post(BOB, "/v1/images/pull", "{\"ref\":\"" + registry + "/bob/app:1\"}"), 403,
                    "PERMISSION_DENIED", "private");
        }
        assertError(post(BOB, "/v1/images/push", "{\"ref\":\"" + base + "\",\"target\":\"127.0.0.1:5000/bob/app:1\"}"),
                403, "PERMISSION_DENIED", "private");

        conforms("DELETE", "/v1/image", delete(ALICE, "/v1/image?ref=" + q(mine)));
        assertThat(get(ALICE, "/v1/image?ref=" + q(mine)).statusCode()).isEqualTo(404);
        assertThat(get(ALICE, "/v1/image?ref=" + q(base)).statusCode()).isEqualTo(200);
    }

    /**
     * Issue 32 breach 10: a tenant's pull or push to a registry on an address of the daemon's own host (here the
     * host end of a veth into a namespace the test makes, on 198.18.0.0/15) is refused before anything connects,
     * and the refusal reads the same whether a port there is open (a listener) or closed: no port scanner of the
     * host. Before, the pull connected and its error told "Unrecognized SSL message" from "connection refused".
     */
    @Test
    void aTenantsPullOrPushNeverConnectsToTheHostsOwnAddressesAndCannotTellOpenFromClosed() throws Exception {
        String ns = "pdi" + ProcessHandle.current().pid() % 100_000;
        String hostEnd = "198.18.77.1";
        sh("ip netns add " + ns + " && ip link add " + ns + "h type veth peer name " + ns + "n netns " + ns
                + " && ip addr add " + hostEnd + "/30 dev " + ns + "h && ip link set " + ns + "h up");
        try (java.net.ServerSocket open = new java.net.ServerSocket(0, 50, java.net.InetAddress.getByName(hostEnd))) {
            int closed;
            try (java.net.ServerSocket probe = new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName(hostEnd))) {
                closed = probe.getLocalPort();
            }
            java.util.Map<String, String> messages = new java.util.LinkedHashMap<>();
            for (int port : new int[]{open.getLocalPort(), closed}) {
                String registry = hostEnd + ":" + port;
                HttpResponse<String> pull = post(BOB, "/v1/images/pull", "{\"ref\":\"" + registry + "/bob/app:1\"}");
                assertError(pull, 403, "PERMISSION_DENIED", "this host");
                messages.put("pull " + port, json(pull).get("error").get("message").asText().replace(registry, "R"));
                HttpResponse<String> push = post(BOB, "/v1/images/push", "{\"ref\":\"" + base + "\",\"target\":\""
                        + registry + "/bob/app:1\"}");
                assertError(push, 403, "PERMISSION_DENIED", "this host");
                messages.put("push " + port, json(push).get("error").get("message").asText().replace(registry, "R"));
            }
            assertThat(new HashSet<>(messages.values())).as("one answer, open port or closed: " + messages).hasSize(1);
            open.setSoTimeout(200);
            assertThatNothingConnected(open);
        } finally {
            sh("ip link del " + ns + "h 2>/dev/null; ip netns del " + ns + " 2>/dev/null; true");
        }
        assertThat(Path.of("/run/netns", ns)).doesNotExist();
    }

    /**
     * Issue 32 round 3 (ATTACKS.md A83i): one tenant holds at most its share (2 here) of the destination gate's
     * tunnels. A registry in a namespace the test makes (198.18.78.2) accepts and never answers, as one trickling
     * nothing would: alice's two pulls hold a tunnel each; bob's pull still goes through the gate (to a closed port
     * there: 503 from the registry's side, not 429), while alice's third is 429 RESOURCE_EXHAUSTED naming
     * {@code --max-registry-connections-per-tenant} and never reaches the registry. A pull holds one tunnel at a
     * time, so here the count of her pulls at once is the part of the share that refuses it (RegistryShareTest and
     * DestinationGateTest hold the tunnels themselves). Without the share (both counts off), her third pull was
     * connected too and hung until the client's 60 s timeout.
     */
    @Test
    void a83i_aTenantsPullsHoldAtMostItsShareOfTheGate() throws Exception {
        String ns = "pdg" + ProcessHandle.current().pid() % 100_000;
        String hostEnd = "198.18.78.1";
        String registryAddress = "198.18.78.2";
        sh("ip netns add " + ns + " && ip link add " + ns + "h type veth peer name " + ns + "n netns " + ns
                + " && ip addr add " + hostEnd + "/30 dev " + ns + "h && ip link set " + ns + "h up"
                + " && ip netns exec " + ns + " ip addr add " + registryAddress + "/30 dev " + ns + "n"
                + " && ip netns exec " + ns + " ip link set " + ns + "n up && ip netns exec " + ns + " ip link set lo up");
        Process slow = null;
        List<java.util.concurrent.CompletableFuture<HttpResponse<String>>> holding = new ArrayList<>();
        try {
            slow = new ProcessBuilder("ip", "netns", "exec", ns, "python3", "-c", """
                    import socket, sys
                    s = socket.socket()
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    s.bind((sys.argv[1], 443))
                    s.listen(50)
                    print("listening", flush=True)
                    held = []
                    while True:
                        c, _ = s.accept()
                        held.append(c)
                        print("accepted", flush=True)
                    """, registryAddress).redirectErrorStream(true).start();
            java.io.BufferedReader said = new java.io.BufferedReader(new java.io.InputStreamReader(slow.getInputStream(),
                    StandardCharsets.UTF_8));
            assertThat(said.readLine()).isEqualTo("listening");
            String ref = "{\"ref\":\"" + registryAddress + ":443/alice/app-" + RUN + ":1\"}";
            for (int i = 0; i < 2; i++) {
                holding.add(f.http.sendAsync(as(ALICE, "/v1/images/pull").header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(ref)).build(), HttpResponse.BodyHandlers.ofString()));
            }
            assertThat(said.readLine()).isEqualTo("accepted");
            assertThat(said.readLine()).isEqualTo("accepted");

            HttpResponse<String> bobs = post(BOB, "/v1/images/pull", "{\"ref\":\"" + registryAddress
                    + ":444/bob/app-" + RUN + ":1\"}");
            assertError(bobs, 503, "UNAVAILABLE");

            HttpResponse<String> third = post(ALICE, "/v1/images/pull", ref);
            assertError(third, 429, "RESOURCE_EXHAUSTED", "tenant 'alice' already has 2",
                    "--max-registry-connections-per-tenant");
            conforms("POST", "/v1/images/pull", third);
            assertThat(holding).as("alice's two pulls still hold their tunnels").noneMatch(java.util.concurrent.Future::isDone);
            Thread.sleep(300);
            assertThat(said.ready()).as("the registry saw no third connection").isFalse();
        } finally {
            if (slow != null) {
                slow.destroyForcibly().waitFor();
            }
            for (var h : holding) {
                try {
                    h.get(90, java.util.concurrent.TimeUnit.SECONDS); // the registry gone, the pulls end
                } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException ignored) {
                    // ended either way
                }
            }
            sh("ip link del " + ns + "h 2>/dev/null; ip netns del " + ns + " 2>/dev/null; true");
        }
        assertThat(Path.of("/run/netns", ns)).doesNotExist();
    }

    private static void assertThatNothingConnected(java.net.ServerSocket listener) throws IOException {
        try (java.net.Socket s = listener.accept()) {
            throw new AssertionError("the daemon connected to the host's own address from " + s.getRemoteSocketAddress());
        } catch (java.net.SocketTimeoutException expected) {
            // nothing came
        }
    }

    private static void sh(String command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("sh", "-c", command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor()).as(command + ": " + out).isZero();
    }

    private static Set<Path> contextDirs() {
        try (Stream<Path> s = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
            return new HashSet<>(s.filter(p -> p.getFileName().toString().startsWith("paddock-context-")).toList());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Test
    void hostileContextsAreRefusedAndWriteNothingOutside() {
        Set<Path> before = contextDirs();
        String tag = "?tag=" + q("paddock-test/evil-" + RUN + ":1");
        Path slip = Path.of("/tmp/paddock-slip-" + RUN);
        Path viaLink = Path.of("/tmp/paddock-link-" + RUN);
        Path absolute = Path.of("/tmp/paddock-abs-" + RUN);

        HttpResponse<String> r = build(f.token, "/v1/images/build" + tag, new Tar().file("Dockerfile", "FROM " + base + "\n")
                .file("../../../../../../.." + slip, "x").bytes(), false);
        assertError(r, 400, "INVALID_ARGUMENT", "the build context");
        conforms("POST", "/v1/images/build", r);
        assertError(build(f.token, "/v1/images/build" + tag, new Tar().symlink("esc", "/tmp")
                .file("esc/" + viaLink.getFileName(), "x").bytes(), false), 400, "INVALID_ARGUMENT", "symlink");
        // an absolute name lands inside the context (as tar does), so the build finds no Dockerfile there
        assertError(build(f.token, "/v1/images/build" + tag, new Tar().file(absolute.toString(), "x").bytes(), false),
                400, "INVALID_ARGUMENT", "Dockerfile");
        assertError(build(f.token, "/v1/images/build" + tag, new Tar().symlink("Dockerfile", "/etc/passwd").bytes(), false),
                400, "INVALID_ARGUMENT", "outside");
        assertError(build(f.token, "/v1/images/build" + tag, new Tar().file("Dockerfile", "FROM " + base + "\n")
                .symlink(".dockerignore", "/etc/shadow").bytes(), false), 400, "INVALID_ARGUMENT", "outside");
        assertError(build(f.token, "/v1/images/build" + tag + "&dockerfile=" + q("../etc/passwd"),
                new Tar().bytes(), false), 400, "INVALID_ARGUMENT", "dockerfile");
        assertError(build(f.token, "/v1/images/build" + tag, new Tar().file(".wh.x", "").bytes(), false),
                400, "INVALID_ARGUMENT", "whiteout");
        assertError(build(f.token, "/v1/images/build" + tag, "{}".getBytes(StandardCharsets.UTF_8), false), 400, "INVALID_ARGUMENT");
        // COPY through a symlink that leads out: the engine refuses it
        assertError(build(f.token, "/v1/images/build" + tag, new Tar().file("Dockerfile", "FROM " + base + "\nCOPY etc/passwd /p\n")
                .symlink("etc", "/etc").bytes(), false), 400, "INVALID_ARGUMENT", "outside");

        // build-spec: a local source must be the file itself, under a real local-<n> directory
        String spec = "{\"steps\":[{\"type\":\"from\",\"base\":\"" + base + "\"},"
                + "{\"type\":\"copy\",\"source\":\"local-0/passwd\",\"dest\":\"/p\",\"chown\":null}]}";
        HttpResponse<String> specLink = build(f.token, "/v1/images/build-spec" + tag, new Tar().file("image.json", spec)
                .symlink("local-0", "/etc").bytes(), false);
        assertError(specLink, 400, "INVALID_ARGUMENT", "source");
        conforms("POST", "/v1/images/build-spec", specLink);
        assertError(build(f.token, "/v1/images/build-spec" + tag, new Tar().file("image.json", spec)
                .symlink("local-0/passwd", "/etc/passwd").bytes(), false), 400, "INVALID_ARGUMENT", "symlink");
        assertError(build(f.token, "/v1/images/build-spec" + tag, new Tar().file("local-0/passwd", "x").bytes(), false),
                400, "INVALID_ARGUMENT", "image.json");

        assertThat(slip).doesNotExist();
        assertThat(viaLink).doesNotExist();
        assertThat(absolute).doesNotExist();
        assertThat(get(f.token, "/v1/image?ref=" + q("paddock-test/evil-" + RUN + ":1")).statusCode()).isEqualTo(404);
        Set<Path> left = contextDirs();
        left.removeAll(before);
        assertThat(left).as("unpacked contexts are deleted").isEmpty();
    }

    @Test
    void aContextOverTheUploadLimitIs413() throws IOException {
        try (PaddockServer small = PaddockServer.start(ServerOptions.builder().port(0).token(f.token)
                .maxUploadBytes(64 * 1024).build(), f.paddock)) {
            byte[] big = new Tar().file("Dockerfile", "FROM " + base + "\n").file("big", "x".repeat(256 * 1024)).bytes();
            String head = "POST /v1/images/build?tag=" + q("paddock-test/big-" + RUN + ":1") + " HTTP/1.1\r\nHost: x\r\n"
                    + "Authorization: Bearer " + f.token + "\r\nContent-Type: application/x-tar\r\n";
            RawHttp.Reply announced = RawHttp.exchange(small.url(), head + "Content-Length: " + big.length,
                    out -> out.write(big), 10_000);
            assertThat(announced.status()).as(announced.body()).isEqualTo(413);
            assertThat(announced.body()).contains("RESOURCE_EXHAUSTED", "build context");
            RawHttp.Reply chunked = RawHttp.exchange(small.url(), head + "Transfer-Encoding: chunked", out -> {
                for (int at = 0; at < big.length; at += 0x4000) {
                    int n = Math.min(0x4000, big.length - at);
                    out.write((Integer.toHexString(n) + "\r\n").getBytes(StandardCharsets.US_ASCII));
                    out.write(big, at, n);
                    out.write("\r\n".getBytes(StandardCharsets.US_ASCII));
                }
                out.write("0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            }, 10_000);
            assertThat(chunked.status()).as(chunked.body()).isEqualTo(413);
            assertThat(chunked.body()).contains("RESOURCE_EXHAUSTED", "build context");
        }
    }

    /** A tar written entry by entry, names kept exactly as given (absolute and {@code ..} included). */
    static final class Tar {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();
        private final TarArchiveOutputStream tar = new TarArchiveOutputStream(out);

        Tar() {
            tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
        }

        Tar file(String name, String content) {
            byte[] b = content.getBytes(StandardCharsets.UTF_8);
            TarArchiveEntry e = new TarArchiveEntry(name, true);
            e.setSize(b.length);
            e.setMode(0644);
            return put(e, b);
        }

        Tar symlink(String name, String target) {
            TarArchiveEntry e = new TarArchiveEntry(name, TarConstants.LF_SYMLINK, true);
            e.setLinkName(target);
            return put(e, new byte[0]);
        }

        private Tar put(TarArchiveEntry e, byte[] content) {
            try {
                tar.putArchiveEntry(e);
                tar.write(content);
                tar.closeArchiveEntry();
            } catch (IOException ex) {
                throw new UncheckedIOException(ex);
            }
            return this;
        }

        byte[] bytes() {
            try {
                tar.close();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return out.toByteArray();
        }
    }
}
