package io.paddock.server.internal;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.mcp.internal.McpServers;
import io.paddock.mcp.internal.Scope;
import io.paddock.wire.Wire;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The MCP endpoint, {@code /mcp}: the MCP SDK's streamable-HTTP transport (a servlet) serving Paddock's tools
 * ({@code paddock-mcp}) over the daemon's engine as the calling tenant sees it. Every request is
 * authenticated as the REST API's are ({@link AuthGuard}: a bearer token in the {@code Authorization}
 * header, the same failure counting), and its tools reach only what its {@link Caller} may
 * ({@link TenantPaddock}, {@link Tenancy#view}); an MCP session belongs to the caller that opened it, and
 * anyone else's requests on it are answered as for an unknown session. Thread-safe.
 */
public final class McpEndpoint extends Handler.Wrapper {
    public static final String PATH = "/mcp";
    private static final String SCOPE = "io.paddock.mcp.scope";
    private static final String SESSION_HEADER = "mcp-session-id";

    private final PortApi ports;
    private final McpServers.Http http;

    public McpEndpoint(AuthGuard auth, Tenancy tenancy, CodeRegistry code, PortApi ports, Audit audit, String version,
                       long maxRequestBytes) {
        this.ports = ports;
        this.http = McpServers.http(version, request -> {
            Object scope = request.getAttribute(SCOPE);
            if (!(scope instanceof Scope s)) {
                throw new SandboxException(ErrorCode.PERMISSION_DENIED, "the request was not authenticated");
            }
            return s;
        }, (int) Math.min(Integer.MAX_VALUE, maxRequestBytes));
        ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
        context.setContextPath("/");
        ServletHolder servlet = new ServletHolder("mcp", http.servlet());
        servlet.setAsyncSupported(true);
        context.addServlet(servlet, PATH);
        FilterHolder filter = new FilterHolder(new Guard(auth, tenancy, code, audit));
        filter.setAsyncSupported(true);
        context.addFilter(filter, PATH, EnumSet.of(DispatcherType.REQUEST));
        setHandler(context);
    }

    @Override
    public boolean handle(Request request, Response response, Callback callback) throws Exception {
        if (!PATH.equals(Request.getPathInContext(request)) || ports.isPortHost(request)) {
            return false; // the REST API's, or a sandbox port's host name (proxied whole)
        }
        return super.handle(request, response, callback);
    }

    @Override
    protected void doStop() throws Exception {
        http.close(); // ends the MCP sessions' open streams before Jetty stops
        super.doStop();
    }

    /** Whether the query string tries to pass a token (refused, and said so, as by the REST API). */
    static boolean tokenInQuery(String query) {
        if (query == null) {
            return false;
        }
        for (String part : query.split("&")) {
            String name = part.split("=", 2)[0];
            if (name.equals("token") || name.equals("access_token")) {
                return true;
            }
        }
        return false;
    }

    /** Authenticates each request, gives it its caller's scope, and keeps each session to the caller that opened it. */
    private static final class Guard implements Filter {
        private final AuthGuard auth;
        private final Tenancy tenancy;
        private final CodeRegistry code;
        private final Audit audit;
        private final Map<String, Caller> owners = new ConcurrentHashMap<>();

        Guard(AuthGuard auth, Tenancy tenancy, CodeRegistry code, Audit audit) {
            this.auth = auth;
            this.tenancy = tenancy;
            this.code = code;
            this.audit = audit;
        }

        private static void error(HttpServletResponse response, int status, ErrorCode code, String message) throws IOException {
            response.setStatus(status);
            response.setContentType("application/json");
            response.getOutputStream().write(Wire.error(code, message).toString().getBytes(StandardCharsets.UTF_8));
        }

        @Override
        public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain) throws IOException, ServletException {
            HttpServletRequest request = (HttpServletRequest) req;
            HttpServletResponse response = (HttpServletResponse) res;
            response.setHeader("Cache-Control", "no-store");
            response.setHeader("X-Content-Type-Options", "nosniff");
            Caller caller;
            try {
                caller = auth.check(request.getRemoteAddr(), Collections.list(request.getHeaders("Authorization")),
                        tokenInQuery(request.getQueryString()));
            } catch (HttpError e) {
                if (e.headerName() != null) {
                    response.setHeader(e.headerName(), e.headerValue());
                }
                response.setHeader("Connection", "close");
                error(response, e.status(), e.code(), e.getMessage());
                return;
            }
            String session = request.getHeader(SESSION_HEADER);
            if (session != null) {
                Caller owner = owners.get(session);
                if (owner != null && !owner.equals(caller)) {
                    // as an unknown session is answered: the id says nothing about whose it is
                    error(response, HttpServletResponse.SC_NOT_FOUND, ErrorCode.NOT_FOUND, "no MCP session " + Limits.shorten(session));
                    return;
                }
            }
            String remote = request.getRemoteAddr();
            String requestId = request.getHeader("X-Request-Id");
            request.setAttribute(SCOPE, new Scope(new TenantPaddock(tenancy, caller), info -> tenancy.view(caller, info), sb -> {
                code.release(sb.id()); // its code contexts and shells end first, as on DELETE /v1/sandboxes/{id}
                sb.destroy();
            }, code::interpreter, // the REST API's interpreter: a context made over MCP is listed there too
                    (tool, sandbox, failure, took) -> audit.tool(caller, remote, requestId, tool, sandbox, failure, took)));
            chain.doFilter(req, res);
            if (session == null) {
                String opened = response.getHeader(SESSION_HEADER); // an initialize answers synchronously, with its id
                if (opened != null) {
                    owners.put(opened, caller);
                }
            } else if ("DELETE".equals(request.getMethod()) && response.getStatus() == HttpServletResponse.SC_OK) {
                owners.remove(session);
            }
        }
    }
}
