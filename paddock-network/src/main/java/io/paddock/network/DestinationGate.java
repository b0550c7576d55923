package io.paddock.network;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.network.internal.Threads;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Proxy;
import java.net.ProxySelector;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketAddress;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import static java.lang.System.Logger.Level.DEBUG;

/**
 * Makes connections made on someone's behalf go to the very address that {@link Destinations} allowed. A check of
 * a name resolves it, and an HTTP client resolves it again when it connects (JDK 17 has no resolver to hook), so a
 * name that answers a public address to the check and the host's own or a private one a moment later (DNS
 * rebinding) would pass the check and connect where it may not. The gate is an HTTP {@code CONNECT} proxy on
 * 127.0.0.1 that such a client goes through ({@link #proxySelector()}): for each {@code CONNECT host:port} it
 * resolves the host once, refuses (403) unless the rule allows every address, connects to one of those very
 * addresses, answers 200 and copies bytes both ways. TLS stays end to end between the client and the server (the
 * client checks the server's certificate and name as without the gate); the gate sees only ciphertext.
 *
 * <p>A refusal is the same 403 whatever listens at the address (it never connects there), so the gate is no port
 * scanner of the host. Only {@code CONNECT} is taken (a plain-HTTP request gets 405): the destinations it serves,
 * tenants' pulls and pushes, are HTTPS only. It accepts only from loopback; whoever reaches it there gets nothing
 * more than a connection the rule allows, which any process of the host can make itself, and sandboxes never reach
 * the host's loopback (their input chain drops all but DNS to the resolver, {@code NftPlan}).
 *
 * <p>Bounded: at most {@link #MAX_CONNECTIONS} at once (more are closed unanswered), 10 s from accept until the
 * tunnel is up (the request head, the resolution and the connect), and a tunnel that moves no byte either way for
 * {@link #IDLE_TIMEOUT} is closed.
 *
 * <p>Shared fairly: the connections of one owner (a tenant) come in through {@link Lane}s of its own, each a
 * listener of its own on 127.0.0.1 that the gate knows as that owner's ({@link #lane}), so the gate counts each
 * connection against its owner without the client saying anything (the JDK's HTTP client sends no proxy
 * credentials on a tunnel). An owner holds at most its share of tunnels, over all its lanes together; a
 * connection beyond it is answered 429 and never connects, so that one owner's pulls cannot take every tunnel and
 * fail everyone else's. Closing a lane ends its tunnels (the HTTP client's pooled ones too). Thread-safe.
 */
public final class DestinationGate implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(DestinationGate.class.getName());
    /** Tunnels open at once, every tenant's together. */
    public static final int MAX_CONNECTIONS = 128;
    /** A tunnel closes after this long without a byte moving either way (a registry's 60 s to answer fits). */
    public static final Duration IDLE_TIMEOUT = Duration.ofSeconds(90);
    private static final Duration SETUP_TIMEOUT = Duration.ofSeconds(10);
    private static final int MAX_HEAD = 8192;
    private static final int BUFFER_BYTES = 16 * 1024;

    /** How the gate (and its checks) resolve a name; the JDK's resolver by default. */
    @FunctionalInterface
    public interface Resolver {
        /** Every address of {@code host} (a name or an address literal). */
        List<InetAddress> resolve(String host) throws UnknownHostException;
    }

    private final Function<InetAddress, Optional<String>> why;
    private final Resolver resolver;
    private final ServerSocket listener;
    private final ProxySelector selector;
    private final ThreadPoolExecutor workers;
    private final Set<Thread> threads = ConcurrentHashMap.newKeySet();
    private final Set<Socket> open = ConcurrentHashMap.newKeySet();
    private final AtomicInteger active = new AtomicInteger();
    /** Connections ever accepted, on every listener, from anywhere: what reached the gate at all. */
    private final AtomicLong accepted = new AtomicLong();
    /** Per owner: the tunnels (connections accepted within its share) it holds now, over all its lanes. */
    private final ConcurrentHashMap<String, Integer> held = new ConcurrentHashMap<>();
    /** Per owner: its lanes open now. */
    private final ConcurrentHashMap<String, Integer> lanes = new ConcurrentHashMap<>();
    /** The owner each counted connection is held for; a connection not here counts against no owner. */
    private final ConcurrentHashMap<Socket, String> heldFor = new ConcurrentHashMap<>();
    private final Set<Lane> openLanes = ConcurrentHashMap.newKeySet();
    private final java.util.concurrent.ThreadFactory laneThreads = Threads.tracked(threads, "paddock-gate-", "lane");
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Thread acceptLoop;

    private DestinationGate(Function<InetAddress, Optional<String>> why, Resolver resolver) throws IOException {
        this.why = why;
        this.resolver = resolver;
        this.listener = new ServerSocket(0, 64, InetAddress.getByName("127.0.0.1"));
        this.selector = selectorFor(listener);
        // two threads a tunnel: the connection's and the one copying its other direction
        this.workers = new ThreadPoolExecutor(0, 2 * MAX_CONNECTIONS, 30, TimeUnit.SECONDS, new SynchronousQueue<>(),
                Threads.tracked(threads, "paddock-gate-", "conn"));
        this.acceptLoop = Threads.tracked(threads, "paddock-gate-", "accept")
                .newThread(() -> acceptLoop(listener, null));
        acceptLoop.start();
    }

    /** A gate holding connections to {@code rule}, names resolved by the JDK's resolver. */
    public static DestinationGate start(Destinations rule) {
        return start(rule, host -> List.of(InetAddress.getAllByName(host)));
    }

    /** A gate holding connections to {@code rule}, names resolved by {@code resolver} (its checks too). */
    public static DestinationGate start(Destinations rule, Resolver resolver) {
        return start(rule::why, resolver);
    }

    static DestinationGate start(Function<InetAddress, Optional<String>> why, Resolver resolver) {
        try {
            return new DestinationGate(why, resolver);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot open the destination gate on 127.0.0.1: " + e, e);
        }
    }

    /**
     * Sends every connection through this gate, counted against no owner; give it to the HTTP client of a pull
     * made on someone's behalf when there is no owner to share among ({@link #lane} otherwise).
     */
    public ProxySelector proxySelector() {
        return selector;
    }

    /**
     * A way in for {@code owner}'s connections (one pull or push of a tenant): a listener of its own on 127.0.0.1,
     * every connection through it counted against {@code owner}, which holds at most {@code share} tunnels at once
     * over all its lanes; a connection beyond that is answered 429 before anything is resolved or connected. At
     * most {@code share} lanes of one owner are open at once (each needs a tunnel to do anything). Close it when
     * the pull or push ends: that ends its tunnels, the HTTP client's idle pooled ones too.
     *
     * @throws SandboxException RESOURCE_EXHAUSTED when {@code owner} already has {@code share} lanes open;
     *                          UNAVAILABLE when the gate is closed or no listener can be opened
     */
    public Lane lane(String owner, int share) {
        java.util.Objects.requireNonNull(owner, "owner");
        if (share < 1 || share > MAX_CONNECTIONS) {
            throw SandboxException.invalid("share", "must be between 1 and " + MAX_CONNECTIONS + ", got " + share);
        }
        if (closed.get()) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "the destination gate is closed");
        }
        if (lanes.merge(owner, 1, Integer::sum) > share) {
            release(lanes, owner);
            throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "'" + owner + "' already has " + share
                    + " pulls and pushes connecting through the destination gate, its share of its tunnels");
        }
        try {
            Lane lane = new Lane(owner, share);
            openLanes.add(lane);
            if (closed.get()) {
                lane.close();
                throw new SandboxException(ErrorCode.UNAVAILABLE, "the destination gate is closed");
            }
            return lane;
        } catch (IOException e) {
            release(lanes, owner);
            throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot open a destination gate lane on 127.0.0.1: " + e, e);
        }
    }

    /** How many tunnels {@code owner} holds now, over all its lanes. */
    public int held(String owner) {
        return held.getOrDefault(owner, 0);
    }

    /**
     * How many connections have reached the gate since it started, on its own listener and every lane's, whatever
     * became of them (a refusal, a tunnel): a test's witness that something could, or could not, connect to it.
     */
    public long accepted() {
        return accepted.get();
    }

    /**
     * One owner's way into the gate ({@link DestinationGate#lane}): its own listener on 127.0.0.1, its own proxy
     * selector, its connections counted against the owner. Closing it closes the listener and ends every tunnel
     * that came through it. Thread-safe.
     */
    public final class Lane implements AutoCloseable {
        private final String owner;
        private final int share;
        private final ServerSocket laneListener;
        private final ProxySelector laneSelector;
        private final Set<Socket> laneSockets = ConcurrentHashMap.newKeySet();
        private final AtomicBoolean refused = new AtomicBoolean();
        private final AtomicBoolean laneClosed = new AtomicBoolean();

        private Lane(String owner, int share) throws IOException {
            this.owner = owner;
            this.share = share;
            this.laneListener = new ServerSocket(0, 64, InetAddress.getByName("127.0.0.1"));
            this.laneSelector = selectorFor(laneListener);
            laneThreads.newThread(() -> acceptLoop(laneListener, this)).start();
        }

        /** Sends every connection through this lane; give it to the HTTP client of the owner's pull or push. */
        public ProxySelector proxySelector() {
            return laneSelector;
        }

        /** Where this lane listens (127.0.0.1, an ephemeral port). */
        public InetSocketAddress address() {
            return new InetSocketAddress(laneListener.getInetAddress(), laneListener.getLocalPort());
        }

        /** The owner's share of tunnels. */
        public int share() {
            return share;
        }

        /** Whether a connection through this lane was refused because its owner held its share of tunnels. */
        public boolean refusedForShare() {
            return refused.get();
        }

        /** Closes the listener and ends the lane's tunnels; idempotent. */
        @Override
        public void close() {
            if (!laneClosed.compareAndSet(false, true)) {
                return;
            }
            closeQuietly(laneListener);
            for (Socket s : laneSockets) {
                closeQuietly(s); // its serve() ends, closing the upstream side and giving the tunnel back
            }
            openLanes.remove(this);
            release(lanes, owner);
        }
    }

    private static ProxySelector selectorFor(ServerSocket listener) {
        Proxy proxy = new Proxy(Proxy.Type.HTTP, new InetSocketAddress(listener.getInetAddress(),
                listener.getLocalPort()));
        return new ProxySelector() {
            @Override
            public List<Proxy> select(URI uri) {
                return List.of(proxy);
            }

            @Override
            public void connectFailed(URI uri, SocketAddress sa, IOException e) {
                // one proxy, no other to try
            }
        };
    }

    private static void release(ConcurrentHashMap<String, Integer> counts, String owner) {
        counts.computeIfPresent(owner, (o, n) -> n == 1 ? null : n - 1);
    }

    /** Where the gate listens (127.0.0.1, an ephemeral port). */
    public InetSocketAddress address() {
        return new InetSocketAddress(listener.getInetAddress(), listener.getLocalPort());
    }

    /**
     * Refuses {@code host} before anything is sent when any address it resolves to now is one the rule refuses
     * (an unknown name passes: the request fails as an unknown host). The gate checks again at each connect, on
     * the address it then connects to, so this check gives the clear error and the gate the guarantee.
     *
     * @throws SandboxException PERMISSION_DENIED naming {@code field}, {@code what} and the rule, never whether
     *                          anything listens there
     */
    public void check(String field, String what, String host) {
        List<InetAddress> addresses;
        try {
            addresses = resolver.resolve(host);
        } catch (UnknownHostException e) {
            return;
        }
        for (InetAddress a : addresses) {
            Optional<String> refused = why.apply(a);
            if (refused.isPresent()) {
                throw Destinations.refusal(field, what, refused.get());
            }
        }
    }

    /** Accepts on {@code from}, the gate's own listener ({@code lane} null) or a lane's, until it is closed. */
    private void acceptLoop(ServerSocket from, Lane lane) {
        while (!closed.get() && !from.isClosed()) {
            Socket socket;
            try {
                socket = from.accept();
            } catch (IOException e) {
                if (!closed.get() && !from.isClosed()) {
                    LOG.log(DEBUG, "destination gate: accept failed: " + e);
                    sleepBriefly();
                }
                continue;
            }
            accepted.incrementAndGet();
            if (!socket.getInetAddress().isLoopbackAddress()) {
                closeQuietly(socket);
                continue;
            }
            if (active.incrementAndGet() > MAX_CONNECTIONS) {
                active.decrementAndGet();
                closeQuietly(socket);
                continue;
            }
            boolean withinShare = true;
            if (lane != null) {
                if (held.merge(lane.owner, 1, Integer::sum) > lane.share) {
                    release(held, lane.owner);
                    withinShare = false;
                } else {
                    heldFor.put(socket, lane.owner);
                }
                lane.laneSockets.add(socket);
                if (lane.laneClosed.get()) {
                    closeQuietly(socket); // closed meanwhile: serve() ends at once
                }
            }
            open.add(socket);
            boolean within = withinShare;
            try {
                workers.execute(() -> serve(socket, lane, within));
            } catch (RejectedExecutionException e) {
                done(socket, lane);
            }
        }
    }

    private void serve(Socket client, Lane lane, boolean withinShare) {
        Socket upstream = null;
        try {
            client.setSoTimeout((int) SETUP_TIMEOUT.toMillis());
            long deadline = System.nanoTime() + SETUP_TIMEOUT.toNanos();
            String head = readHead(client.getInputStream(), deadline);
            OutputStream out = client.getOutputStream();
            if (!withinShare) {
                // nothing resolved or connected: the owner holds its share of the gate's tunnels already
                lane.refused.set(true);
                LOG.log(DEBUG, () -> "destination gate: " + lane.owner + " holds its share of " + lane.share);
                respond(out, "429 Too Many Requests", "this owner already holds " + lane.share
                        + " tunnels, its share");
                return;
            }
            String[] line = head.substring(0, head.indexOf("\r\n")).split(" ");
            if (line.length != 3 || !line[0].equals("CONNECT") || !line[2].startsWith("HTTP/1.")) {
                respond(out, "405 Method Not Allowed", "only CONNECT (https) goes through the destination gate");
                return;
            }
            Target target = Target.parse(line[1]);
            if (target == null) {
                respond(out, "400 Bad Request", "CONNECT takes host:port");
                return;
            }
            List<InetAddress> addresses;
            try {
                addresses = resolver.resolve(target.host());
            } catch (UnknownHostException e) {
                respond(out, "502 Bad Gateway", "unknown host");
                return;
            }
            for (InetAddress a : addresses) {
                Optional<String> refused = why.apply(a);
                if (refused.isPresent()) {
                    // the same answer whatever listens there: nothing is tried
                    LOG.log(DEBUG, () -> "destination gate: refused " + target.host() + " (" + refused.get() + ")");
                    respond(out, "403 Forbidden", "the destination is " + refused.get());
                    return;
                }
            }
            upstream = connect(addresses, target.port(), deadline);
            if (upstream == null) {
                respond(out, "502 Bad Gateway", "the destination could not be reached");
                return;
            }
            out.write("HTTP/1.1 200 Connection established\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            relay(client, upstream);
        } catch (IOException | RuntimeException e) {
            LOG.log(DEBUG, "destination gate: a tunnel ended: " + e);
        } finally {
            if (upstream != null) {
                closeQuietly(upstream);
                open.remove(upstream);
            }
            done(client, lane);
        }
    }

    /** A connection to the first of {@code addresses} (every one checked) that answers; null when none does. */
    private Socket connect(List<InetAddress> addresses, int port, long deadline) {
        for (InetAddress a : addresses) {
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (left <= 0) {
                return null;
            }
            Socket s = new Socket();
            open.add(s);
            try {
                s.connect(new InetSocketAddress(a, port), (int) left); // the address itself: nothing is resolved again
                s.setTcpNoDelay(true);
                return s;
            } catch (IOException e) {
                open.remove(s);
                closeQuietly(s);
            }
        }
        return null;
    }

    /** Copies both ways until both have ended, either fails, or nothing moves for {@link #IDLE_TIMEOUT}. */
    private void relay(Socket client, Socket upstream) throws IOException {
        AtomicLong last = new AtomicLong(System.nanoTime());
        client.setSoTimeout((int) Math.min(IDLE_TIMEOUT.toMillis(), 5_000));
        upstream.setSoTimeout((int) Math.min(IDLE_TIMEOUT.toMillis(), 5_000));
        AtomicInteger ended = new AtomicInteger();
        Runnable up = () -> pump(client, upstream, last, ended);
        try {
            workers.execute(up);
        } catch (RejectedExecutionException e) {
            return;
        }
        pump(upstream, client, last, ended);
        synchronized (ended) {
            while (ended.get() < 2 && !upstream.isClosed()) {
                try {
                    ended.wait(1000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    private void pump(Socket from, Socket to, AtomicLong last, AtomicInteger ended) {
        byte[] buffer = new byte[BUFFER_BYTES];
        try {
            InputStream in = from.getInputStream();
            OutputStream out = to.getOutputStream();
            while (true) {
                int n;
                try {
                    n = in.read(buffer);
                } catch (SocketTimeoutException e) {
                    if (System.nanoTime() - last.get() > IDLE_TIMEOUT.toNanos()) {
                        throw e;
                    }
                    continue;
                }
                if (n < 0) {
                    to.shutdownOutput(); // half-close, as the peer did
                    break;
                }
                out.write(buffer, 0, n);
                out.flush();
                last.set(System.nanoTime());
            }
        } catch (IOException e) {
            closeQuietly(from); // either side failing or idle ends the tunnel
            closeQuietly(to);
        } finally {
            synchronized (ended) {
                ended.incrementAndGet();
                ended.notifyAll();
            }
        }
    }

    private static String readHead(InputStream in, long deadline) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        int matched = 0;
        while (matched < 4) {
            if (System.nanoTime() > deadline || head.size() >= MAX_HEAD) {
                throw new IOException("no CONNECT head within the limits");
            }
            int b = in.read(); // the head is small and the client waits for the answer: nothing is read past it
            if (b < 0) {
                throw new IOException("the client closed before its CONNECT head ended");
            }
            head.write(b);
            matched = b == ("\r\n\r\n".charAt(matched)) ? matched + 1 : b == '\r' ? 1 : 0;
        }
        return head.toString(StandardCharsets.ISO_8859_1);
    }

    private static void respond(OutputStream out, String status, String text) throws IOException {
        byte[] body = ("paddock destination gate: " + text + "\n").getBytes(StandardCharsets.UTF_8);
        out.write(("HTTP/1.1 " + status + "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: "
                + body.length + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
        out.write(body);
        out.flush();
    }

    private record Target(String host, int port) {
        static Target parse(String authority) {
            int colon = authority.lastIndexOf(':');
            if (colon <= 0) {
                return null;
            }
            String host = authority.substring(0, colon);
            if (host.startsWith("[") && host.endsWith("]")) {
                host = host.substring(1, host.length() - 1);
            }
            int port;
            try {
                port = Integer.parseInt(authority.substring(colon + 1));
            } catch (NumberFormatException e) {
                return null;
            }
            if (port < 1 || port > 65535 || host.isEmpty() || !host.chars().allMatch(c -> c > 0x20 && c < 0x7f)) {
                return null;
            }
            return new Target(host.toLowerCase(Locale.ROOT), port);
        }
    }

    private void done(Socket socket, Lane lane) {
        closeQuietly(socket);
        if (open.remove(socket)) {
            active.decrementAndGet();
        }
        String owner = heldFor.remove(socket);
        if (owner != null) {
            release(held, owner);
        }
        if (lane != null) {
            lane.laneSockets.remove(socket);
        }
    }

    /** Closes the listener and every tunnel; waits briefly for the gate's threads. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        closeQuietly(listener);
        for (Lane lane : openLanes) {
            lane.close();
        }
        for (Socket s : open) {
            closeQuietly(s);
        }
        workers.shutdownNow();
        Threads.joinWithin(threads, Duration.ofSeconds(5));
    }

    private static void sleepBriefly() {
        try {
            Thread.sleep(100);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void closeQuietly(AutoCloseable c) {
        Threads.closeQuietly(c, LOG);
    }
}
