package io.paddock.server.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.wire.HttpStatus;
import io.paddock.wire.Wire;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;

/**
 * The dashboard at {@code /ui} (docs/ARCHITECTURE.md, "The dashboard"): three static files (a page, its script,
 * its style sheet) and the session's three calls, {@code POST /ui/login}, {@code GET /ui/session} and
 * {@code POST /ui/logout}. Everything the page shows comes from the REST API, which a dashboard session may call
 * for the few routes {@link DashboardSessions#ROUTES} names. Every answer here forbids framing, inline script and
 * any origin but the daemon's own. A sandbox port's own host name is never answered here: it is proxied whole.
 * Thread-safe.
 */
public final class DashboardHandler extends Handler.Abstract {
    public static final String PATH = "/ui";
    private static final String RESOURCES = "/io/paddock/server/ui/";
    /** A login body is one token; anything bigger is not one. */
    private static final int MAX_LOGIN_BYTES = 8192;
    /** What every answer under /ui carries. */
    private static final Map<String, String> HEADERS = Map.of(
            "Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self';"
                    + " connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
            "X-Frame-Options", "DENY",
            "X-Content-Type-Options", "nosniff",
            "Referrer-Policy", "no-referrer",
            "Cross-Origin-Opener-Policy", "same-origin",
            "Cross-Origin-Resource-Policy", "same-origin",
            "Cache-Control", "no-store");

    private record Asset(String type, byte[] bytes) {
    }

    private final DashboardSessions sessions;
    private final PortApi ports;
    private final Duration bodyDeadline;
    private final Map<String, Asset> assets;

    public DashboardHandler(DashboardSessions sessions, PortApi ports, Duration bodyDeadline) {
        super(InvocationType.BLOCKING);
        this.sessions = sessions;
        this.ports = ports;
        this.bodyDeadline = bodyDeadline;
        Asset page = asset("index.html", "text/html; charset=utf-8");
        this.assets = Map.of(PATH, page, PATH + "/", page,
                PATH + "/app.js", asset("app.js", "text/javascript; charset=utf-8"),
                PATH + "/app.css", asset("app.css", "text/css; charset=utf-8"));
    }

    @Override
    public boolean handle(Request request, Response response, Callback callback) {
        String path = Request.getPathInContext(request);
        if (path == null || !(path.equals(PATH) || path.startsWith(PATH + "/")) || ports.isPortHost(request)) {
            return false; // the REST API's, or a sandbox port's host name (proxied whole)
        }
        HEADERS.forEach((k, v) -> response.getHeaders().put(k, v));
        try {
            route(path, request, response, callback);
        } catch (Throwable t) {
            fail(request, response, callback, t);
        }
        return true;
    }

    private void route(String path, Request request, Response response, Callback callback) throws IOException {
        String method = request.getMethod();
        Asset asset = assets.get(path);
        if (asset != null) {
            allow(method, "GET", "HEAD");
            response.setStatus(200);
            response.getHeaders().put(HttpHeader.CONTENT_TYPE, asset.type());
            response.getHeaders().put(HttpHeader.CONTENT_LENGTH, asset.bytes().length);
            response.write(true, method.equals("HEAD") ? null : ByteBuffer.wrap(asset.bytes()), callback);
            return;
        }
        switch (path) {
            case PATH + "/login" -> {
                allow(method, "POST");
                String token = token(request);
                DashboardSessions.Login login = sessions.login(request, token);
                response.getHeaders().add(HttpHeader.SET_COOKIE, login.setCookie());
                json(response, callback, 200, whoami(login.caller()).put("csrf_token", login.csrfToken()));
            }
            case PATH + "/session" -> {
                allow(method, "GET");
                json(response, callback, 200, whoami(sessions.check(request)));
            }
            case PATH + "/logout" -> {
                allow(method, "POST");
                sessions.check(request);
                response.getHeaders().add(HttpHeader.SET_COOKIE, sessions.logout(request));
                response.setStatus(204);
                response.write(true, null, callback);
            }
            default -> throw new HttpError(404, ErrorCode.NOT_FOUND, "the dashboard has no " + Limits.shorten(path));
        }
    }

    /** The login's body: {@code {"token": "..."}}, as JSON only, so that no cross-site form can post one. */
    private String token(Request request) throws IOException {
        String type = request.getHeaders().get(HttpHeader.CONTENT_TYPE);
        if (type == null || !type.toLowerCase(Locale.ROOT).startsWith("application/json")) {
            throw new HttpError(415, ErrorCode.INVALID_ARGUMENT, "the login's body is JSON: {\"token\": \"...\"}"
                    + " with Content-Type: application/json");
        }
        if (request.getLength() > MAX_LOGIN_BYTES) {
            throw HttpError.tooLarge("the login's body", MAX_LOGIN_BYTES);
        }
        byte[] bytes;
        try (BodyStream in = new BodyStream(Content.Source.asInputStream(request), MAX_LOGIN_BYTES, "the login's body",
                bodyDeadline.toNanos(), 0)) {
            bytes = in.readAllBytes();
        }
        JsonNode body = Wire.parse(bytes);
        JsonNode token = body.path("token");
        if (!token.isTextual() || token.asText().isBlank()) {
            throw SandboxException.invalid("token", "a string is expected");
        }
        return token.asText().trim();
    }

    private static ObjectNode whoami(Caller caller) {
        ObjectNode o = Wire.object();
        o.put("operator", caller.isOperator());
        if (caller.tenant().isPresent()) {
            o.put("tenant", caller.tenant().get());
        } else {
            o.putNull("tenant");
        }
        return o;
    }

    private static void allow(String method, String... allowed) {
        for (String a : allowed) {
            if (a.equals(method)) {
                return;
            }
        }
        throw new HttpError(405, ErrorCode.INVALID_ARGUMENT, "method " + method + " is not allowed here (allowed: "
                + String.join(", ", allowed) + ")", "Allow", String.join(", ", allowed));
    }

    private static void json(Response response, Callback callback, int status, JsonNode body) {
        byte[] bytes = Wire.bytes(body);
        response.setStatus(status);
        response.getHeaders().put(HttpHeader.CONTENT_TYPE, "application/json");
        response.getHeaders().put(HttpHeader.CONTENT_LENGTH, bytes.length);
        response.write(true, ByteBuffer.wrap(bytes), callback);
    }

    private static void fail(Request request, Response response, Callback callback, Throwable t) {
        if (response.isCommitted()) {
            callback.failed(t);
            return;
        }
        int status;
        ObjectNode body;
        if (t instanceof HttpError h) {
            status = h.status();
            body = Wire.error(h.code(), h.getMessage());
            if (h.headerName() != null) {
                response.getHeaders().put(h.headerName(), h.headerValue());
            }
        } else if (t instanceof SandboxException e) {
            status = HttpStatus.of(e.code());
            body = Wire.error(e);
        } else {
            System.getLogger(DashboardHandler.class.getName()).log(System.Logger.Level.WARNING,
                    request.getMethod() + " " + Request.getPathInContext(request) + " failed", t);
            status = 500;
            body = Wire.error(ErrorCode.INTERNAL, "internal error (" + t.getClass().getSimpleName() + "); see the daemon's log");
        }
        if (request.getLength() > 0 || request.getHeaders().contains(HttpHeader.TRANSFER_ENCODING)) {
            response.getHeaders().put(HttpHeader.CONNECTION, "close"); // the body may be unread
        }
        json(response, callback, status, body);
    }

    private static Asset asset(String name, String type) {
        try (InputStream in = DashboardHandler.class.getResourceAsStream(RESOURCES + name)) {
            if (in == null) {
                throw new IllegalStateException(RESOURCES + name + " is missing from the jar");
            }
            return new Asset(type, in.readAllBytes());
        } catch (IOException e) {
            throw new IllegalStateException("reading " + RESOURCES + name + ": " + e.getMessage(), e);
        }
    }
}
