package io.paddock.image.internal.registry;

import io.paddock.testkit.TestRegistry;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.image.internal.oci.ImageRef;
import io.paddock.image.internal.store.BlobStore;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The token flow of Docker Hub, GHCR and Harbor: a {@link BearerFront} that wants {@code Bearer} tokens from
 * its token endpoint, in front of a real docker-registry.
 */
class RegistryBearerAuthTest {
    private static final String USER = "tok-user";
    private static final String PASSWORD = "tok-password-0815";
    private static TestRegistry registry;
    private static BearerFront front;

    @TempDir
    Path tmp;

    @BeforeAll
    static void start() {
        registry = TestRegistry.start();
        front = new BearerFront(registry, USER, PASSWORD);
    }

    @AfterAll
    static void stop() {
        if (front != null) {
            front.close();
        }
        if (registry != null) {
            registry.close();
        }
    }

    @BeforeEach
    void reset() {
        front.redirectBlobs = false;
        front.deniedRepositories.clear();
    }

    private static ImageRef ref(String repoAndTag) {
        return ImageRef.parse(front.host() + "/" + repoAndTag);
    }

    private static RegistryClient client(String password) {
        return RegistryClient.builder().insecure(true)
                .credentials(CredentialsProvider.of(front.host(), new Credentials(USER, password))).build();
    }

    @Test
    void pushAsksForPullAndPushPullForPullAndTokensAreCached() {
        RegistryClient c = client(PASSWORD);
        BlobStore store = new BlobStore(tmp.resolve("store"));
        TestImages.Built img = TestImages.oci(store, "amd64", 2);
        int before = front.tokensIssued();
        front.scopesAsked.clear();
        c.push(ref("acc/x:1"), store, img.manifest(), img.mediaType(), img.blobs(), PushListener.NONE);
        assertThat(front.tokensIssued() - before).as("one token for the whole push").isEqualTo(1);
        assertThat(front.scopesAsked).contains("repository:acc/x:pull,push");

        front.scopesAsked.clear();
        Pulled p = c.pull(ref("acc/x:1"), "linux/amd64", new BlobStore(tmp.resolve("back")), PullListener.NONE);
        assertThat(p.manifestDigest()).isEqualTo(img.manifest());
        assertThat(front.scopesAsked).containsExactly("repository:acc/x:pull");
        assertThat(front.tokensIssued() - before).isEqualTo(2);

        c.pull(ref("acc/x:1"), "linux/amd64", new BlobStore(tmp.resolve("again")), PullListener.NONE);
        assertThat(front.tokensIssued() - before).as("the pull token is reused").isEqualTo(2);
    }

    @Test
    void theAuthorizationHeaderDoesNotFollowARedirectToAnotherHost() {
        RegistryClient c = client(PASSWORD);
        BlobStore store = new BlobStore(tmp.resolve("store"));
        TestImages.Built img = TestImages.oci(store, "amd64", 2);
        c.push(ref("acc/cdn:1"), store, img.manifest(), img.mediaType(), img.blobs(), PushListener.NONE);
        front.redirectBlobs = true;
        front.cdnAuthorizations.clear();
        int cdnBefore = front.cdnRequests.get();
        BlobStore back = new BlobStore(tmp.resolve("back"));
        Pulled p = c.pull(ref("acc/cdn:1"), "linux/amd64", back, PullListener.NONE);
        assertThat(front.cdnRequests.get() - cdnBefore).as("config and two layers came from the other host").isEqualTo(3);
        assertThat(front.cdnAuthorizations).containsOnly("");
        assertThat(back.list()).containsAll(store.list());
        assertThat(p.layers()).isEqualTo(img.layers());
    }

    @Test
    void aWrongPasswordIsRefusedByTheTokenServiceAndNeverShown() {
        String wrong = "not-the-password-99";
        assertThatThrownBy(() -> client(wrong).pull(ref("acc/x:1"), "linux/amd64", new BlobStore(tmp.resolve("s")), PullListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.PERMISSION_DENIED);
                    assertThat(e.getMessage()).startsWith("registry " + front.host() + " refused the credentials for acc/x (401")
                            .doesNotContain(wrong).doesNotContain("tok-");
                });
    }

    @Test
    void anonymousClientsAreToldCredentialsAreNeeded() {
        RegistryClient anonymous = RegistryClient.builder().insecure(true).build();
        assertThatThrownBy(() -> anonymous.pull(ref("acc/x:1"), "linux/amd64", new BlobStore(tmp.resolve("s")), PullListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.PERMISSION_DENIED))
                .hasMessageContaining("requires credentials for acc/x");
    }

    @Test
    void aTokenTheRegistryRefusesEndsInPermissionDeniedAfterOneFreshTry() {
        RegistryClient c = client(PASSWORD);
        BlobStore store = new BlobStore(tmp.resolve("store"));
        TestImages.Built img = TestImages.oci(store, "amd64", 1);
        c.push(ref("acc/revoked:1"), store, img.manifest(), img.mediaType(), img.blobs(), PushListener.NONE);
        c.pull(ref("acc/revoked:1"), "linux/amd64", new BlobStore(tmp.resolve("a")), PullListener.NONE); // caches a pull token
        front.deniedRepositories.add("acc/revoked");
        int before = front.tokensIssued();
        assertThatThrownBy(() -> c.pull(ref("acc/revoked:1"), "linux/amd64", new BlobStore(tmp.resolve("b")), PullListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.PERMISSION_DENIED))
                .hasMessageContaining("refused the credentials for acc/revoked (401)")
                .hasMessageContaining("UNAUTHORIZED: authentication required");
        assertThat(front.tokensIssued() - before).as("the cached token is dropped and one fresh one tried").isEqualTo(1);
    }
}
