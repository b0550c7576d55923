package io.paddock.network.internal.dns;

import io.paddock.NetworkPolicy;
import io.paddock.network.internal.Cidr;
import io.paddock.network.internal.DenyList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.xbill.DNS.ARecord;
import org.xbill.DNS.CNAMERecord;
import org.xbill.DNS.DClass;
import org.xbill.DNS.Flags;
import org.xbill.DNS.MXRecord;
import org.xbill.DNS.Message;
import org.xbill.DNS.Name;
import org.xbill.DNS.Opcode;
import org.xbill.DNS.Rcode;
import org.xbill.DNS.Record;
import org.xbill.DNS.Section;
import org.xbill.DNS.TXTRecord;
import org.xbill.DNS.TextParseException;
import org.xbill.DNS.Type;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/** The resolver on real loopback sockets, against {@link FakeUpstream}. */
class SandboxResolverTest {
    private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();
    private static final DenyList DENY = new DenyList(List.of(), Cidr.parse("10.88.0.0/16"));
    private static final SandboxResolver.Limits GENEROUS =
            new SandboxResolver.Limits(1000, 1000, 256, Duration.ofSeconds(2));
    /** How long a test waits to be sure no answer comes. */
    private static final Duration SILENCE = Duration.ofMillis(300);

    private FakeUpstream upstream;
    private final TestClient client = new TestClient();
    /** Who 127.0.0.1 is; null makes it a stranger. */
    private volatile TestClient asking = client;
    private final List<SandboxResolver> resolvers = new ArrayList<>();
    private SandboxResolver resolver;

    @BeforeEach
    void setUp() throws IOException {
        upstream = new FakeUpstream()
                .answer(name("api.example.com"), Type.A, List.of(a("api.example.com", 0, "198.18.7.2")))
                .answer(name("long.example.com"), Type.A, List.of(a("long.example.com", 86400, "198.18.7.4")))
                .answer(name("other.example.com"), Type.A, List.of(a("other.example.com", 60, "198.18.7.8")))
                .answer(name("svc.example.org"), Type.A, List.of(a("svc.example.org", 60, "198.18.7.7")))
                .answer(name("a.svc.example.org"), Type.A, List.of(a("a.svc.example.org", 300, "198.18.7.5")))
                .answer(name("deep.a.svc.example.org"), Type.A,
                        List.of(a("deep.a.svc.example.org", 300, "198.18.7.6")))
                .answer(name("rebind.example.com"), Type.A, List.of(
                        a("rebind.example.com", 60, "10.0.0.5"),
                        a("rebind.example.com", 60, "169.254.169.254"),
                        a("rebind.example.com", 60, "127.0.0.1"),
                        a("rebind.example.com", 60, "10.88.0.9"),
                        a("rebind.example.com", 60, "198.18.7.9")))
                .answer(name("private.example.com"), Type.A, List.of(a("private.example.com", 60, "10.0.0.5")))
                .answer(name("www.example.com"), Type.A, List.of(
                        new CNAMERecord(name("www.example.com"), DClass.IN, 120, name("edge.cdn.test")),
                        new CNAMERecord(name("edge.cdn.test"), DClass.IN, 120, name("host.cdn.test")),
                        a("host.cdn.test", 45, "198.18.7.3"),
                        a("unrelated.test", 45, "198.18.9.9")))
                .answer(name("txt.example.com"), Type.TXT,
                        List.of(new TXTRecord(name("txt.example.com"), DClass.IN, 60, "hello")))
                .answer(name("evil.test"), Type.TXT, List.of(new TXTRecord(name("evil.test"), DClass.IN, 60, "x")))
                .answer(name("mail.example.com"), Type.MX,
                        List.of(new MXRecord(name("mail.example.com"), DClass.IN, 60, 10, name("mx.example.com"))),
                        List.of(a("mx.example.com", 60, "169.254.169.254"), a("mx.example.com", 60, "198.18.7.11")))
                .answer(name("big.example.com"), Type.A, IntStream.rangeClosed(1, 60)
                        .mapToObj(i -> a("big.example.com", 60, "198.18.8." + i)).toList());
    }

    @AfterEach
    void tearDown() {
        resolvers.forEach(SandboxResolver::close);
        upstream.close();
        assertThat(Thread.getAllStackTraces().keySet()).filteredOn(Thread::isAlive)
                .extracting(Thread::getName).noneMatch(n -> n.startsWith("paddock-dns-"));
    }

    private SandboxResolver start(SandboxResolver.Limits limits, InetSocketAddress to) {
        SandboxResolver started = SandboxResolver.start(new InetSocketAddress(LOOPBACK, 0), to,
                source -> source.equals(LOOPBACK) ? Optional.ofNullable(asking) : Optional.empty(), DENY, limits);
        resolvers.add(started);
        return started;
    }

    private void start(NetworkPolicy policy) {
        client.policy = policy;
        resolver = start(GENEROUS, upstream.address());
    }

    @Test
    void anAllowlistedNameIsForwardedAndGrantedBeforeTheAnswer() throws Exception {
        start(NetworkPolicy.allow("api.example.com"));
        client.gate = new CountDownLatch(1);
        try (Dig dig = new Dig()) {
            Message query = query("api.example.com", Type.A);
            dig.send(query);
            assertThat(dig.receive(SILENCE)).as("no answer while the grant is not in effect").isEmpty();
            assertThat(client.grants).containsExactly(new Grant(List.of(ip("198.18.7.2")), Duration.ofSeconds(30)));
            client.gate.countDown();
            Message answer = dig.receive(Duration.ofSeconds(2)).orElseThrow();
            assertThat(answer.getHeader().getID()).isEqualTo(query.getHeader().getID());
            assertThat(answer.getHeader().getFlag(Flags.QR)).isTrue();
            assertThat(answer.getHeader().getFlag(Flags.RA)).isTrue();
            assertThat(answer.getHeader().getFlag(Flags.RD)).isTrue();
            assertThat(answer.getRcode()).isEqualTo(Rcode.NOERROR);
            assertThat(answer.getQuestion()).isEqualTo(query.getQuestion());
            assertThat(addresses(answer)).containsExactly("198.18.7.2");
            assertThat(answer.getSection(Section.ANSWER).get(0).getTTL()).as("the upstream's TTL 0").isZero();
        }
        assertThat(upstream.questions()).containsExactly(new FakeUpstream.Question(name("api.example.com"), Type.A,
                false));
        assertThat(resolver.stats()).isEqualTo(new SandboxResolver.Stats(1, 0, 0, 0));
    }

    @Test
    void aLongTtlIsGrantedForAnHourAndTheAnswerSaysNoMore() throws Exception {
        start(NetworkPolicy.allow("long.example.com"));
        Message answer = udp(query("long.example.com", Type.A));
        assertThat(addresses(answer)).containsExactly("198.18.7.4");
        assertThat(answer.getSection(Section.ANSWER).get(0).getTTL()).isEqualTo(3600);
        assertThat(client.grants).containsExactly(new Grant(List.of(ip("198.18.7.4")), Duration.ofHours(1)));
    }

    @Test
    void exactNamesMatchThemselvesAndWildcardsOnlyWhatIsUnderThem() throws Exception {
        start(NetworkPolicy.allow("api.example.com", "*.svc.example.org"));
        assertThat(addresses(udp(query("API.Example.COM", Type.A)))).containsExactly("198.18.7.2");
        assertThat(addresses(udp(query("a.svc.example.org", Type.A)))).containsExactly("198.18.7.5");
        assertThat(addresses(udp(query("deep.a.svc.example.org", Type.A)))).containsExactly("198.18.7.6");
        assertThat(udp(query("other.example.com", Type.A)).getRcode()).isEqualTo(Rcode.NXDOMAIN);
        assertThat(udp(query("svc.example.org", Type.A)).getRcode()).as("a wildcard is not its own base")
                .isEqualTo(Rcode.NXDOMAIN);
        assertThat(upstream.questions()).extracting(FakeUpstream.Question::name).containsExactlyInAnyOrder(
                name("api.example.com"), name("a.svc.example.org"), name("deep.a.svc.example.org"));
        assertThat(client.grants).extracting(Grant::addresses).containsExactly(
                List.of(ip("198.18.7.2")), List.of(ip("198.18.7.5")), List.of(ip("198.18.7.6")));
    }

    @Test
    void aNameOffTheAllowlistIsNxdomainAndNeverReachesTheUpstream() throws Exception {
        start(NetworkPolicy.allow("api.example.com", "*.svc.example.org"));
        Random random = new Random(7);
        String tunnel = label(random) + "." + label(random) + "." + label(random) + ".tunnel.evil.test";
        List<Message> queries = List.of(
                query("evil.test", Type.A),
                query("evil.test", Type.TXT),
                query(tunnel, Type.TXT),
                query(tunnel, Type.A),
                query("api.example.com.evil.test", Type.A),
                query("other.example.com", Type.TXT),
                query("2.7.18.198.in-addr.arpa", Type.PTR),
                // one label "x.svc" under example.org: its text "x\.svc.example.org" ends like the wildcard's names
                query("x\\.svc.example.org", Type.A));
        for (Message q : queries) {
            Message answer = udp(q);
            assertThat(answer.getRcode()).as(q.getQuestion().toString()).isEqualTo(Rcode.NXDOMAIN);
            assertThat(answer.getQuestion()).isEqualTo(q.getQuestion());
            assertThat(answer.getSection(Section.ANSWER)).isEmpty();
        }
        assertThat(upstream.questions()).isEmpty();
        assertThat(client.grants).isEmpty();
        assertThat(resolver.stats()).isEqualTo(new SandboxResolver.Stats(0, queries.size(), 0, 0));
    }

    @Test
    void answersInDeniedRangesAreStrippedAndNotGranted() throws Exception {
        start(NetworkPolicy.allow("rebind.example.com", "private.example.com"));
        assertThat(addresses(udp(query("rebind.example.com", Type.A)))).containsExactly("198.18.7.9");
        Message onlyPrivate = udp(query("private.example.com", Type.A));
        assertThat(onlyPrivate.getRcode()).isEqualTo(Rcode.NOERROR);
        assertThat(onlyPrivate.getSection(Section.ANSWER)).isEmpty();
        assertThat(client.grants).containsExactly(new Grant(List.of(ip("198.18.7.9")), Duration.ofSeconds(60)));
    }

    @Test
    void aCnameChainIsKeptAndOnlyItsAddressesGranted() throws Exception {
        start(NetworkPolicy.allow("www.example.com"));
        Message answer = udp(query("www.example.com", Type.A));
        assertThat(answer.getSection(Section.ANSWER)).extracting(r -> r.getName() + " " + r.rdataToString())
                .containsExactly("www.example.com. edge.cdn.test.", "edge.cdn.test. host.cdn.test.",
                        "host.cdn.test. 198.18.7.3");
        assertThat(client.grants).containsExactly(new Grant(List.of(ip("198.18.7.3")), Duration.ofSeconds(45)));
    }

    @Test
    void aaaaIsEmptyAndNeverForwarded() throws Exception {
        start(NetworkPolicy.open());
        Message answer = udp(query("api.example.com", Type.AAAA));
        assertThat(answer.getRcode()).isEqualTo(Rcode.NOERROR);
        assertThat(answer.getSection(Section.ANSWER)).isEmpty();
        assertThat(upstream.questions()).isEmpty();
    }

    @Test
    void anAllowlistAnswersOtherTypesEmptyWithoutForwarding() throws Exception {
        start(NetworkPolicy.allow("txt.example.com"));
        Message answer = udp(query("txt.example.com", Type.TXT));
        assertThat(answer.getRcode()).isEqualTo(Rcode.NOERROR);
        assertThat(answer.getSection(Section.ANSWER)).isEmpty();
        assertThat(upstream.questions()).isEmpty();
    }

    @Test
    void openForwardsEveryNameAndTypeAndStillStripsDeniedAddresses() throws Exception {
        start(NetworkPolicy.open());
        assertThat(udp(query("evil.test", Type.TXT)).getSection(Section.ANSWER)).extracting(Record::rdataToString)
                .containsExactly("\"x\"");
        assertThat(udp(query("nowhere.test", Type.A)).getRcode()).as("the upstream's rcode").isEqualTo(Rcode.NXDOMAIN);
        Message mx = udp(query("mail.example.com", Type.MX));
        assertThat(mx.getSection(Section.ANSWER)).hasSize(1);
        assertThat(mx.getSection(Section.ADDITIONAL)).extracting(Record::rdataToString).containsExactly("198.18.7.11");
        assertThat(addresses(udp(query("rebind.example.com", Type.A)))).containsExactly("198.18.7.9");
        assertThat(upstream.questions()).extracting(FakeUpstream.Question::name).containsExactly(
                name("evil.test"), name("nowhere.test"), name("mail.example.com"), name("rebind.example.com"));
        assertThat(client.grants).extracting(Grant::addresses).containsExactly(List.of(ip("198.18.7.9")));
    }

    @Test
    void noneForwardsNothing() throws Exception {
        start(NetworkPolicy.none());
        for (Message q : List.of(query("api.example.com", Type.A), query("txt.example.com", Type.TXT))) {
            assertThat(udp(q).getRcode()).isEqualTo(Rcode.NXDOMAIN);
        }
        assertThat(upstream.questions()).isEmpty();
        assertThat(client.grants).isEmpty();
    }

    @Test
    void aStrangerGetsNoAnswerOverUdpOrTcp() throws Exception {
        start(NetworkPolicy.open());
        asking = null;
        try (Dig dig = new Dig()) {
            dig.send(query("api.example.com", Type.A));
            assertThat(dig.receive(SILENCE)).isEmpty();
        }
        try (Socket socket = new Socket(LOOPBACK, resolver.address().getPort())) {
            socket.setSoTimeout(2000);
            assertThat(socket.getInputStream().read()).as("the connection is closed unanswered").isEqualTo(-1);
        }
        assertThat(upstream.questions()).isEmpty();
        assertThat(resolver.stats().dropped()).isEqualTo(2);
    }

    @Test
    void queriesOverTheRateAreDropped() throws Exception {
        client.policy = NetworkPolicy.allow("api.example.com");
        resolver = start(new SandboxResolver.Limits(1, 3, 256, Duration.ofSeconds(2)), upstream.address());
        int answered = 0;
        try (Dig dig = new Dig()) {
            for (int i = 0; i < 10; i++) {
                dig.send(query("api.example.com", Type.AAAA));
            }
            while (dig.receive(SILENCE).isPresent()) {
                answered++;
            }
        }
        assertThat(answered).as("the burst, and at most one more refilled meanwhile").isBetween(3, 4);
        assertThat(resolver.stats().dropped()).isEqualTo(10 - answered);
    }

    @Test
    void queriesBeyondTheInFlightCapAreServfailAndAnUnansweredOneTimesOut() throws Exception {
        client.policy = NetworkPolicy.allow("api.example.com");
        try (DatagramSocket blackhole = new DatagramSocket(new InetSocketAddress(LOOPBACK, 0))) {
            resolver = start(new SandboxResolver.Limits(1000, 1000, 1, Duration.ofMillis(700)),
                    (InetSocketAddress) blackhole.getLocalSocketAddress());
            try (Dig dig = new Dig()) {
                Message first = query("api.example.com", Type.A);
                Message second = query("api.example.com", Type.A);
                long startNanos = System.nanoTime();
                dig.send(first);
                Thread.sleep(50);
                dig.send(second);
                Message servfail = dig.receive(Duration.ofSeconds(2)).orElseThrow();
                assertThat(servfail.getHeader().getID()).isEqualTo(second.getHeader().getID());
                assertThat(servfail.getRcode()).isEqualTo(Rcode.SERVFAIL);
                // Answered at once, not at a timeout: before the first query's 700 ms timeout could have fired
                // (the order of the answers says so too).
                Duration refused = Duration.ofNanos(System.nanoTime() - startNanos);
                assertThat(refused).as("the over-the-cap query's SERVFAIL came after %d ms", refused.toMillis())
                        .isLessThan(Duration.ofMillis(700));
                Message timedOut = dig.receive(Duration.ofSeconds(2)).orElseThrow();
                assertThat(timedOut.getHeader().getID()).isEqualTo(first.getHeader().getID());
                assertThat(timedOut.getRcode()).isEqualTo(Rcode.SERVFAIL);
                // Not before its 700 ms timeout; after it, within the 2 s the receive waits (a loaded machine
                // delays the timer, which says nothing about the cap).
                Duration timeout = Duration.ofNanos(System.nanoTime() - startNanos);
                assertThat(timeout).as("the unanswered query's SERVFAIL came after %d ms", timeout.toMillis())
                        .isBetween(Duration.ofMillis(700), Duration.ofMillis(2700));
            }
        }
        assertThat(client.grants).isEmpty();
        assertThat(resolver.stats()).isEqualTo(new SandboxResolver.Stats(1, 1, 0, 1));
    }

    @Test
    void anUpstreamThatIsDownIsServfailQuickly() throws Exception {
        client.policy = NetworkPolicy.allow("api.example.com");
        InetSocketAddress nothing;
        try (DatagramSocket closed = new DatagramSocket(new InetSocketAddress(LOOPBACK, 0))) {
            nothing = (InetSocketAddress) closed.getLocalSocketAddress();
        }
        resolver = start(new SandboxResolver.Limits(1000, 1000, 256, Duration.ofSeconds(1)), nothing);
        long startNanos = System.nanoTime();
        assertThat(udp(query("api.example.com", Type.A)).getRcode()).isEqualTo(Rcode.SERVFAIL);
        Duration took = Duration.ofNanos(System.nanoTime() - startNanos);
        assertThat(took).as("SERVFAIL for a down upstream came after %d ms (its timeout: 1 s)", took.toMillis())
                .isLessThan(Duration.ofMillis(1500));
        assertThat(client.grants).isEmpty();
        assertThat(resolver.stats().upstreamFailures()).isEqualTo(1);
    }

    @Test
    void malformedQueriesAreNeverForwardedAndTheResolverServesOn() throws Exception {
        start(NetworkPolicy.allow("api.example.com"));
        Random random = new Random(42);
        byte[] valid = query("api.example.com", Type.A).toWire();
        List<byte[]> unanswered = new ArrayList<>();
        for (int size : new int[]{3, 12, 40, 300, 5000}) {
            byte[] junk = new byte[size];
            random.nextBytes(junk);
            junk[2] &= 0x7F; // QR clear: it claims to be a query
            unanswered.add(junk);
        }
        unanswered.add(Arrays.copyOf(valid, valid.length - 3));
        Message response = query("api.example.com", Type.A);
        response.getHeader().setFlag(Flags.QR);
        unanswered.add(response.toWire());
        try (Dig dig = new Dig()) {
            for (byte[] packet : unanswered) {
                dig.sendRaw(packet);
                Optional<Message> answer = dig.receive(Duration.ofMillis(100));
                answer.ifPresent(a -> assertThat(a.getRcode()).isIn(Rcode.FORMERR, Rcode.NOTIMP, Rcode.NXDOMAIN));
            }
        }

        Message two = query("api.example.com", Type.A);
        two.addRecord(Record.newRecord(name("api.example.com"), Type.TXT, DClass.IN), Section.QUESTION);
        Message twoAnswer = udp(two);
        assertThat(twoAnswer.getRcode()).isEqualTo(Rcode.FORMERR);
        assertThat(twoAnswer.getSection(Section.QUESTION)).isEmpty();

        Message update = query("api.example.com", Type.A);
        update.getHeader().setOpcode(Opcode.UPDATE);
        assertThat(udp(update).getRcode()).isEqualTo(Rcode.NOTIMP);
        assertThat(udp(update).getHeader().getOpcode()).isEqualTo(Opcode.UPDATE);

        Message chaos = Message.newQuery(Record.newRecord(name("api.example.com"), Type.TXT, DClass.CH));
        assertThat(udp(chaos).getRcode()).isEqualTo(Rcode.NOTIMP);

        assertThat(upstream.questions()).isEmpty();
        assertThat(addresses(udp(query("api.example.com", Type.A)))).containsExactly("198.18.7.2");
        assertThat(upstream.questions()).hasSize(1);
    }

    /**
     * Issue 32 breach 9: one tenant's sandboxes together hold at most their tenant's share of the resolver's TCP
     * connections, so that another tenant's DNS over TCP is still answered while they hold every one they may
     * (before, one tenant's 8 sandboxes at 8 idle connections each took all 64).
     */
    @Test
    void aTenantsSandboxesTogetherCannotHoldMoreThanTheTenantsShareOfTcp() throws Exception {
        java.util.Map<InetAddress, SandboxResolver.Client> byAddress = new java.util.HashMap<>();
        for (int i = 1; i <= 3; i++) {
            byAddress.put(InetAddress.getByName("127.0.0." + i), tenantClient("sb-" + i, "one"));
        }
        InetAddress other = InetAddress.getByName("127.0.0.9");
        byAddress.put(other, tenantClient("sb-9", "two"));
        resolver = SandboxResolver.start(new InetSocketAddress(LOOPBACK, 0), upstream.address(),
                source -> Optional.ofNullable(byAddress.get(source)), DENY, GENEROUS.withTcpPerTenant(4));
        resolvers.add(resolver);
        List<Socket> held = new ArrayList<>();
        try {
            for (int i = 0; i < 4; i++) {
                held.add(tcpFrom(InetAddress.getByName("127.0.0." + (1 + i % 2))));
                assertThat(addresses(exchange(held.get(i), query("api.example.com", Type.A)))).containsExactly("198.18.7.2");
            }
            try (Socket over = tcpFrom(InetAddress.getByName("127.0.0.3"))) {
                assertThat(readsNothing(over, query("api.example.com", Type.A))).as("the tenant's share is taken").isTrue();
            }
            try (Socket theirs = tcpFrom(other)) {
                assertThat(addresses(exchange(theirs, query("api.example.com", Type.A)))).as("another tenant")
                        .containsExactly("198.18.7.2");
            }
        } finally {
            for (Socket s : held) {
                s.close();
            }
        }
        assertThat(SandboxResolver.Limits.defaults().maxTcpPerTenant()).isLessThan(64);
    }

    private Socket tcpFrom(InetAddress source) throws IOException {
        Socket socket = new Socket();
        socket.bind(new InetSocketAddress(source, 0));
        socket.connect(resolver.address(), 3000);
        return socket;
    }

    /** Whether the connection ends (or stays silent) instead of answering {@code query}. */
    private static boolean readsNothing(Socket socket, Message query) {
        try {
            exchange(socket, query);
            return false;
        } catch (IOException e) {
            return true;
        }
    }

    private static SandboxResolver.Client tenantClient(String id, String tenant) {
        return new SandboxResolver.Client() {
            @Override
            public String id() {
                return id;
            }

            @Override
            public String tenant() {
                return tenant;
            }

            @Override
            public NetworkPolicy policy() {
                return NetworkPolicy.allow("api.example.com");
            }

            @Override
            public void grant(String name, List<Inet4Address> addresses, Duration ttl) {
            }
        };
    }

    @Test
    void tcpServesSeveralQueriesOnOneConnection() throws Exception {
        start(NetworkPolicy.allow("api.example.com"));
        Message allowed = query("api.example.com", Type.A);
        Message refused = query("evil.test", Type.TXT);
        List<Message> answers = tcp(allowed, refused);
        assertThat(answers.get(0).getHeader().getID()).isEqualTo(allowed.getHeader().getID());
        assertThat(addresses(answers.get(0))).containsExactly("198.18.7.2");
        assertThat(answers.get(1).getHeader().getID()).isEqualTo(refused.getHeader().getID());
        assertThat(answers.get(1).getRcode()).isEqualTo(Rcode.NXDOMAIN);
        assertThat(upstream.questions()).extracting(FakeUpstream.Question::name)
                .containsExactly(name("api.example.com"));
    }

    @Test
    void oneSandboxCannotHoldMoreThanEightTcpConnections() throws Exception {
        start(NetworkPolicy.allow("api.example.com"));
        List<Socket> held = new ArrayList<>();
        try {
            for (int i = 0; i < 8; i++) {
                Socket socket = new Socket(LOOPBACK, resolver.address().getPort());
                held.add(socket);
                assertThat(exchange(socket, query("evil.test", Type.A)).getRcode()).isEqualTo(Rcode.NXDOMAIN);
            }
            try (Socket ninth = new Socket(LOOPBACK, resolver.address().getPort())) {
                ninth.setSoTimeout(2000);
                assertThat(ninth.getInputStream().read()).as("refused").isEqualTo(-1);
            }
            assertThat(resolver.stats().dropped()).isEqualTo(1);
            held.remove(0).close();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
            Message answer = null;
            while (answer == null && System.nanoTime() < deadline) {
                try {
                    answer = tcp(query("evil.test", Type.A)).get(0);
                } catch (IOException refusedStill) {
                    Thread.sleep(20);
                }
            }
            assertThat(answer).as("a closed connection makes room").isNotNull();
        } finally {
            for (Socket socket : held) {
                socket.close();
            }
        }
    }

    @Test
    void aBigAnswerIsTruncatedOverUdpAndWholeOverTcp() throws Exception {
        start(NetworkPolicy.allow("big.example.com"));
        Message truncated = udp(query("big.example.com", Type.A));
        assertThat(truncated.getHeader().getFlag(Flags.TC)).isTrue();
        assertThat(truncated.toWire().length).isLessThanOrEqualTo(512);
        assertThat(truncated.getSection(Section.ANSWER)).hasSizeLessThan(60);

        Message whole = tcp(query("big.example.com", Type.A)).get(0);
        assertThat(whole.getHeader().getFlag(Flags.TC)).isFalse();
        assertThat(addresses(whole)).hasSize(60).contains("198.18.8.1", "198.18.8.60");
        assertThat(upstream.questionsFor(name("big.example.com"))).extracting(FakeUpstream.Question::tcp)
                .as("each time the upstream's truncated UDP answer, then TCP").containsExactly(false, true, false, true);
        assertThat(client.grants).hasSize(2).allSatisfy(g -> assertThat(g.addresses()).hasSize(60));
    }

    @Test
    void closeFreesThePortAndIsIdempotent() throws Exception {
        start(NetworkPolicy.allow("api.example.com"));
        int port = resolver.address().getPort();
        assertThat(addresses(tcp(query("api.example.com", Type.A)).get(0))).containsExactly("198.18.7.2");
        resolver.close();
        resolver.close();
        assertThat(Thread.getAllStackTraces().keySet()).extracting(Thread::getName)
                .noneMatch(n -> n.startsWith("paddock-dns-"));
        try (DatagramSocket udp = new DatagramSocket(new InetSocketAddress(LOOPBACK, port));
             ServerSocket tcp = new ServerSocket()) {
            tcp.setReuseAddress(true);
            tcp.bind(new InetSocketAddress(LOOPBACK, port));
            assertThat(udp.getLocalPort()).isEqualTo(port);
        }
    }

    // --- helpers ---

    private record Grant(List<Inet4Address> addresses, Duration ttl) {
    }

    private static final class TestClient implements SandboxResolver.Client {
        volatile NetworkPolicy policy = NetworkPolicy.none();
        volatile CountDownLatch gate = new CountDownLatch(0);
        final List<Grant> grants = new CopyOnWriteArrayList<>();

        @Override
        public String id() {
            return "sb-test";
        }

        @Override
        public NetworkPolicy policy() {
            return policy;
        }

        @Override
        public void grant(String name, List<Inet4Address> addresses, Duration ttl) {
            grants.add(new Grant(addresses, ttl));
            try {
                gate.await(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** A sandbox's stub resolver, on a UDP socket of its own. */
    private final class Dig implements AutoCloseable {
        private final DatagramSocket socket = new DatagramSocket(new InetSocketAddress(LOOPBACK, 0));

        Dig() throws IOException {
            socket.connect(resolver.address());
        }

        void send(Message query) throws IOException {
            sendRaw(query.toWire());
        }

        void sendRaw(byte[] packet) throws IOException {
            socket.send(new DatagramPacket(packet, packet.length));
        }

        Optional<Message> receive(Duration wait) throws IOException {
            byte[] buffer = new byte[65535];
            DatagramPacket packet = new DatagramPacket(buffer, buffer.length);
            socket.setSoTimeout((int) wait.toMillis());
            try {
                socket.receive(packet);
            } catch (SocketTimeoutException e) {
                return Optional.empty();
            }
            return Optional.of(new Message(Arrays.copyOf(buffer, packet.getLength())));
        }

        @Override
        public void close() {
            socket.close();
        }
    }

    private Message udp(Message query) throws IOException {
        try (Dig dig = new Dig()) {
            dig.send(query);
            Message answer = dig.receive(Duration.ofSeconds(3)).orElseThrow(() -> new AssertionError("no answer"));
            assertThat(answer.getHeader().getID()).isEqualTo(query.getHeader().getID());
            return answer;
        }
    }

    /** Sends every query on one connection before reading the answers. */
    private List<Message> tcp(Message... queries) throws IOException {
        try (Socket socket = new Socket(LOOPBACK, resolver.address().getPort())) {
            socket.setSoTimeout(3000);
            DataOutputStream out = new DataOutputStream(socket.getOutputStream());
            for (Message q : queries) {
                byte[] wire = q.toWire();
                out.writeShort(wire.length);
                out.write(wire);
            }
            out.flush();
            DataInputStream in = new DataInputStream(socket.getInputStream());
            List<Message> answers = new ArrayList<>();
            for (int i = 0; i < queries.length; i++) {
                answers.add(new Message(in.readNBytes(in.readUnsignedShort())));
            }
            return answers;
        }
    }

    /** One query and its answer on an open connection. */
    private static Message exchange(Socket socket, Message query) throws IOException {
        socket.setSoTimeout(3000);
        DataOutputStream out = new DataOutputStream(socket.getOutputStream());
        byte[] wire = query.toWire();
        out.writeShort(wire.length);
        out.write(wire);
        out.flush();
        DataInputStream in = new DataInputStream(socket.getInputStream());
        return new Message(in.readNBytes(in.readUnsignedShort()));
    }

    private static Message query(String name, int type) {
        return Message.newQuery(Record.newRecord(name(name), type, DClass.IN));
    }

    private static List<String> addresses(Message answer) {
        return answer.getSection(Section.ANSWER).stream().filter(r -> r instanceof ARecord)
                .map(r -> ((ARecord) r).getAddress().getHostAddress()).toList();
    }

    private static Name name(String text) {
        try {
            return Name.fromString(text, Name.root);
        } catch (TextParseException e) {
            throw new IllegalArgumentException(e);
        }
    }

    private static ARecord a(String owner, long ttl, String address) {
        return new ARecord(name(owner), DClass.IN, ttl, ip(address));
    }

    private static Inet4Address ip(String dotted) {
        return Cidr.address(dotted);
    }

    /** A 63-character label of random letters and digits, as a DNS tunnel encodes its data. */
    private static String label(Random random) {
        StringBuilder label = new StringBuilder();
        for (int i = 0; i < 63; i++) {
            label.append("abcdefghijklmnopqrstuvwxyz0123456789".charAt(random.nextInt(36)));
        }
        return label.toString();
    }
}
