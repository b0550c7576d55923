package io.paddock.network.internal;

import java.net.Inet4Address;
import java.util.ArrayList;
import java.util.List;

/**
 * The ranges no sandbox reaches whatever its policy, less the ranges the operator opened
 * ({@code paddock serve --allow-private}). It wins over every allowlist, and the resolver strips answers in it
 * (no rebinding). The host's own addresses are covered twice: by these ranges, and by the input hook, which
 * accepts nothing from a sandbox but its DNS queries and replies to the daemon's own connections.
 */
public final class DenyList {
    /** Always denied (IPv4; sandboxes have no IPv6). */
    public static final List<Cidr> ALWAYS = List.of(
            Cidr.parse("0.0.0.0/8"),        // "this network"
            Cidr.parse("10.0.0.0/8"),       // RFC 1918 (holds the sandboxes' own range by default)
            Cidr.parse("100.64.0.0/10"),    // carrier-grade NAT (RFC 6598)
            Cidr.parse("127.0.0.0/8"),      // loopback
            Cidr.parse("169.254.0.0/16"),   // link-local: cloud metadata at 169.254.169.254, ECS at 169.254.170.2
            Cidr.parse("172.16.0.0/12"),    // RFC 1918
            Cidr.parse("192.0.0.0/24"),     // IETF protocol assignments
            Cidr.parse("192.168.0.0/16"),   // RFC 1918
            Cidr.parse("224.0.0.0/4"),      // multicast
            Cidr.parse("240.0.0.0/4"));     // reserved, and the limited broadcast

    private final List<Cidr> opened;
    private final Cidr sandboxes;

    /**
     * @param opened    ranges the operator opened; they must not overlap the sandboxes' own range
     * @param sandboxes the range the sandboxes' addresses come from (always denied: no sandbox reaches another)
     */
    public DenyList(List<Cidr> opened, Cidr sandboxes) {
        for (Cidr o : opened) {
            if (o.overlaps(sandboxes)) {
                throw new IllegalArgumentException("--allow-private " + o + " overlaps the sandboxes' own range "
                        + sandboxes + "; sandboxes never reach each other");
            }
            if (o.overlaps(Cidr.parse("127.0.0.0/8"))) {
                throw new IllegalArgumentException("--allow-private " + o + " overlaps loopback (127.0.0.0/8), which"
                        + " cannot be opened: a sandbox's 127.0.0.1 is its own");
            }
        }
        this.opened = List.copyOf(opened);
        this.sandboxes = sandboxes;
    }

    public List<Cidr> opened() {
        return opened;
    }

    /** The ranges denied before any allowlist: {@link #ALWAYS} and the sandboxes' range. */
    public List<Cidr> denied() {
        List<Cidr> all = new ArrayList<>(ALWAYS);
        all.add(sandboxes);
        return all;
    }

    public Cidr sandboxes() {
        return sandboxes;
    }

    /** Whether no sandbox may reach {@code a}: in a denied range and not in an opened one. */
    public boolean denies(Inet4Address a) {
        if (sandboxes.contains(a)) {
            return true;
        }
        for (Cidr o : opened) {
            if (o.contains(a)) {
                return false;
            }
        }
        for (Cidr d : ALWAYS) {
            if (d.contains(a)) {
                return true;
            }
        }
        return false;
    }
}
