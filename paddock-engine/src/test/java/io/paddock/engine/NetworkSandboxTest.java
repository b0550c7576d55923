package io.paddock.engine;

import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.ExecResult;
import io.paddock.LocalOptions;
import io.paddock.NetworkPolicy;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Sandbox networks on both tiers, against a test world in a namespace of its own ({@link TestWorld}):
 * allowlists of CIDRs and domains, the deny list winning over them (metadata, the host, other sandboxes,
 * private ranges, rebinding), Paddock's resolver forwarding nothing but allowlisted names (counted at the
 * world's DNS server), no reconfiguring the network from inside, policy changes at run time, ports reached
 * from the host, traffic counters. The leak check runs after each test: no namespace, veth, rule, slot or
 * resolver file may survive destroy.
 */
class NetworkSandboxTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    static TestWorld world;

    /** Prints each URL's body, or ERR and the error. */
    static final String FETCH = """
            import sys, urllib.request
            for u in sys.argv[1:]:
                try:
                    print(urllib.request.urlopen(u, timeout=4).read().decode().strip())
                except Exception as e:
                    print("ERR", type(e).__name__, str(e)[:80])
            """;

    /** Asks the sandbox's resolver (or argv[3]) for argv[1] of type argv[2] with a hand-made packet. */
    static final String QUERY = """
            import random, socket, struct, sys
            name, qtype = sys.argv[1], int(sys.argv[2])
            server = sys.argv[3] if len(sys.argv) > 3 else [l.split()[1] for l in open("/etc/resolv.conf") if l.startswith("nameserver")][0]
            pkt = struct.pack(">HHHHHH", random.randint(0, 65535), 0x0100, 1, 0, 0, 0)
            pkt += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\\0" + struct.pack(">HH", qtype, 1)
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(3)
            try:
                s.sendto(pkt, (server, 53))
                d = s.recv(4096)
                print("rcode", d[3] & 15, "answers", struct.unpack(">H", d[6:8])[0])
            except Exception as e:
                print("ERR", type(e).__name__)
            """;

    @BeforeAll
    static void makeWorld() throws Exception {
        world = new TestWorld(9);
        world.startHttps();
        world.startOnHostEnd();
    }

    @AfterAll
    static void removeWorld() throws Exception {
        if (world != null) {
            world.close();
        }
    }

    /** Only the operator opens a private range, and then only sandboxes whose policy allows it reach it. */
    @Test
    void anOperatorOpenedRangeIsReachableOnlyWhereThePolicyAllowsIt() {
        try (Paddock operator = Paddock.local(LocalOptions.builder().allowPrivate(TestWorld.METADATA + "/32").build());
             Sandbox allowed = operator.create(SandboxSpec.builder().network(NetworkPolicy.allow(TestWorld.METADATA)).build());
             Sandbox other = operator.create(SandboxSpec.builder().network(NetworkPolicy.allow(world.a)).build())) {
            assertThat(OnTier.run(allowed, FETCH, world.url(TestWorld.METADATA)).get(0)).isEqualTo("world " + TestWorld.METADATA);
            assertThat(OnTier.run(other, FETCH, world.url(TestWorld.METADATA)).get(0)).startsWith("ERR");
        }
        assertThatThrownBy(() -> LocalOptions.builder().allowPrivate("not-a-cidr")).isInstanceOf(SandboxException.class)
                .hasMessageContaining("allowPrivate");
    }

    /** A warm pool of a networked shape: the claimed sandbox has its network ready; egress secrets are never pooled. */
    @Test
    void aWarmPoolServesANetworkedShape() throws Exception {
        SandboxSpec shape = SandboxSpec.builder().network(NetworkPolicy.allow(world.a + "/32", "allowed.paddock.test")).build();
        try (io.paddock.engine.internal.LocalPaddock p = (io.paddock.engine.internal.LocalPaddock) Paddock.local(
                LocalOptions.builder().dnsUpstream(world.a).egressTrust(world.testCa())
                        .warmPool(io.paddock.PoolConfig.builder().size(1).shape(shape).build()).build())) {
            long until = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (p.poolStats().get(0).idle() < 1 && System.nanoTime() < until) {
                Thread.sleep(20);
            }
            try (Sandbox sb = p.create(shape)) {
                assertThat(p.poolStats().get(0).hits()).isEqualTo(1);
                assertThat(OnTier.run(sb, FETCH, "http://allowed.paddock.test:8080/", world.url(world.b)))
                        .satisfies(l -> {
                            assertThat(l.get(0)).isEqualTo("world " + world.a);
                            assertThat(l.get(1)).startsWith("ERR");
                        });
            }
            while (p.poolStats().get(0).idle() < 1 && System.nanoTime() < until + Duration.ofSeconds(30).toNanos()) {
                Thread.sleep(20);
            }
            SandboxSpec secretShape = SandboxSpec.builder().network(shape.network())
                    .egressSecret("K", "allowed.paddock.test", "v").build();
            try (Sandbox sb = p.create(secretShape)) {
                assertThat(p.poolStats().get(0).hits()).as("egress secrets are never served from a pool").isEqualTo(1);
            }
        }
    }

    @TestInstance(TestInstance.Lifecycle.PER_CLASS)
    abstract static class OnTier {
        Paddock paddock;

        abstract String tier();

        @BeforeAll
        void start() {
            paddock = Paddock.local(LocalOptions.builder().defaultRuntime(tier()).dnsUpstream(world.a)
                    .egressTrust(world.testCa()).build());
        }

        @AfterAll
        void stop() {
            if (paddock != null) {
                paddock.close();
            }
        }

        SandboxSpec.Builder spec(NetworkPolicy policy) {
            return SandboxSpec.builder().network(policy).memory(ByteSize.mib(256)).timeout(Duration.ofMinutes(2));
        }

        static List<String> run(Sandbox sb, String script, String... args) {
            List<String> argv = new ArrayList<>(List.of("python3", "-c", script));
            argv.addAll(List.of(args));
            ExecResult r = sb.exec(io.paddock.ExecRequest.builder().argv(argv).timeout(Duration.ofSeconds(60)).build());
            assertThat(r.exitCode()).as(r.stderrText()).isZero();
            return r.stdoutText().lines().toList();
        }

        /**
         * Two engines with state directories of their own share the host's {@code /run/netns}: the second one's
         * start-up sweep must leave the first one's live networks alone (issue 37, defect 1). The sweep's grace is
         * lowered so that the first engine's namespace is old enough to be taken, were it taken for an orphan.
         */
        @Test
        void anotherEnginesStartLeavesThisEnginesNetworks() throws Exception {
            try (Sandbox sb = paddock.create(spec(NetworkPolicy.allow(world.a + "/32")).build())) {
                assertThat(run(sb, FETCH, world.url(world.a)).get(0)).isEqualTo("world " + world.a);
                java.nio.file.Path otherState = java.nio.file.Files.createTempDirectory(
                        java.nio.file.Path.of("/run"), "paddock-other-");
                String before = System.getProperty("paddock.network.sweepGraceSeconds");
                System.setProperty("paddock.network.sweepGraceSeconds", "0");
                try (Paddock other = Paddock.local(LocalOptions.builder().defaultRuntime(tier()).stateDir(otherState)
                        .dnsUpstream(world.a).build())) {
                    assertThat(other.list()).isEmpty();
                } finally {
                    if (before == null) {
                        System.clearProperty("paddock.network.sweepGraceSeconds");
                    } else {
                        System.setProperty("paddock.network.sweepGraceSeconds", before);
                    }
                    try (var files = java.nio.file.Files.walk(otherState)) {
                        files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
                    }
                }
                assertThat(java.nio.file.Files.exists(java.nio.file.Path.of("/run/netns/paddock-" + sb.id().value())))
                        .as("the first engine's namespace").isTrue();
                assertThat(run(sb, FETCH, world.url(world.a)).get(0)).isEqualTo("world " + world.a);
            }
        }

        @Test
        void noneHasOnlyLoopback() {
            try (Sandbox sb = paddock.create(SandboxSpec.builder().build())) {
                assertThat(sb.exec("ls", "/sys/class/net").stdoutText().strip()).isEqualTo("lo");
                assertThat(run(sb, FETCH, world.url(world.a)).get(0)).startsWith("ERR");
            }
        }

        @Test
        void aCidrAllowlistReachesOnlyItsRangeAndNeverTheDenyList() throws Exception {
            // The host reaches every target, so only the sandbox's rules can be what stops it.
            HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(3)).build();
            for (String host : List.of(world.a, world.b, TestWorld.METADATA)) {
                assertThat(http.send(HttpRequest.newBuilder(URI.create(world.url(host))).build(),
                        HttpResponse.BodyHandlers.ofString()).body()).isEqualTo("world " + host + "\n");
            }
            try (Sandbox sb = paddock.create(spec(NetworkPolicy.allow(world.a + "/32", "169.254.0.0/16")).build());
                 Sandbox other = paddock.create(spec(NetworkPolicy.allow(world.a)).port(8080)
                         .entrypoint("python3", "-m", "http.server", "8080").build())) {
                String gateway = sb.exec("sh", "-c", "ip route | awk '/default/ {print $3}'").stdoutText().strip();
                String otherAddress = other.url(8080).getHost();
                List<String> out = run(sb, FETCH, world.url(world.a), world.url(world.b), world.url(TestWorld.METADATA),
                        "http://" + gateway + ":8080/", "http://127.0.0.1:8080/", "http://" + otherAddress + ":8080/");
                assertThat(out.get(0)).isEqualTo("world " + world.a);
                assertThat(out.subList(1, out.size())).as("not allowlisted, metadata (allowlisted but denied), the host,"
                        + " its own loopback, another sandbox").allMatch(l -> l.startsWith("ERR"));
            }
        }

        @Test
        void domainsResolveOnlyThroughPaddockAndOnlyWhenAllowlisted() throws Exception {
            String leak = "leak-" + tier() + "-" + System.nanoTime() + ".paddock.test";
            String tunnel = "dGhlLXNlY3JldC1kYXRhLWdvZXMtaGVyZQ." + System.nanoTime() + ".other.paddock.test";
            try (Sandbox sb = paddock.create(spec(NetworkPolicy.allow("allowed.paddock.test", "*.wild.paddock.test",
                    "rebind.paddock.test", "private.paddock.test", world.a + "/32")).build())) {
                List<String> out = run(sb, FETCH, "http://allowed.paddock.test:8080/", "http://api.wild.paddock.test:8080/",
                        "http://other.paddock.test:8080/", "http://" + leak + ":8080/", "http://rebind.paddock.test:8080/",
                        "http://private.paddock.test:8080/");
                assertThat(out.get(0)).isEqualTo("world " + world.a);
                assertThat(out.get(1)).as("a wildcard's name, resolved to an address not otherwise allowed")
                        .isEqualTo("world " + world.b);
                assertThat(out.subList(2, 6)).allMatch(l -> l.startsWith("ERR"));
                List<String> dns = run(sb, QUERY, tunnel, "16");
                assertThat(dns.get(0)).isEqualTo("rcode 3 answers 0");
                List<String> direct = run(sb, QUERY, "allowed.paddock.test", "1", world.a);
                assertThat(direct.get(0)).as("the world's resolver, asked directly (its address is allowlisted)")
                        .startsWith("ERR");
                assertThat(run(sb, QUERY, "allowed.paddock.test", "28").get(0)).as("AAAA: sandboxes have IPv4 only")
                        .isEqualTo("rcode 0 answers 0");
            }
            List<String> seen = world.dnsQueries();
            assertThat(seen).anyMatch(l -> l.contains("allowed.paddock.test"))
                    .noneMatch(l -> l.contains(leak)).noneMatch(l -> l.contains("other.paddock.test"))
                    .noneMatch(l -> l.contains("dGhlLXNlY3JldC1kYXRhLWdvZXMtaGVyZQ"));
        }

        @Test
        void thePolicyChangesAtRunTime() {
            try (Sandbox sb = paddock.create(spec(NetworkPolicy.allow(world.a + "/32")).build())) {
                assertThat(run(sb, FETCH, world.url(world.b)).get(0)).startsWith("ERR");
                sb.updateNetwork(NetworkPolicy.allow(world.b + "/32"));
                assertThat(sb.info().network()).isEqualTo(NetworkPolicy.allow(world.b + "/32"));
                assertThat(run(sb, FETCH, world.url(world.b), world.url(world.a)))
                        .containsExactly("world " + world.b, run(sb, FETCH, world.url(world.a)).get(0));
                assertThat(run(sb, FETCH, world.url(world.a)).get(0)).startsWith("ERR");
                sb.updateNetwork(NetworkPolicy.none());
                assertThat(run(sb, FETCH, world.url(world.b)).get(0)).startsWith("ERR");
            }
            try (Sandbox sb = paddock.create(SandboxSpec.builder().build())) {
                assertThatThrownBy(() -> sb.updateNetwork(NetworkPolicy.open())).isInstanceOfSatisfying(SandboxException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.FAILED_PRECONDITION));
            }
        }

        @Test
        void anEgressSecretIsAddedOnTheWayOutAndNeverSeenInside() throws Exception {
            String value = "s3cr3t-" + tier() + "-" + System.nanoTime();
            try (Sandbox sb = paddock.create(spec(NetworkPolicy.allow("secret.paddock.test"))
                    .egressSecret("API_KEY", "secret.paddock.test", value).build())) {
                List<String> out = run(sb, """
                        import os, urllib.request
                        key = os.environ["API_KEY"]
                        print(key)
                        req = urllib.request.Request("https://secret.paddock.test/v1/thing",
                                                     headers={"Authorization": "Bearer " + key, "X-Api-Key": key})
                        print(urllib.request.urlopen(req, timeout=10).read().decode().strip())
                        """);
                assertThat(out.get(0)).startsWith("paddock-egress-");
                assertThat(out.get(1)).isEqualTo("secret-host ok");
                String seen = java.nio.file.Files.readString(world.httpsHeaders());
                assertThat(seen).contains("Authorization: Bearer " + value).contains("X-Api-Key: " + value)
                        .doesNotContain(out.get(0));
                ExecResult inside = sb.exec("sh", "-c", "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n';"
                        + " grep -rl '" + value + "' /etc /tmp /workspace 2>/dev/null; true");
                assertThat(inside.stdoutText()).doesNotContain(value);
                assertThat(sb.toString() + sb.info()).doesNotContain(value);
            }
        }

        /**
         * Issue 32 breach 7: an allowlisted name with an egress secret that resolves to an address of the host itself
         * (the host's end of the world's link, serving HTTP there). A direct connection is dropped by the input
         * chain; the egress proxy connects from the host, so it must refuse the address itself ({@code
         * Destinations}): the sandbox gets a 502 and the host's service is never asked. Before, it answered.
         */
        @Test
        void theEgressProxyNeverConnectsToTheHostsOwnAddresses() {
            try (Sandbox sb = paddock.create(spec(NetworkPolicy.allow("hostself.paddock.test"))
                    .egressSecret("API_KEY", "hostself.paddock.test", "v-" + System.nanoTime()).build())) {
                List<String> out = run(sb, FETCH, "http://hostself.paddock.test/", "http://" + world.hostEnd + ":80/");
                assertThat(out.get(0)).as("through the egress proxy").startsWith("ERR HTTPError").contains("502");
                assertThat(out.get(1)).as("directly").startsWith("ERR");
            }
        }

        /**
         * Issue 32 round 3 (ATTACKS.md A82e): the destination gate, the CONNECT proxy on the host's 127.0.0.1 through
         * which tenants' pulls and pushes connect, must be out of every sandbox's reach, however open its policy. A
         * sandbox with an open network tries the gate's port, a lane's and a control port on every address it could
         * route to: the host end of its own link (its default gateway), the host end of the test world's link, every
         * other address of the host, and 127.0.0.1, which inside is its own. Nothing answers, the gate saw no
         * connection at all, and neither did the control listener, which is on the host's every address (so an
         * address left open would show there, not only as "nothing listens"). The world is reached, so the sandbox
         * has network and its connects work.
         */
        @Test
        void a82e_noSandboxReachesTheDestinationGate() throws Exception {
            List<String> targets = new ArrayList<>(List.of("gateway", "127.0.0.1", world.hostEnd));
            java.util.Collections.list(java.net.NetworkInterface.getNetworkInterfaces()).stream()
                    .flatMap(i -> java.util.Collections.list(i.getInetAddresses()).stream())
                    .filter(a -> !a.isLoopbackAddress() && !a.isLinkLocalAddress())
                    .map(a -> a.getHostAddress().replaceAll("%.*$", "")).distinct().limit(100).forEach(targets::add);
            try (io.paddock.network.DestinationGate gate = io.paddock.network.DestinationGate.start(
                    io.paddock.network.Destinations.defaults());
                 io.paddock.network.DestinationGate.Lane lane = gate.lane("alice", 4);
                 java.net.ServerSocket control = new java.net.ServerSocket(0, 50);
                 Sandbox sb = paddock.create(spec(NetworkPolicy.open()).build())) {
                assertThat(gate.address().getAddress().isLoopbackAddress()).isTrue();
                assertThat(lane.address().getAddress().isLoopbackAddress()).isTrue();
                java.util.concurrent.atomic.AtomicInteger controlSaw = new java.util.concurrent.atomic.AtomicInteger();
                Thread acceptor = new Thread(() -> {
                    while (!control.isClosed()) {
                        try (java.net.Socket s = control.accept()) {
                            controlSaw.incrementAndGet();
                        } catch (java.io.IOException e) {
                            return;
                        }
                    }
                });
                acceptor.setDaemon(true);
                acceptor.start();
                List<String> args = new ArrayList<>(List.of(Integer.toString(gate.address().getPort()),
                        Integer.toString(lane.address().getPort()), Integer.toString(control.getLocalPort()), world.a));
                args.addAll(targets);
                List<String> out = run(sb, """
                        import errno, select, socket, struct, sys, time
                        ports = [int(p) for p in sys.argv[1:4]]
                        hosts = sys.argv[5:]
                        gw = None
                        for line in open("/proc/net/route").read().splitlines()[1:]:
                            f = line.split()
                            if f[1] == "00000000":
                                gw = socket.inet_ntoa(struct.pack("<L", int(f[2], 16)))
                        hosts = [gw if h == "gateway" else h for h in hosts if h != "gateway" or gw]
                        print("gateway", gw)
                        pending = {}
                        for h in hosts:
                            for p in ports:
                                s = None
                                try:
                                    s = socket.socket(socket.AF_INET6 if ":" in h else socket.AF_INET)
                                    s.setblocking(False)
                                    pending[s] = (h, p)
                                    s.connect((h, p))
                                except BlockingIOError:
                                    pass
                                except OSError as e:
                                    pending.pop(s, None)
                                    print("ERR", h, p, e.errno)
                        w = socket.socket()
                        w.setblocking(False)
                        try:
                            w.connect((sys.argv[4], 8080))
                        except BlockingIOError:
                            pass
                        waiting, done = set(pending) | {w}, set()
                        end = time.monotonic() + 4
                        while waiting and time.monotonic() < end:  # every connect has its answer, or 4 s
                            _, ready, _ = select.select([], list(waiting), [], max(0, end - time.monotonic()))
                            waiting -= set(ready)
                            done |= set(ready)
                        for s, (h, p) in pending.items():
                            err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) if s in done else errno.ETIMEDOUT
                            print("OPEN" if err == 0 else "ERR", h, p, err)
                        werr = w.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) if w in done else errno.ETIMEDOUT
                        print("world", "OPEN" if werr == 0 else "ERR", werr)
                        """, args.toArray(String[]::new));
                assertThat(out.get(0)).as("the sandbox has a default route").matches("gateway \\d+\\.\\d+\\.\\d+\\.\\d+");
                assertThat(out.get(out.size() - 1)).as("the same connect to the world's listener: the probe sees an open"
                        + " port").isEqualTo("world OPEN 0");
                assertThat(out).as("connects to the gate's, a lane's and a control port").hasSizeGreaterThan(3 * 3)
                        .filteredOn(l -> l.startsWith("OPEN")).isEmpty();
                Thread.sleep(300);
                assertThat(gate.accepted()).as("connections that reached the gate").isZero();
                assertThat(controlSaw.get()).as("connections that reached the host's control listener").isZero();
                assertThat(run(sb, FETCH, world.url(world.a)).get(0)).as("the sandbox has network")
                        .isEqualTo("world " + world.a);
            }
        }

        /**
         * A connection flood (conntrack exhaustion, ATTACKS.md "exhausting conntrack"): new connections beyond
         * 200/s (burst 400) are dropped, so however fast the sandbox tries, what gets through is bounded by the
         * time it took. The world's listener on 9000 would complete every one of them.
         */
        @Test
        void aConnectionFloodIsHeldToTheNewConnectionRate() {
            try (Sandbox sb = paddock.create(spec(NetworkPolicy.allow(world.a + "/32")).pids(64).openFiles(8192).build())) {
                List<String> out = run(sb, """
                        import socket, sys, time
                        host, n = sys.argv[1], int(sys.argv[2])
                        socks = []
                        t0 = time.monotonic()
                        for i in range(n):
                            s = socket.socket()
                            s.setblocking(False)
                            try:
                                s.connect((host, 9000))
                            except BlockingIOError:
                                pass
                            socks.append(s)
                        time.sleep(0.3)
                        elapsed = time.monotonic() - t0
                        ok = 0
                        for s in socks:
                            try:
                                s.getpeername()  # ENOTCONN while the handshake has not completed
                                ok += 1
                            except OSError:
                                pass
                        print(ok, round(elapsed, 3))
                        """, world.a, "3000");
                String[] r = out.get(0).split(" ");
                int established = Integer.parseInt(r[0]);
                double seconds = Double.parseDouble(r[1]);
                assertThat(established).as("some connect at all").isGreaterThan(50);
                assertThat(established).as("established in %.2f s of 3000 tried", seconds)
                        .isLessThanOrEqualTo((int) (400 + 200 * seconds + 100)).isLessThan(3000);
                assertThat(run(sb, FETCH, world.url(world.a)).get(0)).as("after the flood, within the rate again")
                        .isEqualTo("world " + world.a);
            }
        }

        @Test
        void nothingInsideCanReconfigureTheNetwork() {
            try (Sandbox sb = paddock.create(spec(NetworkPolicy.allow(world.a + "/32")).build())) {
                List<String> out = run(sb, """
                        import socket, subprocess
                        for cmd in (["ip", "link", "set", "eth0", "down"], ["ip", "addr", "add", "198.18.9.77/24", "dev", "eth0"],
                                    ["ip", "route", "add", "198.18.0.0/16", "dev", "eth0"]):
                            r = subprocess.run(cmd, capture_output=True, text=True)
                            print("rc", r.returncode)
                        for kind in ((socket.AF_PACKET, socket.SOCK_RAW, 0x0300), (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)):
                            try:
                                socket.socket(*kind)
                                print("RAW SOCKET")
                            except OSError as e:
                                print("raw refused", e.errno)
                        """);
                assertThat(out).hasSize(5).noneMatch(l -> l.equals("rc 0") || l.equals("RAW SOCKET"));
                assertThat(run(sb, FETCH, world.url(world.a)).get(0)).isEqualTo("world " + world.a);
            }
        }

        @Test
        void portsAreReachedFromTheHostAndTrafficIsCounted() throws Exception {
            try (Sandbox sb = paddock.create(spec(NetworkPolicy.none()).port(8000)
                    .entrypoint("python3", "-m", "http.server", "8000", "--directory", "/etc").build())) {
                URI url = sb.url(8000);
                assertThat(url.getHost()).startsWith("10.213.");
                HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(3)).build();
                String body = null;
                for (int i = 0; i < 100 && body == null; i++) {
                    try {
                        body = http.send(HttpRequest.newBuilder(url.resolve("/hostname")).build(),
                                HttpResponse.BodyHandlers.ofString()).body();
                    } catch (java.io.IOException e) {
                        Thread.sleep(100);
                    }
                }
                assertThat(body).isEqualTo("sandbox\n");
                assertThat(sb.info().traffic()).hasValueSatisfying(t -> {
                    assertThat(t.txBytes()).isPositive();
                    assertThat(t.rxBytes()).isPositive();
                });
                assertThat(run(sb, FETCH, world.url(world.a)).get(0)).as("none: no egress, even with a port").startsWith("ERR");
                assertThatThrownBy(() -> sb.url(9000)).isInstanceOfSatisfying(SandboxException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
            }
        }
    }

    @Nested
    class Runc extends OnTier {
        @Override
        String tier() {
            return "runc";
        }
    }

    @Nested
    class Runsc extends OnTier {
        @Override
        String tier() {
            return "runsc";
        }
    }
}
