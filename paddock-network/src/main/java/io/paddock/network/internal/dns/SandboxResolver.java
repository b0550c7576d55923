package io.paddock.network.internal.dns;

import io.paddock.NetworkMode;
import io.paddock.NetworkPolicy;
import io.paddock.network.internal.DenyList;
import io.paddock.network.internal.Threads;
import org.xbill.DNS.ARecord;
import org.xbill.DNS.CNAMERecord;
import org.xbill.DNS.DClass;
import org.xbill.DNS.Flags;
import org.xbill.DNS.Header;
import org.xbill.DNS.Message;
import org.xbill.DNS.Name;
import org.xbill.DNS.OPTRecord;
import org.xbill.DNS.Opcode;
import org.xbill.DNS.Rcode;
import org.xbill.DNS.Record;
import org.xbill.DNS.Section;
import org.xbill.DNS.SimpleResolver;
import org.xbill.DNS.TSIGRecord;
import org.xbill.DNS.Type;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.BindException;
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
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

import static java.lang.System.Logger.Level.DEBUG;
import static java.lang.System.Logger.Level.INFO;
import static java.lang.System.Logger.Level.WARNING;

/**
 * The only resolver a sandbox has: its queries to the gateway's port 53 are redirected here, and the source
 * address says which sandbox asks. It is where an allowlist's domains become addresses, so it is a security
 * boundary: a name the policy does not allow is answered here and never leaves the host (no DNS tunnel to a
 * name server the tenant runs), and an allowed name's answer loses every address the {@link DenyList} denies
 * (no DNS rebinding to the host, metadata or another sandbox) before the sandbox is granted egress to the rest.
 *
 * <p>What is answered how:
 * <ul>
 *   <li>Unparseable packets, responses, and packets from strangers get no answer; several questions: FORMERR;
 *       an opcode other than QUERY or a class other than IN: NOTIMP. None of them is forwarded.</li>
 *   <li>A name the policy does not allow, whatever the type (PTR names too): NXDOMAIN, answered here.</li>
 *   <li>An allowed name, type A: a fresh query for that name alone goes upstream (never the sandbox's packet, so
 *       no EDNS option or extra record is smuggled out); the answer keeps the CNAME chain from the name and its A
 *       records outside the deny list; the sandbox is granted egress to those addresses before it is answered.</li>
 *   <li>AAAA: an empty answer (sandboxes have IPv4 only). Any other type: forwarded and relayed under
 *       {@link NetworkMode#OPEN}, an empty answer under an allowlist.</li>
 * </ul>
 *
 * <p>Each client is held to a token bucket (over it, queries are dropped); at most {@link Limits#maxInFlight()}
 * queries wait on the upstream at once (beyond that, SERVFAIL). UDP answers fit 512 bytes, with TC set when cut,
 * so the client retries over TCP, where a sandbox may hold a few connections and the resolver a few dozen. Query
 * names may carry tenant data: they are logged at DEBUG only.
 */
public final class SandboxResolver implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(SandboxResolver.class.getName());

    /** The classic UDP limit; larger answers go over TCP, which every stub resolver falls back to. */
    private static final int UDP_ANSWER_BYTES = 512;
    /** The largest query taken, UDP or TCP; real ones are well under it, EDNS options included. */
    private static final int MAX_QUERY_BYTES = 4096;
    static final int MAX_TCP_CONNECTIONS = 64;
    /** So that one sandbox holding connections open cannot take every one from the others. */
    static final int MAX_TCP_CONNECTIONS_PER_CLIENT = 8;
    private static final Duration TCP_IDLE = Duration.ofSeconds(10);
    private static final int WORKERS = Math.max(4, Runtime.getRuntime().availableProcessors());
    /** Queries waiting for a worker; beyond it the receive loop drops rather than falls behind. */
    private static final int WORK_QUEUE = 1024;
    /** Grants last at least this long: dnsmasq answers with TTL 0, and egress must still work after the answer. */
    private static final Duration MIN_GRANT = Duration.ofSeconds(30);
    /** Grants last at most this long, however long the upstream's TTL, so egress follows an address that moved. */
    private static final Duration MAX_GRANT = Duration.ofHours(1);
    private static final Duration CLOSE_WAIT = Duration.ofSeconds(5);
    private static final String THREAD_PREFIX = "paddock-dns-";

    /** Who is asking, by source address; empty for a stranger (its packets are dropped without an answer). */
    public interface Clients {
        /** Called for every packet and connection, on the receive loop: a map lookup, never anything blocking. */
        Optional<Client> byAddress(Inet4Address source);
    }

    /** One sandbox, as the resolver sees it. */
    public interface Client {
        /** The sandbox id, for logs. */
        String id();

        /**
         * Whose the sandbox is, for {@link Limits#maxTcpPerTenant()}: the tenant's name, or anything unique to the
         * sandbox when it has none. By default its id.
         */
        default String tenant() {
            return id();
        }

        /** The sandbox's policy, read for each query: policies change at runtime. */
        NetworkPolicy policy();

        /**
         * Opens egress to these addresses for {@code ttl}; returns only once that is in effect, since the answer
         * is sent right after and the sandbox connects as soon as it has it. Throwing answers SERVFAIL.
         *
         * @param name the allowlisted name asked for (lower case, no final dot), whose answer these are
         */
        void grant(String name, List<Inet4Address> addresses, Duration ttl);
    }

    /**
     * How much one resolver takes on.
     *
     * @param queriesPerSecond each client's steady rate; queries over it are dropped
     * @param burst            how many queries a client may send at once after being quiet
     * @param maxInFlight      queries waiting on the upstream at once, all clients together; beyond it, SERVFAIL
     * @param upstreamTimeout  how long a query waits on the upstream (UDP and any TCP retry together)
     * @param maxTcpPerTenant  TCP connections one tenant's sandboxes may hold together (of the resolver's 64;
     *                         each sandbox at most 8)
     */
    public record Limits(int queriesPerSecond, int burst, int maxInFlight, Duration upstreamTimeout, int maxTcpPerTenant) {
        /** The default share of a tenant: a quarter of the resolver's TCP connections. */
        public static final int DEFAULT_TCP_PER_TENANT = 16;

        public Limits {
            if (queriesPerSecond < 1 || burst < 1 || maxInFlight < 1 || maxTcpPerTenant < 1) {
                throw new IllegalArgumentException("queriesPerSecond, burst, maxInFlight and maxTcpPerTenant must be at"
                        + " least 1, got " + queriesPerSecond + ", " + burst + ", " + maxInFlight + ", " + maxTcpPerTenant);
            }
            Objects.requireNonNull(upstreamTimeout, "upstreamTimeout");
            if (upstreamTimeout.isNegative() || upstreamTimeout.isZero()) {
                throw new IllegalArgumentException("upstreamTimeout must be positive, got " + upstreamTimeout);
            }
        }

        /** With the default share of TCP connections per tenant. */
        public Limits(int queriesPerSecond, int burst, int maxInFlight, Duration upstreamTimeout) {
            this(queriesPerSecond, burst, maxInFlight, upstreamTimeout, DEFAULT_TCP_PER_TENANT);
        }

        /**
         * 50 queries a second per client with bursts of 100, 256 upstream queries at once, 2 s upstream timeout,
         * 16 TCP connections per tenant.
         */
        public static Limits defaults() {
            return new Limits(50, 100, 256, Duration.ofSeconds(2), DEFAULT_TCP_PER_TENANT);
        }

        /** These limits with another TCP share per tenant. */
        public Limits withTcpPerTenant(int perTenant) {
            return new Limits(queriesPerSecond, burst, maxInFlight, upstreamTimeout, perTenant);
        }
    }

    /**
     * Counters since start.
     *
     * @param forwarded        queries sent upstream
     * @param answeredLocally  queries answered without the upstream (refused names, AAAA, errors, SERVFAIL when
     *                         too many are in flight)
     * @param dropped          queries and connections left without an answer: over the rate limit, from strangers,
     *                         unparseable, or while overloaded or closing
     * @param upstreamFailures forwarded queries the upstream did not answer in time (answered SERVFAIL)
     */
    public record Stats(long forwarded, long answeredLocally, long dropped, long upstreamFailures) {
    }

    private final Clients clients;
    private final DenyList deny;
    private final Limits limits;
    private final SimpleResolver upstream;
    private final DatagramSocket udp;
    private final ServerSocket tcp;
    private final InetSocketAddress address;
    /** One bucket per source address; it holds only addresses {@link Clients} knew, so the sandbox range bounds it. */
    private final ConcurrentHashMap<Inet4Address, TokenBucket> buckets = new ConcurrentHashMap<>();
    private final Semaphore inFlight;
    private final ThreadPoolExecutor workers;
    private final ThreadPoolExecutor connections;
    private final ScheduledThreadPoolExecutor timer;
    private final Set<Socket> openSockets = ConcurrentHashMap.newKeySet();
    private final ConcurrentHashMap<Inet4Address, Integer> connectionsByClient = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Integer> connectionsByTenant = new ConcurrentHashMap<>();
    /** The tenant each counted connection was counted for. */
    private final ConcurrentHashMap<Socket, String> tenantOfSocket = new ConcurrentHashMap<>();
    /** Every thread started and perhaps alive, so that close() can wait until none is. */
    private final Set<Thread> threads = ConcurrentHashMap.newKeySet();
    private final Thread udpLoop;
    private final Thread acceptLoop;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final LongAdder forwarded = new LongAdder();
    private final LongAdder answeredLocally = new LongAdder();
    private final LongAdder dropped = new LongAdder();
    private final LongAdder upstreamFailures = new LongAdder();

    private SandboxResolver(DatagramSocket udp, ServerSocket tcp, InetSocketAddress upstream, Clients clients,
                            DenyList deny, Limits limits) {
        this.udp = udp;
        this.tcp = tcp;
        this.address = new InetSocketAddress(tcp.getInetAddress(), tcp.getLocalPort());
        this.clients = clients;
        this.deny = deny;
        this.limits = limits;
        this.upstream = new SimpleResolver(upstream);
        this.upstream.setTimeout(limits.upstreamTimeout());
        this.inFlight = new Semaphore(limits.maxInFlight());
        this.workers = new ThreadPoolExecutor(WORKERS, WORKERS, 0, TimeUnit.SECONDS,
                new ArrayBlockingQueue<>(WORK_QUEUE), daemons("worker"));
        this.connections = new ThreadPoolExecutor(0, MAX_TCP_CONNECTIONS, TCP_IDLE.toSeconds(), TimeUnit.SECONDS,
                new SynchronousQueue<>(), daemons("tcp"));
        this.timer = new ScheduledThreadPoolExecutor(1, daemons("timer"));
        this.timer.setRemoveOnCancelPolicy(true);
        this.udpLoop = daemons("udp").newThread(this::receiveLoop);
        this.acceptLoop = daemons("accept").newThread(this::acceptLoop);
    }

    /**
     * Binds UDP and TCP on the same port of {@code bind} (port 0: a free one, the same number for both) and starts
     * serving.
     *
     * @param upstream the resolver allowed names are forwarded to
     * @throws UncheckedIOException when the port cannot be bound
     */
    public static SandboxResolver start(InetSocketAddress bind, InetSocketAddress upstream, Clients clients,
                                        DenyList deny, Limits limits) {
        Objects.requireNonNull(bind, "bind");
        Objects.requireNonNull(upstream, "upstream");
        Objects.requireNonNull(clients, "clients");
        Objects.requireNonNull(deny, "deny");
        Objects.requireNonNull(limits, "limits");
        DatagramSocket udp = null;
        ServerSocket tcp = null;
        // With port 0 the kernel picks a free UDP port; the same TCP port may be taken, so pick again.
        for (int attempt = 1; tcp == null; attempt++) {
            udp = bindUdp(bind);
            try {
                tcp = bindTcp(new InetSocketAddress(bind.getAddress(), udp.getLocalPort()));
            } catch (UncheckedIOException e) {
                udp.close();
                if (bind.getPort() != 0 || attempt == 10) {
                    throw e;
                }
            }
        }
        SandboxResolver resolver = new SandboxResolver(udp, tcp, upstream, clients, deny, limits);
        resolver.udpLoop.start();
        resolver.acceptLoop.start();
        LOG.log(INFO, "DNS resolver for sandboxes listening on {0} (UDP and TCP), forwarding to {1}",
                resolver.address, upstream);
        return resolver;
    }

    private static DatagramSocket bindUdp(InetSocketAddress bind) {
        try {
            return new DatagramSocket(bind);
        } catch (IOException e) {
            throw cannotBind(bind, "UDP", e);
        }
    }

    private static ServerSocket bindTcp(InetSocketAddress bind) {
        ServerSocket socket = null;
        try {
            socket = new ServerSocket();
            // Connections this resolver closed linger in TIME_WAIT; they must not keep a restart off the port.
            socket.setReuseAddress(true);
            socket.bind(bind, MAX_TCP_CONNECTIONS);
            return socket;
        } catch (IOException e) {
            if (socket != null) {
                closeQuietly(socket);
            }
            throw cannotBind(bind, "TCP", e);
        }
    }

    private static UncheckedIOException cannotBind(InetSocketAddress bind, String protocol, IOException e) {
        String hint = e instanceof BindException ? "; give a free port (0 picks one) or stop what holds this one" : "";
        return new UncheckedIOException("cannot listen for DNS on " + bind + " (" + protocol + "): " + e.getMessage()
                + hint, e);
    }

    /** Where the resolver listens, UDP and TCP. */
    public InetSocketAddress address() {
        return address;
    }

    public Stats stats() {
        return new Stats(forwarded.sum(), answeredLocally.sum(), dropped.sum(), upstreamFailures.sum());
    }

    /** Stops both listeners, closes every connection and waits for the resolver's threads to end. Idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        udp.close();
        closeQuietly(tcp);
        openSockets.forEach(SandboxResolver::closeQuietly);
        workers.shutdownNow();
        connections.shutdownNow();
        timer.shutdownNow();
        List<String> busy = Threads.joinWithin(threads, CLOSE_WAIT);
        if (!busy.isEmpty()) {
            LOG.log(WARNING, "DNS resolver on {0}: threads {1} still busy {2} after close (a grant that does not"
                    + " return?); they end when it does", address, busy, CLOSE_WAIT);
        }
        LOG.log(INFO, "DNS resolver on {0} closed", address);
    }

    /** Receives every datagram; all work beyond the cheap checks happens on the workers. */
    private void receiveLoop() {
        byte[] buffer = new byte[MAX_QUERY_BYTES + 1];
        DatagramPacket packet = new DatagramPacket(buffer, buffer.length);
        while (!closed.get()) {
            packet.setLength(buffer.length);
            try {
                udp.receive(packet);
            } catch (IOException e) {
                if (!closed.get()) {
                    LOG.log(WARNING, "DNS resolver on " + address + ": receiving failed; carrying on", e);
                }
                continue;
            }
            InetSocketAddress source = (InetSocketAddress) packet.getSocketAddress();
            Optional<Client> client = clientOf(source.getAddress());
            if (client.isEmpty() || !withinRate((Inet4Address) source.getAddress())
                    || packet.getLength() > MAX_QUERY_BYTES) {
                dropped.increment();
                continue;
            }
            byte[] query = Arrays.copyOf(buffer, packet.getLength());
            try {
                workers.execute(() -> resolve(query, client.get()).thenAccept(answer -> answer.ifPresent(
                        a -> sendUdp(a, source))));
            } catch (RejectedExecutionException e) {
                dropped.increment();
            }
        }
    }

    private void sendUdp(Message answer, InetSocketAddress to) {
        byte[] wire = answer.toWire(UDP_ANSWER_BYTES);
        try {
            udp.send(new DatagramPacket(wire, wire.length, to));
        } catch (IOException e) {
            if (!closed.get()) {
                LOG.log(DEBUG, "DNS resolver on " + address + ": answering " + to + " failed", e);
            }
        }
    }

    /** Accepts TCP connections from clients, each served on a thread of its own up to the connection cap. */
    private void acceptLoop() {
        while (!closed.get()) {
            Socket socket;
            try {
                socket = tcp.accept();
            } catch (IOException e) {
                if (!closed.get()) {
                    LOG.log(WARNING, "DNS resolver on " + address + ": accepting failed; carrying on", e);
                    pause();
                }
                continue;
            }
            Optional<Client> client = clientOf(socket.getInetAddress());
            if (client.isEmpty()) {
                dropped.increment();
                closeQuietly(socket);
                continue;
            }
            Inet4Address source = (Inet4Address) socket.getInetAddress();
            if (connectionsByClient.merge(source, 1, Integer::sum) > MAX_TCP_CONNECTIONS_PER_CLIENT) {
                LOG.log(DEBUG, "DNS resolver on {0}: sandbox {1} already has {2} TCP connections; refusing another",
                        address, client.get().id(), MAX_TCP_CONNECTIONS_PER_CLIENT);
                refuse(socket);
                continue;
            }
            String tenant = tenantOf(client.get());
            tenantOfSocket.put(socket, tenant);
            if (connectionsByTenant.merge(tenant, 1, Integer::sum) > limits.maxTcpPerTenant()) {
                LOG.log(DEBUG, "DNS resolver on {0}: sandbox {1}''s tenant already has {2} TCP connections; refusing"
                        + " another", address, client.get().id(), limits.maxTcpPerTenant());
                refuse(socket);
                continue;
            }
            openSockets.add(socket);
            try {
                connections.execute(() -> serveConnection(socket, client.get()));
            } catch (RejectedExecutionException e) {
                LOG.log(DEBUG, "DNS resolver on {0}: {1} TCP connections open, refusing sandbox {2}''s",
                        address, MAX_TCP_CONNECTIONS, client.get().id());
                refuse(socket);
            }
        }
    }

    private void refuse(Socket socket) {
        dropped.increment();
        connectionClosed(socket);
        closeQuietly(socket);
    }

    private void connectionClosed(Socket socket) {
        openSockets.remove(socket);
        connectionsByClient.computeIfPresent((Inet4Address) socket.getInetAddress(), (a, n) -> n == 1 ? null : n - 1);
        String tenant = tenantOfSocket.remove(socket);
        if (tenant != null) {
            connectionsByTenant.computeIfPresent(tenant, (t, n) -> n == 1 ? null : n - 1);
        }
    }

    private static String tenantOf(Client client) {
        try {
            return Objects.requireNonNullElse(client.tenant(), client.id());
        } catch (RuntimeException e) {
            return client.id();
        }
    }

    /** Keeps a failing accept (out of file descriptors, say) from spinning. */
    private static void pause() {
        try {
            Thread.sleep(100);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Serves length-prefixed queries on one connection, one after the other, until the client closes it, goes
     * idle, sends something unparseable or goes over its rate.
     */
    private void serveConnection(Socket socket, Client client) {
        try (socket) {
            socket.setSoTimeout((int) TCP_IDLE.toMillis());
            Inet4Address source = (Inet4Address) socket.getInetAddress();
            DataInputStream in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            DataOutputStream out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
            while (true) {
                int length = in.readUnsignedShort();
                if (length > MAX_QUERY_BYTES || !withinRate(source)) {
                    dropped.increment();
                    return;
                }
                byte[] query = in.readNBytes(length);
                if (query.length < length) {
                    return;
                }
                Optional<Message> answer = resolve(query, client).get();
                if (answer.isEmpty()) {
                    return;
                }
                byte[] wire = answer.get().toWire(Message.MAXLENGTH);
                out.writeShort(wire.length);
                out.write(wire);
                out.flush();
            }
        } catch (EOFException | SocketTimeoutException e) {
            // the client is done, or idle for too long
        } catch (IOException e) {
            if (!closed.get()) {
                LOG.log(DEBUG, "DNS resolver on " + address + ": sandbox " + client.id() + "'s TCP connection failed",
                        e);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException e) {
            LOG.log(WARNING, "DNS resolver on " + address + ": a query of sandbox " + client.id() + " failed"
                    + " unexpectedly; closing its connection", e.getCause());
        } finally {
            connectionClosed(socket);
        }
    }

    private Optional<Client> clientOf(InetAddress source) {
        return source instanceof Inet4Address v4 ? clients.byAddress(v4) : Optional.empty();
    }

    private boolean withinRate(Inet4Address source) {
        long now = System.nanoTime();
        return buckets.computeIfAbsent(source, a -> new TokenBucket(limits.queriesPerSecond(), limits.burst(), now))
                .tryTake(now);
    }

    /**
     * Answers one query of {@code client}: the future holds the answer, or nothing when the query is dropped. It
     * always completes, at the latest when the upstream timeout runs out.
     */
    private CompletableFuture<Optional<Message>> resolve(byte[] wire, Client client) {
        Message query;
        try {
            query = new Message(wire);
        } catch (IOException e) {
            dropped.increment();
            return CompletableFuture.completedFuture(Optional.empty());
        }
        Header header = query.getHeader();
        if (header.getFlag(Flags.QR)) {
            dropped.increment();
            return CompletableFuture.completedFuture(Optional.empty());
        }
        if (header.getOpcode() != Opcode.QUERY) {
            return answerLocally(query, Rcode.NOTIMP);
        }
        List<Record> questions = query.getSection(Section.QUESTION);
        if (questions.size() != 1) {
            return answerLocally(query, Rcode.FORMERR);
        }
        Record question = questions.get(0);
        if (question.getDClass() != DClass.IN) {
            return answerLocally(query, Rcode.NOTIMP);
        }
        NetworkPolicy policy = client.policy();
        int type = question.getType();
        LOG.log(DEBUG, () -> "sandbox " + client.id() + " asks " + question.getName() + " " + Type.string(type));
        if (!allows(policy, question.getName())) {
            return answerLocally(query, Rcode.NXDOMAIN);
        }
        if (type == Type.A) {
            return forward(query, question, client);
        }
        if (type == Type.AAAA || policy.mode() != NetworkMode.OPEN) {
            return answerLocally(query, Rcode.NOERROR);
        }
        if (!Type.isRR(type)) {
            // ANY, zone transfers, OPT and the like: not a resolver's business, and AXFR would open a TCP stream
            return answerLocally(query, Rcode.NOTIMP);
        }
        return forward(query, question, client);
    }

    /**
     * Whether the policy lets {@code name} resolve. A name with a character escaped in its text form (a '.' or
     * '\' inside a label, a byte outside printable ASCII) never matches an allowlist: the single label
     * {@code x.example} under {@code com} reads {@code x\.example.com}, which a match on the text would take for a
     * name under {@code example.com}. Allowlisted domains are plain host names, so no legitimate name is lost.
     */
    private static boolean allows(NetworkPolicy policy, Name name) {
        String text = name.toString();
        return policy.allowsName(text) && (policy.mode() == NetworkMode.OPEN || text.indexOf('\\') < 0);
    }

    private CompletableFuture<Optional<Message>> answerLocally(Message query, int rcode) {
        answeredLocally.increment();
        return CompletableFuture.completedFuture(Optional.of(reply(query, rcode)));
    }

    private CompletableFuture<Optional<Message>> forward(Message query, Record question, Client client) {
        if (!inFlight.tryAcquire()) {
            LOG.log(DEBUG, "DNS resolver on {0}: {1} queries already wait on the upstream; SERVFAIL to sandbox {2}",
                    address, limits.maxInFlight(), client.id());
            return answerLocally(query, Rcode.SERVFAIL);
        }
        forwarded.increment();
        Exchange exchange = new Exchange(query, question, client);
        try {
            exchange.start();
        } catch (RejectedExecutionException e) {
            exchange.settle(null, e);
        }
        return exchange.answer;
    }

    /**
     * One query sent upstream. Whichever comes first settles it, once: the upstream's answer or the timeout, which
     * this resolver keeps itself since dnsjava checks its own only when its selector is idle.
     */
    private final class Exchange {
        final CompletableFuture<Optional<Message>> answer = new CompletableFuture<>();
        private final Message query;
        private final Record question;
        private final Client client;
        private final AtomicBoolean settled = new AtomicBoolean();
        private volatile ScheduledFuture<?> timeout;

        Exchange(Message query, Record question, Client client) {
            this.query = query;
            this.question = question;
            this.client = client;
        }

        void start() {
            // A fresh query for the one allowed name: nothing else of the sandbox's packet leaves the host.
            Message fresh = Message.newQuery(Record.newRecord(question.getName(), question.getType(), DClass.IN));
            timeout = timer.schedule(() -> settle(null, new SocketTimeoutException("no answer within "
                    + limits.upstreamTimeout())), limits.upstreamTimeout().toNanos(), TimeUnit.NANOSECONDS);
            // Runnable::run: dnsjava's own last step (checking the response) runs where the response arrives.
            upstream.sendAsync(fresh, Runnable::run).whenComplete(this::settle);
        }

        void settle(Message response, Throwable failure) {
            if (!settled.compareAndSet(false, true)) {
                return;
            }
            inFlight.release();
            ScheduledFuture<?> pending = timeout;
            if (pending != null) {
                pending.cancel(false);
            }
            try {
                workers.execute(() -> answer.complete(Optional.of(answerFrom(response, failure))));
            } catch (RejectedExecutionException e) {
                dropped.increment();
                answer.complete(Optional.empty());
            }
        }

        private Message answerFrom(Message response, Throwable failure) {
            if (failure != null) {
                upstreamFailures.increment();
                LOG.log(DEBUG, () -> "upstream failed on " + question.getName() + " for sandbox " + client.id()
                        + ": " + failure);
                return reply(query, Rcode.SERVFAIL);
            }
            if (question.getType() != Type.A) {
                return relay(query, response);
            }
            try {
                return grantAndAnswer(query, question.getName(), response, client);
            } catch (RuntimeException e) {
                LOG.log(WARNING, "DNS resolver on " + address + ": granting egress to sandbox " + client.id()
                        + " failed; it was answered SERVFAIL", e);
                return reply(query, Rcode.SERVFAIL);
            }
        }
    }

    /**
     * The answer to an A query: the CNAME chain from {@code name} and its A records, less the denied addresses;
     * the client is granted the addresses left before it is answered. No record's TTL exceeds the grant's, so
     * the sandbox asks again (and is granted again) before the egress it was given closes.
     */
    private static String canonical(Name name) {
        String text = name.toString(true).toLowerCase(java.util.Locale.ROOT);
        return text.endsWith(".") ? text.substring(0, text.length() - 1) : text;
    }

    private Message grantAndAnswer(Message query, Name name, Message response, Client client) {
        List<Record> kept = new ArrayList<>();
        List<Inet4Address> addresses = new ArrayList<>();
        long smallestTtl = Long.MAX_VALUE;
        int denied = 0;
        for (Record record : chainFrom(name, response.getSection(Section.ANSWER))) {
            if (record instanceof ARecord a) {
                Inet4Address target = (Inet4Address) a.getAddress();
                if (deny.denies(target)) {
                    denied++;
                    continue;
                }
                addresses.add(target);
                smallestTtl = Math.min(smallestTtl, a.getTTL());
            }
            kept.add(record);
        }
        if (denied > 0) {
            LOG.log(INFO, "DNS resolver: stripped {0} denied address(es) from an answer to sandbox {1} (no DNS"
                    + " rebinding)", denied, client.id());
        }
        long ttl = Math.max(MIN_GRANT.toSeconds(), Math.min(MAX_GRANT.toSeconds(), smallestTtl));
        if (!addresses.isEmpty()) {
            client.grant(canonical(name), List.copyOf(addresses), Duration.ofSeconds(ttl));
        }
        Message answer = reply(query, rcodeOf(response));
        for (Record record : kept) {
            answer.addRecord(withTtl(record, Math.min(record.getTTL(), ttl)), Section.ANSWER);
        }
        return answer;
    }

    /**
     * The CNAME and A records on the chain from {@code name}. Records of other owners answer nothing the sandbox
     * asked, so their addresses get no grant.
     */
    private static List<Record> chainFrom(Name name, List<Record> answers) {
        Set<Name> owners = new HashSet<>(Set.of(name));
        boolean grew = true;
        while (grew) {
            grew = false;
            for (Record record : answers) {
                if (record instanceof CNAMERecord c && owners.contains(c.getName()) && owners.add(c.getTarget())) {
                    grew = true;
                }
            }
        }
        return answers.stream()
                .filter(r -> (r instanceof CNAMERecord || r instanceof ARecord) && owners.contains(r.getName()))
                .toList();
    }

    private static Record withTtl(Record record, long ttl) {
        if (record instanceof ARecord a) {
            return new ARecord(a.getName(), DClass.IN, ttl, a.getAddress());
        }
        CNAMERecord c = (CNAMERecord) record;
        return new CNAMERecord(c.getName(), DClass.IN, ttl, c.getTarget());
    }

    /** An OPEN sandbox's answer for a type other than A: the upstream's records, less denied A records. */
    private Message relay(Message query, Message response) {
        Message answer = reply(query, rcodeOf(response));
        for (int section : new int[]{Section.ANSWER, Section.AUTHORITY, Section.ADDITIONAL}) {
            for (Record record : response.getSection(section)) {
                boolean deniedAddress = record instanceof ARecord a && deny.denies((Inet4Address) a.getAddress());
                // OPT and TSIG belong to the upstream hop, not to the sandbox's
                if (!deniedAddress && !(record instanceof OPTRecord) && !(record instanceof TSIGRecord)) {
                    answer.addRecord(record, section);
                }
            }
        }
        return answer;
    }

    /** The upstream's rcode; an extended one (EDNS, which the sandbox did not get) becomes SERVFAIL. */
    private static int rcodeOf(Message response) {
        int rcode = response.getRcode();
        return rcode <= 0xF ? rcode : Rcode.SERVFAIL;
    }

    /** An answer to {@code query}: its id, QR and RA set, RD copied, and its question when it had exactly one. */
    private static Message reply(Message query, int rcode) {
        Header asked = query.getHeader();
        Message reply = new Message(asked.getID());
        Header header = reply.getHeader();
        header.setOpcode(asked.getOpcode());
        header.setFlag(Flags.QR);
        header.setFlag(Flags.RA);
        if (asked.getFlag(Flags.RD)) {
            header.setFlag(Flags.RD);
        }
        header.setRcode(rcode);
        List<Record> questions = query.getSection(Section.QUESTION);
        if (asked.getOpcode() == Opcode.QUERY && questions.size() == 1) {
            reply.addRecord(questions.get(0), Section.QUESTION);
        }
        return reply;
    }

    private ThreadFactory daemons(String role) {
        return Threads.tracked(threads, THREAD_PREFIX, role);
    }

    private static void closeQuietly(AutoCloseable closeable) {
        Threads.closeQuietly(closeable, LOG);
    }
}
