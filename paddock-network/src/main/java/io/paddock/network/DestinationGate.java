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
 * {@link #IDLE_TIMEOUT} is closed. Thread-safe.
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
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Thread acceptLoop;

    private DestinationGate(Function<InetAddress, Optional<String>> why, Resolver resolver) throws IOException {
        this.why = why;
        this.resolver = resolver;
        this.listener = new ServerSocket(0, 64, InetAddress.getByName("127.0.0.1"));
        Proxy proxy = new Proxy(Proxy.Type.HTTP, new InetSocketAddress(listener.getInetAddress(),
                listener.getLocalPort()));
        this.selector = new ProxySelector() {
            @Override
            public List<Proxy> select(URI uri) {
                return List.of(proxy);
            }

            @Override
            public void connectFailed(URI uri, SocketAddress sa, IOException e) {
                // one proxy, no other to try
            }
        };
        // two threads a tunnel: the connection's and the one copying its other direction
        this.workers = new ThreadPoolExecutor(0, 2 * MAX_CONNECTIONS, 30, TimeUnit.SECONDS, new SynchronousQueue<>(),
                Threads.tracked(threads, "paddock-gate-", "conn"));
        this.acceptLoop = Threads.tracked(threads, "paddock-gate-", "accept").newThread(this::acceptLoop);
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

    /** Sends every connection through this gate; give it to the HTTP client of a pull made on someone's behalf. */
    public ProxySelector proxySelector() {
        return selector;
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

    private void acceptLoop() {
        while (!closed.get()) {
            Socket socket;
            try {
                socket = listener.accept();
            } catch (IOException e) {
                if (!closed.get()) {
                    LOG.log(DEBUG, "destination gate: accept failed: " + e);
                    sleepBriefly();
                }
                continue;
            }
            if (!socket.getInetAddress().isLoopbackAddress() || active.incrementAndGet() > MAX_CONNECTIONS) {
                if (socket.getInetAddress().isLoopbackAddress()) {
                    active.decrementAndGet();
                }
                closeQuietly(socket);
                continue;
            }
            open.add(socket);
            try {
                workers.execute(() -> serve(socket));
            } catch (RejectedExecutionException e) {
                done(socket);
            }
        }
    }

    private void serve(Socket client) {
        Socket upstream = null;
        try {
            client.setSoTimeout((int) SETUP_TIMEOUT.toMillis());
            long deadline = System.nanoTime() + SETUP_TIMEOUT.toNanos();
            String head = readHead(client.getInputStream(), deadline);
            OutputStream out = client.getOutputStream();
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
            done(client);
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

    private void done(Socket socket) {
        closeQuietly(socket);
        if (open.remove(socket)) {
            active.decrementAndGet();
        }
    }

    /** Closes the listener and every tunnel; waits briefly for the gate's threads. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        closeQuietly(listener);
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
