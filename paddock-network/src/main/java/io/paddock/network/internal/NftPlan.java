package io.paddock.network.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.NetworkMode;
import io.paddock.NetworkPolicy;

import java.net.Inet4Address;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The nftables rules of sandbox networks, as data: each method returns an {@code nft -j} document (applied
 * atomically, all or nothing) and does no I/O, so the rules are golden-tested.
 *
 * <p>One table, {@code inet paddock}, shared by every engine on the host. Its base chains only dispatch: a
 * packet arriving from a sandbox's host-side veth ({@code pdk<slot>}) jumps, through a verdict map keyed by
 * that interface, to the sandbox's own chains; a {@code pdk*} interface missing from the maps is dropped.
 * Per sandbox:
 * <ul>
 *   <li>{@code sbf<slot>} (forward): IPv6 dropped; a source other than the sandbox's address dropped
 *       (anti-spoofing); established flows accepted; port 53/853 to anyone dropped (the only resolver is
 *       Paddock's); ranges the operator opened skip the deny list; the deny list rejected; then the policy:
 *       {@code open} accepts, {@code allow} goes to {@code sba<slot>}, nothing else passes.</li>
 *   <li>{@code sba<slot>}: new connections rate-limited, then the allowlist's CIDRs (set {@code sb<slot>c})
 *       and the addresses Paddock's resolver returned (set {@code sb<slot>d}, each with its TTL) accepted,
 *       the rest rejected.</li>
 *   <li>{@code sbi<slot>} (input, to the host itself): only replies to the host's own connections (the
 *       daemon's port proxy) and DNS queries redirected to the engine's resolver pass.</li>
 *   <li>{@code sbn<slot>} (NAT prerouting): DNS to the sandbox's gateway goes to the engine's resolver on
 *       127.0.0.1 (the veth has {@code route_localnet}, and nothing else from it reaches loopback); HTTP and
 *       HTTPS to the addresses of hosts with egress secrets (set {@code sb<slot>s}, filled by the resolver)
 *       go to the engine's egress proxy, which adds the secrets.</li>
 * </ul>
 * Traffic into a sandbox other than replies is dropped in the base forward chain: sandboxes are reached
 * only by the host (the daemon's proxy), never routed to from outside or from each other.
 */
public final class NftPlan {
    public static final String TABLE = "paddock";
    public static final String FAMILY = "inet";
    /** Host-side interface names: {@code pdk<slot>}. */
    public static final String IFACE_PREFIX = "pdk";
    /** New connections a sandbox may open per second (and its burst): a conntrack-exhaustion guard. */
    static final int NEW_PER_SECOND = 200;
    static final int NEW_BURST = 400;
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final ObjectMapper JSON = new ObjectMapper();

    private final DenyList deny;

    public NftPlan(DenyList deny) {
        this.deny = deny;
    }

    /** What one sandbox's rules are made of. */
    public record Sandbox(int slot, Inet4Address address, Inet4Address gateway, int resolverPort, int egressPort,
                          NetworkPolicy policy) {
        String iface() {
            return IFACE_PREFIX + slot;
        }
    }

    /** The table and its dispatching base chains; adding what exists changes nothing, so every engine runs it. */
    public String base() {
        Doc d = new Doc();
        d.add("table", obj());
        for (String map : List.of("fwd", "inp", "nat")) {
            d.add("map", obj().put("name", map).put("type", "ifname").put("map", "verdict"));
        }
        d.add("chain", baseChain("forward", "filter", "forward", -10));
        d.add("chain", baseChain("input", "filter", "input", -10));
        d.add("chain", baseChain("prerouting", "nat", "prerouting", -110));
        d.add("chain", baseChain("postrouting", "nat", "postrouting", 100));
        // Rules of base chains are re-made from scratch so that a second engine does not add them twice.
        for (String chain : List.of("forward", "input", "prerouting", "postrouting")) {
            d.command("flush", "chain", obj().put("name", chain));
        }
        d.rule("forward", vmap("iifname", "fwd"));
        d.rule("forward", match("iifname", IFACE_PREFIX + "*"), verdict("drop"));
        d.rule("forward", match("oifname", IFACE_PREFIX + "*"), ctState("established", "related"), verdict("accept"));
        d.rule("forward", match("oifname", IFACE_PREFIX + "*"), verdict("drop"));
        d.rule("input", vmap("iifname", "inp"));
        d.rule("input", match("iifname", IFACE_PREFIX + "*"), verdict("drop"));
        d.rule("prerouting", vmap("iifname", "nat"));
        d.rule("postrouting", matchPrefix("saddr", deny.sandboxes()), matchNot("oifname", IFACE_PREFIX + "*"),
                obj1("masquerade", null));
        return d.toString();
    }

    /** Adds one sandbox: its sets, chains and map entries. */
    public String attach(Sandbox sb) {
        Doc d = new Doc();
        int s = sb.slot();
        d.add("set", obj().put("name", cidrSet(s)).put("type", "ipv4_addr").set("flags", NODES.arrayNode().add("interval")));
        d.add("set", obj().put("name", dnsSet(s)).put("type", "ipv4_addr").set("flags", NODES.arrayNode().add("timeout")));
        d.add("set", obj().put("name", secretSet(s)).put("type", "ipv4_addr").set("flags", NODES.arrayNode().add("timeout")));
        for (String chain : List.of("sbf" + s, "sba" + s, "sbi" + s, "sbn" + s)) {
            d.add("chain", obj().put("name", chain));
        }
        policyRules(d, sb);
        inputAndNatRules(d, sb);
        d.add("element", obj().put("name", "fwd").set("elem", mapElem(sb.iface(), "sbf" + s)));
        d.add("element", obj().put("name", "inp").set("elem", mapElem(sb.iface(), "sbi" + s)));
        d.add("element", obj().put("name", "nat").set("elem", mapElem(sb.iface(), "sbn" + s)));
        return d.toString();
    }

    /** Replaces one sandbox's policy: its forward chains and allowlist re-made, the resolver's grants dropped. */
    public String update(Sandbox sb) {
        Doc d = new Doc();
        int s = sb.slot();
        for (String chain : List.of("sbf" + s, "sba" + s)) {
            d.command("flush", "chain", obj().put("name", chain));
        }
        d.command("flush", "set", obj().put("name", cidrSet(s)));
        d.command("flush", "set", obj().put("name", dnsSet(s)));
        d.command("flush", "set", obj().put("name", secretSet(s)));
        policyRules(d, sb);
        return d.toString();
    }

    /** Points one sandbox's DNS at another resolver port (an engine restarted and adopted it). */
    public String retarget(Sandbox sb) {
        Doc d = new Doc();
        int s = sb.slot();
        for (String chain : List.of("sbi" + s, "sbn" + s)) {
            d.command("flush", "chain", obj().put("name", chain));
        }
        inputAndNatRules(d, sb);
        return d.toString();
    }

    /** Lets the sandbox of {@code slot} reach {@code addresses} (returned by the resolver) for {@code ttl}. */
    public String grant(int slot, List<Inet4Address> addresses, Duration ttl) {
        return grant(List.of(dnsSet(slot)), addresses, ttl);
    }

    /**
     * As {@link #grant}, for a host with egress secrets, in the same transaction: the sandbox's HTTP and HTTPS
     * to these addresses also go through the egress proxy.
     */
    public String grantSecretHost(int slot, List<Inet4Address> addresses, Duration ttl) {
        return grant(List.of(dnsSet(slot), secretSet(slot)), addresses, ttl);
    }

    private String grant(List<String> sets, List<Inet4Address> addresses, Duration ttl) {
        Doc d = new Doc();
        for (String set : sets) {
            ArrayNode elems = NODES.arrayNode();
            for (Inet4Address a : addresses) {
                elems.add(obj1("elem", obj().put("val", a.getHostAddress()).put("timeout", Math.max(1, ttl.toSeconds()))));
            }
            d.add("element", obj().put("name", set).set("elem", elems));
        }
        return d.toString();
    }

    /**
     * Removes one sandbox's map entries, chains and sets. Not idempotent in nft (deleting what is missing
     * fails), so the caller lists what exists first: {@code present} is the set of chain and set names found.
     */
    public String detach(int slot, java.util.Set<String> present, java.util.Set<String> mapKeys) {
        Doc d = new Doc();
        String iface = IFACE_PREFIX + slot;
        for (String map : List.of("fwd", "inp", "nat")) {
            if (mapKeys.contains(map + ":" + iface)) {
                d.command("delete", "element", obj().put("name", map).set("elem", NODES.arrayNode().add(iface)));
            }
        }
        // Chains that jump to others go first; sets after the rules that use them.
        for (String chain : List.of("sbf" + slot, "sba" + slot, "sbi" + slot, "sbn" + slot)) {
            if (present.contains(chain)) {
                d.command("flush", "chain", obj().put("name", chain));
            }
        }
        for (String chain : List.of("sbf" + slot, "sba" + slot, "sbi" + slot, "sbn" + slot)) {
            if (present.contains(chain)) {
                d.command("delete", "chain", obj().put("name", chain));
            }
        }
        for (String set : List.of(cidrSet(slot), dnsSet(slot), secretSet(slot))) {
            if (present.contains(set)) {
                d.command("delete", "set", obj().put("name", set));
            }
        }
        return d.isEmpty() ? "" : d.toString();
    }

    /** The names of every chain and set {@link #attach} makes for {@code slot}. */
    public static java.util.Set<String> objectsOf(int slot) {
        return java.util.Set.of("sbf" + slot, "sba" + slot, "sbi" + slot, "sbn" + slot, cidrSet(slot), dnsSet(slot),
                secretSet(slot));
    }

    /** The verdict-map keys {@link #attach} adds for {@code slot}, as {@code map:interface}. */
    public static java.util.Set<String> mapKeysOf(int slot) {
        String iface = IFACE_PREFIX + slot;
        return java.util.Set.of("fwd:" + iface, "inp:" + iface, "nat:" + iface);
    }

    static String cidrSet(int slot) {
        return "sb" + slot + "c";
    }

    static String dnsSet(int slot) {
        return "sb" + slot + "d";
    }

    static String secretSet(int slot) {
        return "sb" + slot + "s";
    }

    private void policyRules(Doc d, Sandbox sb) {
        int s = sb.slot();
        String f = "sbf" + s;
        ownTrafficOnly(d, f, sb);
        d.rule(f, l4protoTcpUdp(), cmp("==", payload("th", "dport"), anonymousSet(53, 853)), verdict("drop"));
        if (!deny.opened().isEmpty() && sb.policy().mode() != NetworkMode.NONE) {
            d.rule(f, daddrIn(deny.opened()), sb.policy().mode() == NetworkMode.OPEN ? verdict("accept")
                    : obj1("goto", obj().put("target", "sba" + s)));
        }
        rejectRules(d, f, daddrIn(deny.denied()));
        switch (sb.policy().mode()) {
            case OPEN -> {
                d.rule(f, limitNew(), verdict("drop"));
                d.rule(f, verdict("accept"));
            }
            case ALLOW -> d.rule(f, obj1("goto", obj().put("target", "sba" + s)));
            case NONE -> rejectRules(d, f);
        }
        String a = "sba" + s;
        d.rule(a, limitNew(), verdict("drop"));
        d.rule(a, cmp("==", payload("ip", "daddr"), "@" + cidrSet(s)), verdict("accept"));
        d.rule(a, cmp("==", payload("ip", "daddr"), "@" + dnsSet(s)), verdict("accept"));
        rejectRules(d, a);
        List<String> cidrs = sb.policy().cidrs();
        if (!cidrs.isEmpty()) {
            ArrayNode elems = NODES.arrayNode();
            for (String c : cidrs) {
                elems.add(prefix(Cidr.parse(c)));
            }
            d.add("element", obj().put("name", cidrSet(s)).set("elem", elems));
        }
    }

    private void inputAndNatRules(Doc d, Sandbox sb) {
        int s = sb.slot();
        String i = "sbi" + s;
        ownTrafficOnly(d, i, sb);
        d.rule(i, cmp("==", payload("ip", "daddr"), "127.0.0.1"), l4protoTcpUdp(),
                cmp("==", payload("th", "dport"), sb.resolverPort()), verdict("accept"));
        if (sb.egressPort() > 0) {
            d.rule(i, cmp("==", payload("ip", "daddr"), "127.0.0.1"), cmp("==", payload("tcp", "dport"), sb.egressPort()),
                    verdict("accept"));
        }
        d.rule(i, verdict("drop"));
        String n = "sbn" + s;
        d.rule(n, cmp("==", payload("ip", "daddr"), sb.gateway().getHostAddress()), l4protoTcpUdp(),
                cmp("==", payload("th", "dport"), 53),
                obj1("dnat", obj().put("family", "ip").put("addr", "127.0.0.1").put("port", sb.resolverPort())));
        if (sb.egressPort() > 0) {
            d.rule(n, cmp("==", payload("ip", "daddr"), "@" + secretSet(s)),
                    cmp("==", payload("tcp", "dport"), anonymousSet(80, 443)),
                    obj1("dnat", obj().put("family", "ip").put("addr", "127.0.0.1").put("port", sb.egressPort())));
        }
    }

    /** The first rules of a sandbox's forward and input chains: IPv4 from its own address only, replies pass. */
    private static void ownTrafficOnly(Doc d, String chain, Sandbox sb) {
        d.rule(chain, cmp("==", meta("nfproto"), "ipv6"), verdict("drop"));
        d.rule(chain, cmp("!=", payload("ip", "saddr"), sb.address().getHostAddress()), verdict("drop"));
        d.rule(chain, ctState("established", "related"), verdict("accept"));
    }

    // ---- JSON expression helpers ----

    private static ObjectNode obj() {
        return NODES.objectNode();
    }

    private static ObjectNode obj1(String key, JsonNode value) {
        ObjectNode o = NODES.objectNode();
        o.set(key, value == null ? NODES.nullNode() : value);
        return o;
    }

    /** {@code left OP right}; {@code right} a string, a number or an expression. */
    private static ObjectNode cmp(String op, ObjectNode left, Object right) {
        ObjectNode m = obj().put("op", op);
        m.set("left", left);
        if (right instanceof JsonNode j) {
            m.set("right", j);
        } else if (right instanceof Integer n) {
            m.put("right", n);
        } else {
            m.put("right", (String) right);
        }
        return obj1("match", m);
    }

    private static ObjectNode anonymousSet(int... values) {
        ArrayNode set = NODES.arrayNode();
        for (int v : values) {
            set.add(v);
        }
        return obj1("set", set);
    }

    private static ObjectNode meta(String key) {
        return obj1("meta", obj().put("key", key));
    }

    private static ObjectNode payload(String protocol, String field) {
        return obj1("payload", obj().put("protocol", protocol).put("field", field));
    }

    private static ObjectNode verdict(String v) {
        return obj1(v, null);
    }

    /**
     * Refuses at once rather than silently (a denied connect fails in milliseconds, not after its timeout):
     * TCP with a reset, the rest with ICMP "administratively prohibited".
     */
    private static void rejectRules(Doc d, String chain, ObjectNode... conditions) {
        List<ObjectNode> tcp = new ArrayList<>(List.of(conditions));
        tcp.add(cmp("==", meta("l4proto"), "tcp"));
        tcp.add(obj1("reject", obj().put("type", "tcp reset")));
        d.rule(chain, tcp.toArray(ObjectNode[]::new));
        List<ObjectNode> other = new ArrayList<>(List.of(conditions));
        other.add(obj1("reject", obj().put("type", "icmpx").put("expr", "admin-prohibited")));
        d.rule(chain, other.toArray(ObjectNode[]::new));
    }

    private static ObjectNode match(String metaKey, String value) {
        return cmp("==", meta(metaKey), value);
    }

    private static ObjectNode matchNot(String metaKey, String value) {
        return cmp("!=", meta(metaKey), value);
    }

    private static ObjectNode matchPrefix(String field, Cidr c) {
        return cmp("==", payload("ip", field), prefix(c));
    }

    private static ObjectNode daddrIn(List<Cidr> ranges) {
        ArrayNode set = NODES.arrayNode();
        for (Cidr c : ranges) {
            set.add(prefix(c));
        }
        return cmp("==", payload("ip", "daddr"), obj1("set", set));
    }

    private static ObjectNode prefix(Cidr c) {
        return obj1("prefix", obj().put("addr", Cidr.dotted(c.base())).put("len", c.prefix()));
    }

    private static ObjectNode ctState(String... states) {
        ArrayNode list = NODES.arrayNode();
        for (String s : states) {
            list.add(s);
        }
        return cmp("in", obj1("ct", obj().put("key", "state")), list);
    }

    private static ObjectNode l4protoTcpUdp() {
        return cmp("==", meta("l4proto"), obj1("set", NODES.arrayNode().add("tcp").add("udp")));
    }

    private static ObjectNode limitNew() {
        // Matches when a sandbox opens connections faster than the rate: those are dropped.
        return obj1("limit", obj().put("rate", NEW_PER_SECOND).put("per", "second").put("burst", NEW_BURST)
                .put("burst_unit", "packets").put("inv", true));
    }

    private static ObjectNode vmap(String metaKey, String map) {
        return obj1("vmap", obj().<ObjectNode>set("key", meta(metaKey)).put("data", "@" + map));
    }

    private static ArrayNode mapElem(String key, String chain) {
        return NODES.arrayNode().add(NODES.arrayNode().add(key).add(obj1("jump", obj().put("target", chain))));
    }

    private static ObjectNode baseChain(String name, String type, String hook, int priority) {
        return obj().put("name", name).put("type", type).put("hook", hook).put("prio", priority).put("policy", "accept");
    }

    /** An {@code nft -j} document: a list of commands on the table. */
    private static final class Doc {
        private final List<ObjectNode> commands = new ArrayList<>();

        void add(String kind, ObjectNode body) {
            command("add", kind, body);
        }

        void command(String verb, String kind, ObjectNode body) {
            ObjectNode b = obj().put("family", FAMILY);
            if (kind.equals("table")) {
                b.put("name", TABLE);
            } else {
                b.put("table", TABLE);
            }
            b.setAll(body);
            commands.add(obj1(verb, obj1(kind, b)));
        }

        void rule(String chain, ObjectNode... expr) {
            ArrayNode list = NODES.arrayNode();
            for (ObjectNode e : expr) {
                list.add(e);
            }
            add("rule", obj().put("chain", chain).set("expr", list));
        }

        boolean isEmpty() {
            return commands.isEmpty();
        }

        @Override
        public String toString() {
            ArrayNode all = NODES.arrayNode();
            commands.forEach(all::add);
            try {
                return JSON.writeValueAsString(obj1("nftables", all));
            } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                throw new IllegalStateException(e);
            }
        }
    }
}
