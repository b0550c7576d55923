package io.paddock.e2b.internal;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.ErrorCode;
import io.paddock.FileInfo;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxState;
import io.paddock.e2b.E2bAccess;
import io.paddock.e2b.E2bOptions;
import io.paddock.envd.Envd;
import io.paddock.wire.Wire;
import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.MultiPart;
import org.eclipse.jetty.http.MultiPartFormData;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.Fields;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutionException;

/**
 * In-sandbox calls: what E2B's SDKs send to {@code E2B_SANDBOX_URL} with the headers {@code E2b-Sandbox-Id} and
 * {@code E2b-Sandbox-Port}. Port 49983 is envd (its {@code /health}, {@code /files}, and the Connect-RPC
 * services, which {@link Envd} serves); port 49999 is the code interpreter ({@link CodeCalls}). Every call
 * needs the sandbox's access token ({@link AccessTokens}), checked before the sandbox is looked up; a sandbox
 * that is not running answers 502, as E2B's proxy does, which the SDKs report as a {@code TimeoutError}.
 * Thread-safe.
 */
final class SandboxCalls {
    static final String SANDBOX_ID = "E2b-Sandbox-Id";
    static final String SANDBOX_PORT = "E2b-Sandbox-Port";
    static final int ENVD_PORT = 49983;
    static final int CODE_PORT = 49999;
    private static final int COPY_CHUNK = 64 * 1024;

    private final E2bOptions options;
    private final E2bAccess access;
    private final AccessTokens tokens;
    private final CodeCalls code;
    private final Envd envd = new Envd();

    SandboxCalls(E2bOptions options, E2bAccess access, AccessTokens tokens, CodeState code) {
        this.options = options;
        this.access = access;
        this.tokens = tokens;
        this.code = new CodeCalls(code, options);
    }

    static boolean isCodeInterpreter(Request request) {
        return Integer.toString(CODE_PORT).equals(request.getHeaders().get(SANDBOX_PORT));
    }

    /** Ends the code state the sandbox has here (before it is killed). */
    void release(Sandbox sb) {
        code.release(sb.id());
    }

    void handle(Request request, Response response, Callback callback) throws IOException {
        String id = request.getHeaders().get(SANDBOX_ID).trim();
        String portHeader = request.getHeaders().get(SANDBOX_PORT);
        int port;
        try {
            port = portHeader == null ? ENVD_PORT : Integer.parseInt(portHeader.trim());
        } catch (NumberFormatException e) {
            throw new E2bError(400, SANDBOX_PORT + ": a port number is expected");
        }
        String presented = request.getHeaders().get("X-Access-Token");
        if (presented == null) {
            presented = request.getHeaders().get("E2B-Traffic-Access-Token");
        }
        if (!tokens.verify(id, presented)) {
            throw new E2bError(401, presented == null ? "an access token is required (X-Access-Token: the envdAccessToken"
                    + " of create or connect)" : "the access token is not this sandbox's");
        }
        Sandbox sb;
        try {
            sb = access.sandbox(id);
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.NOT_FOUND || e.code() == ErrorCode.INVALID_ARGUMENT) {
                throw E2bError.sandboxGone(id);
            }
            throw e;
        }
        if (sb.state() != SandboxState.RUNNING) {
            throw E2bError.sandboxGone(id);
        }
        String method = request.getMethod();
        String path = Request.getPathInContext(request);
        if (port == CODE_PORT) {
            code.handle(sb, request, response, callback);
            return;
        }
        if (port != ENVD_PORT) {
            throw new E2bError(501, "port " + port + " of a sandbox is not served through Paddock's E2B API yet;"
                    + " use the Paddock API's ports (see docs/COMPAT.md)");
        }
        switch (method + " " + path) {
            case "GET /health" -> Http.noContent(response, callback);
            case "GET /files" -> download(sb, request, response, callback);
            case "POST /files" -> upload(sb, request, response, callback);
            default -> {
                if (Envd.owns(path)) {
                    rpc(sb, path, request, response, callback);
                } else {
                    throw E2bError.unsupported(method, path + " (envd)");
                }
            }
        }
    }

    private void rpc(Sandbox sb, String path, Request request, Response response, Callback callback) throws IOException {
        Map<String, String> headers = new HashMap<>();
        for (HttpField f : request.getHeaders()) {
            headers.merge(f.getLowerCaseName(), f.getValue(), (a, b) -> a + ", " + b);
        }
        OutputStream out = Content.Sink.asOutputStream(response);
        try (InputStream body = Http.body(request, options.maxUploadBytes(), "the request")) {
            envd.serve(sb, path, headers, body, new Envd.Response() {
                @Override
                public void start(int status, Map<String, String> h) {
                    response.setStatus(status);
                    h.forEach((k, v) -> response.getHeaders().put(k, v));
                }

                @Override
                public OutputStream body() {
                    return out;
                }
            });
        }
        out.close();
        callback.succeeded();
    }

    // ---- /files (envd.yaml) ----

    private static String path(Fields query, boolean required) {
        String p = query.getValue("path");
        if ((p == null || p.isEmpty()) && required) {
            throw new E2bError(400, "path: missing (a query parameter)");
        }
        if (p != null && p.length() > 4096) {
            throw new E2bError(400, "path: longer than 4096 characters");
        }
        return p;
    }

    private void download(Sandbox sb, Request request, Response response, Callback callback) throws IOException {
        String path = path(query(request), true);
        FileInfo info = files(path, () -> sb.files().stat(path));
        if (info.isDirectory()) {
            throw new E2bError(400, "path '" + path + "' is a directory");
        }
        InputStream in = files(path, () -> sb.files().openRead(path));
        try (in) {
            response.setStatus(200);
            response.getHeaders().put(HttpHeader.CONTENT_TYPE, "application/octet-stream");
            response.getHeaders().put("Content-Disposition", "attachment; filename=\"" + info.name().replace("\"", "") + "\"");
            if (info.size() == 0) {
                response.getHeaders().put(HttpHeader.CONTENT_LENGTH, 0);
            }
            OutputStream out = Content.Sink.asOutputStream(response);
            byte[] buf = new byte[COPY_CHUNK];
            for (int n; (n = in.read(buf)) >= 0; ) {
                out.write(buf, 0, n);
            }
            out.close();
        }
        callback.succeeded();
    }

    private void upload(Sandbox sb, Request request, Response response, Callback callback) throws IOException {
        Fields query = query(request);
        String path = path(query, false);
        String type = request.getHeaders().get(HttpHeader.CONTENT_TYPE);
        ArrayNode written = Wire.JSON.createArrayNode();
        if (request.getHeaders().get(HttpHeader.CONTENT_ENCODING) != null) {
            throw new E2bError(400, "Content-Encoding (gzip uploads) is not supported by Paddock's E2B API");
        }
        if (type != null && type.toLowerCase(Locale.ROOT).startsWith("multipart/form-data")) {
            String boundary = MultiPart.extractBoundary(type);
            if (boundary == null) {
                throw new E2bError(400, "Content-Type: multipart/form-data without a boundary");
            }
            if (request.getLength() > options.maxUploadBytes()) {
                throw Http.tooLarge("the upload", options.maxUploadBytes());
            }
            Path spool = Files.createTempDirectory("paddock-e2b-upload-");
            MultiPartFormData.Parser parser = new MultiPartFormData.Parser(boundary);
            parser.setMaxLength(options.maxUploadBytes());
            parser.setMaxMemoryFileSize(1 << 20);
            parser.setMaxParts(1000);
            parser.setFilesDirectory(spool);
            MultiPartFormData.Parts parts;
            try {
                parts = parser.parse(request).get();
            } catch (ExecutionException e) {
                deleteTree(spool);
                String why = e.getCause() == null ? e.toString() : e.getCause().getMessage();
                if (why != null && why.toLowerCase(Locale.ROOT).contains("max length")) {
                    throw Http.tooLarge("the upload", options.maxUploadBytes());
                }
                throw new E2bError(400, "the multipart body is malformed: " + why);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                deleteTree(spool);
                throw new E2bError(503, "interrupted");
            }
            try (parts) {
                for (MultiPart.Part part : parts) {
                    String target = path != null && parts.size() == 1 ? path : part.getFileName();
                    if (target == null || target.isEmpty()) {
                        throw new E2bError(400, "a file part has no file name and no path was given");
                    }
                    try (InputStream in = Content.Source.asInputStream(part.createContentSource())) {
                        write(sb, target, in);
                    }
                    written.add(entry(target));
                }
            } finally {
                deleteTree(spool);
            }
        } else {
            if (path == null) {
                throw new E2bError(400, "path: missing (a query parameter; required for an octet-stream upload)");
            }
            try (InputStream in = Http.body(request, options.maxUploadBytes(), "the upload")) {
                write(sb, path, in);
            }
            written.add(entry(path));
        }
        if (written.isEmpty()) {
            throw new E2bError(400, "the upload holds no file");
        }
        Http.json(response, callback, 200, written);
    }

    private static void write(Sandbox sb, String path, InputStream in) {
        int slash = path.lastIndexOf('/');
        if (slash > 0) {
            String parent = path.substring(0, slash);
            files(parent, () -> {
                sb.files().mkdir(parent); // E2B creates missing directories
                return null;
            });
        }
        files(path, () -> {
            sb.files().write(path, in);
            return null;
        });
    }

    private static ObjectNode entry(String path) {
        ObjectNode o = Wire.object();
        o.put("name", path.substring(path.lastIndexOf('/') + 1));
        o.put("type", "file");
        o.put("path", path);
        return o;
    }

    private interface FileCall<T> {
        T call();
    }

    /** A file operation whose NOT_FOUND is the file's (404 → the SDK's FileNotFoundError), not the sandbox's. */
    private static <T> T files(String path, FileCall<T> call) {
        try {
            return call.call();
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.NOT_FOUND) {
                throw new E2bError(404, "path '" + path + "' does not exist");
            }
            if (e.code() == ErrorCode.PERMISSION_DENIED) {
                throw new E2bError(403, e.getMessage());
            }
            throw e;
        }
    }

    private static Fields query(Request request) {
        try {
            return Request.extractQueryParameters(request);
        } catch (RuntimeException e) {
            throw new E2bError(400, "malformed query string");
        }
    }

    private static void deleteTree(Path dir) {
        try (var walk = Files.walk(dir)) {
            walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // best effort: the directory is under java.io.tmpdir
        }
    }

}
