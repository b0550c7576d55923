package io.paddock.network;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.paddock.ErrorCode;
import io.paddock.NetworkMode;
import io.paddock.NetworkPolicy;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.network.internal.Cidr;
import io.paddock.network.internal.DenyList;
import io.paddock.network.internal.NftPlan;
import io.paddock.network.internal.Slots;
import io.paddock.network.internal.dns.SandboxResolver;
import io.paddock.network.internal.egress.CertificateAuthority;
import io.paddock.network.internal.egress.EgressProxy;
import io.paddock.runtime.NetworkNamespace;
import io.paddock.runtime.internal.host.NetHost;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;

/**
 * The networks of one engine's sandboxes on this host. A sandbox with a network gets:
 * <ul>
 *   <li>a network namespace of its own ({@code /run/netns/paddock-<id>}), owned by the host, so that nothing
 *       inside can reconfigure it, with a veth whose host side is {@code pdk<slot>};</li>
 *   <li>a /30 of the sandboxes' range (default {@value #DEFAULT_RANGE}): the host side is its gateway and
 *       its only resolver, the sandbox the next address; no bridge, so sandboxes share no link;</li>
 *   <li>nftables chains of its own in the host's {@code inet paddock} table ({@link NftPlan}): the deny list,
 *       then its policy; traffic leaves masqueraded as the host's;</li>
 *   <li>Paddock's resolver ({@link SandboxResolver}), which answers its allowlisted names only and opens
 *       egress to the addresses it returned.</li>
 * </ul>
 * The runtime tiers receive the namespace ({@link NetworkNamespace}) and never know what it carries.
 * Nothing is set up on the host until the first sandbox with a network. Thread-safe.
 */
public final class SandboxNetworks implements AutoCloseable {
    public static final String DEFAULT_RANGE = "10.213.0.0/16";
    /** Network namespaces' names: {@code paddock-<sandbox id>}. */
    public static final String NETNS_PREFIX = "paddock-";
    /**
     * The label naming a sandbox's tenant (the daemon's {@code Tenancy.LABEL}): the egress proxy's and the resolver's
     * per-tenant caps count a tenant's sandboxes together; a sandbox without it counts alone.
     */
    public static final String TENANT_LABEL = "paddock.io/tenant";
    private static final System.Logger LOG = System.getLogger("io.paddock.network");
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path NETNS_DIR = Path.of("/run/netns");

    private final Slots slots;
    private final DenyList deny;
    private final Destinations destinations;
    private final NftPlan plan;
    private final Optional<InetSocketAddress> upstream;
    private final String upstreamSource;
    private final Map<SandboxId, Attached> attached = new ConcurrentHashMap<>();
    private final Map<Inet4Address, Attached> byAddress = new ConcurrentHashMap<>();
    private final Optional<Path> dataDir;
    private final Optional<Path> egressTrust;
    private volatile int egressPerTenant = EgressProxy.Limits.DEFAULT_PER_TENANT;
    private volatile int dnsTcpPerTenant = SandboxResolver.Limits.DEFAULT_TCP_PER_TENANT;
    private NetHost host;
    private SandboxResolver resolver;
    private EgressProxy egress;
    private CertificateAuthority ca;
    private boolean closed;

    /** A sandbox this engine networks, its current policy and its egress secrets. */
    private final class Attached implements SandboxResolver.Client, EgressProxy.Client {
        final SandboxId id;
        final int slot;
        final String tenant;
        final List<EgressProxy.EgressSecret> secrets;
        volatile NetworkPolicy policy;

        Attached(SandboxId id, int slot, NetworkPolicy policy, List<io.paddock.EgressSecret> secrets,
                 Optional<String> tenant) {
            this.id = id;
            this.slot = slot;
            this.tenant = tenant.map(t -> "tenant:" + t).orElse("sandbox:" + id.value());
            this.policy = policy;
            this.secrets = secrets.stream().map(e -> new EgressProxy.EgressSecret(e.host(), e.placeholder(), e.value()))
                    .toList();
        }

        @Override
        public String id() {
            return id.value();
        }

        @Override
        public String tenant() {
            return tenant;
        }

        @Override
        public NetworkPolicy policy() {
            return policy;
        }

        @Override
        public List<EgressProxy.EgressSecret> secrets() {
            return secrets;
        }

        /** Opens egress to an allowlisted name's addresses; a host with secrets goes through the egress proxy. */
        @Override
        public void grant(String name, List<Inet4Address> addresses, Duration ttl) {
            if (addresses.isEmpty()) {
                return;
            }
            boolean secretHost = secrets.stream().anyMatch(e -> e.host().equals(name));
            host().nftApply(secretHost ? plan.grantSecretHost(slot, addresses, ttl) : plan.grant(slot, addresses, ttl));
        }

        NftPlan.Sandbox rules(Ports ports) {
            return new NftPlan.Sandbox(slot, slots.address(slot), slots.gateway(slot), ports.resolver(),
                    secrets.isEmpty() ? 0 : ports.egress(), policy);
        }
    }

    /** The loopback ports of this engine's resolver and egress proxy. */
    private record Ports(int resolver, int egress) {
    }

    private SandboxNetworks(Slots slots, DenyList deny, Optional<InetSocketAddress> upstream, String upstreamSource,
                            Optional<Path> dataDir, Optional<Path> egressTrust) {
        this.dataDir = dataDir;
        this.egressTrust = egressTrust;
        this.slots = slots;
        this.deny = deny;
        this.destinations = Destinations.of(deny);
        this.plan = new NftPlan(deny);
        this.upstream = upstream;
        this.upstreamSource = upstreamSource;
    }

    /**
     * Opens the network layer of an engine whose state directory is {@code stateDir}. Checks the options at
     * once; touches nothing on the host until a sandbox needs a network.
     *
     * @param dnsUpstream  {@code IP[:PORT]}; empty: {@code $PADDOCK_DNS_UPSTREAM}, else the host's resolv.conf
     * @param allowPrivate CIDRs the operator opened in the deny list
     * @param dataDir      where a daemon keeps its egress CA (an embedded engine, without one, makes one per run)
     * @param egressTrust  CA certificates the egress proxy trusts upstream besides the JDK's
     * @throws SandboxException INVALID_ARGUMENT naming a bad option
     */
    public static SandboxNetworks open(Path stateDir, Optional<String> dnsUpstream, List<String> allowPrivate,
                                       Optional<Path> dataDir, Optional<Path> egressTrust) {
        Cidr range = Cidr.parse(DEFAULT_RANGE);
        DenyList deny;
        try {
            deny = new DenyList(allowPrivate.stream().map(Cidr::parse).toList(), range);
        } catch (IllegalArgumentException e) {
            throw SandboxException.invalid("allowPrivate", e.getMessage());
        }
        String source;
        Optional<String> text = dnsUpstream;
        if (text.isPresent()) {
            source = "--dns-upstream";
        } else if (System.getenv("PADDOCK_DNS_UPSTREAM") != null && !System.getenv("PADDOCK_DNS_UPSTREAM").isBlank()) {
            text = Optional.of(System.getenv("PADDOCK_DNS_UPSTREAM"));
            source = "PADDOCK_DNS_UPSTREAM";
        } else {
            text = hostNameserver();
            source = "/etc/resolv.conf";
        }
        Optional<InetSocketAddress> upstream = text.map(t -> parseUpstream(t, source));
        return new SandboxNetworks(new Slots(stateDir.resolve("net"), range), deny, upstream, source, dataDir, egressTrust);
    }

    /**
     * Sets the per-tenant caps of the egress proxy's connections and the resolver's TCP connections ({@code
     * LocalOptions.egressConnectionsPerTenant}, {@code dnsTcpPerTenant}); they take effect when those start, with
     * the first networked sandbox. Returns this.
     */
    public synchronized SandboxNetworks perTenant(int egressConnections, int dnsTcpConnections) {
        if (egressConnections < 1 || dnsTcpConnections < 1) {
            throw SandboxException.invalid("perTenant", "per-tenant caps must be at least 1");
        }
        this.egressPerTenant = egressConnections;
        this.dnsTcpPerTenant = dnsTcpConnections;
        return this;
    }

    /**
     * {@code IP} or {@code IP:PORT}: an address literal (IPv6 without a port); names are not resolved, so the
     * resolver never depends on DNS itself.
     */
    static InetSocketAddress parseUpstream(String text, String source) {
        String t = text.strip();
        int colon = t.lastIndexOf(':');
        String host = colon > 0 && t.indexOf(':') == colon ? t.substring(0, colon) : t;
        int port = 53;
        if (colon > 0 && t.indexOf(':') == colon) {
            try {
                port = Integer.parseInt(t.substring(colon + 1));
            } catch (NumberFormatException e) {
                port = -1;
            }
        }
        try {
            if (port < 1 || port > 65535) {
                throw new IllegalArgumentException("bad port");
            }
            InetAddress a = host.contains(":") ? InetAddress.getByName(host) : Cidr.address(host);
            return new InetSocketAddress(a, port);
        } catch (IllegalArgumentException | IOException e) {
            throw SandboxException.invalid("dnsUpstream", "'" + text + "' (from " + source
                    + ") is not an IP address with an optional port, such as 198.18.0.53 or 198.18.0.53:5353");
        }
    }

    private static Optional<String> hostNameserver() {
        try {
            return Files.readAllLines(Path.of("/etc/resolv.conf")).stream().map(String::strip)
                    .filter(l -> l.startsWith("nameserver")).map(l -> l.substring("nameserver".length()).strip())
                    .filter(a -> !a.isEmpty() && !a.contains("%")).findFirst();
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /**
     * A network made as far as a runtime needs to start the sandbox in it: the namespace, and the veth with
     * one end in it. {@link #finish()} does the rest (addresses, routes, rules, the resolver), meant to run
     * while the runtime starts the sandbox, so that a networked create costs little more than one process;
     * the sandbox is not handed to anyone before it has returned.
     */
    public interface Pending {
        NetworkNamespace namespace();

        /** Configures the rest. On failure the caller removes the sandbox and then {@link #detach}es it. */
        void finish();
    }

    /**
     * Makes the network of a new sandbox as far as {@link Pending}: the namespace (owned by the user namespace
     * {@code owner} when given, a namespace file; else by the host's) and the veth. On failure nothing it made is
     * left.
     */
    public Pending prepare(SandboxId id, NetworkPolicy policy, List<io.paddock.EgressSecret> secrets, Optional<Path> owner) {
        return prepare(id, policy, secrets, owner, Optional.empty());
    }

    /** {@link #prepare(SandboxId, NetworkPolicy, List, Optional)} for a sandbox of {@code tenant}, if any. */
    public Pending prepare(SandboxId id, NetworkPolicy policy, List<io.paddock.EgressSecret> secrets, Optional<Path> owner,
                           Optional<String> tenant) {
        checkUpstream(policy);
        Ports port = ready(!secrets.isEmpty());
        int slot = acquireUnused(id);
        String ns = NETNS_PREFIX + id.value();
        String iface = NftPlan.IFACE_PREFIX + slot;
        try {
            String veth = "link add " + iface + " type veth peer name eth0 netns " + ns;
            if (owner.isPresent()) {
                host.ipInNetnsOwnedBy(owner.get(), ns, List.of(veth));
            } else {
                host.ip(null, List.of("netns add " + ns, veth));
            }
        } catch (RuntimeException e) {
            try {
                removeLinks(id, slot);
                slots.release(slot, id);
            } catch (RuntimeException ce) {
                e.addSuppressed(ce);
            }
            throw e;
        }
        Attached a = new Attached(id, slot, policy, secrets, tenant);
        NetworkNamespace namespace = new NetworkNamespace(NETNS_DIR.resolve(ns), resolvConf(slot),
                secrets.isEmpty() ? Optional.empty() : Optional.of(ca.certificatePem()));
        return new Pending() {
            @Override
            public NetworkNamespace namespace() {
                return namespace;
            }

            @Override
            public void finish() {
                // DNS to the gateway is redirected to the resolver on 127.0.0.1; nothing else from the veth reaches
                // loopback (the input chain drops it). Strict reverse-path filtering refuses spoofed sources.
                // Until the rules are in, the base chains drop everything from a pdk interface they do not know.
                host.sysctl("ipv4/conf/" + iface + "/route_localnet", "1");
                host.sysctl("ipv4/conf/" + iface + "/rp_filter", "1");
                host.sysctl("ipv6/conf/" + iface + "/disable_ipv6", "1");
                host.nftApply(plan.attach(a.rules(port)));
                host.ip(null, List.of("addr add " + slots.gateway(slot).getHostAddress() + "/30 dev " + iface,
                        "link set " + iface + " up"));
                host.ip(ns, List.of("link set lo up",
                        "addr add " + slots.address(slot).getHostAddress() + "/30 dev eth0",
                        "link set eth0 up",
                        "route add default via " + slots.gateway(slot).getHostAddress()));
                attached.put(id, a);
                byAddress.put(slots.address(slot), a);
            }
        };
    }

    /**
     * A slot of this engine's whose veth name is free on the host. Another engine with a state directory of its own
     * keeps its slots elsewhere and may hold the same number: its {@code pdk<slot>} (and its chains) are never
     * touched, the slot is passed over.
     */
    private int acquireUnused(SandboxId id) {
        List<Integer> passed = new java.util.ArrayList<>();
        try {
            for (int i = 0; i < 16; i++) {
                int slot = slots.acquire(id);
                if (!Files.exists(Path.of("/sys/class/net", NftPlan.IFACE_PREFIX + slot), java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                    return slot;
                }
                passed.add(slot);
            }
            throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "no free network slot: the veths of 16 slots"
                    + " in a row belong to other engines on this host");
        } finally {
            passed.forEach(s -> slots.release(s, id));
        }
    }

    /** Replaces a running sandbox's policy; new connections follow it at once. */
    public void update(SandboxId id, NetworkPolicy policy) {
        Attached a = attached.get(id);
        if (a == null) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "sandbox " + id + " was created without a"
                    + " network (policy none and no ports); its policy cannot change. Create it with a policy.");
        }
        checkUpstream(policy);
        synchronized (a) {
            a.policy = policy;
            host().nftApply(plan.update(a.rules(ready(!a.secrets.isEmpty()))));
        }
    }

    /**
     * Takes over the network of a sandbox this engine adopted (after a restart): points its DNS at this
     * engine's resolver and applies {@code policy}. False when the sandbox has no network on this host.
     */
    public boolean adopt(SandboxId id, NetworkPolicy policy, List<io.paddock.EgressSecret> secrets) {
        return adopt(id, policy, secrets, Optional.empty());
    }

    /** {@link #adopt(SandboxId, NetworkPolicy, List)} for a sandbox of {@code tenant}, if any. */
    public boolean adopt(SandboxId id, NetworkPolicy policy, List<io.paddock.EgressSecret> secrets,
                         Optional<String> tenant) {
        Optional<Integer> slot = slots.of(id);
        if (slot.isEmpty() || !Files.exists(NETNS_DIR.resolve(NETNS_PREFIX + id.value()))) {
            return false;
        }
        Ports port = ready(!secrets.isEmpty());
        Attached a = new Attached(id, slot.get(), policy, secrets, tenant);
        host.nftApply(plan.retarget(a.rules(port)));
        host.nftApply(plan.update(a.rules(port)));
        attached.put(id, a);
        byAddress.put(slots.address(a.slot), a);
        return true;
    }

    /** Removes everything of a sandbox's network: rules, veth, namespace, slot. Idempotent. */
    public void detach(SandboxId id) {
        Attached a = attached.remove(id);
        Optional<Integer> slot = a != null ? Optional.of(a.slot) : slots.of(id);
        slot.ifPresent(s -> byAddress.remove(slots.address(s)));
        if (slot.isEmpty() && !Files.exists(NETNS_DIR.resolve(NETNS_PREFIX + id.value()))) {
            return;
        }
        if (a != null) {
            // This engine made all of them: one transaction, no listing first (a missing one fails it, and
            // the listing then says what is left).
            try {
                host().nftApply(plan.detach(a.slot, NftPlan.objectsOf(a.slot), NftPlan.mapKeysOf(a.slot)));
            } catch (SandboxException e) {
                removeRules(a.slot);
            }
        } else if (slot.isPresent()) {
            removeRules(slot.get());
        }
        removeLinks(id, slot.orElse(-1));
        slot.ifPresent(s -> slots.release(s, id));
    }

    /**
     * Gives the sandbox's side of its veth its address and default route again, as {@link Pending#finish} did;
     * what is already there stays (idempotent). gVisor takes them off the namespace's interface when its netstack
     * takes the interface over, so a gVisor sandbox restored from a checkpoint into the same namespace needs
     * them back first: runsc copies them from there. Does nothing for a sandbox without a network here.
     */
    public void readdress(SandboxId id) {
        Optional<Integer> slot = slots.of(id);
        String ns = NETNS_PREFIX + id.value();
        if (slot.isEmpty() || !Files.exists(NETNS_DIR.resolve(ns))) {
            return;
        }
        host.ip(ns, List.of("addr replace " + slots.address(slot.get()).getHostAddress() + "/30 dev eth0",
                "link set eth0 up",
                "route replace default via " + slots.gateway(slot.get()).getHostAddress()));
    }

    /** The sandbox's address, reachable from this host (the daemon's port proxy connects to it). */
    public Optional<Inet4Address> address(SandboxId id) {
        Attached a = attached.get(id);
        if (a != null) {
            return Optional.of(slots.address(a.slot));
        }
        return slots.of(id).map(slots::address);
    }

    /** Bytes and packets the sandbox sent and received, from its veth's counters; empty without a network. */
    public Optional<Counters> counters(SandboxId id) {
        Attached a = attached.get(id);
        if (a == null) {
            return Optional.empty();
        }
        Path stats = Path.of("/sys/class/net", NftPlan.IFACE_PREFIX + a.slot, "statistics");
        try {
            // The host side receives what the sandbox sends.
            return Optional.of(new Counters(readLong(stats.resolve("rx_bytes")), readLong(stats.resolve("tx_bytes"))));
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /** Bytes a sandbox sent ({@code txBytes}) and received ({@code rxBytes}). */
    public record Counters(long txBytes, long rxBytes) {
    }

    /**
     * Removes the networks of sandboxes that are gone (a crash left them): this engine's slots (its state
     * directory's {@code net/}) whose holder is not {@code alive}. Returns the ids it cleaned.
     *
     * <p>Only what is provably this engine's is reclaimed. {@code /run/netns} is the host's: a {@code paddock-}
     * namespace without a slot here belongs to another engine with a state directory of its own (a CLI beside a
     * daemon, a second daemon, a test suite's engine), whose sandboxes this engine's records cannot name, so it
     * is never taken for an orphan. This engine's own namespaces always have a slot: {@link #prepare} takes the
     * slot before it makes the namespace, and {@link #detach} frees it last.
     */
    public List<SandboxId> sweep(Predicate<SandboxId> alive) {
        Set<SandboxId> gone = new HashSet<>();
        // A network is made before its sandbox's bundle: one younger than the grace may be a create in progress
        // of an engine sharing this state directory, not an orphan.
        slots.all().forEach((slot, holder) -> {
            if (SandboxId.isValid(holder) && !alive.test(new SandboxId(holder)) && olderThanGrace(slots.file(slot))) {
                gone.add(new SandboxId(holder));
            }
        });
        for (SandboxId id : gone) {
            try {
                detach(id);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "cannot remove the network of gone sandbox " + id + ": " + e.getMessage());
            }
        }
        return List.copyOf(gone);
    }

    /** How old a network without a sandbox must be before a sweep takes it for an orphan: two minutes, or
     * {@code -Dpaddock.network.sweepGraceSeconds} (tests of the sweep lower it rather than wait). */
    static Duration sweepGrace() {
        return Duration.ofSeconds(Long.getLong("paddock.network.sweepGraceSeconds", 120));
    }

    private static boolean olderThanGrace(Path file) {
        try {
            return Files.getLastModifiedTime(file, java.nio.file.LinkOption.NOFOLLOW_LINKS).toInstant()
                    .isBefore(java.time.Instant.now().minus(sweepGrace()));
        } catch (IOException e) {
            return false; // gone meanwhile
        }
    }

    /** Where connections made on this engine's sandboxes' behalf may go: the deny list and the host's own addresses. */
    public Destinations destinations() {
        return destinations;
    }

    /** The resolver's address (for tests and diagnostics); empty until the first networked sandbox. */
    public synchronized Optional<InetSocketAddress> resolverAddress() {
        return Optional.ofNullable(resolver).map(SandboxResolver::address);
    }

    /** Stops the resolver. Sandboxes' namespaces and rules stay: they belong to the sandboxes, which may outlive the engine. */
    @Override
    public synchronized void close() {
        closed = true;
        if (resolver != null) {
            resolver.close();
            resolver = null;
        }
        if (egress != null) {
            egress.close();
            egress = null;
        }
    }

    private void checkUpstream(NetworkPolicy policy) {
        boolean resolves = policy.mode() == NetworkMode.OPEN || !policy.domains().isEmpty();
        if (resolves && upstream.isEmpty()) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "the policy names domains, but Paddock's resolver"
                    + " has no upstream DNS server to ask: " + upstreamSource + " names none. Give one with"
                    + " --dns-upstream IP[:PORT] (or PADDOCK_DNS_UPSTREAM).");
        }
    }

    /**
     * Sets the host up on first use (tools, forwarding, the table, the resolver) and the egress proxy on the first
     * sandbox with egress secrets; returns their ports (the proxy's 0 until it runs).
     */
    private synchronized Ports ready(boolean egressNeeded) {
        if (closed) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "the engine is closing");
        }
        if (resolver == null) {
            NetHost h = host();
            if (!"1".equals(h.readSysctl("ipv4/ip_forward"))) {
                h.sysctl("ipv4/ip_forward", "1");
                LOG.log(System.Logger.Level.INFO, "enabled IPv4 forwarding (net.ipv4.ip_forward=1) for sandbox networks");
            }
            h.nftApply(plan.base());
            InetSocketAddress up = upstream.orElse(new InetSocketAddress(Cidr.address("127.0.0.1"), 53));
            resolver = SandboxResolver.start(new InetSocketAddress(Cidr.address("127.0.0.1"), 0), up,
                    source -> Optional.ofNullable(byAddress.get(source)), deny, SandboxResolver.Limits.defaults().withTcpPerTenant(dnsTcpPerTenant));
        }
        if (egressNeeded && egress == null) {
            ca = dataDir.map(d -> CertificateAuthority.loadOrCreate(d.resolve("egress")))
                    .orElseGet(CertificateAuthority::ephemeral);
            egress = EgressProxy.start(new InetSocketAddress(Cidr.address("127.0.0.1"), 0), ca,
                    UpstreamTrust.context(egressTrust), this::resolveForEgress,
                    source -> Optional.ofNullable(byAddress.get(source)),
                    EgressProxy.Limits.defaults().withPerTenant(egressPerTenant));
        }
        return new Ports(resolver.address().getPort(), egress == null ? 0 : egress.address().getPort());
    }

    /**
     * Where the egress proxy connects for a secret's host: resolved through the resolver's upstream (never the
     * host's own resolver), the first address {@link Destinations} does not refuse; the proxy connects from the
     * host, outside the sandbox's rules (whose input chain keeps the sandbox off the host's own addresses), so the
     * deny list and the host's own addresses are applied here.
     */
    private InetSocketAddress resolveForEgress(String name, int port) throws IOException {
        InetSocketAddress up = upstream.orElseThrow(() -> new IOException("no DNS upstream"));
        org.xbill.DNS.SimpleResolver r = new org.xbill.DNS.SimpleResolver(up);
        r.setTimeout(Duration.ofSeconds(3));
        org.xbill.DNS.Lookup lookup;
        try {
            // Absolute: no search domain of the host's is ever appended.
            lookup = new org.xbill.DNS.Lookup(org.xbill.DNS.Name.fromString(name, org.xbill.DNS.Name.root),
                    org.xbill.DNS.Type.A);
        } catch (org.xbill.DNS.TextParseException e) {
            throw new IOException("not a host name: " + name, e);
        }
        lookup.setResolver(r);
        lookup.setCache(null);
        org.xbill.DNS.Record[] records = lookup.run();
        if (records != null) {
            for (org.xbill.DNS.Record rec : records) {
                if (rec instanceof org.xbill.DNS.ARecord a && a.getAddress() instanceof Inet4Address v4
                        && !destinations.refuses(v4)) {
                    return new InetSocketAddress(v4, port);
                }
            }
        }
        throw new IOException(name + " has no address a sandbox may reach");
    }

    private synchronized NetHost host() {
        if (host == null) {
            host = NetHost.locate();
        }
        return host;
    }

    private String resolvConf(int slot) {
        return "nameserver " + slots.gateway(slot).getHostAddress() + "\noptions timeout:2 attempts:2\n";
    }

    /** Deletes the veth (both ends) and the namespace, those that exist, in one {@code ip} run. */
    private void removeLinks(SandboxId id, int slot) {
        List<String> commands = new java.util.ArrayList<>();
        if (slot >= 0 && Files.exists(Path.of("/sys/class/net", NftPlan.IFACE_PREFIX + slot))) {
            commands.add("link del " + NftPlan.IFACE_PREFIX + slot);
        }
        String ns = NETNS_PREFIX + id.value();
        if (Files.exists(NETNS_DIR.resolve(ns))) {
            commands.add("netns del " + ns);
        }
        if (!commands.isEmpty()) {
            host().ip(null, commands);
        }
    }

    private void removeRules(int slot) {
        NetHost h = host();
        String listing = h.nftList(List.of("table", NftPlan.FAMILY, NftPlan.TABLE));
        if (listing.isEmpty()) {
            return;
        }
        Set<String> present = new HashSet<>();
        Set<String> mapKeys = new HashSet<>();
        try {
            for (JsonNode item : JSON.readTree(listing).path("nftables")) {
                for (String kind : List.of("chain", "set")) {
                    if (item.has(kind)) {
                        present.add(item.get(kind).path("name").asText());
                    }
                }
                if (item.has("map")) {
                    String map = item.get("map").path("name").asText();
                    for (JsonNode e : item.get("map").path("elem")) {
                        mapKeys.add(map + ":" + e.path(0).asText());
                    }
                }
            }
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot read nft's listing: " + e, e);
        }
        String doc = plan.detach(slot, present, mapKeys);
        if (!doc.isEmpty()) {
            h.nftApply(doc);
        }
    }

    private static long readLong(Path p) throws IOException {
        return Long.parseLong(Files.readString(p).trim());
    }
}
