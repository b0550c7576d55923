package io.paddock.image.internal.registry;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.image.internal.oci.MediaTypes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The registry client's pure parts: challenges, platforms, manifest reading, docker config, token cache. */
class RegistryPartsTest {
    @TempDir
    Path tmp;

    @Test
    void parsesBearerAndBasicChallenges() {
        List<AuthChallenge> c = AuthChallenge.parse(List.of(
                "Bearer realm=\"https://auth.example/token\",service=\"registry.example\",scope=\"repository:acc/x:pull,push\"",
                "Basic realm=\"test\""));
        assertThat(c).hasSize(2);
        assertThat(c.get(0).scheme()).isEqualTo("bearer");
        assertThat(c.get(0).params()).containsExactlyInAnyOrderEntriesOf(Map.of("realm", "https://auth.example/token",
                "service", "registry.example", "scope", "repository:acc/x:pull,push"));
        assertThat(c.get(1)).isEqualTo(new AuthChallenge("basic", Map.of("realm", "test")));
    }

    @Test
    void parsesSeveralChallengesInOneHeaderAndOddSpacing() {
        List<AuthChallenge> c = AuthChallenge.parse(List.of(
                "Basic realm=\"a, b\" , BEARER  Realm = \"r\\\"q\" ,scope=x, error=insufficient_scope", "Negotiate", ""));
        assertThat(c).extracting(AuthChallenge::scheme).containsExactly("basic", "bearer", "negotiate");
        assertThat(c.get(0).params()).isEqualTo(Map.of("realm", "a, b"));
        assertThat(c.get(1).param("realm")).contains("r\"q");
        assertThat(c.get(1).param("scope")).contains("x");
        assertThat(c.get(1).param("error")).contains("insufficient_scope");
        assertThat(c.get(2).params()).isEmpty();
        assertThat(AuthChallenge.parse(List.of("=\"", ",,,", "Bearer realm=\"unterminated"))).extracting(AuthChallenge::scheme)
                .containsExactly("bearer");
    }

    @Test
    void platformsMatchAsDockerDoes() {
        Platform amd64 = Platform.parse("linux/amd64");
        assertThat(amd64.matches(new Platform("linux", "amd64", "v3"))).as("variant ignored for amd64").isTrue();
        assertThat(amd64.matches(new Platform("linux", "x86_64", ""))).isTrue();
        assertThat(amd64.matches(new Platform("linux", "arm64", ""))).isFalse();
        assertThat(amd64.matches(new Platform("windows", "amd64", ""))).isFalse();
        assertThat(Platform.parse("linux/arm64").matches(new Platform("linux", "arm64", "v8"))).isTrue();
        assertThat(Platform.parse("linux/arm/v7").matches(new Platform("linux", "arm", "v6"))).isFalse();
        assertThat(Platform.parse("linux/arm/v7").matches(new Platform("linux", "arm", ""))).isTrue();
        assertThat(Platform.parse("Linux/AMD64").toString()).isEqualTo("linux/amd64");
        for (String bad : new String[] {"linux", "linux/", "/amd64", "linux/arm/v7/x", "linux/arm/"}) {
            assertThatThrownBy(() -> Platform.parse(bad)).hasMessageStartingWith("platform: ");
        }
    }

    @Test
    void choosesThePlatformsEntryAndListsWhatThereIsOtherwise() {
        String d1 = "sha256:" + "1".repeat(64);
        String d2 = "sha256:" + "2".repeat(64);
        String d3 = "sha256:" + "3".repeat(64);
        String index = """
                {"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[
                 {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":10,"platform":{"os":"linux","architecture":"arm","variant":"v6"}},
                 {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":11,"platform":{"os":"linux","architecture":"arm","variant":"v7"}},
                 {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":12,"platform":{"os":"unknown","architecture":"unknown"},
                  "annotations":{"vnd.docker.reference.type":"attestation-manifest"}}],"extra":{"ignored":true}}
                """.formatted(d1, d2, d3);
        Manifests.ManifestJson m = Manifests.read(index.getBytes(StandardCharsets.UTF_8), "the index");
        assertThat(Manifests.mediaType(m, "", "the index")).isEqualTo(MediaTypes.OCI_INDEX);
        List<Manifests.Entry> entries = Manifests.entries(m, "the index");
        assertThat(Manifests.choose(entries, Platform.parse("linux/arm/v7"), "x").digest().toString()).isEqualTo(d2);
        assertThat(Manifests.choose(entries, Platform.parse("linux/arm"), "x").digest().toString()).isEqualTo(d1);
        assertThatThrownBy(() -> Manifests.choose(entries, Platform.parse("linux/amd64"), "reg/acc/x:1"))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.NOT_FOUND))
                .hasMessage("no linux/amd64 image in reg/acc/x:1; it has: linux/arm/v6, linux/arm/v7");
    }

    @Test
    void readsManifestMediaTypesFromTheContentFirst() {
        byte[] noType = """
                {"schemaVersion":2,"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":2},"layers":[]}
                """.formatted("0".repeat(64)).getBytes(StandardCharsets.UTF_8);
        Manifests.ManifestJson m = Manifests.read(noType, "m");
        assertThat(Manifests.mediaType(m, MediaTypes.DOCKER_MANIFEST + "; charset=utf-8", "m")).isEqualTo(MediaTypes.DOCKER_MANIFEST);
        assertThat(Manifests.mediaType(m, "application/json", "m")).isEqualTo(MediaTypes.OCI_MANIFEST);
        assertThat(Manifests.image(m, "m").layers()).isEmpty();

        Manifests.ManifestJson schema1 = Manifests.read("{\"schemaVersion\":1,\"name\":\"x\"}".getBytes(StandardCharsets.UTF_8), "m");
        assertThatThrownBy(() -> Manifests.mediaType(schema1, "", "m")).hasMessageContaining("schema 1")
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.FAILED_PRECONDITION));
        Manifests.ManifestJson artifact = Manifests.read(("{\"schemaVersion\":2,\"mediaType\":\"application/vnd.cncf.helm.chart\"}")
                .getBytes(StandardCharsets.UTF_8), "m");
        assertThatThrownBy(() -> Manifests.mediaType(artifact, "", "m")).hasMessageContaining("not a container image");
        assertThatThrownBy(() -> Manifests.read("[1,2]".getBytes(StandardCharsets.UTF_8), "the manifest of x"))
                .hasMessageStartingWith("the manifest of x is not a valid manifest");
        byte[] badDigest = """
                {"schemaVersion":2,"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha512:00","size":2},"layers":[]}
                """.getBytes(StandardCharsets.UTF_8);
        assertThatThrownBy(() -> Manifests.image(Manifests.read(badDigest, "m"), "m")).hasMessageContaining("is not a sha256 digest");
        byte[] helmConfig = """
                {"schemaVersion":2,"config":{"mediaType":"application/vnd.cncf.helm.config.v1+json","digest":"sha256:%s","size":2},"layers":[]}
                """.formatted("0".repeat(64)).getBytes(StandardCharsets.UTF_8);
        assertThatThrownBy(() -> Manifests.image(Manifests.read(helmConfig, "m"), "m")).hasMessageContaining("is not a container image");
    }

    @Test
    void readsDockerConfigInAllItsSpellings() throws Exception {
        Path config = tmp.resolve("config.json");
        Files.writeString(config, """
                {"auths": {
                   "127.0.0.1:5000": {"auth": "%s"},
                   "https://registry.example:8443/v2/": {"username": "bob", "password": "pw:with:colons"},
                   "https://index.docker.io/v1/": {"auth": "%s"},
                   "helper-only.example": {}
                 },
                 "credsStore": "desktop"}
                """.formatted(b64("alice:s3cret"), b64("hub:hubpw")));
        DockerConfigCredentials c = DockerConfigCredentials.load(config);
        assertThat(c.credentialsFor("127.0.0.1:5000")).contains(new Credentials("alice", "s3cret"));
        assertThat(c.credentialsFor("registry.example:8443")).contains(new Credentials("bob", "pw:with:colons"));
        assertThat(c.credentialsFor("docker.io")).contains(new Credentials("hub", "hubpw"));
        assertThat(c.credentialsFor("helper-only.example")).isEmpty();
        assertThat(c.credentialsFor("127.0.0.1:5001")).isEmpty();
        assertThat(c.registries()).containsExactlyInAnyOrder("127.0.0.1:5000", "registry.example:8443", "docker.io");

        assertThat(DockerConfigCredentials.load(tmp.resolve("missing.json")).registries()).isEmpty();

        Files.writeString(config, "{\"auths\":{\"h\":{\"auth\":\"!!notbase64 SECRETISH\"}}}");
        assertThatThrownBy(() -> DockerConfigCredentials.load(config)).hasMessageContaining("not base64")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("SECRETISH"));
        Files.writeString(config, "{\"auths\":{\"h\":{\"auth\":\"" + b64("nocolon") + "\"}}}");
        assertThatThrownBy(() -> DockerConfigCredentials.load(config)).hasMessageContaining("base64(user:password)");
        Files.writeString(config, "{\"auths\": {\"h\": {\"password\": \"TOPSECRET\"");
        assertThatThrownBy(() -> DockerConfigCredentials.load(config)).hasMessageContaining("is not valid JSON")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("TOPSECRET"));
    }

    @Test
    void credentialsNeverShowThePassword() {
        Credentials c = new Credentials("u", "hunter2");
        assertThat(c.toString()).doesNotContain("hunter2");
        assertThat(c.basicAuthorization()).isEqualTo("Basic " + b64("u:hunter2"));
        assertThatThrownBy(() -> new Credentials("a:b", "p")).isInstanceOf(IllegalArgumentException.class);
        assertThat(CredentialsProvider.of("h:1", c).credentialsFor("h:1")).contains(c);
        assertThat(CredentialsProvider.of("h:1", c).credentialsFor("h:2")).isEmpty();
    }

    @Test
    void tokensExpireBeforeTheirLifetimeEnds() {
        MutableClock clock = new MutableClock();
        TokenCache cache = new TokenCache(clock);
        cache.put("r", "repository:a:pull", "t1", Duration.ofSeconds(300));
        assertThat(cache.get("r", "repository:a:pull")).contains("t1");
        assertThat(cache.get("r", "repository:a:pull,push")).isEmpty();
        assertThat(cache.get("r2", "repository:a:pull")).isEmpty();
        clock.now = clock.now.plusSeconds(289);
        assertThat(cache.get("r", "repository:a:pull")).contains("t1");
        clock.now = clock.now.plusSeconds(2);
        assertThat(cache.get("r", "repository:a:pull")).isEmpty();

        cache.put("r", "s", "t2", Duration.ofSeconds(60));
        cache.invalidate("r", "s", "other");
        assertThat(cache.get("r", "s")).contains("t2");
        cache.invalidate("r", "s", "t2");
        assertThat(cache.get("r", "s")).isEmpty();
        assertThat(cache.toString()).doesNotContain("t2");
    }

    @Test
    void errorTextIsCleanedAndCut() {
        assertThat(RegistrySession.truncate("a\nb\u0000c", 10)).isEqualTo("a b c");
        assertThat(RegistrySession.truncate("x".repeat(20), 5)).isEqualTo("xxxxx…");
        assertThat(RegistrySession.truncate(null, 5)).isEmpty();
    }

    @Test
    void aCustomHttpClientMustNotFollowRedirects() {
        var following = java.net.http.HttpClient.newBuilder().followRedirects(java.net.http.HttpClient.Redirect.NORMAL).build();
        assertThatThrownBy(() -> RegistryClient.builder().httpClient(following)).hasMessageContaining("Redirect.NEVER");
        assertThat(Optional.of(RegistryClient.builder().httpClient(java.net.http.HttpClient.newBuilder().build()).build())).isPresent();
    }

    private static String b64(String s) {
        return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }

    private static final class MutableClock extends Clock {
        Instant now = Instant.parse("2025-01-01T00:00:00Z");

        @Override
        public ZoneOffset getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(java.time.ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return now;
        }
    }
}
