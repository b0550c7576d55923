package io.paddock.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.ByteSize;
import io.paddock.LocalOptions;
import io.paddock.server.internal.TenantQuota;
import io.paddock.testkit.LeakCheckExtension;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Base64;

import static io.paddock.server.Fixture.json;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * ATTACKS.md A83d over REST on the real engine and btrfs store: a tenant's volumes (count, total size) and codebases
 * (count, bytes) stop at its quota with 429 RESOURCE_EXHAUSTED naming the tenants file's key, a codebase that would
 * pass the bytes is not kept, another tenant and the operator are not held to it; and a volume larger than the
 * store's free space is refused for everyone; and a tenant's live sandboxes reserve at most its sandbox-disk (A83f). Tenants are named per run: volumes and codebases outlive a daemon.
 * The host leak check runs after each test.
 */
class TenantQuotaTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);
    private static final String RUN = Long.toString(ProcessHandle.current().pid() % 100000);
    private static final String SMALL = "qs" + RUN;
    private static final String BYTES = "qb" + RUN;
    private static final String OTHER = "qo" + RUN;
    private static final String DISK = "qd" + RUN;
    private static final String DISK_TOKEN = newToken();
    private static final String SMALL_TOKEN = newToken();
    private static final String BYTES_TOKEN = newToken();
    private static final String OTHER_TOKEN = newToken();
    private static Fixture f;

    @BeforeAll
    static void start() {
        f = Fixture.start(b -> b.tenant(SMALL, SMALL_TOKEN).tenant(BYTES, BYTES_TOKEN).tenant(OTHER, OTHER_TOKEN)
                .tenant(DISK, DISK_TOKEN).tenantQuota(DISK, TenantQuota.DEFAULT.with("sandbox-disk=3g"))
                .tenantQuota(SMALL, new TenantQuota(2, ByteSize.mib(48), 1, ByteSize.gib(1)))
                .tenantQuota(BYTES, new TenantQuota(2, ByteSize.mib(48), 4, ByteSize.kib(8))), 1000);
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

    private static HttpResponse<String> as(String token, String method, String path, String body) {
        HttpRequest.Builder b = HttpRequest.newBuilder(f.uri(path)).header("Authorization", "Bearer " + token);
        b.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (body != null) {
            b.header("Content-Type", "application/json");
        }
        return f.send(b.build());
    }

    private static HttpResponse<String> volume(String token, String name, String size) {
        return as(token, "POST", "/v1/volumes", "{\"name\":\"" + name + "\",\"size\":\"" + size + "\"}");
    }

    private static HttpResponse<String> upload(String token, String name, byte[] tar) {
        return f.send(HttpRequest.newBuilder(f.uri("/v1/codebases/" + name)).header("Authorization", "Bearer " + token)
                .header("Content-Type", "application/x-tar").POST(HttpRequest.BodyPublishers.ofByteArray(tar)).build());
    }

    private static void assertExhausted(HttpResponse<String> r, String... words) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(429);
        JsonNode e = json(r).get("error");
        assertThat(e.get("code").asText()).isEqualTo("RESOURCE_EXHAUSTED");
        assertThat(e.get("message").asText()).contains(words);
    }

    private static void assertStatus(HttpResponse<String> r, int status) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
    }

    private static byte[] tar(String name, int bytes) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (TarArchiveOutputStream t = new TarArchiveOutputStream(out)) {
            byte[] data = "x".repeat(bytes).getBytes(StandardCharsets.UTF_8);
            TarArchiveEntry e = new TarArchiveEntry(name);
            e.setSize(data.length);
            t.putArchiveEntry(e);
            t.write(data);
            t.closeArchiveEntry();
        }
        return out.toByteArray();
    }

    @Test
    void a83_aTenantsVolumesStopAtItsCountAndTotalSize() {
        try {
            assertStatus(volume(SMALL_TOKEN, "a", "16m"), 201);
            assertStatus(volume(SMALL_TOKEN, "b", "16m"), 201);
            assertExhausted(volume(SMALL_TOKEN, "c", "16m"), "volumes=2", "tenants file");
            assertStatus(as(SMALL_TOKEN, "DELETE", "/v1/volumes/b", null), 204);
            assertExhausted(volume(SMALL_TOKEN, "c", "40m"), "volume-bytes=48m", "tenants file");
            assertThat(as(SMALL_TOKEN, "GET", "/v1/volumes/c", null).statusCode()).isEqualTo(404);
            assertStatus(volume(SMALL_TOKEN, "c", "32m"), 201); // 16m + 32m: exactly the quota
            // Another tenant (the default quota) and the operator are not held to this one's.
            assertStatus(volume(OTHER_TOKEN, "a", "40m"), 201);
            assertStatus(f.post("/v1/volumes", "{\"name\":\"quota" + RUN + "\",\"size\":\"64m\"}"), 201);
        } finally {
            for (String v : new String[]{"a", "b", "c"}) {
                as(SMALL_TOKEN, "DELETE", "/v1/volumes/" + v, null);
            }
            as(OTHER_TOKEN, "DELETE", "/v1/volumes/a", null);
            f.delete("/v1/volumes/quota" + RUN);
        }
    }

    @Test
    void a83_aVolumeLargerThanTheStoresFreeSpaceIsRefusedForEveryone() {
        // The store is a sparse loop file of 1 TiB; the host's disk has far less free.
        HttpResponse<String> r = f.post("/v1/volumes", "{\"name\":\"huge" + RUN + "\",\"size\":\"1t\"}");
        try {
            assertExhausted(r, "free", "reserve");
        } finally {
            f.delete("/v1/volumes/huge" + RUN);
        }
    }

    @Test
    void a83_aTenantsCodebasesStopAtItsCountAndBytes() throws IOException {
        try {
            assertStatus(upload(SMALL_TOKEN, "one", tar("a.txt", 100)), 201);
            assertExhausted(upload(SMALL_TOKEN, "two", tar("a.txt", 100)), "codebases=1", "tenants file");
            // Bytes: 6 KiB fit in 8 KiB; 6 more would not, and that codebase is not kept.
            assertStatus(upload(BYTES_TOKEN, "one", tar("a.txt", 6 << 10)), 201);
            assertExhausted(upload(BYTES_TOKEN, "two", tar("a.txt", 6 << 10)), "codebase-bytes=8k", "tenants file");
            assertThat(as(BYTES_TOKEN, "GET", "/v1/codebases/two", null).statusCode()).isEqualTo(404);
            assertThat(json(as(BYTES_TOKEN, "GET", "/v1/codebases", null)).get("codebases")).hasSize(1);
            // A commit is checked before it runs (its size is known only once made): the first one, from under the
            // quota, may take the tenant past it by what its sandbox wrote; the next is refused.
            HttpResponse<String> sb = as(BYTES_TOKEN, "POST", "/v1/sandboxes", Fixture.SMALL
                    + ",\"codebase\":{\"name\":\"one\",\"preset\":\"full-access\"}}");
            assertStatus(sb, 201);
            String id = json(sb).get("id").asText();
            try {
                assertStatus(as(BYTES_TOKEN, "POST", "/v1/sandboxes/" + id + "/exec",
                        "{\"argv\":[\"sh\",\"-c\",\"head -c 4096 /dev/zero > /workspace/b.bin\"]}"), 200);
                assertStatus(as(BYTES_TOKEN, "POST", "/v1/sandboxes/" + id + "/codebase/commit", "{}"), 200);
                assertStatus(as(BYTES_TOKEN, "POST", "/v1/sandboxes/" + id + "/exec",
                        "{\"argv\":[\"sh\",\"-c\",\"echo more > /workspace/c.txt\"]}"), 200);
                assertExhausted(as(BYTES_TOKEN, "POST", "/v1/sandboxes/" + id + "/codebase/commit", "{}"),
                        "codebase-bytes=8k", "tenants file");
                assertThat(json(as(BYTES_TOKEN, "GET", "/v1/codebases/one", null)).get("revision").asInt()).isEqualTo(2);
            } finally {
                as(BYTES_TOKEN, "DELETE", "/v1/sandboxes/" + id, null);
            }
            assertStatus(upload(OTHER_TOKEN, "one", tar("a.txt", 6 << 10)), 201);
            assertStatus(upload(OTHER_TOKEN, "two", tar("a.txt", 6 << 10)), 201);
        } finally {
            as(SMALL_TOKEN, "DELETE", "/v1/codebases/one", null);
            as(SMALL_TOKEN, "DELETE", "/v1/codebases/two", null);
            as(BYTES_TOKEN, "DELETE", "/v1/codebases/one", null);
            as(BYTES_TOKEN, "DELETE", "/v1/codebases/two", null);
            as(OTHER_TOKEN, "DELETE", "/v1/codebases/one", null);
            as(OTHER_TOKEN, "DELETE", "/v1/codebases/two", null);
        }
    }

    private static HttpResponse<String> sandbox(String token, String disk) {
        return as(token, "POST", "/v1/sandboxes", Fixture.SMALL + ",\"runtime\":\"runc\",\"disk\":\"" + disk + "\"}");
    }

    /** {@code r}; the sandboxes it made, if it made any (a refusal that failed to refuse), noted for the clean-up. */
    private static HttpResponse<String> kept(HttpResponse<String> r, java.util.List<String> ids) {
        if (r.statusCode() == 201) {
            JsonNode body = json(r);
            if (body.has("sandboxes")) {
                body.get("sandboxes").forEach(sb -> ids.add(sb.get("id").asText()));
            } else {
                ids.add(body.get("id").asText());
            }
        }
        return r;
    }

    /** ATTACKS.md A83f: the disk a tenant's live sandboxes reserve (their specs' disk) stops at its sandbox-disk. */
    @Test
    void a83f_aTenantsLiveSandboxesReserveAtMostItsSandboxDisk() {
        java.util.List<String> ids = new java.util.ArrayList<>();
        try {
            HttpResponse<String> big = sandbox(DISK_TOKEN, "2g");
            assertStatus(big, 201);
            ids.add(json(big).get("id").asText());
            assertThat(json(big).get("labels").has("paddock.io/disk")).as("the daemon's label is not shown").isFalse();
            assertExhausted(kept(sandbox(DISK_TOKEN, "2g"), ids), "sandbox-disk=3g", "tenants file", "2g");
            HttpResponse<String> small = sandbox(DISK_TOKEN, "1g"); // 2g + 1g: exactly the quota
            assertStatus(small, 201);
            String one = json(small).get("id").asText();
            ids.add(one);
            // a fork reserves its source's disk, checked before anything is forked
            assertExhausted(kept(as(DISK_TOKEN, "POST", "/v1/sandboxes/" + one + "/fork", "{\"count\":1}"), ids),
                    "sandbox-disk=3g");
            // the label is the daemon's: a tenant cannot set it to reserve less
            assertStatus(kept(as(DISK_TOKEN, "POST", "/v1/sandboxes", Fixture.SMALL
                    + ",\"runtime\":\"runc\",\"labels\":{\"paddock.io/disk\":\"1\"}}"), ids), 400);
            // another tenant (the default quota) and the operator are not held to this one's
            HttpResponse<String> other = sandbox(OTHER_TOKEN, "2g");
            assertStatus(other, 201);
            ids.add(json(other).get("id").asText());
            // destroying one brings the tenant back under: the next sandbox fits
            assertStatus(as(DISK_TOKEN, "DELETE", "/v1/sandboxes/" + ids.remove(0), null), 204);
            HttpResponse<String> again = sandbox(DISK_TOKEN, "2g");
            assertStatus(again, 201);
            ids.add(json(again).get("id").asText());
        } finally {
            for (String id : ids) {
                f.delete("/v1/sandboxes/" + id);
            }
        }
    }
}
