package io.paddock.server;

import io.paddock.ErrorCode;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.SandboxException;
import io.paddock.server.internal.TenantsFile;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;

/**
 * {@code paddock serve}: the engine plus the HTTP server, until SIGTERM or SIGINT.
 *
 * <p>The token comes from {@code PADDOCK_TOKEN} if set, else from {@code <dataDir>/token}; if neither
 * exists one is generated (32 random bytes, base64url) and written to {@code <dataDir>/token} with mode
 * 0600. The token itself is never printed. It is the operator's token, which sees every sandbox; tenants'
 * tokens come from the tenants file ({@code --tenants FILE}, else {@code <dataDir>/tenants} if it exists).
 */
public final class Daemon {
    static final String TOKEN_ENV = "PADDOCK_TOKEN";
    static final String TOKEN_FILE = "token";
    static final String TENANTS_FILE = "tenants";
    private static final int MAX_TOKEN_FILE_BYTES = 4096;

    private Daemon() {
    }

    /** Runs the daemon and blocks until the process is told to stop (SIGTERM, SIGINT). */
    public static void run(DaemonOptions options) {
        Running running = start(options, System.getenv(), System.out);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                running.close();
            } finally {
                stopped.countDown();
            }
        }, "paddock-serve-shutdown"));
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            running.close();
        }
    }

    /** A started daemon: its server and engine; {@link #close()} stops the server, then the engine. */
    static final class Running implements AutoCloseable {
        final PaddockServer server;
        final Paddock paddock;
        private boolean closed;

        Running(PaddockServer server, Paddock paddock) {
            this.server = server;
            this.paddock = paddock;
        }

        @Override
        public synchronized void close() {
            if (closed) {
                return;
            }
            closed = true;
            try {
                server.close();
            } finally {
                paddock.close();
            }
        }
    }

    static Running start(DaemonOptions o, Map<String, String> env, PrintStream out) {
        checkPortFree(o);
        String token = token(o.dataDir(), env, out);
        ServerOptions.Builder serverOptions = ServerOptions.builder().host(o.host()).port(o.port()).token(token)
                .maxSandboxesPerTenant(o.maxSandboxesPerTenant()).dataDir(o.dataDir())
                .portDomain(o.portDomain().orElse(null)).auditMaxBytes(o.auditMaxBytes()).auditKeep(o.auditKeep());
        o.portConnectionsPerTenant().ifPresent(serverOptions::maxPortConnectionsPerTenant);
        o.execSocketsPerTenant().ifPresent(serverOptions::maxExecSocketsPerTenant);
        o.registryConnectionsPerTenant().ifPresent(serverOptions::maxRegistryConnectionsPerTenant);
        o.e2bListen().ifPresent(l -> {
            DaemonOptions e2b = DaemonOptions.builder().listen(l).build();
            serverOptions.e2b(e2b.host(), e2b.port());
        });
        Path tenantsFile = tenants(o, serverOptions);
        ServerOptions built; // built before the engine starts: a bad tenants file changes nothing
        try {
            built = serverOptions.build();
        } catch (SandboxException e) {
            throw tenantsFile == null ? e : new SandboxException(ErrorCode.FAILED_PRECONDITION,
                    "cannot load the tenants file " + tenantsFile + ": " + e.getMessage().replaceFirst("^tenants: ", ""), e);
        }
        LocalOptions.Builder local = LocalOptions.builder().stateDir(o.stateDir()).dataDir(o.dataDir())
                .maxSandboxes(o.maxSandboxes()).defaultRuntime(o.defaultRuntime().orElse(null));
        o.pools().forEach(local::warmPool);
        o.runtimeOptions().forEach(local::runtimeOption);
        o.dnsUpstream().ifPresent(local::dnsUpstream);
        o.allowPrivate().forEach(local::allowPrivate);
        o.buildAllow().ifPresent(local::buildAllow);
        o.egressTrust().ifPresent(local::egressTrust);
        o.egressConnectionsPerTenant().ifPresent(local::egressConnectionsPerTenant);
        o.dnsTcpPerTenant().ifPresent(local::dnsTcpPerTenant);
        Paddock paddock = Paddock.local(local.build());
        PaddockServer server;
        try {
            server = PaddockServer.start(built, paddock);
        } catch (RuntimeException e) {
            paddock.close();
            throw e;
        }
        if (!isLoopback(o.host())) {
            out.println("paddock: warning: " + o.host() + " is not a loopback address and the API is plain HTTP; the"
                    + " token travels in clear text (put a TLS proxy in front)");
        }
        if (tenantsFile != null) {
            int n = built.tenants().size();
            out.println("paddock: loaded " + n + " tenant" + (n == 1 ? "" : "s") + " from " + tenantsFile
                    + " (each sees only its own sandboxes, at most " + built.maxSandboxesPerTenant() + " live)");
        }
        o.portDomain().ifPresent(d -> out.println("paddock: sandbox ports are also served at PORT-ID." + d
                + " (point a wildcard DNS record *." + d + " at this daemon)"));
        server.e2bUrl().ifPresent(u -> out.println("paddock: E2B API on " + u + " (set E2B_API_URL and E2B_SANDBOX_URL"
                + " to it, E2B_API_KEY to a Paddock token; see docs/COMPAT.md)"));
        out.println("paddock: listening on " + server.url() + " (data dir " + o.dataDir() + ")");
        out.flush();
        return new Running(server, paddock);
    }

    /** Fails early with a clear message, before the engine starts, when the address is taken. */
    private static void checkPortFree(DaemonOptions o) {
        if (o.e2bListen().isPresent()) {
            checkPortFree(DaemonOptions.builder().listen(o.e2bListen().get()).build());
        }
        if (o.port() == 0) {
            return;
        }
        try (ServerSocket probe = new ServerSocket()) {
            probe.setReuseAddress(true);
            probe.bind(new InetSocketAddress(o.host(), o.port()));
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot listen on " + o.listen() + ": "
                    + (e instanceof java.net.BindException ? "the address is already in use (is another paddock serve"
                    + " running?) or not on this host" : e.getMessage()), e);
        }
    }

    private static boolean isLoopback(String host) {
        try {
            return InetAddress.getByName(host).isLoopbackAddress();
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * Adds the tenants of the tenants file to {@code b}; returns the file, or {@code null} when there is
     * none (no {@code --tenants} and no {@code <dataDir>/tenants}). Refuses to start, saying how to fix it,
     * when the file is loose, malformed, or has a bad or repeated name or token.
     */
    static Path tenants(DaemonOptions o, ServerOptions.Builder b) {
        Path file = o.tenantsFile().orElse(o.dataDir().resolve(TENANTS_FILE));
        if (o.tenantsFile().isEmpty() && !Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
            return null;
        }
        List<TenantsFile.Entry> entries;
        try {
            entries = TenantsFile.read(file);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "cannot load the tenants file: " + e.getMessage(), e);
        }
        for (TenantsFile.Entry t : entries) {
            try {
                b.tenant(t.name(), t.token()).tenantQuota(t.name(), t.quota());
            } catch (SandboxException e) {
                throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "cannot load the tenants file: " + file + ":"
                        + t.line() + ": " + e.getMessage().replaceFirst("^tenants: ", ""), e);
            }
        }
        return file;
    }

    static String token(Path dataDir, Map<String, String> env, PrintStream out) {
        String fromEnv = env.get(TOKEN_ENV);
        if (fromEnv != null && !fromEnv.isBlank()) {
            return fromEnv.trim();
        }
        Path file = dataDir.resolve(TOKEN_FILE);
        try {
            if (Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
                return readTokenFile(file);
            }
            createPrivateDir(dataDir);
            byte[] raw = new byte[32];
            new SecureRandom().nextBytes(raw);
            String token = Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
            try (SeekableByteChannel ch = Files.newByteChannel(file, Set.of(StandardOpenOption.CREATE_NEW,
                    StandardOpenOption.WRITE), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))) {
                ch.write(ByteBuffer.wrap((token + "\n").getBytes(StandardCharsets.US_ASCII)));
            } catch (FileAlreadyExistsException e) {
                return readTokenFile(file); // another daemon wrote it first
            }
            out.println("paddock: generated an API token in " + file + " (mode 0600); clients use it as PADDOCK_TOKEN");
            return token;
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "cannot set up the API token in " + file + ": "
                    + e.getMessage() + " (set PADDOCK_TOKEN, or give a writable --data-dir)", e);
        }
    }

    private static String readTokenFile(Path file) throws IOException {
        if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException(file + " is not a regular file");
        }
        Set<PosixFilePermission> perms = Files.getPosixFilePermissions(file, LinkOption.NOFOLLOW_LINKS);
        if (perms.contains(PosixFilePermission.GROUP_READ) || perms.contains(PosixFilePermission.OTHERS_READ)
                || perms.contains(PosixFilePermission.GROUP_WRITE) || perms.contains(PosixFilePermission.OTHERS_WRITE)) {
            throw new IOException(file + " is readable or writable by other users; run chmod 600 " + file);
        }
        if (Files.size(file) > MAX_TOKEN_FILE_BYTES) {
            throw new IOException(file + " is larger than " + MAX_TOKEN_FILE_BYTES + " bytes; it is not a token");
        }
        String token = Files.readString(file, StandardCharsets.UTF_8).trim();
        if (token.isEmpty()) {
            throw new IOException(file + " is empty");
        }
        return token;
    }

    private static void createPrivateDir(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
            // createDirectories is subject to the umask; make sure of the mode of the last component.
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
        }
    }
}
