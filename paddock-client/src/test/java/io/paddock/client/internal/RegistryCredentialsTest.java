package io.paddock.client.internal;

import io.paddock.ErrorCode;
import io.paddock.RegistryAuth;
import io.paddock.SandboxException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What a remote pull or push sends for a {@link RegistryAuth}: never the file, only its one matching entry. */
class RegistryCredentialsTest {
    @TempDir
    Path dir;

    private static String b64(String s) {
        return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void theRegistryOfAReferenceIsReadAsDockerReadsIt() {
        assertThat(RegistryCredentials.registryOf("busybox")).isEqualTo("docker.io");
        assertThat(RegistryCredentials.registryOf("team/app:1")).isEqualTo("docker.io");
        assertThat(RegistryCredentials.registryOf("127.0.0.1:5000/team/app:1")).isEqualTo("127.0.0.1:5000");
        assertThat(RegistryCredentials.registryOf("Registry.Example/app@sha256:" + "a".repeat(64))).isEqualTo("registry.example");
        assertThat(RegistryCredentials.registryOf("localhost/app")).isEqualTo("localhost");
        assertThat(RegistryCredentials.registryOf("index.docker.io/library/debian")).isEqualTo("docker.io");
        assertThat(RegistryCredentials.normalize("https://index.docker.io/v1/")).isEqualTo("docker.io");
        assertThat(RegistryCredentials.normalize("http://Host:5000/v2/")).isEqualTo("host:5000");
    }

    @Test
    void onlyTheMatchingEntryIsSentAndExplicitCredentialsWin() throws IOException {
        Path config = Files.writeString(dir.resolve("config.json"), "{\"auths\":{"
                + "\"https://index.docker.io/v1/\":{\"auth\":\"" + b64("hub:hubpass") + "\"},"
                + "\"r.example:5000\":{\"username\":\"u\",\"password\":\"p:with:colons\"},"
                + "\"helper.example\":{}},\"credsStore\":\"desktop\"}");
        RegistryAuth withFile = RegistryAuth.none().insecure().configFile(config);

        RegistryAuth hub = RegistryCredentials.resolve(withFile, "library/debian:bookworm");
        assertThat(hub.username()).hasValue("hub");
        assertThat(hub.password()).hasValue("hubpass");
        assertThat(hub.isInsecure()).isTrue();
        assertThat(hub.configFile()).isEmpty();

        RegistryAuth r = RegistryCredentials.resolve(withFile, "r.example:5000/team/app:1");
        assertThat(r.username()).hasValue("u");
        assertThat(r.password()).hasValue("p:with:colons");

        for (String ref : new String[] {"helper.example/app", "other.example/app", "127.0.0.1:5000/app"}) {
            RegistryAuth none = RegistryCredentials.resolve(withFile, ref);
            assertThat(none.username()).as(ref).isEmpty();
            assertThat(none.configFile()).as(ref).isEmpty();
        }
        RegistryAuth explicit = RegistryCredentials.resolve(withFile.credentials("me", "mine"), "r.example:5000/app");
        assertThat(explicit.username()).hasValue("me");
        assertThat(RegistryCredentials.resolve(RegistryAuth.none().configFile(dir.resolve("missing.json")), "r.example:5000/a")
                .username()).isEmpty();
    }

    @Test
    void aBrokenFileIsRefusedWithoutQuotingIt() throws IOException {
        Path broken = Files.writeString(dir.resolve("broken.json"), "{\"auths\":{\"r.example\":{\"auth\":\"SECRET-not-base64!\"}}");
        assertThatThrownBy(() -> RegistryCredentials.resolve(RegistryAuth.none().configFile(broken), "r.example/a"))
                .isInstanceOfSatisfying(SandboxException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
                    assertThat(e.getMessage()).contains(broken.toString()).doesNotContain("SECRET");
                });
        Path badAuth = Files.writeString(dir.resolve("bad.json"), "{\"auths\":{\"r.example\":{\"auth\":\"" + b64("SECRET") + "\"}}}");
        assertThatThrownBy(() -> RegistryCredentials.resolve(RegistryAuth.none().configFile(badAuth), "r.example/a"))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.getMessage()).contains("r.example")
                        .doesNotContain("SECRET"));
    }
}
