package io.paddock.network.internal;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DenyListTest {
    private static final Cidr SANDBOXES = Cidr.parse("10.213.0.0/16");

    @Test
    void privateLoopbackLinkLocalCgnatMulticastAndSandboxesAreDenied() {
        DenyList d = new DenyList(List.of(), SANDBOXES);
        for (String a : List.of("10.0.0.1", "172.16.5.4", "172.31.255.255", "192.168.1.1", "100.64.0.1", "127.0.0.1",
                "169.254.169.254", "169.254.170.2", "0.0.0.0", "224.0.0.1", "255.255.255.255", "10.213.0.6", "192.0.0.8")) {
            assertThat(d.denies(Cidr.address(a))).as(a).isTrue();
        }
        for (String a : List.of("198.18.7.2", "8.8.8.8", "172.32.0.1", "100.128.0.1", "192.169.0.1")) {
            assertThat(d.denies(Cidr.address(a))).as(a).isFalse();
        }
    }

    @Test
    void theOperatorOpensARangeButNeverLoopbackOrTheSandboxes() {
        DenyList d = new DenyList(List.of(Cidr.parse("192.168.50.0/24"), Cidr.parse("169.254.169.254/32")), SANDBOXES);
        assertThat(d.denies(Cidr.address("192.168.50.7"))).isFalse();
        assertThat(d.denies(Cidr.address("192.168.51.7"))).isTrue();
        assertThat(d.denies(Cidr.address("169.254.169.254"))).isFalse();
        assertThatThrownBy(() -> new DenyList(List.of(Cidr.parse("10.0.0.0/8")), SANDBOXES))
                .hasMessageContaining("sandboxes' own range");
        assertThatThrownBy(() -> new DenyList(List.of(Cidr.parse("127.0.0.0/24")), SANDBOXES))
                .hasMessageContaining("loopback");
    }
}
