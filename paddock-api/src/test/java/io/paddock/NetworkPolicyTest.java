package io.paddock;

import org.junit.jupiter.api.Test;

import java.util.Collections;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class NetworkPolicyTest {
    @Test
    void entriesAreNormalisedAndSplitIntoCidrsAndDomains() {
        NetworkPolicy p = NetworkPolicy.allow("198.18.0.0/24", "198.18.7.2", "API.Example.COM.", "*.wild.example.com",
                "api.example.com");
        assertThat(p.mode()).isEqualTo(NetworkMode.ALLOW);
        assertThat(p.entries()).containsExactly("198.18.0.0/24", "198.18.7.2/32", "api.example.com", "*.wild.example.com");
        assertThat(p.cidrs()).containsExactly("198.18.0.0/24", "198.18.7.2/32");
        assertThat(p.domains()).containsExactly("api.example.com", "*.wild.example.com");
        assertThat(p.toString()).isEqualTo("allow[198.18.0.0/24, 198.18.7.2/32, api.example.com, *.wild.example.com]");
        assertThat(NetworkPolicy.none().isNone()).isTrue();
        assertThat(NetworkPolicy.open().toString()).isEqualTo("open");
    }

    @Test
    void namesMatchExactlyOrStrictlyUnderAWildcard() {
        NetworkPolicy p = NetworkPolicy.allow("api.example.com", "*.wild.example.com");
        assertThat(p.allowsName("api.example.com")).isTrue();
        assertThat(p.allowsName("API.EXAMPLE.COM.")).isTrue();
        assertThat(p.allowsName("x.api.example.com")).as("an exact name covers no subdomain").isFalse();
        assertThat(p.allowsName("a.wild.example.com")).isTrue();
        assertThat(p.allowsName("a.b.wild.example.com")).isTrue();
        assertThat(p.allowsName("wild.example.com")).as("a wildcard does not cover its apex").isFalse();
        assertThat(p.allowsName("evilwild.example.com")).isFalse();
        assertThat(p.allowsName("api.example.com.evil.test")).isFalse();
        assertThat(p.allowsName("x\\.wild.example.com")).as("an escaped dot is one label").isFalse();
        assertThat(NetworkPolicy.none().allowsName("api.example.com")).isFalse();
        assertThat(NetworkPolicy.open().allowsName("anything.at.all")).isTrue();
    }

    @Test
    void badEntriesAreRefusedNamingThem() {
        for (String[] bad : new String[][]{
                {"10.0.0.0/33", "prefix length"}, {"10.0.0.1/24", "did you mean 10.0.0.0/24"},
                {"256.1.1.1", "not an IPv4"}, {"1.2.3", "not an IPv4"}, {"api.example.com:443", "without a scheme or port"},
                {"https://api.example.com", "without a scheme or port"}, {"fd00::/8", "IPv6"},
                {"a.*.example.com", "wildcard may only be the first label"}, {"localhost", "at least two labels"},
                {"-bad.example.com", "not a valid DNS label"}, {" ", "an empty entry"}}) {
            assertThatThrownBy(() -> NetworkPolicy.allow(bad[0])).as(bad[0]).isInstanceOfSatisfying(SandboxException.class, e -> {
                assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
                assertThat(e.getMessage()).startsWith("network.allow:").contains(bad[1]);
            });
        }
        assertThatThrownBy(() -> NetworkPolicy.allow(Collections.nCopies(257, "198.18.0.0/24")))
                .hasMessageContaining("at most 256");
    }

    @Test
    void plusExtendsAnAllowlistAndTurnsNoneIntoOne() {
        assertThat(NetworkPolicy.allow("198.18.0.0/24").plus(List.of("api.example.com")))
                .isEqualTo(NetworkPolicy.allow("198.18.0.0/24", "api.example.com"));
        assertThat(NetworkPolicy.none().plus(List.of("198.18.0.1"))).isEqualTo(NetworkPolicy.allow("198.18.0.1/32"));
        assertThat(NetworkPolicy.open().plus(List.of("198.18.0.1"))).isEqualTo(NetworkPolicy.open());
    }

    @Test
    void aSpecCarriesItsPolicyAndPorts() {
        SandboxSpec s = SandboxSpec.builder().network(NetworkPolicy.allow("198.18.0.0/24")).port(8000).port(8000).port(9000).build();
        assertThat(s.ports()).containsExactly(8000, 9000);
        assertThat(s.hasNetwork()).isTrue();
        assertThat(SandboxSpec.builder().build().hasNetwork()).isFalse();
        assertThat(SandboxSpec.builder().port(80).build().hasNetwork()).as("a port needs an interface").isTrue();
        assertThat(s.toBuilder().build()).isEqualTo(s);
        assertThatThrownBy(() -> SandboxSpec.builder().port(0)).hasMessageContaining("ports:");
        assertThatThrownBy(() -> SandboxSpec.builder().port(70000)).hasMessageContaining("ports:");
    }

    @Test
    void egressSecretsAreCheckedAndNeverPrinted() {
        EgressSecret e = EgressSecret.of("API_KEY", "API.Example.com.", "s3cr3t-value");
        assertThat(e.host()).isEqualTo("api.example.com");
        assertThat(e.placeholder()).startsWith(EgressSecret.PLACEHOLDER_PREFIX).hasSizeGreaterThan(40)
                .isNotEqualTo(EgressSecret.of("API_KEY", "api.example.com", "s3cr3t-value").placeholder());
        assertThat(e.toString()).doesNotContain("s3cr3t");
        SandboxSpec spec = SandboxSpec.builder().network(NetworkPolicy.allow("api.example.com")).egressSecret(e).build();
        assertThat(spec.toString()).doesNotContain("s3cr3t").doesNotContain(e.placeholder());
        for (String[] bad : new String[][]{{"K", "10.0.0.1", "not an address"}, {"K", "*.example.com", "wildcard"},
                {"K", "bad host", "domain name"}, {"1K", "api.example.com", "egressSecrets"}}) {
            assertThatThrownBy(() -> EgressSecret.of(bad[0], bad[1], "v")).as(bad[1])
                    .isInstanceOfSatisfying(SandboxException.class, x -> assertThat(x.getMessage())
                            .startsWith("egressSecrets").contains(bad[2]));
        }
        assertThatThrownBy(() -> EgressSecret.of("K", "api.example.com", "line\nbreak")).hasMessageContaining("printable");
        assertThatThrownBy(() -> SandboxSpec.builder().network(NetworkPolicy.allow("other.example.com"))
                .egressSecret("K", "api.example.com", "v").build()).hasMessageContaining("--allow-net api.example.com");
    }
}
