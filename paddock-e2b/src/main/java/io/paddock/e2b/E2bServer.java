package io.paddock.e2b;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.e2b.internal.CodeState;
import io.paddock.e2b.internal.E2bHandler;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.NetworkConnectionLimit;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

import java.net.BindException;
import java.net.URI;
import java.util.Objects;

/**
 * The E2B-compatible listener ({@code paddock serve --e2b-listen HOST:PORT}): on one address, E2B's control
 * plane ({@code /sandboxes…}, authenticated by {@code X-API-Key}) and the in-sandbox API its SDKs call when
 * {@code E2B_SANDBOX_URL} points here (envd's {@code /files} and Connect-RPC services, the code interpreter's
 * {@code /execute} and {@code /contexts}), routed by the {@code E2b-Sandbox-Id} and {@code E2b-Sandbox-Port}
 * headers and authenticated by the sandbox's access token. docs/COMPAT.md lists every E2B call.
 *
 * <p>{@link #close()} stops the listener and ends the code contexts it keeps; the sandboxes stay. Thread-safe.
 */
public final class E2bServer implements AutoCloseable {
    private final Server server;
    private final CodeState code;
    private final URI url;

    private E2bServer(Server server, CodeState code, URI url) {
        this.server = server;
        this.code = code;
        this.url = url;
    }

    /** Binds and starts serving; {@code UNAVAILABLE} when the address is taken. */
    public static E2bServer start(E2bOptions options, E2bAccess access) {
        Objects.requireNonNull(options, "options");
        Objects.requireNonNull(access, "access");
        QueuedThreadPool pool = new QueuedThreadPool(options.maxConnections() + 32, 4);
        pool.setName("paddock-e2b");
        pool.setDaemon(true);
        Server server = new Server(pool);
        server.setStopTimeout(2000);
        HttpConfiguration http = new HttpConfiguration();
        // Jetty reuses the header lines it saw earlier on a connection, matched ignoring case by default: a token
        // or cookie differing from an earlier one only in case would be read as the earlier one (DashboardTest).
        http.setHeaderCacheCaseSensitive(true);
        http.setSendServerVersion(false);
        http.setSendXPoweredBy(false);
        http.setRequestHeaderSize(16 * 1024);
        http.setIdleTimeout(options.idleTimeout().toMillis());
        ServerConnector connector = new ServerConnector(server, 1, 1, new HttpConnectionFactory(http));
        connector.setHost(options.host());
        connector.setPort(options.port());
        connector.setIdleTimeout(options.idleTimeout().toMillis());
        connector.setReuseAddress(true);
        server.addConnector(connector);
        server.addBean(new NetworkConnectionLimit(options.maxConnections(), connector));
        CodeState code = new CodeState();
        server.setHandler(new E2bHandler(options, access, code));
        try {
            server.start();
        } catch (Exception e) {
            try {
                server.stop();
            } catch (Exception ignored) {
                // already failing
            }
            code.close();
            for (Throwable t = e; t != null; t = t.getCause()) {
                if (t instanceof BindException) {
                    throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot listen on " + options.host() + ":"
                            + options.port() + " for the E2B API: the address is already in use", e);
                }
            }
            throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot start the E2B API on " + options.host() + ":"
                    + options.port() + ": " + e.getMessage(), e);
        }
        String host = options.host().contains(":") ? "[" + options.host() + "]" : options.host();
        return new E2bServer(server, code, URI.create("http://" + host + ":" + connector.getLocalPort()));
    }

    /** What E2B's SDKs take as both {@code E2B_API_URL} and {@code E2B_SANDBOX_URL}. */
    public URI url() {
        return url;
    }

    @Override
    public void close() {
        try {
            server.stop();
        } catch (Exception e) {
            System.getLogger(E2bServer.class.getName()).log(System.Logger.Level.DEBUG, "stopping the E2B listener", e);
        }
        code.close();
    }
}
