package io.paddock.network;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.network.internal.Cidr;
import io.paddock.network.internal.DenyList;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.Collections;
import java.util.List;
import java.util.Optional;

/**
 * The one decision of where a connection made <em>on a sandbox's or a tenant's behalf</em> may go: the egress
 * proxy's upstreams, a tenant's image pulls and pushes, and every other outbound path the daemon opens for someone
 * else. Such connections leave from the host, outside any sandbox's nftables rules, so what the rules would have
 * stopped must be stopped here: an address of the host itself (every interface's, read at each decision, since
 * interfaces come and go), loopback, the sandboxes' range (no sandbox reaches another), and the private,
 * link-local (the metadata service), carrier-grade NAT, multicast and reserved ranges of the {@link DenyList}, in
 * IPv6 too (loopback, link-local, site-local, unique local, multicast, and IPv4 embedded in mapped, NAT64 or 6to4
 * addresses), unless the operator opened the range ({@code --allow-private}; loopback and the sandboxes' range
 * cannot be opened).
 *
 * <p>Decide before connecting, and say the same whatever is listening there: a refusal that told an open port
 * from a closed one would make the caller a port scanner of the host. Thread-safe and cheap enough to call for
 * every connection.
 */
public final class Destinations {
    private final DenyList deny;

    private Destinations(DenyList deny) {
        this.deny = deny;
    }

    /** The rule with the ranges the operator opened ({@code --allow-private}), for sandboxes in the default range. */
    public static Destinations opening(List<String> opened) {
        try {
            return new Destinations(new DenyList(opened.stream().map(Cidr::parse).toList(),
                    Cidr.parse(SandboxNetworks.DEFAULT_RANGE)));
        } catch (IllegalArgumentException e) {
            throw SandboxException.invalid("allowPrivate", e.getMessage());
        }
    }

    /** The rule with nothing opened. */
    public static Destinations defaults() {
        return opening(List.of());
    }

    static Destinations of(DenyList deny) {
        return new Destinations(deny);
    }

    /** Whether a connection on someone's behalf must not go to {@code address}. */
    public boolean refuses(InetAddress address) {
        return why(address).isPresent();
    }

    /**
     * Why {@code address} is refused (a short phrase, the same for every port), or empty when it may be reached.
     */
    public Optional<String> why(InetAddress address) {
        if (address.isLoopbackAddress() || address.isAnyLocalAddress()) {
            return Optional.of("a loopback address");
        }
        if (address instanceof Inet6Address v6) {
            Optional<Inet4Address> embedded = embedded(v6);
            if (embedded.isPresent()) {
                return why(embedded.get());
            }
            byte[] b = v6.getAddress();
            if (v6.isLinkLocalAddress() || v6.isSiteLocalAddress() || v6.isMulticastAddress() || (b[0] & 0xfe) == 0xfc) {
                return Optional.of("a private or link-local address");
            }
        } else if (address instanceof Inet4Address v4) {
            if (deny.sandboxes().contains(v4)) {
                return Optional.of("an address of the sandboxes' range");
            }
            if (deny.denies(v4)) {
                return Optional.of("a private or link-local address");
            }
            if (opened(v4)) {
                return Optional.empty();
            }
        }
        if (isHostAddress(address)) {
            return Optional.of("an address of this host");
        }
        return Optional.empty();
    }

    /**
     * Checks every address a name resolved to, before anything connects to any of them.
     *
     * @param field the request's field that named the destination, for the message
     * @param what  the destination as the caller named it (a registry, a host), for the message
     * @throws SandboxException PERMISSION_DENIED naming the destination and the rule, never whether anything listens
     */
    public void check(String field, String what, List<InetAddress> addresses) {
        for (InetAddress a : addresses) {
            Optional<String> why = why(a);
            if (why.isPresent()) {
                throw refusal(field, what, why.get());
            }
        }
    }

    /** The refusal of {@link #check}, one text for every port. */
    static SandboxException refusal(String field, String what, String why) {
        return new SandboxException(ErrorCode.PERMISSION_DENIED, field + ": " + what + " is on " + why
                + "; connections made for a tenant or a sandbox never go to this host's own addresses,"
                + " loopback, private, link-local or the sandboxes' ranges unless the operator opened the"
                + " range (--allow-private)");
    }

    private boolean opened(Inet4Address a) {
        for (Cidr o : deny.opened()) {
            if (o.contains(a)) {
                return true;
            }
        }
        return false;
    }

    /** The IPv4 address in a mapped (::ffff:0:0/96), NAT64 (64:ff9b::/96) or 6to4 (2002::/16) address. */
    private static Optional<Inet4Address> embedded(Inet6Address v6) {
        byte[] b = v6.getAddress();
        boolean zeros80 = true;
        for (int i = 0; i < 10; i++) {
            zeros80 &= b[i] == 0;
        }
        int at = -1;
        if (zeros80 && b[10] == (byte) 0xff && b[11] == (byte) 0xff) {
            at = 12;
        } else if (b[0] == 0 && b[1] == 0x64 && b[2] == (byte) 0xff && b[3] == (byte) 0x9b && allZero(b, 4, 12)) {
            at = 12;
        } else if (b[0] == 0x20 && b[1] == 0x02) {
            at = 2;
        } else if (zeros80 && b[10] == 0 && b[11] == 0) {
            at = 12; // IPv4-compatible (deprecated ::a.b.c.d)
        }
        if (at < 0) {
            return Optional.empty();
        }
        return Optional.of(Cidr.fromInt((b[at] & 255) << 24 | (b[at + 1] & 255) << 16 | (b[at + 2] & 255) << 8
                | (b[at + 3] & 255)));
    }

    private static boolean allZero(byte[] b, int from, int to) {
        for (int i = from; i < to; i++) {
            if (b[i] != 0) {
                return false;
            }
        }
        return true;
    }

    /** Whether any interface of this host has {@code address}, read now (interfaces come and go). */
    private static boolean isHostAddress(InetAddress address) {
        try {
            for (NetworkInterface i : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                for (InetAddress mine : Collections.list(i.getInetAddresses())) {
                    if (sameAddress(mine, address)) {
                        return true;
                    }
                }
            }
            return false;
        } catch (SocketException e) {
            return true; // cannot tell: refuse
        }
    }

    private static boolean sameAddress(InetAddress a, InetAddress b) {
        return java.util.Arrays.equals(a.getAddress(), b.getAddress());
    }
}
