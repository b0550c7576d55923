package io.paddock.mcp.internal;

import io.modelcontextprotocol.json.McpJsonDefaults;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.server.transport.HttpServletStreamableServerTransportProvider;
import io.modelcontextprotocol.server.transport.StdioServerTransportProvider;
import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.spec.McpSchema;
import io.paddock.ErrorCode;
import io.paddock.Paddock;
import io.paddock.SandboxException;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadFactory;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Paddock's MCP server on the SDK's transports: stdio (one client, the process's stdin and stdout) and
 * streamable HTTP (a servlet the daemon mounts at {@code /mcp}).
 */
public final class McpServers {
    public static final String NAME = "paddock";
    /** The transport-context key under which the HTTP transport passes a request's {@link Scope}. */
    static final String SCOPE = "io.paddock.mcp.scope";
    static final String INSTRUCTIONS = "Paddock runs untrusted code in isolated, resource-limited Linux sandboxes."
            + " Create a sandbox with sandbox_create, run commands (run_command) or code (run_code) in it, move files"
            + " with write_file, read_file and list_files, and destroy it with sandbox_destroy when done.";

    private McpServers() {
    }

    private static McpJsonMapper json() {
        return McpJsonDefaults.getMapper();
    }

    /**
     * Serves one client on {@code in} and {@code out} until it closes {@code in}; then the server is closed.
     * Blocks the calling thread.
     */
    public static void serveStdio(Paddock paddock, String version, InputStream in, OutputStream out) throws InterruptedException {
        CountDownLatch eof = new CountDownLatch(1);
        InputStream watched = new FilterInputStream(in) {
            @Override
            public int read() throws IOException {
                return ended(super.read());
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                try {
                    return ended(super.read(b, off, len));
                } catch (IOException e) {
                    eof.countDown();
                    throw e;
                }
            }

            private int ended(int n) {
                if (n < 0) {
                    eof.countDown();
                }
                return n;
            }
        };
        try (Interpreters interpreters = new Interpreters()) {
            Scope scope = Scope.of(paddock, interpreters);
            StdioServerTransportProvider transport = new StdioServerTransportProvider(json(), watched, out);
            McpSyncServer server = configure(McpServer.sync(transport), version, exchange -> scope);
            try {
                eof.await();
            } finally {
                server.closeGracefully();
            }
        }
    }

    /**
     * The streamable-HTTP endpoint as a servlet for {@code /mcp}. {@code scopes} gives what a request may reach
     * (the daemon authenticates the request before the servlet sees it, and answers for its caller); it throws
     * {@link SandboxException} to refuse.
     */
    public static Http http(String version, Function<HttpServletRequest, Scope> scopes, int maxRequestBytes) {
        // The transport sweeps idle sessions on a single-thread Reactor scheduler of its own, made as it is built
        // and never disposed (closeGracefully disposes only the sweep): a thread that is not a daemon, which would
        // keep an application that embeds the daemon alive after close. It is caught as it is made, by its name,
        // and disposed with the server. The factory is swapped only around build(), which touches no shared
        // scheduler (the keep-alive pinger, which would, is off); the shared ones are restored as they were.
        List<Scheduler> sweepers = new CopyOnWriteArrayList<>();
        Schedulers.Snapshot previous = Schedulers.setFactoryWithSnapshot(new Schedulers.Factory() {
            @Override
            public Scheduler newSingle(ThreadFactory threads) {
                Scheduler s = Schedulers.Factory.super.newSingle(threads);
                if (threads instanceof Supplier<?> name && SWEEPER.equals(name.get())) {
                    sweepers.add(s);
                }
                return s;
            }
        });
        HttpServletStreamableServerTransportProvider transport;
        try {
            transport = HttpServletStreamableServerTransportProvider.builder()
                    .jsonMapper(json()).mcpEndpoint("/mcp").maxRequestSize(maxRequestBytes)
                    .contextExtractor(request -> McpTransportContext.create(Map.of(SCOPE, scopes.apply(request))))
                    .build();
        } finally {
            Schedulers.resetFrom(previous);
        }
        McpSyncServer server = configure(McpServer.sync(transport), version, McpServers::scopeOf);
        return new Http(transport, server, List.copyOf(sweepers));
    }

    /** The thread name of the HTTP transport's session sweeper (MCP Java SDK 2.1). */
    static final String SWEEPER = "streamable-http-server-transport-session-sweeper";

    /** The daemon's endpoint: the servlet to mount, and the server to close when the daemon stops. */
    public record Http(HttpServlet servlet, McpSyncServer server, List<Scheduler> sweepers) {
        public void close() {
            server.closeGracefully();
            sweepers.forEach(Scheduler::dispose);
        }
    }

    private static Scope scopeOf(McpSyncServerExchange exchange) {
        Object scope = exchange.transportContext().get(SCOPE);
        if (scope instanceof Scope s) {
            return s;
        }
        throw new SandboxException(ErrorCode.PERMISSION_DENIED, "this request carries no caller");
    }

    private static McpSyncServer configure(McpServer.SyncSpecification<?> spec, String version,
                                           Function<McpSyncServerExchange, Scope> scopes) {
        return spec.serverInfo(NAME, version)
                .instructions(INSTRUCTIONS)
                .capabilities(McpSchema.ServerCapabilities.builder().tools(false).build())
                .requestTimeout(Duration.ofMinutes(2))
                .tools(new PaddockTools(scopes, json()).specifications())
                .build();
    }
}
