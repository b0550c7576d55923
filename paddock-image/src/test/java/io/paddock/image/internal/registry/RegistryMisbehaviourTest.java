package io.paddock.image.internal.registry;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.image.internal.oci.Descriptor;
import io.paddock.image.internal.oci.Digest;
import io.paddock.image.internal.oci.ImageRef;
import io.paddock.image.internal.oci.MediaTypes;
import io.paddock.image.internal.store.BlobStore;
import org.assertj.core.api.AbstractThrowableAssert;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Registries that lie or fail, played by a {@link FakeServer}: oversized and mislabelled manifests, blobs
 * that do not match their descriptors, error bodies, slow answers, redirect loops. Whatever they send, the
 * client refuses it with the right code and the store keeps nothing that is wrong.
 */
class RegistryMisbehaviourTest {
    private record Route(int status, Map<String, String> headers, byte[] body, boolean chunked, long delayMillis) {
    }

    private static final Map<String, Route> ROUTES = new ConcurrentHashMap<>();
    private static FakeServer server;

    @TempDir
    Path tmp;
    private BlobStore store;

    @BeforeAll
    static void start() {
        server = new FakeServer(ex -> {
            Route r = ROUTES.get(ex.getRequestURI().getPath());
            if (r == null) {
                FakeServer.respond(ex, 404, Map.of("Content-Type", "application/json"),
                        "{\"errors\":[{\"code\":\"NOT_FOUND\",\"message\":\"no route\"}]}".getBytes(StandardCharsets.UTF_8));
                return;
            }
            if (r.delayMillis() > 0) {
                try {
                    Thread.sleep(r.delayMillis());
                } catch (InterruptedException e) {
                    return;
                }
            }
            FakeServer.respond(ex, r.status(), r.headers(), r.body(), r.chunked());
        });
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
    }

    @BeforeEach
    void clear() {
        ROUTES.clear();
        store = new BlobStore(tmp.resolve("store"));
    }

    private static RegistryClient client() {
        return RegistryClient.builder().insecure(true).build();
    }

    private static ImageRef ref(String s) {
        return ImageRef.parse(server.host() + "/" + s);
    }

    private static void route(String path, int status, Map<String, String> headers, byte[] body) {
        ROUTES.put(path, new Route(status, headers, body, false, 0));
    }

    private static void manifest(String reference, byte[] body, String mediaType, boolean chunked) {
        ROUTES.put("/v2/acc/x/manifests/" + reference, new Route(200, Map.of("Content-Type", mediaType,
                "Docker-Content-Digest", Digest.of(body).toString()), body, chunked, 0));
    }

    private static void blob(Digest d, byte[] body, boolean chunked) {
        ROUTES.put("/v2/acc/x/blobs/" + d, new Route(200, Map.of("Content-Type", "application/octet-stream"), body, chunked, 0));
    }

    private AbstractThrowableAssert<?, ? extends Throwable> assertPullFails(String reference, ErrorCode code) {
        return assertThatThrownBy(() -> client().pull(ref(reference), "linux/amd64", store, PullListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(code));
    }

    /** A manifest with one config and the given layers, all served correctly; returns its bytes. */
    private byte[] image(List<byte[]> layers, boolean chunkedBlobs) {
        byte[] config = "{\"architecture\":\"amd64\",\"os\":\"linux\"}".getBytes(StandardCharsets.UTF_8);
        Descriptor c = new Descriptor(MediaTypes.OCI_CONFIG, Digest.of(config), config.length);
        blob(c.digest(), config, chunkedBlobs);
        List<Descriptor> ls = layers.stream().map(l -> new Descriptor(MediaTypes.OCI_LAYER_GZIP, Digest.of(l), l.length)).toList();
        for (int i = 0; i < ls.size(); i++) {
            blob(ls.get(i).digest(), layers.get(i), chunkedBlobs);
        }
        return TestImages.manifest(MediaTypes.OCI_MANIFEST, c, ls);
    }

    private void assertNoTemporaries() throws IOException {
        try (Stream<Path> s = Files.list(tmp.resolve("store/sha256"))) {
            assertThat(s.map(p -> p.getFileName().toString())).noneMatch(n -> n.startsWith(".tmp-"));
        }
    }

    @Test
    void aWellBehavedFakeIsPulled() {
        byte[] m = image(List.of(bytes(1000, 1), bytes(3 << 20, 2)), true);
        manifest("1", m, MediaTypes.OCI_MANIFEST, false);
        long[] progress = new long[1];
        Pulled p = client().pull(ref("acc/x:1"), "linux/amd64", store, new PullListener() {
            @Override
            public void layerProgress(Descriptor layer, long bytesDone) {
                progress[0] = Math.max(progress[0], bytesDone);
            }
        });
        assertThat(p.layers()).hasSize(2);
        assertThat(progress[0]).isEqualTo(3 << 20);
    }

    @Test
    void anOversizedManifestIsRefusedWithOrWithoutContentLength() throws IOException {
        byte[] big = new byte[(4 << 20) + 1];
        Arrays.fill(big, (byte) ' ');
        big[0] = '{';
        big[big.length - 1] = '}';
        manifest("big", big, MediaTypes.OCI_MANIFEST, false);
        assertPullFails("acc/x:big", ErrorCode.RESOURCE_EXHAUSTED)
                .hasMessage("the manifest of " + ref("acc/x:big") + " is larger than the limit of 4194304 bytes");
        manifest("chunked", big, MediaTypes.OCI_MANIFEST, true);
        assertPullFails("acc/x:chunked", ErrorCode.RESOURCE_EXHAUSTED).hasMessageContaining("larger than the limit");
        assertThat(store.list()).isEmpty();
        assertNoTemporaries();
    }

    @Test
    void aManifestWhoseDigestHeaderLiesIsRefused() {
        byte[] m = image(List.of(bytes(10, 3)), false);
        ROUTES.put("/v2/acc/x/manifests/1", new Route(200, Map.of("Content-Type", MediaTypes.OCI_MANIFEST,
                "Docker-Content-Digest", Digest.of(new byte[] {9}).toString()), m, false, 0));
        assertPullFails("acc/x:1", ErrorCode.INVALID_ARGUMENT).hasMessageStartingWith("digest mismatch: registry "
                + server.host() + " says the manifest of " + ref("acc/x:1") + " is " + Digest.of(new byte[] {9}));
        assertThat(store.list()).isEmpty();
    }

    @Test
    void aPinnedDigestMustMatchTheContent() {
        byte[] m = image(List.of(bytes(10, 4)), false);
        Digest other = Digest.of(new byte[] {7});
        ROUTES.put("/v2/acc/x/manifests/" + other, new Route(200, Map.of("Content-Type", MediaTypes.OCI_MANIFEST), m, false, 0));
        assertPullFails("acc/x@" + other, ErrorCode.INVALID_ARGUMENT)
                .hasMessageStartingWith("digest mismatch: the manifest of " + ref("acc/x@" + other) + " should be " + other);
        assertThat(store.list()).isEmpty();
    }

    @Test
    void aBlobWithOtherContentThanItsDigestIsRefusedAndNotKept() throws IOException {
        byte[] good = bytes(5000, 5);
        byte[] m = image(List.of(good), false);
        manifest("1", m, MediaTypes.OCI_MANIFEST, false);
        byte[] evil = bytes(5000, 6);
        blob(Digest.of(good), evil, false);
        assertPullFails("acc/x:1", ErrorCode.INVALID_ARGUMENT)
                .hasMessage("digest mismatch: expected " + Digest.of(good) + ", the content is " + Digest.of(evil));
        assertThat(store.has(Digest.of(good))).isFalse();
        assertThat(store.has(Digest.of(evil))).isFalse();
        assertNoTemporaries();
    }

    @Test
    void aLayerLargerThanItsDescriptorIsRefusedWhetherItsLengthIsDeclaredOrNot() throws IOException {
        for (boolean chunked : new boolean[] {false, true}) {
            ROUTES.clear();
            byte[] layer = bytes(200_000, chunked ? 7 : 8);
            byte[] config = "{}".getBytes(StandardCharsets.UTF_8);
            blob(Digest.of(config), config, false);
            blob(Digest.of(layer), layer, chunked);
            Descriptor shortened = new Descriptor(MediaTypes.OCI_LAYER_GZIP, Digest.of(layer), layer.length - 1);
            byte[] m = TestImages.manifest(MediaTypes.OCI_MANIFEST,
                    new Descriptor(MediaTypes.OCI_CONFIG, Digest.of(config), config.length), List.of(shortened));
            manifest("1", m, MediaTypes.OCI_MANIFEST, false);
            assertPullFails("acc/x:1", ErrorCode.INVALID_ARGUMENT).hasMessageStartingWith("size mismatch")
                    .hasMessageContaining(Digest.of(layer).toString());
            assertThat(store.has(Digest.of(layer))).isFalse();
            assertNoTemporaries();
        }
    }

    @Test
    void aLayerOverTheLimitIsNotDownloaded() {
        byte[] m = image(List.of(bytes(100, 9)), false);
        manifest("1", m, MediaTypes.OCI_MANIFEST, false);
        RegistryClient small = RegistryClient.builder().insecure(true)
                .limits(RegistryClient.Limits.DEFAULT.withMaxBlobBytes(99)).build();
        assertThatThrownBy(() -> small.pull(ref("acc/x:1"), "linux/amd64", store, PullListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.RESOURCE_EXHAUSTED))
                .hasMessageContaining("is 100 bytes, more than the limit of 99 bytes");
        assertThat(store.list()).isEmpty();
    }

    @Test
    void anIndexEntryWhoseManifestHasAnotherSizeIsRefused() {
        byte[] m = image(List.of(bytes(10, 10)), false);
        Digest md = Digest.of(m);
        ROUTES.put("/v2/acc/x/manifests/" + md, new Route(200, Map.of("Content-Type", MediaTypes.OCI_MANIFEST), m, false, 0));
        String index = "{\"schemaVersion\":2,\"mediaType\":\"" + MediaTypes.OCI_INDEX + "\",\"manifests\":[{\"mediaType\":\""
                + MediaTypes.OCI_MANIFEST + "\",\"digest\":\"" + md + "\",\"size\":" + (m.length + 5)
                + ",\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"}}]}";
        manifest("idx", index.getBytes(StandardCharsets.UTF_8), MediaTypes.OCI_INDEX, false);
        assertPullFails("acc/x:idx", ErrorCode.INVALID_ARGUMENT).hasMessageContaining("size mismatch");
    }

    @Test
    void httpErrorsCarryTheStatusAndTheRegistrysErrorCode() {
        route("/v2/acc/x/manifests/1", 500, Map.of("Content-Type", "application/json"),
                ("{\"errors\":[{\"code\":\"UNKNOWN\",\"message\":\"disk\\nfull\"},{\"code\":\"X\"}]}").getBytes(StandardCharsets.UTF_8));
        assertPullFails("acc/x:1", ErrorCode.UNAVAILABLE)
                .hasMessage("registry " + server.host() + " answered 500 to fetching the manifest of " + ref("acc/x:1")
                        + ": UNKNOWN: disk full; X");
        route("/v2/acc/x/manifests/2", 429, Map.of(), "<html>slow down</html>".getBytes(StandardCharsets.UTF_8));
        assertPullFails("acc/x:2", ErrorCode.UNAVAILABLE).hasMessageEndingWith("answered 429 to fetching the manifest of "
                + ref("acc/x:2"));
        route("/v2/acc/x/manifests/3", 403, Map.of(), "{\"errors\":[{\"code\":\"DENIED\",\"message\":\"no\"}]}"
                .getBytes(StandardCharsets.UTF_8));
        assertPullFails("acc/x:3", ErrorCode.PERMISSION_DENIED).hasMessageContaining("denied").hasMessageContaining("(403): DENIED: no");
        route("/v2/acc/x/manifests/4", 401, Map.of("WWW-Authenticate", "Negotiate"), null);
        assertPullFails("acc/x:4", ErrorCode.PERMISSION_DENIED).hasMessageContaining("without an authentication challenge");
    }

    @Test
    void formatsPaddockDoesNotRunAreFailedPrecondition() {
        manifest("s1", "{\"schemaVersion\":1,\"name\":\"acc/x\",\"fsLayers\":[]}".getBytes(StandardCharsets.UTF_8),
                Manifests.DOCKER_SCHEMA1_SIGNED, false);
        assertPullFails("acc/x:s1", ErrorCode.FAILED_PRECONDITION).hasMessageContaining("schema 1");
        manifest("junk", "not json".getBytes(StandardCharsets.UTF_8), MediaTypes.OCI_MANIFEST, false);
        assertPullFails("acc/x:junk", ErrorCode.INVALID_ARGUMENT).hasMessageContaining("is not a valid manifest");
    }

    @Test
    void aSlowRegistryIsDeadlineExceeded() {
        ROUTES.put("/v2/acc/x/manifests/slow", new Route(200, Map.of(), new byte[] {'{', '}'}, false, 3000));
        RegistryClient impatient = RegistryClient.builder().insecure(true).timeout(Duration.ofMillis(300)).build();
        long start = System.nanoTime();
        assertThatThrownBy(() -> impatient.pull(ref("acc/x:slow"), "linux/amd64", store, PullListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.DEADLINE_EXCEEDED))
                .hasMessage("registry " + server.host() + " did not answer within 300 ms");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));
    }

    @Test
    void aRedirectLoopEnds() {
        route("/v2/acc/x/manifests/loop", 302, Map.of("Location", "/v2/acc/x/manifests/loop"), null);
        assertPullFails("acc/x:loop", ErrorCode.UNAVAILABLE).hasMessageContaining("redirected more than 10 times");
        route("/v2/acc/x/manifests/ftp", 302, Map.of("Location", "ftp://example/x"), null);
        assertPullFails("acc/x:ftp", ErrorCode.UNAVAILABLE).hasMessageContaining("not an http(s) URL");
    }

    private static byte[] bytes(int n, int seed) {
        byte[] b = new byte[n];
        new java.util.Random(seed).nextBytes(b);
        return b;
    }
}
