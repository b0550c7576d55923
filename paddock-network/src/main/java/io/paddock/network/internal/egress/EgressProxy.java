package io.paddock.network.internal.egress;

import io.paddock.network.internal.Threads;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.BindException;
import java.net.ConnectException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.regex.Pattern;
import javax.net.ssl.KeyManager;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509ExtendedKeyManager;

import static java.lang.System.Logger.Level.DEBUG;
import static java.lang.System.Logger.Level.INFO;
import static java.lang.System.Logger.Level.WARNING;

/**
 * Puts egress secrets into sandboxes' requests on their way out. A sandbox declared with
 * {@code --egress-secret KEY@api.example.com} holds only a placeholder in {@code KEY}; its TCP connections to port
 * 443 and 80 of that host's addresses are redirected here (nftables DNAT), and this proxy replaces the placeholder by
 * the real value in the request's header fields, for that host only. The value never enters the sandbox.
 *
 * <p>Each connection, on a thread of its own:
 * <ol>
 *   <li>The source address says which sandbox it is ({@link Clients}); a stranger is closed at once.</li>
 *   <li>The first bytes say what it is: a TLS ClientHello, whose server name (SNI) is read without answering it
 *       ({@link ClientHello}), or an HTTP/1.x request, whose {@code Host} field is read. Anything else is closed.</li>
 *   <li>The name must be one of that sandbox's secret hosts, else the connection is closed. The proxy is no way out
 *       to anywhere else: it only ever connects to a secret host of the sandbox that asks.</li>
 *   <li>TLS is terminated with a leaf certificate for that name from the daemon's {@link CertificateAuthority}
 *       (TLS 1.2 or 1.3, ALPN {@code http/1.1} only), and the request's {@code Host} must name the same host (else
 *       421): a request for another virtual host of a shared front end must not carry this host's secrets.</li>
 *   <li>The upstream is the address {@link Upstreams} resolves for that host, port 443 (over TLS from
 *       {@code upstreamTls}, which verifies the real server's certificate and its name) or 80. If it cannot be
 *       reached or verified, the sandbox gets a 502 and nothing of its request left the host.</li>
 *   <li>The request head ({@link RequestHead}) goes upstream with the placeholders replaced in field values and
 *       {@code Connection: close}; then bytes are copied both ways until the upstream closes (the response is
 *       whole), either side fails, or nothing has moved for {@link Limits#idleTimeout()}.</li>
 * </ol>
 *
 * <p>One request per connection: clients open a new one for the next. Everything until the head is forwarded must
 * be done within {@link Limits#setupTimeout()} (a sweeper closes connections past their time, so a client
 * trickling bytes cannot hold a thread). At most {@link Limits#maxConnections()} connections are served at once,
 * {@link Limits#maxConnectionsPerTenant()} of one tenant's sandboxes together (so that one tenant's idle connections
 * never take every one from another's) and {@link Limits#maxConnectionsPerClient()} per sandbox; beyond that, new
 * ones are closed.
 *
 * <p>Secret values are never logged, never in an exception message, and never in a {@code toString()}; header
 * values are not logged either (they hold the sandbox's own credentials). Host names are logged at DEBUG only.
 */
public final class EgressProxy implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(EgressProxy.class.getName());

    static final int BUFFER_BYTES = 16 * 1024;
    private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(10);
    private static final Duration CLOSE_WAIT = Duration.ofSeconds(5);
    private static final String[] PROTOCOLS = {"TLSv1.3", "TLSv1.2"};
    private static final String[] ALPN = {"http/1.1"};
    private static final String THREAD_PREFIX = "paddock-egress-";

    /** Who is connecting, by source address; empty for a stranger (closed at once). */
    public interface Clients {
        /** Called on the accept loop for every connection: a map lookup, never anything blocking. */
        Optional<Client> byAddress(Inet4Address source);
    }

    /** One sandbox, as the proxy sees it. */
    public interface Client {
        /** The sandbox id, for logs. */
        String id();

        /**
         * Whose the sandbox is, for {@link Limits#maxConnectionsPerTenant()}: the tenant's name, or anything unique
         * to the sandbox when it has none. By default its id.
         */
        default String tenant() {
            return id();
        }

        /** The sandbox's egress secrets, read once for each connection: they may change at run time. */
        List<EgressSecret> secrets();
    }

    /**
     * One egress secret of a sandbox: in requests to {@code host}, {@code placeholder} in a header value becomes
     * {@code value}.
     *
     * @param host        a DNS host name; kept lower-cased, without a trailing dot
     * @param placeholder what the sandbox holds instead of the value: 16 to 256 characters of letters, digits and
     *                    {@code . _ ~ -}, long and random enough never to occur in a header by chance
     * @param value       the secret: 1 to 8192 characters of printable ASCII, spaces and tabs (no CR, LF or other
     *                    control characters, which would let a value add header lines)
     */
    public record EgressSecret(String host, String placeholder, String value) {
        private static final Pattern PLACEHOLDER = Pattern.compile("[A-Za-z0-9._~-]{16,256}");
        private static final int MAX_VALUE = 8192;

        public EgressSecret {
            Objects.requireNonNull(host, "host");
            Objects.requireNonNull(placeholder, "placeholder");
            Objects.requireNonNull(value, "value");
            String normalized = CertificateAuthority.normalizeHost(host);
            if (normalized == null) {
                throw new IllegalArgumentException("egress secret host '" + host + "' is not a DNS host name");
            }
            host = normalized;
            if (!PLACEHOLDER.matcher(placeholder).matches()) {
                throw new IllegalArgumentException("egress secret placeholder for " + host + " must be 16 to 256"
                        + " letters, digits and . _ ~ -");
            }
            if (value.isEmpty() || value.length() > MAX_VALUE
                    || !value.chars().allMatch(c -> c >= 0x20 && c < 0x7F || c == '\t')) {
                // the message says what is wrong, never what the value is
                throw new IllegalArgumentException("egress secret value for " + host + " must be 1 to " + MAX_VALUE
                        + " characters of printable ASCII (no line breaks or control characters)");
            }
        }

        /** The host and placeholder; the value is redacted. */
        @Override
        public String toString() {
            return "EgressSecret[host=" + host + ", placeholder=" + placeholder + ", value=<redacted>]";
        }
    }

    /**
     * Where a secret host's traffic goes. The proxy's own connections leave from the host, outside the sandbox's
     * nftables rules, so the implementation must refuse what the sandbox could not reach: resolve through Paddock's
     * DNS upstream and throw for an address on the deny list.
     */
    public interface Upstreams {
        /**
         * The address to connect to for {@code host} (a normalised secret host of the asking sandbox) and
         * {@code port} (443 or 80). Called on the connection's thread; it may block, briefly.
         *
         * @throws IOException when the host cannot be resolved or its address is denied (the sandbox gets a 502)
         */
        InetSocketAddress resolve(String host, int port) throws IOException;
    }

    /**
     * How much one proxy takes on.
     *
     * @param maxConnections          connections served at once, all sandboxes together
     * @param maxConnectionsPerClient connections one sandbox may have at once
     * @param maxConnectionsPerTenant connections one tenant's sandboxes may have at once, together
     * @param setupTimeout            from accept until the request head is forwarded: ClientHello, handshakes, head,
     *                                upstream connect
     * @param idleTimeout             how long a forwarded exchange may go without a byte moving either way
     */
    public record Limits(int maxConnections, int maxConnectionsPerClient, int maxConnectionsPerTenant,
                         Duration setupTimeout, Duration idleTimeout) {
        /** The default share of a tenant: a quarter of all connections. */
        public static final int DEFAULT_PER_TENANT = 64;

        public Limits {
            if (maxConnections < 1 || maxConnectionsPerClient < 1 || maxConnectionsPerTenant < 1) {
                throw new IllegalArgumentException("maxConnections, maxConnectionsPerClient and maxConnectionsPerTenant"
                        + " must be at least 1, got " + maxConnections + ", " + maxConnectionsPerClient + ", "
                        + maxConnectionsPerTenant);
            }
            for (Duration d : new Duration[]{setupTimeout, idleTimeout}) {
                Objects.requireNonNull(d, "timeout");
                if (d.isNegative() || d.isZero()) {
                    throw new IllegalArgumentException("timeouts must be positive, got " + d);
                }
            }
        }

        /** No cap per tenant beyond the sandbox's and the proxy's. */
        public Limits(int maxConnections, int maxConnectionsPerClient, Duration setupTimeout, Duration idleTimeout) {
            this(maxConnections, maxConnectionsPerClient, maxConnections, setupTimeout, idleTimeout);
        }

        /**
         * 256 connections, 64 per tenant, 32 per sandbox, 8 s to set up (a connection that sends nothing holds its
         * slot no longer), 2 min idle once forwarded (a model's streamed answer may pause).
         */
        public static Limits defaults() {
            return new Limits(256, 32, DEFAULT_PER_TENANT, Duration.ofSeconds(8), Duration.ofMinutes(2));
        }

        /** These limits with another cap per tenant. */
        public Limits withPerTenant(int perTenant) {
            return new Limits(maxConnections, maxConnectionsPerClient, perTenant, setupTimeout, idleTimeout);
        }
    }

    /**
     * Counters since start.
     *
     * @param forwarded        requests whose head went upstream
     * @param refused          connections closed without contacting an upstream: strangers, hosts without
     *                         secrets, neither TLS nor HTTP, failed handshakes, malformed heads, over a limit
     * @param upstreamFailures requests answered 502: the upstream could not be resolved, reached or verified
     */
    public record Stats(long forwarded, long refused, long upstreamFailures) {
    }

    private final CertificateAuthority ca;
    private final SSLSocketFactory upstreamTls;
    private final Upstreams upstreams;
    private final Clients clients;
    private final Limits limits;
    private final ServerSocket listener;
    private final InetSocketAddress address;
    private final ThreadPoolExecutor connections;
    /** Copies request bytes to the upstream, one task per connection (the connection's thread copies responses). */
    private final ThreadPoolExecutor pumps;
    private final ScheduledThreadPoolExecutor sweeper;
    private final Set<Conn> open = ConcurrentHashMap.newKeySet();
    private final ConcurrentHashMap<Inet4Address, Integer> connectionsByClient = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Integer> connectionsByTenant = new ConcurrentHashMap<>();
    /** Server-side TLS contexts per host, each bound to one leaf; access-ordered, bounded. Guarded by itself. */
    private final LinkedHashMap<String, ServerContext> serverContexts;
    private final Set<Thread> threads = ConcurrentHashMap.newKeySet();
    private final Thread acceptLoop;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final LongAdder forwarded = new LongAdder();
    private final LongAdder refused = new LongAdder();
    private final LongAdder upstreamFailures = new LongAdder();

    private record ServerContext(CertificateAuthority.Leaf leaf, SSLContext context) {
    }

    private EgressProxy(ServerSocket listener, CertificateAuthority ca, SSLContext upstreamTls, Upstreams upstreams,
                        Clients clients, Limits limits) {
        this.listener = listener;
        this.address = new InetSocketAddress(listener.getInetAddress(), listener.getLocalPort());
        this.ca = ca;
        this.upstreamTls = upstreamTls.getSocketFactory();
        this.upstreams = upstreams;
        this.clients = clients;
        this.limits = limits;
        this.connections = new ThreadPoolExecutor(0, limits.maxConnections(), 30, TimeUnit.SECONDS,
                new SynchronousQueue<>(), daemons("conn"));
        this.pumps = new ThreadPoolExecutor(0, limits.maxConnections(), 30, TimeUnit.SECONDS,
                new SynchronousQueue<>(), daemons("pump"));
        this.sweeper = new ScheduledThreadPoolExecutor(1, daemons("sweeper"));
        int cacheSize = CertificateAuthority.DEFAULT_LEAF_CACHE;
        this.serverContexts = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, ServerContext> eldest) {
                return size() > cacheSize;
            }
        };
        this.acceptLoop = daemons("accept").newThread(this::acceptLoop);
    }

    /** {@link #start(InetSocketAddress, CertificateAuthority, SSLContext, Upstreams, Clients, Limits)} with
     * {@link Limits#defaults()}. */
    public static EgressProxy start(InetSocketAddress bind, CertificateAuthority ca, SSLContext upstreamTls,
                                    Upstreams upstreams, Clients clients) {
        return start(bind, ca, upstreamTls, upstreams, clients, Limits.defaults());
    }

    /**
     * Listens on {@code bind} (127.0.0.1 port 0: a free port; the sandboxes' DNAT points at it) and starts serving.
     *
     * @param ca          signs the certificates presented to sandboxes; they trust it
     * @param upstreamTls the trust for real servers: the JDK's default context, or one trusting a test CA. The
     *                    proxy always asks it to verify the server's name (HTTPS endpoint identification)
     * @throws UncheckedIOException when {@code bind} cannot be bound
     */
    public static EgressProxy start(InetSocketAddress bind, CertificateAuthority ca, SSLContext upstreamTls,
                                    Upstreams upstreams, Clients clients, Limits limits) {
        Objects.requireNonNull(bind, "bind");
        Objects.requireNonNull(ca, "ca");
        Objects.requireNonNull(upstreamTls, "upstreamTls");
        Objects.requireNonNull(upstreams, "upstreams");
        Objects.requireNonNull(clients, "clients");
        Objects.requireNonNull(limits, "limits");
        ServerSocket listener = null;
        try {
            listener = new ServerSocket();
            listener.setReuseAddress(true);
            listener.bind(bind, limits.maxConnections());
        } catch (IOException e) {
            if (listener != null) {
                closeQuietly(listener);
            }
            String hint = e instanceof BindException ? "; give a free port (0 picks one)" : "";
            throw new UncheckedIOException("cannot listen for egress on " + bind + ": " + e.getMessage() + hint, e);
        }
        EgressProxy proxy = new EgressProxy(listener, ca, upstreamTls, upstreams, clients, limits);
        long period = Math.max(50, Math.min(1000,
                Math.min(limits.setupTimeout().toMillis(), limits.idleTimeout().toMillis()) / 4));
        proxy.sweeper.scheduleWithFixedDelay(proxy::sweep, period, period, TimeUnit.MILLISECONDS);
        proxy.acceptLoop.start();
        LOG.log(INFO, "egress proxy listening on {0}, presenting certificates of {1}", proxy.address, ca);
        return proxy;
    }

    /** Where the proxy listens: what the sandboxes' DNAT points at. */
    public InetSocketAddress address() {
        return address;
    }

    public Stats stats() {
        return new Stats(forwarded.sum(), refused.sum(), upstreamFailures.sum());
    }

    /** Stops listening, closes every connection and waits for the proxy's threads to end. Idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        closeQuietly(listener);
        open.forEach(Conn::abort);
        connections.shutdownNow();
        pumps.shutdownNow();
        sweeper.shutdownNow();
        List<String> busy = Threads.joinWithin(threads, CLOSE_WAIT);
        if (!busy.isEmpty()) {
            LOG.log(WARNING, "egress proxy on {0}: threads {1} still busy {2} after close (an Upstreams.resolve that"
                    + " does not return?); they end when it does", address, busy, CLOSE_WAIT);
        }
        LOG.log(INFO, "egress proxy on {0} closed", address);
    }

    private void acceptLoop() {
        while (!closed.get()) {
            Socket socket;
            try {
                socket = listener.accept();
            } catch (IOException e) {
                if (!closed.get()) {
                    LOG.log(WARNING, "egress proxy on " + address + ": accepting failed; carrying on", e);
                    pause();
                }
                continue;
            }
            InetAddress from = socket.getInetAddress();
            Optional<Client> client = clientOf(from);
            if (client.isEmpty()) {
                refused.increment();
                closeQuietly(socket);
                continue;
            }
            Inet4Address source = (Inet4Address) from;
            if (connectionsByClient.merge(source, 1, Integer::sum) > limits.maxConnectionsPerClient()) {
                LOG.log(DEBUG, "egress proxy on {0}: sandbox {1} already has {2} connections; refusing another",
                        address, client.get().id(), limits.maxConnectionsPerClient());
                release(source);
                refused.increment();
                closeQuietly(socket);
                continue;
            }
            String tenant = tenantOf(client.get());
            if (connectionsByTenant.merge(tenant, 1, Integer::sum) > limits.maxConnectionsPerTenant()) {
                LOG.log(DEBUG, "egress proxy on {0}: sandbox {1}''s tenant already has {2} connections; refusing"
                        + " another", address, client.get().id(), limits.maxConnectionsPerTenant());
                release(source);
                releaseTenant(tenant);
                refused.increment();
                closeQuietly(socket);
                continue;
            }
            Conn conn = new Conn(socket, source, client.get(), tenant);
            open.add(conn);
            try {
                connections.execute(() -> serve(conn));
            } catch (RejectedExecutionException e) {
                LOG.log(DEBUG, "egress proxy on {0}: {1} connections open; refusing sandbox {2}''s", address,
                        limits.maxConnections(), client.get().id());
                refused.increment();
                conn.abort();
                connectionEnded(conn);
            }
        }
    }

    private Optional<Client> clientOf(InetAddress from) {
        if (!(from instanceof Inet4Address v4)) {
            return Optional.empty();
        }
        try {
            return Objects.requireNonNull(clients.byAddress(v4), "Clients.byAddress returned null");
        } catch (RuntimeException e) {
            // the accept loop must outlive a broken lookup; the connection is treated as a stranger's
            LOG.log(WARNING, "egress proxy on " + address + ": looking up the client at " + v4.getHostAddress()
                    + " failed; refusing its connection", e);
            return Optional.empty();
        }
    }

    private void release(Inet4Address source) {
        connectionsByClient.computeIfPresent(source, (a, n) -> n == 1 ? null : n - 1);
    }

    private void releaseTenant(String tenant) {
        connectionsByTenant.computeIfPresent(tenant, (t, n) -> n == 1 ? null : n - 1);
    }

    private String tenantOf(Client client) {
        try {
            return Objects.requireNonNullElse(client.tenant(), client.id());
        } catch (RuntimeException e) {
            return client.id();
        }
    }

    private void connectionEnded(Conn conn) {
        if (open.remove(conn)) {
            release(conn.source);
            releaseTenant(conn.tenant);
        }
    }

    /** Closes connections past their setup deadline or idle for too long. */
    private void sweep() {
        long now = System.nanoTime();
        for (Conn conn : open) {
            if (!conn.isClosed() && conn.overdue(now)) { // closed ones are only waiting for their thread to end
                LOG.log(DEBUG, "egress proxy on {0}: closing sandbox {1}''s connection ({2})", address,
                        conn.client.id(), conn.piping ? "idle for " + limits.idleTimeout()
                                : "not set up within " + limits.setupTimeout());
                conn.abort();
            }
        }
    }

    private void serve(Conn conn) {
        try {
            conn.raw.setTcpNoDelay(true);
            conn.raw.setSoTimeout((int) limits.setupTimeout().toMillis());
            InputStream in = conn.raw.getInputStream();
            int first = in.read();
            if (first < 0) {
                refuse(conn, "closed before sending anything");
                return;
            }
            List<EgressSecret> secrets = List.copyOf(conn.client.secrets());
            if (first == ClientHello.HANDSHAKE) {
                serveTls(conn, first, in, secrets);
            } else if (RequestHead.startsRequest(first)) {
                servePlain(conn, first, in, secrets);
            } else {
                refuse(conn, "neither TLS nor HTTP");
            }
        } catch (IOException e) {
            if (!conn.isClosed()) {
                LOG.log(DEBUG, "egress proxy on " + address + ": sandbox " + conn.client.id() + "'s connection"
                        + " failed: " + e);
            }
        } catch (RuntimeException e) {
            LOG.log(WARNING, "egress proxy on " + address + ": sandbox " + conn.client.id() + "'s connection failed"
                    + " unexpectedly; closed it", e);
        } finally {
            conn.finish();
            connectionEnded(conn);
        }
    }

    private void serveTls(Conn conn, int first, InputStream in, List<EgressSecret> secrets) throws IOException {
        ClientHello.Peeked hello;
        try {
            hello = ClientHello.read(first, in);
        } catch (ClientHello.Malformed e) {
            refuse(conn, "not a ClientHello this proxy takes: " + e.getMessage());
            return;
        }
        if (hello.serverName() == null) {
            refuse(conn, "a ClientHello without a server name");
            return;
        }
        String host = CertificateAuthority.normalizeHost(hello.serverName());
        List<EgressSecret> forHost = secretsOf(host, secrets);
        if (forHost.isEmpty()) {
            refuse(conn, "TLS for " + host + ", which is none of its secret hosts");
            return;
        }
        SSLSocket tls = (SSLSocket) serverContext(host).getSocketFactory()
                .createSocket(conn.raw, new ByteArrayInputStream(hello.consumed()), true);
        conn.attachClientTls(tls);
        SSLParameters parameters = tls.getSSLParameters();
        parameters.setProtocols(PROTOCOLS);
        parameters.setApplicationProtocols(ALPN);
        parameters.setSNIMatchers(List.of(SNIHostName.createSNIMatcher(Pattern.quote(host))));
        tls.setSSLParameters(parameters);
        try {
            tls.startHandshake();
        } catch (SSLException e) {
            refuse(conn, "the TLS handshake for " + host + " failed (does the sandbox trust the egress CA?): " + e);
            return;
        }
        OutputStream out = tls.getOutputStream();
        RequestHead head;
        String asked;
        try {
            head = RequestHead.read(new byte[0], tls.getInputStream());
            asked = head.host();
        } catch (RequestHead.Malformed e) {
            respond(out, 400, "Bad Request", "the request was refused: " + e.getMessage());
            refuse(conn, "a request head it does not take: " + e.getMessage());
            return;
        }
        if (!host.equals(asked)) {
            respond(out, 421, "Misdirected Request", "the Host field must name the TLS server name");
            refuse(conn, "TLS for " + host + " with a request for Host " + asked);
            return;
        }
        forward(conn, host, true, tls.getInputStream(), out, head, forHost);
    }

    private void servePlain(Conn conn, int first, InputStream in, List<EgressSecret> secrets) throws IOException {
        RequestHead head;
        String host;
        try {
            head = RequestHead.read(new byte[]{(byte) first}, in);
            host = head.host();
        } catch (RequestHead.Malformed e) {
            refuse(conn, "not an HTTP request head this proxy takes: " + e.getMessage());
            return;
        }
        List<EgressSecret> forHost = host == null ? List.of() : secretsOf(host, secrets);
        if (forHost.isEmpty()) {
            refuse(conn, "HTTP for " + host + ", which is none of its secret hosts");
            return;
        }
        forward(conn, host, false, in, conn.raw.getOutputStream(), head, forHost);
    }

    /** Connects upstream, sends the rewritten head and what followed it, then copies both ways until done. */
    private void forward(Conn conn, String host, boolean tls, InputStream clientIn, OutputStream clientOut,
                         RequestHead head, List<EgressSecret> forHost) throws IOException {
        Socket upstream;
        try {
            upstream = connectUpstream(conn, host, tls ? 443 : 80, tls);
        } catch (IOException e) {
            upstreamFailures.increment();
            LOG.log(DEBUG, "egress proxy on " + address + ": sandbox " + conn.client.id() + "'s request to " + host
                    + " got 502: " + e);
            respond(clientOut, 502, "Bad Gateway", failure(e));
            return;
        }
        RequestHead.Forwarded rewritten = head.forward(forHost);
        OutputStream upstreamOut = upstream.getOutputStream();
        upstreamOut.write(rewritten.bytes());
        upstreamOut.write(head.rest());
        upstreamOut.flush();
        forwarded.increment();
        LOG.log(DEBUG, () -> "egress proxy: sandbox " + conn.client.id() + " " + head.method() + " to " + host
                + (tls ? " (TLS)" : " (HTTP)") + ", " + rewritten.replaced() + " placeholder(s) replaced");
        conn.raw.setSoTimeout(0); // the sweeper watches idleness from here on, across both directions
        upstream.setSoTimeout(0);
        conn.piping();
        try {
            pumps.execute(() -> pump(clientIn, upstreamOut, conn, false));
        } catch (RejectedExecutionException e) {
            return; // closing
        }
        pump(upstream.getInputStream(), clientOut, conn, true);
    }

    private Socket connectUpstream(Conn conn, String host, int port, boolean tls) throws IOException {
        InetSocketAddress target = upstreams.resolve(host, port);
        if (target == null || target.isUnresolved()) {
            throw new UnknownHostException("no address for " + host);
        }
        Socket raw = new Socket();
        conn.attachUpstream(raw, false);
        raw.connect(target, (int) Math.min(CONNECT_TIMEOUT.toMillis(), limits.setupTimeout().toMillis()));
        raw.setTcpNoDelay(true);
        raw.setSoTimeout((int) limits.setupTimeout().toMillis());
        if (!tls) {
            return raw;
        }
        SSLSocket socket = (SSLSocket) upstreamTls.createSocket(raw, host, port, true);
        conn.attachUpstream(socket, true);
        SSLParameters parameters = socket.getSSLParameters();
        parameters.setEndpointIdentificationAlgorithm("HTTPS");
        parameters.setServerNames(List.of(new SNIHostName(host)));
        parameters.setProtocols(PROTOCOLS);
        parameters.setApplicationProtocols(ALPN);
        socket.setSSLParameters(parameters);
        socket.startHandshake();
        return socket;
    }

    /**
     * Copies {@code from} to {@code to} until {@code from} ends. The response side ending means the exchange is over
     * (the upstream closes after its response): everything is closed. The request side ending only means the
     * sandbox sent all it will; the response still comes.
     */
    private void pump(InputStream from, OutputStream to, Conn conn, boolean response) {
        byte[] buffer = new byte[BUFFER_BYTES];
        boolean failed = false;
        try {
            int n;
            while ((n = from.read(buffer)) >= 0) {
                if (n > 0) {
                    to.write(buffer, 0, n);
                    to.flush();
                    conn.touch();
                }
            }
        } catch (IOException e) {
            failed = true;
            if (!conn.isClosed()) {
                LOG.log(DEBUG, "egress proxy on " + address + ": sandbox " + conn.client.id() + "'s exchange ended"
                        + " (" + (response ? "response" : "request") + " side): " + e);
            }
        } finally {
            if (response) {
                conn.finish();
            } else if (failed) {
                conn.abort();
            }
        }
    }

    private void refuse(Conn conn, String why) {
        refused.increment();
        LOG.log(DEBUG, () -> "egress proxy on " + address + ": refused sandbox " + conn.client.id() + "'s connection: "
                + why);
    }

    /** What the sandbox is told when the upstream failed; no address, nothing of the request. */
    private static String failure(IOException e) {
        if (e instanceof SSLHandshakeException) {
            return "the upstream's TLS handshake failed (its certificate is not trusted or does not name the host?)";
        }
        if (e instanceof SSLException) {
            return "TLS with the upstream failed";
        }
        if (e instanceof UnknownHostException) {
            return "the upstream could not be resolved";
        }
        if (e instanceof ConnectException || e instanceof SocketTimeoutException) {
            return "the upstream could not be reached";
        }
        return "the upstream is not available";
    }

    /** A short response of the proxy's own, then the connection closes. */
    private static void respond(OutputStream out, int status, String reason, String text) {
        byte[] body = ("paddock egress proxy: " + text + "\n").getBytes(StandardCharsets.UTF_8);
        String head = "HTTP/1.1 " + status + " " + reason + "\r\n"
                + "Content-Type: text/plain; charset=utf-8\r\n"
                + "Content-Length: " + body.length + "\r\n"
                + "Connection: close\r\n\r\n";
        try {
            out.write(head.getBytes(StandardCharsets.ISO_8859_1));
            out.write(body);
            out.flush();
        } catch (IOException e) {
            // the sandbox is gone; nothing to tell
        }
    }

    private static List<EgressSecret> secretsOf(String host, List<EgressSecret> secrets) {
        List<EgressSecret> forHost = new ArrayList<>();
        for (EgressSecret secret : secrets) {
            if (secret.host().equals(host)) {
                forHost.add(secret);
            }
        }
        return forHost;
    }

    /** The server-side TLS context presenting {@code host}'s current leaf; one per leaf, so renewal is seamless. */
    private SSLContext serverContext(String host) {
        CertificateAuthority.Leaf leaf = ca.leafFor(host);
        synchronized (serverContexts) {
            ServerContext cached = serverContexts.get(host);
            if (cached != null && cached.leaf() == leaf) {
                return cached.context();
            }
        }
        SSLContext context;
        try {
            context = SSLContext.getInstance("TLS");
            // no trust managers: sandboxes present no certificate, and an empty array keeps the JDK from loading
            // its default trust store for nothing
            context.init(new KeyManager[]{new LeafKeyManager(leaf)}, new TrustManager[0], null);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("cannot make a TLS context for " + leaf, e);
        }
        synchronized (serverContexts) {
            serverContexts.put(host, new ServerContext(leaf, context));
        }
        return context;
    }

    /** Presents one leaf, whatever is asked: the host was chosen before the handshake began. */
    private static final class LeafKeyManager extends X509ExtendedKeyManager {
        private static final String ALIAS = "leaf";
        private final CertificateAuthority.Leaf leaf;
        private final X509Certificate[] chain;

        LeafKeyManager(CertificateAuthority.Leaf leaf) {
            this.leaf = leaf;
            this.chain = leaf.chain().toArray(X509Certificate[]::new);
        }

        private String aliasFor(String keyType) {
            return leaf.privateKey().getAlgorithm().equals(keyType) ? ALIAS : null;
        }

        @Override
        public String[] getServerAliases(String keyType, Principal[] issuers) {
            return aliasFor(keyType) == null ? null : new String[]{ALIAS};
        }

        @Override
        public String chooseServerAlias(String keyType, Principal[] issuers, Socket socket) {
            return aliasFor(keyType);
        }

        @Override
        public String chooseEngineServerAlias(String keyType, Principal[] issuers, SSLEngine engine) {
            return aliasFor(keyType);
        }

        @Override
        public X509Certificate[] getCertificateChain(String alias) {
            return ALIAS.equals(alias) ? chain.clone() : null;
        }

        @Override
        public PrivateKey getPrivateKey(String alias) {
            return ALIAS.equals(alias) ? leaf.privateKey() : null;
        }

        @Override
        public String[] getClientAliases(String keyType, Principal[] issuers) {
            return null;
        }

        @Override
        public String chooseClientAlias(String[] keyType, Principal[] issuers, Socket socket) {
            return null;
        }

        @Override
        public String toString() {
            return "LeafKeyManager[" + leaf + "]";
        }
    }

    /**
     * One sandbox connection and the sockets made for it. {@link #abort()} closes the plain sockets only, which never
     * blocks (the sweeper and {@link #close()} use it); {@link #finish()} first closes the TLS layers, so that each
     * peer gets a close_notify, from the connection's own thread.
     */
    private final class Conn {
        final Socket raw;
        final Inet4Address source;
        final Client client;
        final String tenant;
        private final long setupDeadline;
        private Socket clientTls;
        private Socket upstreamRaw;
        private Socket upstreamTls;
        private boolean closed;
        volatile boolean piping;
        private volatile long lastActivity;

        Conn(Socket raw, Inet4Address source, Client client, String tenant) {
            this.raw = raw;
            this.source = source;
            this.client = client;
            this.tenant = tenant;
            this.setupDeadline = System.nanoTime() + limits.setupTimeout().toNanos();
        }

        synchronized void attachClientTls(Socket socket) throws SocketException {
            if (closed) {
                throw new SocketException("connection closed");
            }
            clientTls = socket;
        }

        /** Keeps {@code socket} for closing; closes it at once if the connection was closed meanwhile. */
        void attachUpstream(Socket socket, boolean tls) throws SocketException {
            synchronized (this) {
                if (!closed) {
                    if (tls) {
                        upstreamTls = socket;
                    } else {
                        upstreamRaw = socket;
                    }
                    return;
                }
            }
            closeQuietly(socket);
            throw new SocketException("connection closed");
        }

        void piping() {
            lastActivity = System.nanoTime();
            piping = true;
        }

        void touch() {
            lastActivity = System.nanoTime();
        }

        boolean overdue(long now) {
            return piping ? now - lastActivity > limits.idleTimeout().toNanos() : now - setupDeadline > 0;
        }

        synchronized boolean isClosed() {
            return closed;
        }

        void abort() {
            Socket a;
            Socket b;
            synchronized (this) {
                closed = true;
                a = raw;
                b = upstreamRaw;
            }
            closeQuietly(a);
            if (b != null) {
                closeQuietly(b);
            }
        }

        void finish() {
            Socket a;
            Socket b;
            synchronized (this) {
                boolean wasClosed = closed;
                closed = true;
                a = wasClosed ? null : clientTls;
                b = wasClosed ? null : upstreamTls;
            }
            // close_notify both ways, when nothing aborted the connection first; then the plain sockets regardless
            for (Socket tls : new Socket[]{a, b}) {
                if (tls != null) {
                    closeQuietly(tls);
                }
            }
            abort();
        }

        /** Names the sandbox and its address; nothing of what was sent. */
        @Override
        public String toString() {
            return "Conn[" + client.id() + " from " + source.getHostAddress() + "]";
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

    private ThreadFactory daemons(String role) {
        return Threads.tracked(threads, THREAD_PREFIX, role);
    }

    private static void closeQuietly(AutoCloseable closeable) {
        Threads.closeQuietly(closeable, LOG);
    }
}
