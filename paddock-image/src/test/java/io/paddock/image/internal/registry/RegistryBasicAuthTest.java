package io.paddock.image.internal.registry;

import io.paddock.testkit.TestRegistry;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.image.internal.oci.ImageRef;
import io.paddock.image.internal.store.BlobStore;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A real docker-registry with htpasswd (bcrypt) users: HTTP Basic authentication. */
class RegistryBasicAuthTest {
    private static final String USER = "paddock";
    private static final String PASSWORD = "correct-horse-battery";
    private static TestRegistry registry;

    @TempDir
    Path tmp;

    @BeforeAll
    static void startRegistry() {
        registry = TestRegistry.startWithHtpasswd(USER, PASSWORD);
    }

    @AfterAll
    static void stopRegistry() {
        if (registry != null) {
            registry.close();
        }
    }

    private ImageRef ref(String repoAndTag) {
        return ImageRef.parse(registry.host() + "/" + repoAndTag);
    }

    private static RegistryClient client(CredentialsProvider credentials) {
        return RegistryClient.builder().insecure(true).credentials(credentials).build();
    }

    @Test
    void theRightPasswordFromADockerConfigPushesAndPulls() throws Exception {
        Path config = tmp.resolve("config.json");
        String auth = Base64.getEncoder().encodeToString((USER + ":" + PASSWORD).getBytes(StandardCharsets.UTF_8));
        Files.writeString(config, "{\"auths\":{\"http://" + registry.host() + "\":{\"auth\":\"" + auth + "\"}}}");
        RegistryClient c = client(DockerConfigCredentials.load(config));
        BlobStore store = new BlobStore(tmp.resolve("store"));
        TestImages.Built img = TestImages.oci(store, "amd64", 1);
        c.push(ref("acc/x:1"), store, img.manifest(), img.mediaType(), img.blobs(), PushListener.NONE);
        Pulled p = c.pull(ref("acc/x:1"), "linux/amd64", new BlobStore(tmp.resolve("back")), PullListener.NONE);
        assertThat(p.manifestDigest()).isEqualTo(img.manifest());
        TestRegistry.run(tmp, "skopeo", "inspect", "--tls-verify=false", "--creds", USER + ":" + PASSWORD,
                "docker://" + registry.host() + "/acc/x:1");
    }

    @Test
    void aWrongPasswordIsPermissionDeniedWithoutThePasswordInTheMessage() {
        String wrong = "wrong-password-4711";
        RegistryClient c = client(CredentialsProvider.of(registry.host(), new Credentials(USER, wrong)));
        BlobStore store = new BlobStore(tmp.resolve("store"));
        TestImages.Built img = TestImages.oci(store, "amd64", 1);
        assertThatThrownBy(() -> c.pull(ref("acc/x:1"), "linux/amd64", store, PullListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.PERMISSION_DENIED);
                    assertThat(e.getMessage()).startsWith("registry " + registry.host()
                            + " refused the credentials for acc/x (401)").doesNotContain(wrong).doesNotContain(PASSWORD);
                    assertThat(e.toString()).doesNotContain(wrong);
                });
        assertThatThrownBy(() -> c.push(ref("acc/x:2"), store, img.manifest(), img.mediaType(), img.blobs(), PushListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.PERMISSION_DENIED))
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain(wrong));
    }

    @Test
    void noCredentialsIsPermissionDeniedSayingSomeAreNeeded() {
        assertThatThrownBy(() -> client(CredentialsProvider.none()).pull(ref("acc/x:1"), "linux/amd64",
                new BlobStore(tmp.resolve("store")), PullListener.NONE))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.PERMISSION_DENIED))
                .hasMessageStartingWith("registry " + registry.host() + " requires credentials for acc/x (401")
                .hasMessageEndingWith("none are configured for " + registry.host());
    }

    @Test
    void credentialsForAnotherRegistryAreNotSent() {
        RegistryClient c = client(CredentialsProvider.of("127.0.0.1:1", new Credentials(USER, PASSWORD)));
        assertThatThrownBy(() -> c.pull(ref("acc/x:1"), "linux/amd64", new BlobStore(tmp.resolve("store")), PullListener.NONE))
                .hasMessageContaining("requires credentials");
    }
}
