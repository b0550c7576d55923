package io.paddock;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * Where a sandbox may connect to. Immutable.
 *
 * <ul>
 *   <li>{@link #none()} (the default): loopback only.</li>
 *   <li>{@link #allow(String...)}: IPv4 CIDRs ({@code 198.18.0.0/24}, or one address) and domain names, exact
 *       ({@code api.example.com}) or wildcards ({@code *.example.com}: every name under it, not the name
 *       itself). Names resolve only through Paddock's resolver, which answers allowlisted names and opens egress
 *       to the addresses it returned, for their TTL; any other name is answered locally and never forwarded.</li>
 *   <li>{@link #open()}: every public address; every name resolves.</li>
 * </ul>
 *
 * <p>Whatever the policy, the host, other sandboxes, the cloud metadata service, loopback, private and
 * link-local ranges stay denied unless the operator opens a range (never the sandbox's creator).
 */
public final class NetworkPolicy {
    /** The most entries an allowlist may hold. */
    public static final int MAX_ENTRIES = 256;
    private static final Pattern LABEL = Pattern.compile("[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?");
    private static final NetworkPolicy NONE = new NetworkPolicy(NetworkMode.NONE, List.of());
    private static final NetworkPolicy OPEN = new NetworkPolicy(NetworkMode.OPEN, List.of());

    private final NetworkMode mode;
    private final List<String> allow;

    private NetworkPolicy(NetworkMode mode, List<String> allow) {
        this.mode = mode;
        this.allow = allow;
    }

    public static NetworkPolicy none() {
        return NONE;
    }

    public static NetworkPolicy open() {
        return OPEN;
    }

    /** An allowlist of CIDRs and domain names; each entry is checked and normalised (lower case, /32 added). */
    public static NetworkPolicy allow(String... entries) {
        return allow(List.of(entries));
    }

    /** As {@link #allow(String...)}. An empty list allows nothing (but the sandbox still gets an interface). */
    public static NetworkPolicy allow(List<String> entries) {
        Objects.requireNonNull(entries, "entries");
        if (entries.size() > MAX_ENTRIES) {
            throw SandboxException.invalid("network.allow", "at most " + MAX_ENTRIES + " entries, got " + entries.size());
        }
        LinkedHashSet<String> out = new LinkedHashSet<>();
        for (String e : entries) {
            out.add(normalize(e));
        }
        return new NetworkPolicy(NetworkMode.ALLOW, List.copyOf(out));
    }

    /** A policy of a mode without entries: {@code none}, {@code open}, or an empty {@code allow}. */
    public static NetworkPolicy of(NetworkMode mode) {
        return switch (Objects.requireNonNull(mode, "mode")) {
            case NONE -> NONE;
            case OPEN -> OPEN;
            case ALLOW -> new NetworkPolicy(NetworkMode.ALLOW, List.of());
        };
    }

    public NetworkMode mode() {
        return mode;
    }

    /** The allowlist's entries, normalised, in the order given (empty unless {@link NetworkMode#ALLOW}). */
    public List<String> entries() {
        return allow;
    }

    /** The CIDR entries ({@code a.b.c.d/n}). */
    public List<String> cidrs() {
        return allow.stream().filter(NetworkPolicy::isCidr).toList();
    }

    /** The domain entries (exact names and {@code *.} wildcards). */
    public List<String> domains() {
        return allow.stream().filter(e -> !isCidr(e)).toList();
    }

    /** Whether the sandbox gets an interface at all. */
    public boolean isNone() {
        return mode == NetworkMode.NONE;
    }

    /**
     * Whether {@code name} (a DNS name, any case, with or without the final dot) may be resolved: every name
     * under {@link NetworkMode#OPEN}, allowlisted names under {@link NetworkMode#ALLOW}, none otherwise.
     */
    public boolean allowsName(String name) {
        if (mode == NetworkMode.OPEN) {
            return true;
        }
        if (mode != NetworkMode.ALLOW) {
            return false;
        }
        String n = name.toLowerCase(Locale.ROOT);
        if (n.contains("\\")) {
            // A presentation-format escape ("x\.svc" is one label holding a dot) would let a single label pass
            // for two when matched as text: such names are never allowlisted.
            return false;
        }
        if (n.endsWith(".")) {
            n = n.substring(0, n.length() - 1);
        }
        for (String d : domains()) {
            if (d.startsWith("*.") ? n.endsWith(d.substring(1)) && n.length() > d.length() - 1 : n.equals(d)) {
                return true;
            }
        }
        return false;
    }

    static boolean isCidr(String entry) {
        return !entry.isEmpty() && Character.isDigit(entry.charAt(0)) && entry.contains("/");
    }

    /** Checks one allowlist entry and returns its normal form, or says what is wrong with it, naming it. */
    static String normalize(String entry) {
        if (entry == null || entry.isBlank()) {
            throw SandboxException.invalid("network.allow", "an empty entry (give a CIDR such as 198.18.0.0/24"
                    + " or a domain such as api.example.com)");
        }
        String e = entry.strip().toLowerCase(Locale.ROOT);
        if (e.contains(":") || e.contains("[")) {
            throw bad(entry, "give a CIDR or a domain name, without a scheme or port (IPv6 is not supported yet:"
                    + " sandboxes have IPv4 only)");
        }
        if (Character.isDigit(e.charAt(e.length() - 1)) || e.contains("/")) {
            return cidr(entry, e);
        }
        if (e.endsWith(".")) {
            e = e.substring(0, e.length() - 1);
        }
        String name = e.startsWith("*.") ? e.substring(2) : e;
        if (name.length() > 253 || name.isEmpty()) {
            throw bad(entry, "not a domain name");
        }
        String[] labels = name.split("\\.", -1);
        if (labels.length < 2) {
            throw bad(entry, "a domain needs at least two labels (api.example.com, *.example.com)");
        }
        for (String l : labels) {
            if (!LABEL.matcher(l).matches()) {
                throw bad(entry, "'" + l + "' is not a valid DNS label (letters, digits, '-', at most 63)"
                        + (l.contains("*") ? "; a wildcard may only be the first label, as in *.example.com" : ""));
            }
        }
        return e;
    }

    private static String cidr(String entry, String e) {
        int slash = e.indexOf('/');
        String addr = slash < 0 ? e : e.substring(0, slash);
        int prefix = 32;
        if (slash >= 0) {
            try {
                prefix = Integer.parseInt(e.substring(slash + 1));
            } catch (NumberFormatException ex) {
                throw bad(entry, "the prefix length must be a number from 0 to 32");
            }
            if (prefix < 0 || prefix > 32) {
                throw bad(entry, "the prefix length must be from 0 to 32");
            }
        }
        String[] parts = addr.split("\\.", -1);
        if (parts.length != 4) {
            throw bad(entry, "not an IPv4 address or CIDR (a.b.c.d or a.b.c.d/n)");
        }
        long value = 0;
        for (String p : parts) {
            if (p.isEmpty() || p.length() > 3 || !p.chars().allMatch(Character::isDigit) || Integer.parseInt(p) > 255) {
                throw bad(entry, "not an IPv4 address or CIDR (a.b.c.d or a.b.c.d/n)");
            }
            value = value << 8 | Integer.parseInt(p);
        }
        long mask = prefix == 0 ? 0 : (0xFFFFFFFFL << (32 - prefix)) & 0xFFFFFFFFL;
        if ((value & ~mask & 0xFFFFFFFFL) != 0) {
            throw bad(entry, "host bits are set; did you mean " + dotted(value & mask) + "/" + prefix + "?");
        }
        return dotted(value) + "/" + prefix;
    }

    private static String dotted(long v) {
        return (v >> 24 & 255) + "." + (v >> 16 & 255) + "." + (v >> 8 & 255) + "." + (v & 255);
    }

    private static SandboxException bad(String entry, String why) {
        return SandboxException.invalid("network.allow", "'" + entry + "': " + why);
    }

    /** This policy with {@code entries} added (an {@code allow} policy; {@code none} becomes one). */
    public NetworkPolicy plus(List<String> entries) {
        if (mode == NetworkMode.OPEN) {
            return this;
        }
        List<String> all = new ArrayList<>(allow);
        all.addAll(entries);
        return allow(all);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof NetworkPolicy p && p.mode == mode && p.allow.equals(allow);
    }

    @Override
    public int hashCode() {
        return mode.hashCode() * 31 + allow.hashCode();
    }

    /** {@code none}, {@code open}, or {@code allow[198.18.0.0/24, api.example.com]}. */
    @Override
    public String toString() {
        return mode == NetworkMode.ALLOW ? "allow" + allow : mode.name().toLowerCase(Locale.ROOT);
    }
}
