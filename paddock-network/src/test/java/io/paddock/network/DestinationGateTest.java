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
}
