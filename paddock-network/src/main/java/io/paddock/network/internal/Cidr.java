package io.paddock.network.internal;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.UnknownHostException;

/** An IPv4 range, {@code a.b.c.d/n}. */
public record Cidr(int base, int prefix) {
    public Cidr {
        if (prefix < 0 || prefix > 32) {
            throw new IllegalArgumentException("prefix " + prefix);
        }
        base &= mask(prefix);
    }

    /** Parses {@code a.b.c.d/n} or {@code a.b.c.d} (a /32); the input must already be valid. */
    public static Cidr parse(String text) {
        int slash = text.indexOf('/');
        int prefix = slash < 0 ? 32 : Integer.parseInt(text.substring(slash + 1));
        return new Cidr(toInt(address(slash < 0 ? text : text.substring(0, slash))), prefix);
    }

    public static Cidr of(Inet4Address a, int prefix) {
        return new Cidr(toInt(a), prefix);
    }

    public boolean contains(Inet4Address a) {
        return (toInt(a) & mask(prefix)) == base;
    }

    /** Whether the two ranges share an address. */
    public boolean overlaps(Cidr o) {
        int p = Math.min(prefix, o.prefix);
        return (base & mask(p)) == (o.base & mask(p));
    }

    public Inet4Address address(int offset) {
        return fromInt(base + offset);
    }

    @Override
    public String toString() {
        return dotted(base) + "/" + prefix;
    }

    static int mask(int prefix) {
        return prefix == 0 ? 0 : -1 << (32 - prefix);
    }

    public static int toInt(Inet4Address a) {
        byte[] b = a.getAddress();
        return (b[0] & 255) << 24 | (b[1] & 255) << 16 | (b[2] & 255) << 8 | (b[3] & 255);
    }

    public static Inet4Address fromInt(int v) {
        try {
            return (Inet4Address) InetAddress.getByAddress(new byte[]{(byte) (v >>> 24), (byte) (v >>> 16),
                    (byte) (v >>> 8), (byte) v});
        } catch (UnknownHostException e) {
            throw new AssertionError(e);
        }
    }

    public static String dotted(int v) {
        return (v >>> 24) + "." + (v >>> 16 & 255) + "." + (v >>> 8 & 255) + "." + (v & 255);
    }

    /** A literal dotted-quad address (no name lookup). */
    public static Inet4Address address(String dotted) {
        String[] p = dotted.split("\\.", -1);
        if (p.length != 4) {
            throw new IllegalArgumentException("not an IPv4 address: " + dotted);
        }
        byte[] b = new byte[4];
        for (int i = 0; i < 4; i++) {
            int v = Integer.parseInt(p[i]);
            if (v < 0 || v > 255) {
                throw new IllegalArgumentException("not an IPv4 address: " + dotted);
            }
            b[i] = (byte) v;
        }
        try {
            return (Inet4Address) InetAddress.getByAddress(b);
        } catch (UnknownHostException e) {
            throw new AssertionError(e);
        }
    }
}
