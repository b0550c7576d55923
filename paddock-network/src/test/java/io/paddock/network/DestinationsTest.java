package io.paddock.network;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.net.NetworkInterface;
import java.util.Collections;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The one rule of where connections made on a sandbox's or tenant's behalf may go (issue 32, breaches 7 and 10):
 * decided on addresses only, nothing is sent anywhere.
 */
class DestinationsTest {
    private final Destinations rule = Destinations.defaults();

    @Test
    void everyAddressOfThisHostIsRefused() throws Exception {
        int seen = 0;
        for (NetworkInterface i : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            for (InetAddress a : Collections.list(i.getInetAddresses())) {
                assertThat(rule.refuses(a)).as(i.getName() + " " + a).isTrue();
                seen++;
            }
        }
        assertThat(seen).isPositive();
    }

    @Test
    void loopbackPrivateLinkLocalAndTheSandboxesAreRefusedInEitherFamily() throws Exception {
        for (String a : List.of("127.0.0.1", "0.0.0.0", "10.1.2.3", "10.213.0.6", "172.16.0.1", "192.168.1.1",
                "169.254.169.254", "100.64.0.1", "224.0.0.1", "::1", "::", "fe80::1", "fec0::1", "fd00::1", "fc00::1",
                "ff02::1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe", "2002:7f00:1::",
                "::10.0.0.1")) {
            assertThat(rule.refuses(InetAddress.getByName(a))).as(a).isTrue();
        }
        for (String a : List.of("198.18.200.2", "8.8.8.8", "2001:4860:4860::8888", "64:ff9b::808:808")) {
            assertThat(rule.refuses(InetAddress.getByName(a))).as(a).isFalse();
        }
    }

    @Test
    void theOperatorOpensARangeButNeitherLoopbackNorTheSandboxes() throws Exception {
        Destinations opened = Destinations.opening(List.of("192.168.50.0/24"));
        assertThat(opened.refuses(InetAddress.getByName("192.168.50.7"))).isFalse();
        assertThat(opened.refuses(InetAddress.getByName("192.168.51.7"))).isTrue();
        assertThatThrownBy(() -> Destinations.opening(List.of("127.0.0.0/8"))).isInstanceOfSatisfying(
                SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
        assertThatThrownBy(() -> Destinations.opening(List.of("10.213.1.0/24"))).isInstanceOf(SandboxException.class);
    }

    @Test
    void aRefusalNamesTheRuleAndIsTheSameForEveryPort() throws Exception {
        List<InetAddress> local = List.of(InetAddress.getByName("127.0.0.1"));
        assertThatThrownBy(() -> rule.check("ref", "the registry R", local)).isInstanceOfSatisfying(SandboxException.class,
                e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.PERMISSION_DENIED);
                    assertThat(e.getMessage()).contains("ref: the registry R is on a loopback address", "--allow-private");
                });
        rule.check("ref", "the registry R", List.of(InetAddress.getByName("198.18.200.2")));
    }
}
