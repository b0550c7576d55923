package io.paddock.engine.internal;

import io.paddock.ErrorCode;
import io.paddock.LocalOptions;
import io.paddock.NetworkPolicy;
import io.paddock.SandboxException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The build RUN steps' policy: the operator's words, the environment's, else the hosts of the apt sources. */
class BuildNetworkTest {
    static Path apt(Path dir) throws IOException {
        Files.writeString(dir.resolve("sources.list"), """
                # a comment: deb http://commented.example.org/debian stable main
                deb http://deb.example.org/debian stable main
                deb [arch=amd64 signed-by=/usr/share/keyrings/k.gpg] https://Mirror.Example.NET:8443/debian stable main
                deb-src http://deb.example.org/debian stable main
                deb file:/srv/local-repo ./
                deb cdrom:[Disc 1]/ stable main
                """);
        Path d = Files.createDirectories(dir.resolve("sources.list.d"));
        Files.writeString(d.resolve("extra.sources"), """
                Types: deb
                URIs: http://security.example.org/debian-security mirror+http://mirrors.example.com/list.txt
                Suites: stable-security
                Components: main
                """);
        Files.writeString(d.resolve("ignored.list.disabled"), "deb http://disabled.example.org/ stable main\n");
        Files.writeString(d.resolve("address.list"), "deb http://192.0.2.7/debian stable main\n");
        return dir;
    }

    @Test
    void theDefaultIsTheHostNamesOfTheAptSources(@TempDir Path dir) throws IOException {
        NetworkPolicy p = BuildNetwork.of(LocalOptions.defaults(), Map.of(), apt(dir));
        assertThat(p.entries()).containsExactly("deb.example.org", "mirror.example.net", "192.0.2.7/32",
                "security.example.org", "mirrors.example.com");
    }

    @Test
    void aHostWithoutSourcesAllowsNothing(@TempDir Path dir) {
        NetworkPolicy p = BuildNetwork.of(LocalOptions.defaults(), Map.of(), dir.resolve("missing"));
        assertThat(p.mode()).isEqualTo(io.paddock.NetworkMode.ALLOW);
        assertThat(p.entries()).isEmpty();
    }

    @Test
    void theOperatorsWordsReplaceTheDefaultAndAptSourcesStandsForItsHosts(@TempDir Path dir) throws IOException {
        apt(dir);
        assertThat(BuildNetwork.of(LocalOptions.builder().buildAllow("registry.example.org, *.example.net,198.18.0.0/24")
                .build(), Map.of(), dir).entries()).containsExactly("registry.example.org", "*.example.net", "198.18.0.0/24");
        assertThat(BuildNetwork.of(LocalOptions.builder().buildAllow("apt-sources,registry.example.org").build(),
                Map.of(), dir).entries()).startsWith("deb.example.org").endsWith("registry.example.org");
        assertThat(BuildNetwork.of(LocalOptions.builder().buildAllow("none").build(), Map.of(), dir).isNone()).isTrue();
        assertThat(BuildNetwork.of(LocalOptions.builder().buildNetwork(NetworkPolicy.open()).build(), Map.of(), dir))
                .isEqualTo(NetworkPolicy.open());
        assertThat(BuildNetwork.of(LocalOptions.defaults(), Map.of(BuildNetwork.ENV, "registry.example.org"), dir)
                .entries()).containsExactly("registry.example.org");
        assertThat(BuildNetwork.of(LocalOptions.builder().buildAllow("none").build(),
                Map.of(BuildNetwork.ENV, "registry.example.org"), dir).isNone()).as("the option wins").isTrue();
    }

    @Test
    void badWordsAreRefusedNamingTheSetting() {
        assertThatThrownBy(() -> LocalOptions.builder().buildAllow("registry.example.org,http://x.example.org/"))
                .isInstanceOfSatisfying(SandboxException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
                    assertThat(e.getMessage()).startsWith("buildAllow: 'http://x.example.org/'");
                });
        assertThatThrownBy(() -> LocalOptions.builder().buildAllow("none,registry.example.org"))
                .hasMessageContaining("stands alone");
        assertThatThrownBy(() -> BuildNetwork.of(LocalOptions.defaults(), Map.of(BuildNetwork.ENV, "a..b"), Path.of("/x")))
                .hasMessageStartingWith(BuildNetwork.ENV + ":");
        assertThat(LocalOptions.builder().buildAllow(" ").build().buildAllow()).isEqualTo(List.of());
    }
}
