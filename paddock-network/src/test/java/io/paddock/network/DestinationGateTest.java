package io.paddock.network;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/** The gate resolves once, refuses without connecting, and relays bytes both ways to the address it checked. */
class DestinationGateTest {
    private static String exchange(DestinationGate gate, String head, byte[] then) throws IOException {
        try (Socket s = new Socket(gate.address().getAddress(), gate.address().getPort())) {
            s.setSoTimeout(5000);
            OutputStream out = s.getOutputStream();
            out.write(head.getBytes(StandardCharsets.ISO_8859_1));
            out.write(then);
            out.flush();
            s.shutdownOutput();
            return new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
        }
    }

    @Test
    void aTunnelGoesToTheCheckedAddressAndCarriesBytesBothWays() throws Exception {
        try (ServerSocket echo = new ServerSocket(0, 5, InetAddress.getByName("127.0.0.1"));
             // loopback allowed here only: the rule is the test's, so that the relay can be seen
             DestinationGate gate = DestinationGate.start(a -> Optional.empty(),
                     host -> List.of(InetAddress.getByName("127.0.0.1")))) {
            Thread server = new Thread(() -> {
                try (Socket c = echo.accept(); InputStream in = c.getInputStream()) {
                    byte[] got = in.readAllBytes();
                    c.getOutputStream().write(("echo:" + new String(got, StandardCharsets.ISO_8859_1))
                            .getBytes(StandardCharsets.ISO_8859_1));
                } catch (IOException e) {
                    // the test's assertion tells
                }
            });
            server.start();
            String answer = exchange(gate, "CONNECT registry.paddock.test:" + echo.getLocalPort()
                    + " HTTP/1.1\r\nHost: registry.paddock.test\r\n\r\n", "hello".getBytes(StandardCharsets.ISO_8859_1));
            assertThat(answer).isEqualTo("HTTP/1.1 200 Connection established\r\n\r\necho:hello");
            server.join(5000);
        }
    }

    /** An HTTPS request through the gate: TLS end to end, the server's certificate and name checked by the client. */
    @Test
    void httpsThroughTheGateKeepsTlsEndToEnd() throws Exception {
        io.paddock.network.internal.egress.TestPki pki = new io.paddock.network.internal.egress.TestPki("gate test CA");
        com.sun.net.httpserver.HttpsServer server = com.sun.net.httpserver.HttpsServer.create(
                new java.net.InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0), 0);
        server.setHttpsConfigurator(new com.sun.net.httpserver.HttpsConfigurator(
                io.paddock.network.internal.egress.TestPki.serving(pki.issue("registry.paddock.test"))));
        server.createContext("/", ex -> {
            byte[] body = "through".getBytes(StandardCharsets.UTF_8);
            ex.sendResponseHeaders(200, body.length);
            ex.getResponseBody().write(body);
            ex.close();
        });
        server.start();
        try (DestinationGate gate = DestinationGate.start(a -> Optional.empty(),
                host -> List.of(InetAddress.getByName("127.0.0.1")))) {
            java.net.http.HttpClient client = java.net.http.HttpClient.newBuilder().proxy(gate.proxySelector())
                    .sslContext(io.paddock.network.internal.egress.TestPki.trusting(pki.certificate())).build();
            java.net.http.HttpResponse<String> r = client.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(
                    "https://registry.paddock.test:" + server.getAddress().getPort() + "/v2/")).build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString());
            assertThat(r.body()).isEqualTo("through");
            // a name the certificate does not hold fails the client's own check, through the gate as without it
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> client.send(java.net.http.HttpRequest.newBuilder(
                    java.net.URI.create("https://other.paddock.test:" + server.getAddress().getPort() + "/v2/"))
                    .build(), java.net.http.HttpResponse.BodyHandlers.ofString()))
                    .isInstanceOf(javax.net.ssl.SSLHandshakeException.class);
        } finally {
            server.stop(0);
        }
    }

    @Test
    void aRefusedAddressIsNeverConnectedToAndOpenReadsAsClosed() throws Exception {
        try (ServerSocket open = new ServerSocket(0, 5, InetAddress.getByName("127.0.0.1"));
             DestinationGate gate = DestinationGate.start(Destinations.defaults(),
                     host -> List.of(InetAddress.getByName("127.0.0.1")))) {
            int closed;
            try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
                closed = probe.getLocalPort();
            }
            String toOpen = exchange(gate, "CONNECT h.paddock.test:" + open.getLocalPort() + " HTTP/1.1\r\n\r\n",
                    new byte[0]);
            String toClosed = exchange(gate, "CONNECT h.paddock.test:" + closed + " HTTP/1.1\r\n\r\n", new byte[0]);
            assertThat(toOpen).startsWith("HTTP/1.1 403 ").isEqualTo(toClosed);
            open.setSoTimeout(300);
            try (Socket s = open.accept()) {
                throw new AssertionError("the gate connected to a refused address");
            } catch (SocketTimeoutException expected) {
                // nothing came
            }
            assertThat(exchange(gate, "GET http://h.paddock.test/ HTTP/1.1\r\n\r\n", new byte[0]))
                    .as("plain HTTP through the gate").startsWith("HTTP/1.1 405 ");
        }
    }

    /** Sends a CONNECT through {@code proxy} and returns the socket, its answer's status line read. */
    private static Socket tunnel(java.net.InetSocketAddress proxy, int port, StringBuilder status) throws IOException {
        Socket s = new Socket(proxy.getAddress(), proxy.getPort());
        s.setSoTimeout(5000);
        s.getOutputStream().write(("CONNECT registry.paddock.test:" + port + " HTTP/1.1\r\n\r\n")
                .getBytes(StandardCharsets.ISO_8859_1));
        s.getOutputStream().flush();
        InputStream in = s.getInputStream();
        StringBuilder line = new StringBuilder();
        for (int b; (b = in.read()) >= 0 && b != '\n'; ) {
            line.append((char) b);
        }
        status.setLength(0);
        status.append(line.toString().trim());
        return s;
    }

    /**
     * Issue 32 round 3: one tenant must not take every tunnel of the gate. Alice holds her share (2 here) of tunnels
     * open to a registry that never answers, over two lanes (two pulls); Bob's pull still gets one; Alice's next is
     * answered 429 and the registry never sees it, through the JDK's client too ("Tunnel failed, got: 429"); once
     * one of her pulls ends (its lane closed) she gets one again. Without the share, her third tunnel was made.
     */
    @Test
    void oneOwnerHoldsAtMostItsShareOfTunnelsAndOthersStillGetOne() throws Exception {
        try (ServerSocket slow = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
             DestinationGate gate = DestinationGate.start(a -> Optional.empty(),
                     host -> List.of(InetAddress.getByName("127.0.0.1")))) {
            java.util.concurrent.atomic.AtomicInteger reached = new java.util.concurrent.atomic.AtomicInteger();
            List<Socket> serverSide = new java.util.concurrent.CopyOnWriteArrayList<>();
            Thread acceptor = new Thread(() -> {
                while (!slow.isClosed()) {
                    try {
                        serverSide.add(slow.accept()); // accepted and held, never answered: a registry trickling nothing
                        reached.incrementAndGet();
                    } catch (IOException e) {
                        return;
                    }
                }
            });
            acceptor.setDaemon(true);
            acceptor.start();
            int port = slow.getLocalPort();
            List<Socket> held = new java.util.ArrayList<>();
            StringBuilder status = new StringBuilder();
            try (DestinationGate.Lane pullOne = gate.lane("alice", 2);
                 DestinationGate.Lane pullTwo = gate.lane("alice", 2);
                 DestinationGate.Lane bobs = gate.lane("bob", 2)) {
                held.add(tunnel(pullOne.address(), port, status));
                assertThat(status.toString()).startsWith("HTTP/1.1 200 ");
                held.add(tunnel(pullTwo.address(), port, status));
                assertThat(status.toString()).startsWith("HTTP/1.1 200 ");
                assertThat(gate.held("alice")).isEqualTo(2);

                held.add(tunnel(bobs.address(), port, status));
                assertThat(status.toString()).as("another tenant while alice holds her share").startsWith("HTTP/1.1 200 ");

                held.add(tunnel(pullTwo.address(), port, status));
                assertThat(status.toString()).as("alice past her share").startsWith("HTTP/1.1 429 ");
                assertThat(pullTwo.refusedForShare()).isTrue();
                assertThat(pullOne.refusedForShare()).isFalse();
                java.net.http.HttpClient client = java.net.http.HttpClient.newBuilder().proxy(pullOne.proxySelector())
                        .build();
                org.assertj.core.api.Assertions.assertThatThrownBy(() -> client.send(java.net.http.HttpRequest
                                .newBuilder(java.net.URI.create("https://registry.paddock.test:" + port + "/v2/")).build(),
                                java.net.http.HttpResponse.BodyHandlers.ofString()))
                        .isInstanceOf(IOException.class).hasMessageStartingWith("Tunnel failed, got: 429");
                Thread.sleep(200);
                assertThat(reached.get()).as("connections the registry saw: alice's share and bob's, no more").isEqualTo(3);

                org.assertj.core.api.Assertions.assertThatThrownBy(() -> gate.lane("alice", 2))
                        .isInstanceOfSatisfying(io.paddock.SandboxException.class,
                                e -> assertThat(e.code()).isEqualTo(io.paddock.ErrorCode.RESOURCE_EXHAUSTED));

                pullOne.close(); // the pull ended: its tunnel with it
                long until = System.nanoTime() + 5_000_000_000L;
                while (gate.held("alice") > 1 && System.nanoTime() < until) {
                    Thread.sleep(10);
                }
                assertThat(gate.held("alice")).isEqualTo(1);
                held.add(tunnel(pullTwo.address(), port, status));
                assertThat(status.toString()).as("a share given back is taken again").startsWith("HTTP/1.1 200 ");
            } finally {
                for (Socket s : held) {
                    s.close();
                }
                for (Socket s : serverSide) {
                    s.close();
                }
            }
            long until = System.nanoTime() + 5_000_000_000L;
            while ((gate.held("alice") > 0 || gate.held("bob") > 0) && System.nanoTime() < until) {
                Thread.sleep(10);
            }
            assertThat(gate.held("alice")).as("every lane closed, nothing held").isZero();
            assertThat(gate.held("bob")).isZero();
        }
    }
}
