package io.paddock.bench.host;

import java.io.IOException;
import java.io.PrintStream;
import java.io.RandomAccessFile;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * P12's outside world, made by the harness and removed by it: a network namespace holding the test host
 * {@value #SERVER} (busybox httpd on port 8080 serving one file of the asked size), joined to the host by a
 * veth whose host side is {@code 198.18.12.1}; and, on request, the peers' namespaces, each connected to the
 * host by a user-mode stack ({@code pasta}, {@code slirp4netns}) and nothing else. The harness sends traffic
 * only to {@value #SERVER} (198.18.0.0/15 is the benchmarking range) and to loopback.
 *
 * <p>Every process started here gets {@code setpriv --pdeathsig KILL}, so it dies with the harness even if
 * the JVM is killed; the namespaces and the veth are removed by {@link #close()}, by a shutdown hook, and,
 * after a crash, by the next run's sweep of names carrying a pid that is no longer alive.
 */
public final class TestNet implements AutoCloseable {
    public static final String SERVER = "198.18.12.2";
    static final String HOST_SIDE = "198.18.12.1";
    private static final String PREFIX = "pdb12";
    private static final Pattern OURS = Pattern.compile(PREFIX + "[whps]([0-9]+)");
    private static final Duration T = Duration.ofSeconds(20);

    private final long pid = ProcessHandle.current().pid();
    private final String serverNs = PREFIX + "w" + pid;
    private final String veth = PREFIX + "h" + pid; // at most 5 + 1 + 7 characters: an interface name fits
    private final List<String> namespaces = new ArrayList<>();
    private final List<Process> processes = new ArrayList<>();
    private final Path dir;
    private final long fileBytes;
    private final Thread hook = new Thread(this::closeQuietly, "p12-cleanup");
    private boolean closed;

    private TestNet(Path dir, long fileBytes) {
        this.dir = dir;
        this.fileBytes = fileBytes;
    }

    /** Makes the server namespace and starts busybox httpd serving a file of {@code fileBytes}. */
    public static TestNet start(long fileBytes, PrintStream log) throws IOException, InterruptedException {
        sweep(log);
        String inUse = sh("ip -4 -o addr show to 198.18.12.0/24").output();
        if (!inUse.isBlank()) {
            throw new IOException("198.18.12.0/24 is in use on this host (another P12 run?): " + Host.shorten(inUse));
        }
        TestNet net = new TestNet(Files.createTempDirectory("paddock-bench-p12"), fileBytes);
        Runtime.getRuntime().addShutdownHook(net.hook);
        try {
            net.startServer();
            return net;
        } catch (IOException | InterruptedException | RuntimeException e) {
            net.close();
            throw e;
        }
    }

    private void startServer() throws IOException, InterruptedException {
        Path www = Files.createDirectories(dir.resolve("www"));
        try (RandomAccessFile f = new RandomAccessFile(www.resolve("blob").toFile(), "rw")) {
            f.setLength(fileBytes); // sparse: served from the page cache, nothing written to disk
        }
        namespaces.add(serverNs);
        check(sh("ip netns add " + serverNs));
        check(sh("ip link add " + veth + " type veth peer name " + PREFIX + "n" + pid
                + " && ip link set " + PREFIX + "n" + pid + " netns " + serverNs
                + " && ip addr add " + HOST_SIDE + "/24 dev " + veth + " && ip link set " + veth + " up"
                + " && ip -n " + serverNs + " link set lo up"
                + " && ip -n " + serverNs + " addr add " + SERVER + "/24 dev " + PREFIX + "n" + pid
                + " && ip -n " + serverNs + " link set " + PREFIX + "n" + pid + " up"));
        spawn(dir.resolve("httpd.log"), "ip", "netns", "exec", serverNs, "setpriv", "--pdeathsig", "KILL",
                "busybox", "httpd", "-f", "-p", SERVER + ":8080", "-h", www.toString());
        long until = System.nanoTime() + T.toNanos();
        while (true) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(SERVER, 8080), 200);
                return;
            } catch (IOException e) {
                if (System.nanoTime() > until) {
                    throw new IOException("busybox httpd did not start on " + SERVER + ":8080: "
                            + Host.shorten(Files.readString(dir.resolve("httpd.log"))));
                }
                Thread.sleep(50);
            }
        }
    }

    /** The file's URL on the test host. */
    public String url() {
        return "http://" + SERVER + ":8080/blob";
    }

    public long fileBytes() {
        return fileBytes;
    }

    /**
     * A new namespace connected by {@code pasta} (passt) in the way rootless Podman uses it: a tap device fed
     * by a user-mode process that re-issues the namespace's connections as the host's own sockets. IPv4 only,
     * no port forwarding in either direction, the gateway not mapped to the host. Returns its name.
     */
    public String pastaNamespace() throws IOException, InterruptedException {
        String ns = PREFIX + "p" + pid;
        namespaces.add(ns);
        check(sh("ip netns add " + ns));
        // pasta drops to nobody when started as root, and nobody cannot enter a namespace root made: --runas 0
        spawn(dir.resolve("pasta.log"), "setpriv", "--pdeathsig", "KILL", "pasta", "-f", "-q", "--runas", "0",
                "--netns", ns, "--config-net", "-4", "--no-map-gw", "-t", "none", "-u", "none", "-T", "none", "-U",
                "none", "-m", "65520");
        awaitDefaultRoute(ns, "pasta.log");
        return ns;
    }

    /**
     * A new namespace connected by {@code slirp4netns} as rootless Podman and Buildah configure it (MTU 65520,
     * no access to the host's loopback), its DNS forwarder off. Returns its name.
     */
    public String slirpNamespace() throws IOException, InterruptedException {
        String ns = PREFIX + "s" + pid;
        namespaces.add(ns);
        check(sh("ip netns add " + ns));
        spawn(dir.resolve("slirp.log"), "setpriv", "--pdeathsig", "KILL", "slirp4netns", "--configure",
                "--mtu=65520", "--disable-host-loopback", "--disable-dns", "--netns-type=path", "/run/netns/" + ns, "tap0");
        awaitDefaultRoute(ns, "slirp.log");
        return ns;
    }

    private void awaitDefaultRoute(String ns, String logName) throws IOException, InterruptedException {
        long until = System.nanoTime() + T.toNanos();
        while (sh("ip -n " + ns + " -4 route show default").output().isBlank()) {
            Process last = processes.get(processes.size() - 1);
            if (!last.isAlive() || System.nanoTime() > until) {
                Path log = dir.resolve(logName);
                throw new IOException(logName.replace(".log", "") + " did not configure " + ns + ": "
                        + Host.shorten(Files.exists(log) ? Files.readString(log) : "(no output)"));
            }
            Thread.sleep(20);
        }
    }

    private void spawn(Path logFile, String... argv) throws IOException {
        processes.add(new ProcessBuilder(argv).redirectErrorStream(true).redirectOutput(logFile.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start());
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (Process p : processes) {
            p.destroy();
        }
        for (Process p : processes) {
            try {
                if (!p.waitFor(5, TimeUnit.SECONDS)) {
                    p.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                p.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
        sh("ip link del " + veth + " 2>/dev/null; true");
        for (String ns : namespaces) {
            sh("ip netns del " + ns + " 2>/dev/null; true");
        }
        try {
            Host.deleteTree(dir);
        } catch (IOException e) {
            // a temp directory; nothing else depends on it
        }
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
            // the JVM is shutting down: this is the hook
        }
    }

    private void closeQuietly() {
        try {
            close();
        } catch (RuntimeException e) {
            // best effort at JVM exit
        }
    }

    /** What of this run is still there (namespaces, links, live processes): empty after {@link #close()}. */
    public synchronized List<String> remaining() {
        List<String> out = new ArrayList<>();
        for (String name : ourNames()) {
            Matcher m = OURS.matcher(name);
            if (m.matches() && Long.parseLong(m.group(1)) == pid) {
                out.add(name);
            }
        }
        for (Process p : processes) {
            if (p.isAlive()) {
                out.add("process " + p.pid() + " " + p.info().command().orElse("?"));
            }
        }
        return out;
    }

    private static List<String> ourNames() {
        List<String> names = new ArrayList<>();
        Path run = Path.of("/run/netns");
        if (Files.isDirectory(run)) {
            try (Stream<Path> s = Files.list(run)) {
                s.map(p -> p.getFileName().toString()).filter(n -> OURS.matcher(n).matches()).forEach(names::add);
            } catch (IOException e) {
                // nothing to sweep
            }
        }
        for (String line : sh("ip -o link show").output().split("\n")) {
            String[] f = line.split(":\\s+");
            if (f.length > 1) {
                String name = f[1].split("@")[0];
                if (OURS.matcher(name).matches()) {
                    names.add(name);
                }
            }
        }
        return names;
    }

    private static void sweep(PrintStream log) {
        for (String name : ourNames()) {
            Matcher m = OURS.matcher(name);
            if (!m.matches() || ProcessHandle.of(Long.parseLong(m.group(1))).isPresent()) {
                continue;
            }
            log.println("  P12: removing " + name + ", left by a run that died");
            sh("ip link del " + name + " 2>/dev/null; ip netns del " + name + " 2>/dev/null; true");
        }
    }

    private static Host.Result sh(String script) {
        return Host.run(T, "sh", "-c", script);
    }

    private static void check(Host.Result r) throws IOException {
        if (!r.ok()) {
            throw new IOException(Host.shorten(r.output()));
        }
    }
}
