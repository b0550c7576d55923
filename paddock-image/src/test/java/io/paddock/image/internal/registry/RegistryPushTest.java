package io.paddock.image.internal.registry;

import io.paddock.testkit.TestRegistry;
import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.image.internal.oci.Descriptor;
import io.paddock.image.internal.oci.Digest;
import io.paddock.image.internal.oci.ImageRef;
import io.paddock.image.internal.oci.MediaTypes;
import io.paddock.image.internal.store.BlobStore;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Pushes into a real docker-registry, read back with skopeo. This registry answers upload Locations relative
 * to itself, so the client's resolving of relative Locations (with their {@code ?_state=} query) is exercised.
 */
class RegistryPushTest {
    private static TestRegistry registry;

    @TempDir
    Path tmp;

    @BeforeAll
    static void startRegistry() {
        registry = TestRegistry.startWithRelativeUrls();
    }

    @AfterAll
    static void stopRegistry() {
        if (registry != null) {
            registry.close();
        }
    }

    private static RegistryClient client() {
        return RegistryClient.builder().insecure(true).build();
    }

    private ImageRef ref(String repoAndTag) {
        return ImageRef.parse(registry.host() + "/" + repoAndTag);
    }

    @Test
    void thisRegistryHandsOutRelativeUploadLocationsWithAQuery() throws Exception {
        HttpResponse<Void> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                        URI.create("http://" + registry.host() + "/v2/acc/probe/blobs/uploads/"))
                .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.discarding());
        assertThat(r.statusCode()).isEqualTo(202);
        assertThat(r.headers().firstValue("Location").orElseThrow()).startsWith("/v2/acc/probe/blobs/uploads/").contains("?_state=");
    }

    @Test
    void pushesAnImageThatSkopeoReadsBackAndSkipsWhatIsThereTheSecondTime() throws Exception {
        BlobStore store = new BlobStore(tmp.resolve("store"));
        TestImages.Built img = TestImages.oci(store, "amd64", 2);
        List<String> events = new ArrayList<>();
        PushListener listener = new PushListener() {
            @Override
            public void blobStarted(Descriptor blob) {
                events.add("start " + blob.digest().shortHex(8));
            }

            @Override
            public void blobDone(Descriptor blob, boolean alreadyPresent) {
                events.add((alreadyPresent ? "present " : "uploaded ") + blob.digest().shortHex(8));
            }

            @Override
            public void manifestPushed(ImageRef target, Digest manifest) {
                events.add("manifest " + target.tag().orElseThrow() + " " + manifest.shortHex(8));
            }
        };
        client().push(ref("acc/pushed:1"), store, img.manifest(), img.mediaType(), img.blobs(), listener);
        List<String> expected = new ArrayList<>();
        for (Descriptor b : img.blobs()) {
            expected.add("start " + b.digest().shortHex(8));
            expected.add("uploaded " + b.digest().shortHex(8));
        }
        expected.add("manifest 1 " + img.manifest().shortHex(8));
        assertThat(events).containsExactlyElementsOf(expected);

        String target = "docker://" + registry.host() + "/acc/pushed:1";
        JsonNode inspect = TestImages.JSON.readTree(TestRegistry.run(tmp, "skopeo", "inspect", "--tls-verify=false", target));
        assertThat(inspect.path("Digest").asText()).isEqualTo(img.manifest().toString());
        assertThat(inspect.path("Architecture").asText()).isEqualTo("amd64");
        assertThat(inspect.path("Layers")).extracting(JsonNode::asText)
                .containsExactly(img.layers().get(0).digest().toString(), img.layers().get(1).digest().toString());
        String raw = TestRegistry.run(tmp, "skopeo", "inspect", "--raw", "--tls-verify=false", target);
        assertThat(raw.strip()).isEqualTo(new String(img.manifestBytes(), java.nio.charset.StandardCharsets.UTF_8));
        // skopeo downloads every blob and checks it against its digest
        TestRegistry.run(tmp, "skopeo", "copy", "--src-tls-verify=false", target, "oci:" + tmp.resolve("copy") + ":x");
        for (Descriptor b : img.blobs()) {
            Path copied = tmp.resolve("copy/blobs/sha256").resolve(b.digest().hex());
            assertThat(Files.readAllBytes(copied)).isEqualTo(Files.readAllBytes(store.path(b.digest())));
        }

        events.clear();
        client().push(ref("acc/pushed:2"), store, img.manifest(), img.mediaType(), img.blobs(), listener);
        expected.clear();
        for (Descriptor b : img.blobs()) {
            expected.add("start " + b.digest().shortHex(8));
            expected.add("present " + b.digest().shortHex(8));
        }
        expected.add("manifest 2 " + img.manifest().shortHex(8));
        assertThat(events).containsExactlyElementsOf(expected);
    }

    @Test
    void aManifestNamingAMissingBlobIsRefusedWithTheRegistrysErrorCode() {
        BlobStore store = new BlobStore(tmp.resolve("store"));
        TestImages.Built img = TestImages.oci(store, "amd64", 2);
        List<Descriptor> withoutLastLayer = img.blobs().subList(0, 2);
        assertThatThrownBy(() -> client().push(ref("acc/half:1"), store, img.manifest(), img.mediaType(), withoutLastLayer,
                PushListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.UNAVAILABLE))
                .hasMessageContaining("registry " + registry.host() + " answered 400 to pushing the manifest of " + ref("acc/half:1"))
                .hasMessageContaining("MANIFEST_BLOB_UNKNOWN");
    }

    @Test
    void checksWhatItPushesBeforeTalkingToTheRegistry() {
        BlobStore store = new BlobStore(tmp.resolve("store"));
        TestImages.Built img = TestImages.oci(store, "amd64", 1);
        Descriptor layer = img.layers().get(0);
        Descriptor wrongSize = new Descriptor(layer.mediaType(), layer.digest(), layer.size() + 1);
        assertThatThrownBy(() -> client().push(ref("acc/bad:1"), store, img.manifest(), img.mediaType(),
                List.of(img.config(), wrongSize), PushListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT))
                .hasMessageContaining("size mismatch");
        Descriptor absent = new Descriptor(layer.mediaType(), Digest.of(new byte[] {1}), 1);
        assertThatThrownBy(() -> client().push(ref("acc/bad:1"), store, img.manifest(), img.mediaType(), List.of(absent),
                PushListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.NOT_FOUND))
                .hasMessageContaining("not in the local store");
        assertThatThrownBy(() -> client().push(ref("acc/bad@" + Digest.of(new byte[] {2})), store, img.manifest(),
                img.mediaType(), img.blobs(), PushListener.NONE))
                .hasMessageContaining("pins a digest");
        assertThatThrownBy(() -> client().push(ref("acc/bad:1"), store, img.manifest(), "application/json",
                img.blobs(), PushListener.NONE))
                .hasMessageStartingWith("manifestMediaType: ");
        assertThatThrownBy(() -> client().push(ref("acc/bad:1"), store, Digest.of(new byte[] {3}), MediaTypes.OCI_MANIFEST,
                img.blobs(), PushListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.NOT_FOUND));
    }

    @Test
    void aPushedImageRoundTripsThroughPull() {
        BlobStore store = new BlobStore(tmp.resolve("store"));
        TestImages.Built img = TestImages.docker(store, "amd64", 3);
        client().push(ref("acc/roundtrip:1"), store, img.manifest(), img.mediaType(), img.blobs(), PushListener.NONE);
        BlobStore back = new BlobStore(tmp.resolve("back"));
        Pulled p = client().pull(ref("acc/roundtrip:1"), "linux/amd64", back, PullListener.NONE);
        assertThat(p).isEqualTo(new Pulled(img.manifest(), MediaTypes.DOCKER_MANIFEST, img.config().digest(), img.layers(),
                java.util.Optional.empty()));
        assertThat(back.list()).containsExactlyInAnyOrderElementsOf(store.list());
    }
}
