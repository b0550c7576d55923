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
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Pulls from a real docker-registry: images made by umoci and skopeo, indexes, corrupted storage, failures. */
class RegistryPullTest {
    private static TestRegistry registry;

    @TempDir
    Path tmp;

    @BeforeAll
    static void startRegistry() {
        registry = TestRegistry.start();
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
    void pullsAnImageThatUmociBuiltAndSkopeoPushed() throws Exception {
        Path layout = tmp.resolve("layout");
        TestRegistry.run(tmp, "umoci", "init", "--layout", layout.toString());
        TestRegistry.run(tmp, "umoci", "new", "--image", layout + ":t");
        TestRegistry.run(tmp, "umoci", "unpack", "--image", layout + ":t", "b1");
        Files.writeString(tmp.resolve("b1/rootfs/hello.txt"), "hello\n");
        Files.writeString(tmp.resolve("b1/rootfs/gone.txt"), "soon deleted\n");
        TestRegistry.run(tmp, "umoci", "repack", "--image", layout + ":t", "b1");
        TestRegistry.run(tmp, "umoci", "unpack", "--image", layout + ":t", "b2");
        Files.delete(tmp.resolve("b2/rootfs/gone.txt"));
        Files.writeString(tmp.resolve("b2/rootfs/two.txt"), "second layer\n");
        TestRegistry.run(tmp, "umoci", "repack", "--image", layout + ":t", "b2");
        String target = "docker://" + registry.host() + "/acc/umoci:1";
        TestRegistry.run(tmp, "skopeo", "copy", "--dest-tls-verify=false", "oci:" + layout + ":t", target);
        JsonNode manifest = TestImages.JSON.readTree(TestRegistry.run(tmp, "skopeo", "inspect", "--raw", "--tls-verify=false", target));
        Digest skopeoDigest = Digest.parse(TestImages.JSON.readTree(
                TestRegistry.run(tmp, "skopeo", "inspect", "--tls-verify=false", target)).path("Digest").asText());

        BlobStore store = new BlobStore(tmp.resolve("store"));
        List<String> events = new ArrayList<>();
        PullListener listener = new PullListener() {
            @Override
            public void layerStarted(Descriptor layer) {
                events.add("start " + layer.digest().shortHex(8));
            }

            @Override
            public void layerProgress(Descriptor layer, long bytesDone) {
                assertThat(bytesDone).isBetween(0L, layer.size());
            }

            @Override
            public void layerDone(Descriptor layer, boolean cached) {
                events.add((cached ? "cached " : "fetched ") + layer.digest().shortHex(8));
            }
        };
        Pulled p = client().pull(ref("acc/umoci:1"), "linux/amd64", store, listener);

        assertThat(p.manifestDigest()).isEqualTo(skopeoDigest);
        assertThat(p.manifestMediaType()).isEqualTo(MediaTypes.OCI_MANIFEST);
        assertThat(p.index()).isEmpty();
        assertThat(p.config()).isEqualTo(Digest.parse(manifest.path("config").path("digest").asText()));
        assertThat(p.layers()).hasSize(2);
        for (int i = 0; i < 2; i++) {
            JsonNode l = manifest.path("layers").get(i);
            assertThat(p.layers().get(i)).isEqualTo(new Descriptor(l.path("mediaType").asText(),
                    Digest.parse(l.path("digest").asText()), l.path("size").asLong()));
        }
        for (Digest d : allOf(p)) {
            assertThat(store.has(d)).as("%s in the store", d).isTrue();
            assertThat(Digest.of(Files.readAllBytes(store.path(d)))).as("stored bytes hash to their name").isEqualTo(d);
        }
        assertThat(TestImages.JSON.readTree(store.read(p.manifestDigest(), 1 << 20))).isEqualTo(manifest);
        assertThat(tarNames(store, p.layers().get(0))).contains("hello.txt", "gone.txt");
        assertThat(tarNames(store, p.layers().get(1))).contains("two.txt", ".wh.gone.txt").doesNotContain("hello.txt");
        String l0 = p.layers().get(0).digest().shortHex(8);
        String l1 = p.layers().get(1).digest().shortHex(8);
        assertThat(events).containsExactly("start " + l0, "fetched " + l0, "start " + l1, "fetched " + l1);

        events.clear();
        Pulled again = client().pull(ref("acc/umoci:1"), "linux/amd64", store, listener);
        assertThat(again).isEqualTo(p);
        assertThat(events).containsExactly("start " + l0, "cached " + l0, "start " + l1, "cached " + l1);
    }

    @Test
    void picksThePlatformFromAnIndexPushedByTheClient() {
        BlobStore src = new BlobStore(tmp.resolve("src"));
        TestImages.Built arm = TestImages.oci(src, "arm64", 1);
        TestImages.Built amd = TestImages.oci(src, "amd64", 2);
        TestImages.Built index = TestImages.index(src, MediaTypes.OCI_INDEX,
                List.of(Map.entry(arm, "linux/arm64"), Map.entry(amd, "linux/amd64")));
        RegistryClient c = client();
        pushByDigest(c, "acc/multi", src, arm);
        pushByDigest(c, "acc/multi", src, amd);
        c.push(ref("acc/multi:1"), src, index.manifest(), MediaTypes.OCI_INDEX, List.of(), PushListener.NONE);

        BlobStore dst = new BlobStore(tmp.resolve("dst"));
        Pulled p = c.pull(ref("acc/multi:1"), "linux/amd64", dst, PullListener.NONE);
        assertThat(p.manifestDigest()).isEqualTo(amd.manifest());
        assertThat(p.index()).contains(index.manifest());
        assertThat(p.config()).isEqualTo(amd.config().digest());
        assertThat(p.layers()).isEqualTo(amd.layers());
        assertThat(dst.has(index.manifest())).isTrue();
        assertThat(dst.has(amd.manifest())).isTrue();
        assertThat(dst.has(arm.manifest())).isFalse();
        assertThat(dst.has(arm.config().digest())).isFalse();

        Pulled pinned = c.pull(ref("acc/multi@" + index.manifest()), "linux/arm64/v8", dst, PullListener.NONE);
        assertThat(pinned.manifestDigest()).isEqualTo(arm.manifest());
        assertThat(pinned.index()).contains(index.manifest());
    }

    @Test
    void readsDockerManifestListsAndSchema2Manifests() {
        BlobStore src = new BlobStore(tmp.resolve("src"));
        TestImages.Built amd = TestImages.docker(src, "amd64", 1);
        TestImages.Built list = TestImages.index(src, MediaTypes.DOCKER_LIST, List.of(Map.entry(amd, "linux/amd64")));
        RegistryClient c = client();
        pushByDigest(c, "acc/dockerish", src, amd);
        c.push(ref("acc/dockerish:list"), src, list.manifest(), MediaTypes.DOCKER_LIST, List.of(), PushListener.NONE);

        Pulled p = c.pull(ref("acc/dockerish:list"), "linux/amd64", new BlobStore(tmp.resolve("dst")), PullListener.NONE);
        assertThat(p.manifestMediaType()).isEqualTo(MediaTypes.DOCKER_MANIFEST);
        assertThat(p.manifestDigest()).isEqualTo(amd.manifest());
        assertThat(p.index()).contains(list.manifest());
    }

    @Test
    void anIndexWithoutThePlatformIsNotFoundAndListsWhatItHas() {
        BlobStore src = new BlobStore(tmp.resolve("src"));
        TestImages.Built arm64 = TestImages.oci(src, "arm64", 1);
        TestImages.Built arm = TestImages.oci(src, "arm", 1);
        TestImages.Built index = TestImages.index(src, MediaTypes.OCI_INDEX,
                List.of(Map.entry(arm64, "linux/arm64"), Map.entry(arm, "linux/arm/v7")));
        RegistryClient c = client();
        pushByDigest(c, "acc/armonly", src, arm64);
        pushByDigest(c, "acc/armonly", src, arm);
        c.push(ref("acc/armonly:1"), src, index.manifest(), MediaTypes.OCI_INDEX, List.of(), PushListener.NONE);

        BlobStore dst = new BlobStore(tmp.resolve("dst"));
        assertThatThrownBy(() -> c.pull(ref("acc/armonly:1"), "linux/amd64", dst, PullListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.NOT_FOUND))
                .hasMessage("no linux/amd64 image in " + registry.host() + "/acc/armonly:1; it has: linux/arm64, linux/arm/v7");
        assertThat(dst.list()).isEmpty();
    }

    @Test
    void aSingleManifestForAnotherPlatformIsNotFound() {
        BlobStore src = new BlobStore(tmp.resolve("src"));
        TestImages.Built arm = TestImages.oci(src, "arm64", 1);
        RegistryClient c = client();
        c.push(ref("acc/armsingle:1"), src, arm.manifest(), arm.mediaType(), arm.blobs(), PushListener.NONE);
        BlobStore dst = new BlobStore(tmp.resolve("dst"));
        assertThatThrownBy(() -> c.pull(ref("acc/armsingle:1"), "linux/amd64", dst, PullListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.NOT_FOUND))
                .hasMessageEndingWith("it has: linux/arm64");
        assertThat(dst.has(arm.layers().get(0).digest())).as("no layer fetched").isFalse();
    }

    @Test
    void aBlobCorruptedInTheRegistrysStorageIsRefusedAndNothingOfItIsKept() throws IOException {
        BlobStore src = new BlobStore(tmp.resolve("src"));
        TestImages.Built img = TestImages.oci(src, "amd64", 2);
        RegistryClient c = client();
        c.push(ref("acc/corrupt:1"), src, img.manifest(), img.mediaType(), img.blobs(), PushListener.NONE);
        Descriptor victim = img.layers().get(1);
        Path data = registry.blobData(victim.digest().hex());
        byte[] b = Files.readAllBytes(data);
        b[b.length / 2] ^= 0x5a; // same size, other content
        Files.write(data, b);

        BlobStore dst = new BlobStore(tmp.resolve("dst"));
        assertThatThrownBy(() -> c.pull(ref("acc/corrupt:1"), "linux/amd64", dst, PullListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT))
                .hasMessageContaining("digest mismatch").hasMessageContaining(victim.digest().toString());
        assertThat(dst.has(victim.digest())).isFalse();
        assertThat(dst.has(img.layers().get(0).digest())).as("the good layer before it is kept").isTrue();
        try (Stream<Path> files = Files.list(dst.path(victim.digest()).getParent())) {
            assertThat(files.map(f -> f.getFileName().toString())).noneMatch(n -> n.startsWith(".tmp-"));
        }
    }

    @Test
    void aMissingImageOrTagIsNotFound() {
        BlobStore dst = new BlobStore(tmp.resolve("dst"));
        assertThatThrownBy(() -> client().pull(ref("acc/nothing-here:1"), "linux/amd64", dst, PullListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.NOT_FOUND))
                .hasMessageStartingWith("image " + registry.host() + "/acc/nothing-here:1 not found in registry " + registry.host());
        BlobStore src = new BlobStore(tmp.resolve("src"));
        TestImages.Built img = TestImages.oci(src, "amd64", 1);
        client().push(ref("acc/has-one:1"), src, img.manifest(), img.mediaType(), img.blobs(), PushListener.NONE);
        assertThatThrownBy(() -> client().pull(ref("acc/has-one:2"), "linux/amd64", dst, PullListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.NOT_FOUND));
        assertThatThrownBy(() -> client().pull(ref("acc/has-one@sha256:" + "0".repeat(64)), "linux/amd64", dst, PullListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.NOT_FOUND));
    }

    @Test
    void httpsAgainstAPlainHttpRegistrySuggestsInsecure() {
        RegistryClient secure = RegistryClient.builder().build();
        assertThatThrownBy(() -> secure.pull(ref("acc/umoci:1"), "linux/amd64", new BlobStore(tmp.resolve("dst")), PullListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.UNAVAILABLE))
                .hasMessageStartingWith("cannot reach registry " + registry.host() + " over https")
                .hasMessageContaining("--insecure");
    }

    @Test
    void aClosedPortIsUnavailable() throws IOException {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            port = s.getLocalPort();
        }
        ImageRef nowhere = ImageRef.parse("127.0.0.1:" + port + "/acc/x:1");
        assertThatThrownBy(() -> client().pull(nowhere, "linux/amd64", new BlobStore(tmp.resolve("dst")), PullListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.UNAVAILABLE))
                .hasMessage("cannot reach registry 127.0.0.1:" + port + ": connection refused");
    }

    @Test
    void refusesABadPlatform() {
        assertThatThrownBy(() -> client().pull(ref("acc/x:1"), "amd64", new BlobStore(tmp.resolve("dst")), PullListener.NONE))
                .hasMessageStartingWith("platform: ");
    }

    private void pushByDigest(RegistryClient c, String repo, BlobStore src, TestImages.Built img) {
        c.push(ref(repo + "@" + img.manifest()), src, img.manifest(), img.mediaType(), img.blobs(), PushListener.NONE);
    }

    private static List<Digest> allOf(Pulled p) {
        List<Digest> all = new ArrayList<>(List.of(p.manifestDigest(), p.config()));
        p.layers().forEach(l -> all.add(l.digest()));
        return all;
    }

    private static List<String> tarNames(BlobStore store, Descriptor layer) throws IOException {
        List<String> names = new ArrayList<>();
        try (InputStream in = new TarArchiveInputStream(new GZIPInputStream(store.open(layer.digest())))) {
            TarArchiveInputStream tar = (TarArchiveInputStream) in;
            for (TarArchiveEntry e = tar.getNextEntry(); e != null; e = tar.getNextEntry()) {
                names.add(e.getName().replaceFirst("^\\./", ""));
            }
        }
        return names;
    }
}
