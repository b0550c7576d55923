package io.paddock.server;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** paddock serve: token handling, startup lines, a taken port. */
class DaemonTest {
    @TempDir
    Path tmp;

    @Test
    void generatesAPrivateTokenFileAndNeverPrintsTheToken() throws Exception {
        Path data = tmp.resolve("data");
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        DaemonOptions o = DaemonOptions.builder().listen("127.0.0.1:0").dataDir(data).maxSandboxes(2).build();
        try (Daemon.Running d = Daemon.start(o, Map.of(), new PrintStream(printed, true, StandardCharsets.UTF_8))) {
            Path file = data.resolve("token");
            String token = Files.readString(file).trim();
            assertThat(token).matches("[A-Za-z0-9_-]{43}");
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("rw-------");
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(data))).isEqualTo("rwx------");
            String out = printed.toString(StandardCharsets.UTF_8);
            assertThat(out).doesNotContain(token);
            assertThat(out.lines()).hasSize(2);
            assertThat(out).contains(file.toString());
            assertThat(out.lines().reduce((a, b) -> b).orElseThrow())
                    .isEqualTo("paddock: listening on " + d.server.url() + " (data dir " + data + ")");
            HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                    URI.create(d.server.url() + "/v1/sandboxes")).header("Authorization", "Bearer " + token).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).isEqualTo(200);
        }
        // a restart reads the same token, and says nothing about it
        ByteArrayOutputStream again = new ByteArrayOutputStream();
        assertThat(Daemon.token(data, Map.of(), new PrintStream(again, true, StandardCharsets.UTF_8)))
                .isEqualTo(Files.readString(data.resolve("token")).trim());
        assertThat(again.size()).isZero();
    }

    @Test
    void aPortDomainIsCheckedAndAnnounced() throws Exception {
        assertThat(DaemonOptions.builder().portDomain("Sandboxes.Example.COM.").build().portDomain())
                .hasValue("sandboxes.example.com");
        for (String bad : new String[] {"*.example.com", "http://example.com", "example.com:8443", "a..b", ""}) {
            assertThatThrownBy(() -> DaemonOptions.builder().portDomain(bad)).as(bad).isInstanceOf(SandboxException.class)
                    .hasMessageContaining("portDomain");
        }
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        DaemonOptions o = DaemonOptions.builder().listen("127.0.0.1:0").dataDir(tmp.resolve("data")).maxSandboxes(2)
                .portDomain("sandboxes.example.com").build();
        try (Daemon.Running d = Daemon.start(o, Map.of("PADDOCK_TOKEN", "x"), new PrintStream(printed, true,
                StandardCharsets.UTF_8))) {
            assertThat(printed.toString(StandardCharsets.UTF_8)).contains("PORT-ID.sandboxes.example.com");
            // the signing key is made on first use only, not at start
            assertThat(tmp.resolve("data").resolve("url-signing-key")).doesNotExist();
        }
    }

    @Test
    void anE2bListenerIsAnnouncedAndATakenE2bPortIsAClearError() throws Exception {
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        DaemonOptions o = DaemonOptions.builder().listen("127.0.0.1:0").dataDir(tmp.resolve("data")).maxSandboxes(2)
                .e2bListen("127.0.0.1:0").build();
        try (Daemon.Running d = Daemon.start(o, Map.of("PADDOCK_TOKEN", "x"), new PrintStream(printed, true,
                StandardCharsets.UTF_8))) {
            URI e2b = d.server.e2bUrl().orElseThrow();
            assertThat(printed.toString(StandardCharsets.UTF_8)).contains("paddock: E2B API on " + e2b);
            HttpResponse<String> health = HttpClient.newHttpClient().send(HttpRequest.newBuilder(e2b.resolve("/health"))
                    .build(), HttpResponse.BodyHandlers.ofString());
            assertThat(health.statusCode()).isEqualTo(204);
        }
        assertThatThrownBy(() -> DaemonOptions.builder().e2bListen("nope")).isInstanceOf(SandboxException.class)
                .hasMessageContaining("e2bListen");
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            DaemonOptions busy = DaemonOptions.builder().listen("127.0.0.1:0").dataDir(tmp.resolve("d"))
                    .e2bListen("127.0.0.1:" + taken.getLocalPort()).build();
            assertThatThrownBy(() -> Daemon.start(busy, Map.of("PADDOCK_TOKEN", "x"), System.out))
                    .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.UNAVAILABLE))
                    .hasMessageContaining("127.0.0.1:" + taken.getLocalPort());
        }
    }

    @Test
    void theEnvironmentWinsAndLooseFilesAreRefused() throws Exception {
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(printed, true, StandardCharsets.UTF_8);
        assertThat(Daemon.token(tmp, Map.of("PADDOCK_TOKEN", " from-env "), out)).isEqualTo("from-env");
        assertThat(Files.exists(tmp.resolve("token"))).isFalse();
        Path loose = tmp.resolve("token");
        Files.writeString(loose, "t0ken\n");
        Files.setPosixFilePermissions(loose, PosixFilePermissions.fromString("rw-r--r--"));
        assertThatThrownBy(() -> Daemon.token(tmp, Map.of(), out)).isInstanceOf(SandboxException.class)
                .hasMessageContaining("chmod 600");
        Files.setPosixFilePermissions(loose, PosixFilePermissions.fromString("rw-------"));
        assertThat(Daemon.token(tmp, Map.of(), out)).isEqualTo("t0ken");
        assertThat(printed.size()).isZero();
    }

    @Test
    void aTakenPortIsAClearError() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            DaemonOptions o = DaemonOptions.builder().listen("127.0.0.1:" + taken.getLocalPort())
                    .dataDir(tmp.resolve("d")).build();
            assertThatThrownBy(() -> Daemon.start(o, Map.of("PADDOCK_TOKEN", "x"), System.out))
                    .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.UNAVAILABLE))
                    .hasMessageContaining("127.0.0.1:" + taken.getLocalPort())
                    .hasMessageContaining("already in use");
        }
    }

    private static final String TOKEN_A = "a".repeat(20) + "-tenant-token-0001";
    private static final String TOKEN_B = "b".repeat(20) + "-tenant-token-0002";

    private Path tenantsFile(String content, String mode) throws Exception {
        Path file = tmp.resolve("tenants");
        Files.writeString(file, content);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString(mode));
        return file;
    }

    private String refusal(Path data, Path tenants) {
        DaemonOptions.Builder b = DaemonOptions.builder().listen("127.0.0.1:0").dataDir(data);
        if (tenants != null) {
            b.tenantsFile(tenants);
        }
        SandboxException e;
        try (Daemon.Running d = Daemon.start(b.build(), Map.of("PADDOCK_TOKEN", "operator-token"), System.out)) {
            throw new AssertionError("the daemon started");
        } catch (SandboxException refused) {
            e = refused;
        }
        assertThat(e.code()).isEqualTo(ErrorCode.FAILED_PRECONDITION);
        assertThat(e.getMessage()).contains("tenants file").doesNotContain(TOKEN_A).doesNotContain(TOKEN_B);
        return e.getMessage();
    }

    @Test
    void aBadTenantsFileRefusesToStartSayingHowToFixIt() throws Exception {
        String good = "# name token\nalice " + TOKEN_A + "\n\nbob   " + TOKEN_B + "  # trailing words are an error\n";
        assertThat(refusal(tmp, tenantsFile("alice " + TOKEN_A + "\n", "rw-r--r--"))).contains("chmod 600");
        assertThat(refusal(tmp, tenantsFile("alice " + TOKEN_A + "\n", "rw--w----"))).contains("chmod 600");
        assertThat(refusal(tmp, tenantsFile(good, "rw-------"))).contains("tenants:4", "NAME TOKEN");
        assertThat(refusal(tmp, tenantsFile("alice " + TOKEN_A + "\nbob " + TOKEN_A + "\n", "rw-------")))
                .contains("tenants:2", "'alice' and 'bob' have the same token");
        assertThat(refusal(tmp, tenantsFile("alice short-token\n", "rw-------"))).contains("tenants:1", "fewer than 32");
        assertThat(refusal(tmp, tenantsFile("Alice-1 " + TOKEN_A + "\n", "rw-------"))).contains("not a valid tenant name");
        assertThat(refusal(tmp, tenantsFile("alice " + TOKEN_A + "\nalice " + TOKEN_B + "\n", "rw-------")))
                .contains("given twice");
        assertThat(refusal(tmp, tmp.resolve("missing"))).contains("does not exist");
        // quota keys (A83d): unknown keys and bad values are named
        assertThat(refusal(tmp, tenantsFile("alice " + TOKEN_A + " colour=red\n", "rw-------")))
                .contains("tenants:1", "unknown key 'colour'", "volume-bytes");
        assertThat(refusal(tmp, tenantsFile("alice " + TOKEN_A + " volumes=-1\n", "rw-------")))
                .contains("tenants:1", "volumes: expected a count");
        assertThat(refusal(tmp, tenantsFile("alice " + TOKEN_A + " volume-bytes=lots\n", "rw-------")))
                .contains("tenants:1", "volume-bytes: expected a size");
        // A83f-g: the sandbox-disk and build keys too
        assertThat(refusal(tmp, tenantsFile("alice " + TOKEN_A + " sandbox-disk=big\n", "rw-------")))
                .contains("tenants:1", "sandbox-disk: expected a size");
        assertThat(refusal(tmp, tenantsFile("alice " + TOKEN_A + " builds=two\n", "rw-------")))
                .contains("tenants:1", "builds: expected a count");
        assertThat(refusal(tmp, tenantsFile("# c\nalice " + TOKEN_A + " build-time=30\n", "rw-------")))
                .contains("tenants:2", "build-time: expected a duration such as 90s, 30m or 2h");
        assertThat(refusal(tmp, tenantsFile("alice " + TOKEN_A + " build-cpus=0\n", "rw-------")))
                .contains("tenants:1", "build-cpus: expected CPUs between 0.01 and 1024");
        assertThat(refusal(tmp, tenantsFile("alice " + TOKEN_A + " build-memory=1m\n", "rw-------")))
                .contains("tenants:1", "build-memory: must be at least 16m");
        assertThat(refusal(tmp, tenantsFile("alice " + TOKEN_A + " image-bytes=lots\n", "rw-------")))
                .contains("tenants:1", "image-bytes: expected a size");
        // the operator's token may not double as a tenant's
        ServerOptions.Builder same = ServerOptions.builder().token(TOKEN_A).tenant("alice", TOKEN_A);
        assertThatThrownBy(same::build).hasMessageContaining("operator's token");
        // the default place is used when it exists, and its permissions are checked too
        Path data = tmp.resolve("data");
        Files.createDirectories(data);
        Files.move(tenantsFile("alice " + TOKEN_A + "\n", "rw-rw----"), data.resolve("tenants"));
        assertThat(refusal(data, null)).contains(data.resolve("tenants").toString(), "chmod 600");
    }

    @Test
    void aTenantsQuotaIsReadFromItsLineAndDefaultsOtherwise() throws Exception {
        Path file = tenantsFile("alice " + TOKEN_A + " volumes=3 volume-bytes=10g codebases=0 codebase-bytes=512m\nbob "
                + TOKEN_B + "\n", "rw-------");
        java.util.List<io.paddock.server.internal.TenantsFile.Entry> entries = io.paddock.server.internal.TenantsFile.read(file);
        assertThat(entries.get(0).quota()).isEqualTo(new io.paddock.server.internal.TenantQuota(3,
                io.paddock.ByteSize.gib(10), 0, io.paddock.ByteSize.mib(512)));
        assertThat(entries.get(1).quota()).isEqualTo(io.paddock.server.internal.TenantQuota.DEFAULT);
        Path builds = tenantsFile("carol " + TOKEN_A + " sandbox-disk=8g builds=1 build-time=30m build-cpus=0.5"
                + " build-memory=1g\n", "rw-------");
        io.paddock.server.internal.TenantQuota q = io.paddock.server.internal.TenantsFile.read(builds).get(0).quota();
        assertThat(q).isEqualTo(io.paddock.server.internal.TenantQuota.DEFAULT.withSandboxesAndBuilds(
                io.paddock.ByteSize.gib(8), 1, java.time.Duration.ofMinutes(30), 0.5, io.paddock.ByteSize.gib(1)));
        assertThat(q.buildLimits().cpus()).hasValue(0.5);
        assertThat(q.imageBytes()).isEqualTo(io.paddock.ByteSize.gib(32)); // the default
        Path images = tenantsFile("dave " + TOKEN_A + " image-bytes=4m\n", "rw-------");
        assertThat(io.paddock.server.internal.TenantsFile.read(images).get(0).quota()).isEqualTo(
                io.paddock.server.internal.TenantQuota.DEFAULT.withImageBytes(io.paddock.ByteSize.mib(4)));
        assertThat(entries.toString()).doesNotContain(TOKEN_A).doesNotContain(TOKEN_B);
    }

    @Test
    void tenantsKeepTheirSandboxesAcrossARestart() throws Exception {
        Path data = tmp.resolve("data");
        Files.createDirectories(data);
        Files.move(tenantsFile("alice " + TOKEN_A + "\nbob " + TOKEN_B + "\n", "rw-------"), data.resolve("tenants"));
        DaemonOptions o = DaemonOptions.builder().listen("127.0.0.1:0").dataDir(data).maxSandboxes(4)
                .maxSandboxesPerTenant(2).build();
        Map<String, String> env = Map.of("PADDOCK_TOKEN", "operator-token");
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        HttpClient http = HttpClient.newHttpClient();
        String id;
        try (Daemon.Running d = Daemon.start(o, env, new PrintStream(printed, true, StandardCharsets.UTF_8))) {
            String out = printed.toString(StandardCharsets.UTF_8);
            assertThat(out).contains("loaded 2 tenants from " + data.resolve("tenants"), "at most 2 live")
                    .doesNotContain(TOKEN_A).doesNotContain(TOKEN_B);
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(d.server.url() + "/v1/sandboxes"))
                    .header("Authorization", "Bearer " + TOKEN_A).POST(HttpRequest.BodyPublishers.ofString(
                            Fixture.SMALL + ",\"name\":\"web\"}")).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
            id = Fixture.json(r).get("id").asText();
        }
        try (Daemon.Running d = Daemon.start(o, env, new PrintStream(new ByteArrayOutputStream(), true,
                StandardCharsets.UTF_8))) {
            try {
                HttpResponse<String> mine = http.send(HttpRequest.newBuilder(URI.create(d.server.url()
                        + "/v1/sandboxes/by-name/web")).header("Authorization", "Bearer " + TOKEN_A).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertThat(mine.statusCode()).as(mine.body()).isEqualTo(200);
                assertThat(Fixture.json(mine).get("id").asText()).isEqualTo(id);
                assertThat(Fixture.json(mine).get("name").asText()).isEqualTo("web");
                HttpResponse<String> theirs = http.send(HttpRequest.newBuilder(URI.create(d.server.url()
                        + "/v1/sandboxes/" + id)).header("Authorization", "Bearer " + TOKEN_B).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertThat(theirs.statusCode()).isEqualTo(404);
            } finally {
                d.paddock.get(new io.paddock.SandboxId(id)).destroy();
            }
        }
    }

    @Test
    void theAuditLogIsInTheDataDirRotatedAsConfigured() throws Exception {
        assertThatThrownBy(() -> DaemonOptions.builder().auditMaxBytes(1000)).isInstanceOf(SandboxException.class)
                .hasMessageContaining("auditMaxBytes");
        assertThatThrownBy(() -> DaemonOptions.builder().auditKeep(0)).isInstanceOf(SandboxException.class)
                .hasMessageContaining("auditKeep");
        Path data = tmp.resolve("data");
        DaemonOptions o = DaemonOptions.builder().listen("127.0.0.1:0").dataDir(data).maxSandboxes(2)
                .auditMaxBytes(4096).auditKeep(1).build();
        try (Daemon.Running d = Daemon.start(o, Map.of("PADDOCK_TOKEN", "operator-token"), new PrintStream(
                new ByteArrayOutputStream(), true, StandardCharsets.UTF_8))) {
            HttpClient http = HttpClient.newHttpClient();
            for (int i = 0; i < 60; i++) { // refused creates: recorded (INVALID_ARGUMENT), nothing made
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(d.server.url() + "/v1/sandboxes"))
                        .header("Authorization", "Bearer operator-token").POST(HttpRequest.BodyPublishers.ofString(
                                "{\"cpus\":\"many\"}")).build(), HttpResponse.BodyHandlers.ofString());
                assertThat(r.statusCode()).isEqualTo(400);
            }
        }
        assertThat(data.resolve("audit.log")).exists();
        assertThat(data.resolve("audit.log.1")).exists();
        assertThat(data.resolve("audit.log.2")).doesNotExist();
        assertThat(Files.size(data.resolve("audit.log.1"))).isLessThanOrEqualTo(4096);
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(data.resolve("audit.log")))).isEqualTo("rw-------");
        assertThat(Files.readString(data.resolve("audit.log"))).contains("\"action\":\"create_sandbox\"", "INVALID_ARGUMENT")
                .doesNotContain("operator-token");
    }

    @Test
    void listenIsParsed() {
        assertThat(DaemonOptions.builder().build().listen()).isEqualTo("127.0.0.1:7070");
        assertThat(DaemonOptions.builder().listen("0.0.0.0:80").build().host()).isEqualTo("0.0.0.0");
        assertThat(DaemonOptions.builder().listen("[::1]:9000").build().listen()).isEqualTo("[::1]:9000");
        assertThat(DaemonOptions.builder().listen(":9000").build().host()).isEqualTo("127.0.0.1");
        assertThatThrownBy(() -> DaemonOptions.builder().listen("localhost")).hasMessageContaining("host:port");
        assertThatThrownBy(() -> DaemonOptions.builder().listen("h:99999")).hasMessageContaining("65535");
        assertThatThrownBy(() -> ServerOptions.builder().build()).hasMessageContaining("token");
        assertThat(ServerOptions.builder().token("secret-value").build().toString()).doesNotContain("secret-value");
    }
}
