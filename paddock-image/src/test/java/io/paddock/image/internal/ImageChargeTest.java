package io.paddock.image.internal;

import io.paddock.ByteSize;
import io.paddock.DestinationRule;
import io.paddock.ErrorCode;
import io.paddock.ImageListener;
import io.paddock.RegistryAuth;
import io.paddock.SandboxException;
import io.paddock.image.internal.oci.Descriptor;
import io.paddock.image.internal.oci.Digest;
import io.paddock.image.internal.oci.ImageConfig;
import io.paddock.image.internal.store.ImageStore;
import io.paddock.testkit.TestRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The image store's owners records (ATTACKS.md A83h), on a real store in a temporary directory: a layer is charged
 * once, to the first owner that stored it, at its unpacked files plus its compressed blob; the records survive a new
 * service on the same store; an owner past its maximum is refused; collecting deletes what an owner brought in that no
 * image needs, and keeps what a named image uses; a prune forgets the owners of the layers it deleted. A charged pull
 * (from a real docker-registry on loopback) past the maximum leaves nothing; one under it is charged, and its name is
 * recorded as its owner's.
 */
class ImageChargeTest {
    @TempDir
    Path tmp;

    private Path dirWith(String name, int bytes, long seed) throws IOException {
        Path d = Files.createDirectories(tmp.resolve("src-" + name));
        byte[] noise = new byte[bytes];
        new Random(seed).nextBytes(noise);
        Files.write(d.resolve(name), noise);
        return d;
    }

    @Test
    void aLayerIsChargedOnceToItsFirstOwnerAndTheRecordsOutliveTheService() throws IOException {
        Path root = tmp.resolve("store");
        ImageService images = new ImageService(root);
        ImageCharge alice = images.charge("alice", ByteSize.mib(8));
        Path a = dirWith("a.bin", 300_000, 1);
        Digest layer = images.storeLayer(a, 0, Set.of(), alice);
        Descriptor blob = images.store().layerBlob(layer).orElseThrow();
        long expected = 300_000 + blob.size();
        assertThat(images.store().ownedBytes("alice")).isEqualTo(expected);
        assertThat(alice.layers()).containsExactly(layer);

        // the same layer stored again, by another owner or by nobody, costs nothing
        ImageCharge bob = images.charge("bob", ByteSize.mib(8));
        assertThat(images.storeLayer(a, 0, Set.of(), bob)).isEqualTo(layer);
        assertThat(images.store().ownedBytes("bob")).isZero();
        assertThat(bob.layers()).isEmpty();
        images.storeLayer(a, 0, Set.of(), ImageCharge.NONE);
        assertThat(images.store().ownedBytes("alice")).isEqualTo(expected);

        // a restarted daemon reads the same records
        ImageService again = new ImageService(root);
        assertThat(again.store().ownedBytes("alice")).isEqualTo(expected);
        assertThat(again.charge("alice", ByteSize.bytes(expected)).remaining()).isZero();
        assertThatThrownBy(() -> again.charge("alice", ByteSize.bytes(expected)).checkBefore("this build"))
                .isInstanceOfSatisfying(SandboxException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.RESOURCE_EXHAUSTED);
                    assertThat(e.getMessage()).startsWith("'alice' holds ").contains("this build");
                });
        again.charge("alice", ByteSize.bytes(expected + 1)).checkBefore("this build"); // under it: no refusal
    }

    @Test
    void aLayerPastTheMaximumFailsAndIsCollectedWithItsBlob() throws IOException {
        ImageService images = new ImageService(tmp.resolve("store"));
        ImageCharge small = images.charge("carol", ByteSize.kib(256));
        assertThatThrownBy(() -> images.storeLayer(dirWith("big.bin", 512 << 10, 2), 0, Set.of(), small))
                .isInstanceOfSatisfying(SandboxException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.RESOURCE_EXHAUSTED);
                    assertThat(e.getMessage()).startsWith("'carol' holds ").contains("maximum of 256k");
                });
        Digest layer = small.layers().iterator().next();
        Digest blob = images.store().layerBlob(layer).orElseThrow().digest();
        assertThat(images.collect(small, Set.of())).isGreaterThan(512 << 10);
        assertThat(images.store().hasLayer(layer)).isFalse();
        assertThat(images.store().blobs().has(blob)).isFalse();
        assertThat(images.store().ownedBytes("carol")).isZero();
        assertThat(Files.readString(images.store().root().resolve("owners.json"))).doesNotContain(layer.hex());
    }

    @Test
    void collectingAnOwnersLayersKeepsWhatANamedImageUsesAndPruneForgetsWhatItDeleted() throws IOException {
        ImageService images = new ImageService(tmp.resolve("store"));
        ImageCharge dave = images.charge("dave", ByteSize.mib(8));
        Digest kept = images.storeLayer(dirWith("kept.bin", 100_000, 3), 0, Set.of(), dave);
        Digest cached = images.storeLayer(dirWith("cached.bin", 100_000, 4), 0, Set.of(), dave);
        images.snapshot(ImageConfig.empty(), kept, "dave/app:1");
        // a build step's intermediate stacking the other layer does not keep it
        Digest intermediate = images.store().blobs().put(ImageConfig.empty().withLayers(List.of(cached)).toJson());
        images.store().put(intermediate, List.of(), List.of());

        long freed = images.collectOwned("dave", Set.of());
        assertThat(freed).isGreaterThanOrEqualTo(100_000);
        assertThat(images.store().hasLayer(kept)).as("a named image uses it").isTrue();
        assertThat(images.store().hasLayer(cached)).isFalse();
        assertThat(images.store().get(intermediate)).isEmpty();
        assertThat(images.store().owned("dave")).containsOnlyKeys(kept);

        // removing the name lets it go, at the next collect or prune
        images.remove("dave/app:1", id -> false);
        images.prune(Set.of());
        assertThat(images.store().hasLayer(kept)).isFalse();
        assertThat(images.store().ownedBytes("dave")).isZero();
        assertThat(Files.readString(images.store().root().resolve("owners.json"))).doesNotContain(kept.hex());
    }

    @Test
    void aChargedPullIsChargedItsNameRecordedAndOnePastTheMaximumLeavesNothing() throws IOException {
        try (TestRegistry registry = TestRegistry.start()) {
            registry.pushBusybox("acc/busy:1");
            String ref = registry.host() + "/acc/busy:1";
            ImageService images = new ImageService(tmp.resolve("store"));
            ImageCharge tiny = images.charge("erin", ByteSize.kib(64));
            assertThatThrownBy(() -> images.pull(ref, RegistryAuth.none().insecure(), ImageListener.NONE,
                    DestinationRule.ANYWHERE, tiny)).isInstanceOfSatisfying(SandboxException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.RESOURCE_EXHAUSTED);
                        assertThat(e.getMessage()).startsWith("'erin' holds ").contains("maximum of 64k");
                    });
            assertThat(tiny.blobs()).isNotEmpty();
            images.collect(tiny, Set.of());
            assertThat(tiny.blobs()).noneMatch(images.store().blobs()::has);
            try (var layers = Files.list(images.store().layersDir())) {
                assertThat(layers.filter(p -> !p.getFileName().toString().startsWith("."))).isEmpty();
            }
            assertThat(images.find(ref)).isEmpty();
            assertThat(images.store().ownedBytes("erin")).isZero();

            ImageCharge enough = images.charge("erin", ByteSize.mib(64));
            ImageStore.StoredImage pulled = images.pull(ref, RegistryAuth.none().insecure(), ImageListener.NONE,
                    DestinationRule.ANYWHERE, enough);
            long blobs = pulled.layers().stream().mapToLong(Descriptor::size).sum();
            assertThat(images.store().ownedBytes("erin")).isGreaterThan(blobs);
            assertThat(images.nameOwner(ref)).hasValue("erin");
            // pulled again by another owner: the layers cost it nothing, the name is now its
            images.pull(ref, RegistryAuth.none().insecure(), ImageListener.NONE, DestinationRule.ANYWHERE,
                    images.charge("frank", ByteSize.mib(64)));
            assertThat(images.store().ownedBytes("frank")).isZero();
            assertThat(images.nameOwner(ref)).hasValue("frank");
            // removed, the first owner's layers go at its next collect
            images.remove(ref, id -> false);
            assertThat(images.nameOwner(ref)).isEmpty();
            images.collectOwned("erin", Set.of());
            assertThat(images.store().ownedBytes("erin")).isZero();
            assertThat(pulled.config().diffIds()).noneMatch(images.store()::hasLayer);
        }
    }

    @Test
    void anOwnersNameIsChecked() {
        ImageStore store = new ImageStore(tmp.resolve("store"));
        assertThatThrownBy(() -> ImageCharge.of(store, "../x", ByteSize.mib(1))).isInstanceOf(SandboxException.class);
        assertThatThrownBy(() -> ImageCharge.of(store, "", ByteSize.mib(1))).isInstanceOf(SandboxException.class);
        assertThat(ImageCharge.NONE.remaining()).isEqualTo(Long.MAX_VALUE);
    }
}
