package io.paddock.server;

import io.paddock.ErrorCode;
import io.paddock.Paddock;
import io.paddock.SandboxException;
import io.paddock.server.internal.ApiHandler;
import io.paddock.server.internal.Audit;
import io.paddock.server.internal.AuditLog;
import io.paddock.server.internal.AuthGuard;
import io.paddock.server.internal.CodeRegistry;
import io.paddock.server.internal.DashboardHandler;
import io.paddock.server.internal.DashboardSessions;
import io.paddock.server.internal.HeaderDeadline;
import io.paddock.server.internal.JsonErrorHandler;
import io.paddock.server.internal.Limits;
import io.paddock.server.internal.McpEndpoint;
import io.paddock.server.internal.Metrics;
import io.paddock.server.internal.PortApi;
import io.paddock.server.internal.PortProxy;
import io.paddock.server.internal.UrlTokens;
import io.paddock.server.internal.Tenancy;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.NetworkConnectionLimit;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.eclipse.jetty.websocket.server.ServerWebSocketContainer;

import java.io.IOException;
import java.io.InputStream;
import java.net.BindException;
import java.net.URI;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Supplier;

/**
 * The Paddock HTTP daemon: the API of {@code openapi.json} over a {@link Paddock}, Paddock's MCP tools at
 * {@code /mcp} (streamable HTTP, the same tokens; docs/COMPAT.md), and the dashboard at {@code /ui}. A thin translation
 * layer; every limit of {@link ServerOptions} is enforced here, every sandbox rule by the engine.
 *
 * <pre>{@code
 * try (Paddock paddock = Paddock.local();
 *      PaddockServer server = PaddockServer.start(ServerOptions.builder().token(t).build(), paddock)) {
 *     System.out.println(server.url());
 * }
 * }</pre>
 *
 * <p>{@link #close()} stops the HTTP server and ends the code layer's contexts and shells it keeps; the
 * caller owns (and closes) the {@code Paddock}.
 * Thread-safe.
 */
public final class PaddockServer implements AutoCloseable {
    /** Uploads must average at least this many bytes per second once the idle timeout has passed. */
    static final long MIN_UPLOAD_RATE = 4096;
    /** The largest MCP message (a write_file's content, base64, is the big one). */
    static final long MAX_MCP_REQUEST = 16L << 20;
    private static final String OPENAPI = "/io/paddock/server/openapi.json";

    private final Server server;
    private final HeaderDeadline headerDeadline;
    private final ScheduledExecutorService timers;
    private final CodeRegistry code;
    private final PortProxy proxy;
    private final URI url;
    private final Metrics metrics;
    private final AuditLog auditLog;
    private final Tenancy tenancy;
    private volatile io.paddock.e2b.E2bServer e2b;

    private PaddockServer(Server server, HeaderDeadline headerDeadline, ScheduledExecutorService timers, CodeRegistry code,
                          PortProxy proxy, URI url, Metrics metrics, AuditLog auditLog, Tenancy tenancy) {
        this.server = server;
        this.tenancy = tenancy;
        this.metrics = metrics;
        this.auditLog = auditLog;
        this.headerDeadline = headerDeadline;
        this.timers = timers;
        this.code = code;
        this.proxy = proxy;
        this.url = url;
    }

    /**
     * Binds and starts serving. Fails with {@code UNAVAILABLE} when the address is taken.
     */
    public static PaddockServer start(ServerOptions options, Paddock paddock) {
        Objects.requireNonNull(options, "options");
        Objects.requireNonNull(paddock, "paddock");
        byte[] openapi = resource(OPENAPI);
        long idleMillis = options.idleTimeout().toMillis();
        AuditLog auditLog = null;
        if (options.dataDir().isPresent()) {
            try {
                auditLog = AuditLog.open(options.dataDir().get(), options.auditMaxBytes(), options.auditKeep());
            } catch (IOException e) {
                throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "cannot open the audit log in "
                        + options.dataDir().get() + ": " + e.getMessage(), e);
            }
        }

        // Every request runs blocking on a pool thread; connections are capped, so threads are too.
        QueuedThreadPool pool = new QueuedThreadPool(options.maxConnections() + 64, 8);
        pool.setName("paddock-http");
        pool.setDaemon(true);
        Server server = new Server(pool);
        server.setStopTimeout(2000);

        HttpConfiguration http = new HttpConfiguration();
        http.setSendServerVersion(false);
        http.setSendXPoweredBy(false);
        // Jetty reuses the header lines it saw earlier on a connection, matched ignoring case by default: a token
        // or cookie differing from an earlier one only in case would be read as the earlier one (DashboardTest).
        http.setHeaderCacheCaseSensitive(true);
        http.setRequestHeaderSize(16 * 1024);
        http.setIdleTimeout(idleMillis);
        ServerConnector connector = new ServerConnector(server, 1, 1, new HttpConnectionFactory(http));
        connector.setHost(options.host());
        connector.setPort(options.port());
        connector.setIdleTimeout(idleMillis);
        connector.setReuseAddress(true);
        server.addConnector(connector);
        server.addBean(new NetworkConnectionLimit(options.maxConnections(), connector));

        ScheduledExecutorService timers = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "paddock-http-timers");
            t.setDaemon(true);
            return t;
        });
        HeaderDeadline headerDeadline = new HeaderDeadline(idleMillis, timers);
        connector.addEventListener(headerDeadline);

        ServerWebSocketContainer websockets = ServerWebSocketContainer.ensure(server);
        websockets.setIdleTimeout(options.idleTimeout());
        websockets.setMaxTextMessageSize(options.maxJsonBytes());
        websockets.setMaxBinaryMessageSize(1 << 20);
        websockets.setMaxFrameSize(Math.max(1 << 20, options.maxJsonBytes()) + 16);
        websockets.setAutoFragment(false);

        Limits limits = new Limits(options.maxJsonBytes(), options.maxUploadBytes(), options.idleTimeout(), MIN_UPLOAD_RATE);
        AuthGuard auth = new AuthGuard(options.token(), options.tenantDigests(), options.maxFailedAuthPerMinutePerIp());
        Tenancy tenancy = new Tenancy(paddock, options.tenants(), options.maxSandboxesPerTenant(), options.tenantQuotas())
                .maxExecSocketsPerTenant(options.maxExecSocketsPerTenant())
                .maxRegistryConnectionsPerTenant(options.maxRegistryConnectionsPerTenant());
        CodeRegistry code = new CodeRegistry();
        Metrics metrics = new Metrics(paddock, version());
        UrlTokens urlTokens = options.dataDir().map(UrlTokens::inDirectory).orElseGet(UrlTokens::inMemory);
        PortProxy proxy = new PortProxy(websockets, timers, PortProxy.DEFAULT_IDLE_TIMEOUT, options.idleTimeout().dividedBy(3))
                .maxPerTenant(options.maxPortConnectionsPerTenant());
        PortApi ports = new PortApi(paddock, auth, tenancy, urlTokens, proxy, options.portDomain().orElse(null));
        // /mcp first: the MCP endpoint takes only that path (on the daemon's own host names), the REST API the rest
        Audit audit = new Audit(auditLog, metrics);
        McpEndpoint mcp = new McpEndpoint(auth, tenancy, code, ports, audit, version(),
                Math.min(options.maxUploadBytes(), MAX_MCP_REQUEST));
        // /ui next: the dashboard's page and session; the REST API accepts its session on the dashboard's routes only
        DashboardSessions dashboard = new DashboardSessions(auth);
        server.setHandler(new Handler.Sequence(mcp, new DashboardHandler(dashboard, ports, options.idleTimeout()),
                new ApiHandler(paddock, auth, tenancy, limits, openapi, version(), runtime(paddock), websockets, timers,
                        code, ports, dashboard, metrics, audit)));
        server.setErrorHandler(new JsonErrorHandler());

        try {
            server.start();
        } catch (Exception e) {
            stopQuietly(server);
            proxy.close();
            timers.shutdownNow();
            code.close();
            metrics.close();
            tenancy.close();
            if (auditLog != null) {
                auditLog.close();
            }
            if (isBindFailure(e)) {
                throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot listen on " + options.host() + ":"
                        + options.port() + ": the address is already in use (is another paddock serve running?)", e);
            }
            throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot start the HTTP server on " + options.host() + ":"
                    + options.port() + ": " + e.getMessage(), e);
        }
        String host = options.host().contains(":") ? "[" + options.host() + "]" : options.host();
        URI url = URI.create("http://" + host + ":" + connector.getLocalPort());
        PaddockServer started = new PaddockServer(server, headerDeadline, timers, code, proxy, url, metrics, auditLog,
                tenancy);
        if (options.e2bHost().isPresent()) {
            try {
                started.e2b = startE2b(options, paddock, auth, tenancy, urlTokens);
            } catch (RuntimeException e) {
                started.close();
                throw e;
            }
        }
        return started;
    }

    /** The E2B-compatible listener: its own Jetty server, with the daemon's tokens and tenancy (paddock-e2b). */
    private static io.paddock.e2b.E2bServer startE2b(ServerOptions options, Paddock paddock, AuthGuard auth, Tenancy tenancy,
                                                      UrlTokens urlTokens) {
        io.paddock.e2b.E2bOptions.Builder e2b = io.paddock.e2b.E2bOptions.builder()
                .host(options.e2bHost().orElseThrow()).port(options.e2bPort())
                .key(urlTokens.derive("paddock-e2b-envd-access-v1")) // deleting the key file revokes these too
                .maxJsonBytes(options.maxJsonBytes()).maxUploadBytes(options.maxUploadBytes())
                .idleTimeout(options.idleTimeout()).maxConnections(options.maxConnections());
        options.e2bTemplates().forEach((template, image) -> {
            io.paddock.Image recipe = options.e2bRecipes().get(template);
            if (recipe == null) {
                e2b.template(template, image);
            } else {
                e2b.template(template, image, recipe);
            }
        });
        options.e2bPrepareWait().ifPresent(e2b::prepareWait);
        return io.paddock.e2b.E2bServer.start(e2b.build(), new io.paddock.server.internal.E2bTenancy(paddock, auth, tenancy));
    }

    private static boolean isBindFailure(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof BindException) {
                return true;
            }
        }
        return false;
    }

    /** The E2B-compatible API's URL (E2B_API_URL and E2B_SANDBOX_URL), when {@link ServerOptions#e2bListen()} is set. */
    public java.util.Optional<URI> e2bUrl() {
        io.paddock.e2b.E2bServer e = e2b;
        return e == null ? java.util.Optional.empty() : java.util.Optional.of(e.url());
    }

    /** The URL clients use, with the actual port when port 0 was asked. */
    public URI url() {
        return url;
    }

    /**
     * Stops accepting, ends open exchanges (exec streams are closed, which kills their commands), then ends
     * the code contexts and shell sessions the daemon keeps.
     */
    @Override
    public void close() {
        io.paddock.e2b.E2bServer e = e2b;
        if (e != null) {
            e.close();
        }
        headerDeadline.stop();
        proxy.close(); // proxied WebSockets end with a close frame rather than a cut connection
        stopQuietly(server);
        timers.shutdownNow();
        code.close();
        metrics.close();
        tenancy.close(); // after the server: no pull of a tenant's is still running
        if (auditLog != null) {
            auditLog.close();
        }
    }

    private static void stopQuietly(Server server) {
        try {
            server.stop();
        } catch (Exception e) {
            System.getLogger(PaddockServer.class.getName()).log(System.Logger.Level.DEBUG, "stopping the server", e);
        }
    }

    static byte[] resource(String name) {
        try (InputStream in = PaddockServer.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException(name + " is missing from the jar");
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new IllegalStateException("reading " + name + ": " + e.getMessage(), e);
        }
    }

    /** This build's version (the Maven project version, filtered into a resource). */
    public static String version() {
        Properties p = new Properties();
        try (InputStream in = PaddockServer.class.getResourceAsStream("/io/paddock/server/version.properties")) {
            if (in != null) {
                p.load(in);
            }
        } catch (IOException e) {
            // fall through to "unknown"
        }
        String v = p.getProperty("version", "unknown");
        return v.startsWith("${") ? "unknown" : v;
    }

    /** The engine's runtime, described once on first use (it runs {@code runc --version}). */
    private static Supplier<String> runtime(Paddock paddock) {
        return new Supplier<>() {
            private volatile String value;

            @Override
            public String get() {
                String v = value;
                if (v == null) {
                    // The runtime's first words ("runc version 1.1.5"); the rest names host paths.
                    v = paddock instanceof io.paddock.engine.internal.LocalPaddock local
                            ? local.describeRuntime().split(",", 2)[0].trim() : paddock.getClass().getSimpleName();
                    value = v;
                }
                return v;
            }
        };
    }
}
