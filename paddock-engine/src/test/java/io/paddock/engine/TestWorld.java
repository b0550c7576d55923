package io.paddock.engine;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The outside world of the network tests, in a namespace the test makes: hosts {@code 198.18.N.2} and
 * {@code .3} each serving their own page over HTTP on port 8080 (busybox httpd), a DNS server on {@code .2}
 * (dnsmasq, with no upstream of its own, logging every query it receives) that knows a few names, and a
 * stand-in for the cloud metadata service on {@code 169.254.169.254}, routed from the host into the world
 * so that the host itself reaches it (the deny list, not the routing, must stop sandboxes). Tests send
 * traffic only here and to loopback. Closing removes the namespace, its veth, the route and the servers.
 */
final class TestWorld implements AutoCloseable {
    static final String METADATA = "169.254.169.254";
    final String a;
    final String b;
    /** The host's end of the link into the world: an address of the host itself, not of the world. */
    final String hostEnd;
    final Path dir;
    private final String ns;
    private final List<Process> servers = new ArrayList<>();
    private final Path dnsLog;

    TestWorld(int subnet) throws IOException, InterruptedException {
        this.ns = "pdw" + subnet + "x" + ProcessHandle.current().pid() % 100_000;
        this.a = "198.18." + subnet + ".2";
        this.b = "198.18." + subnet + ".3";
        this.hostEnd = "198.18." + subnet + ".1";
        this.dir = Files.createTempDirectory("paddock-world");
        this.dnsLog = dir.resolve("dns.log");
        TestHost.sh("ip netns add " + ns);
        TestHost.sh("ip link add " + ns + "h type veth peer name " + ns + "n && ip link set " + ns + "n netns " + ns);
        TestHost.sh("ip addr add 198.18." + subnet + ".1/24 dev " + ns + "h && ip link set " + ns + "h up");
        TestHost.sh("ip -n " + ns + " link set lo up && ip -n " + ns + " addr add " + a + "/24 dev " + ns + "n"
                + " && ip -n " + ns + " addr add " + b + "/24 dev " + ns + "n && ip -n " + ns + " addr add " + METADATA
                + "/32 dev " + ns + "n && ip -n " + ns + " link set " + ns + "n up");
        TestHost.sh("ip route add " + METADATA + "/32 via " + a + " dev " + ns + "h");
        for (String host : List.of(a, b, METADATA)) {
            Path www = Files.createDirectories(dir.resolve("www-" + host));
            Files.writeString(www.resolve("index.html"), "world " + host + "\n");
            servers.add(new ProcessBuilder("ip", "netns", "exec", ns, "busybox", "httpd", "-f", "-p", host + ":8080",
                    "-h", www.toString()).inheritIO().start());
        }
        // A listener on a:9000 with a deep accept queue that never accepts: every SYN that reaches it completes
        // a connection in the kernel, so only the sandbox's rules can hold a connection flood back.
        servers.add(new ProcessBuilder("ip", "netns", "exec", ns, "python3", "-c", "import socket, time\n"
                + "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                + "s.bind(('" + a + "', 9000)); s.listen(65535)\n"
                + "time.sleep(86400)\n").inheritIO().start());
        servers.add(new ProcessBuilder("ip", "netns", "exec", ns, "dnsmasq", "--no-daemon", "--no-resolv", "--no-hosts",
                "--user=root", "--listen-address=" + a, "--bind-interfaces", "--log-queries=extra",
                "--log-facility=" + dnsLog,
                "--address=/allowed.paddock.test/" + a, "--address=/other.paddock.test/" + b,
                "--address=/api.wild.paddock.test/" + b, "--address=/rebind.paddock.test/" + METADATA,
                "--address=/private.paddock.test/10.1.2.3", "--address=/secret.paddock.test/" + b,
                "--address=/hostself.paddock.test/" + hostEnd,
                "--txt-record=allowed.paddock.test,\"txt-answer\"")
                .redirectErrorStream(true).redirectOutput(dir.resolve("dnsmasq.out").toFile()).start());
        for (int i = 0; i < 100 && !Files.exists(dnsLog); i++) {
            Thread.sleep(20);
        }
        Thread.sleep(200);
    }

    String url(String host) {
        return "http://" + host + ":8080/";
    }

    /**
     * An HTTPS server on {@code b}:443 for {@code secret.paddock.test}, with a certificate from a CA of the test's
     * own ({@link #testCa()}); it answers "secret-host ok" and appends every request's headers to
     * {@link #httpsHeaders()}, never echoing them.
     */
    void startHttps() throws IOException, InterruptedException {
        Path ca = dir.resolve("test-ca.pem");
        TestHost.sh("cd " + dir + " && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout"
                + " test-ca.key -out test-ca.pem -days 1 -subj /CN=paddock-test-ca 2>/dev/null"
                + " && openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout leaf.key -out leaf.csr"
                + " -subj /CN=secret.paddock.test 2>/dev/null"
                + " && printf 'subjectAltName=DNS:secret.paddock.test\\nextendedKeyUsage=serverAuth\\n' > leaf.ext"
                + " && openssl x509 -req -in leaf.csr -CA test-ca.pem -CAkey test-ca.key -CAcreateserial -days 1"
                + " -extfile leaf.ext -out leaf.pem 2>/dev/null && cat leaf.pem leaf.key > leaf-chain.pem");
        String server = """
                import http.server, ssl, sys
                class H(http.server.BaseHTTPRequestHandler):
                    def do_GET(self):
                        with open(sys.argv[3], "a") as f:
                            f.write(str(self.headers) + "---\\n")
                        self.send_response(200)
                        self.end_headers()
                        self.wfile.write(b"secret-host ok\\n")
                    def log_message(self, *a):
                        pass
                s = http.server.HTTPServer((sys.argv[1], 443), H)
                ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                ctx.load_cert_chain(sys.argv[2])
                s.socket = ctx.wrap_socket(s.socket, server_side=True)
                s.serve_forever()
                """;
        servers.add(new ProcessBuilder("ip", "netns", "exec", ns, "python3", "-c", server, b,
                dir.resolve("leaf-chain.pem").toString(), httpsHeaders().toString()).inheritIO().start());
        Thread.sleep(500);
        assertThat(ca).exists();
    }

    /**
     * A service of the host itself: HTTP on {@link #hostEnd}:80, in the host's namespace, answering "host-self";
     * {@code hostself.paddock.test} resolves to it. What no sandbox, nor anything acting for one, may reach.
     */
    void startOnHostEnd() throws IOException, InterruptedException {
        Path www = Files.createDirectories(dir.resolve("www-host-self"));
        Files.writeString(www.resolve("index.html"), "host-self\n");
        servers.add(new ProcessBuilder("busybox", "httpd", "-f", "-p", hostEnd + ":80", "-h", www.toString())
                .inheritIO().start());
        Thread.sleep(300);
    }

    Path testCa() {
        return dir.resolve("test-ca.pem");
    }

    Path httpsHeaders() {
        return dir.resolve("https-headers.log");
    }

    /** Every query the DNS server received so far, one line each (dnsmasq's "query[TYPE] name from ..."). */
    List<String> dnsQueries() throws IOException {
        if (!Files.exists(dnsLog)) {
            return List.of();
        }
        return Files.readAllLines(dnsLog, StandardCharsets.UTF_8).stream().filter(l -> l.contains("query[")).toList();
    }

    @Override
    public void close() throws IOException, InterruptedException {
        for (Process p : servers) {
            p.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        }
        TestHost.sh("ip link del " + ns + "h 2>/dev/null; ip netns del " + ns + " 2>/dev/null; true");
        io.paddock.image.internal.store.ImageStore.deleteTree(dir);
        assertThat(Path.of("/run/netns", ns)).doesNotExist();
    }
}
