package io.paddock.e2b.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.SandboxException;
import io.paddock.wire.Wire;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/** Request and response helpers shared by the E2B routes. */
final class Http {
    private Http() {
    }

    /** A request body as a stream that fails with 413 past {@code limit} bytes (chunked bodies included). */
    static InputStream body(Request request, long limit, String what) {
        if (request.getLength() > limit) {
            throw tooLarge(what, limit);
        }
        InputStream in = Content.Source.asInputStream(request);
        return new InputStream() {
            private long count;

            @Override
            public int read() throws IOException {
                byte[] one = new byte[1];
                int n = read(one, 0, 1);
                return n < 0 ? -1 : one[0] & 0xff;
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                if (len == 0) {
                    return 0;
                }
                long room = limit - count;
                int n = in.read(b, off, room >= len ? len : (int) room + 1);
                if (n > 0 && (count += n) > limit) {
                    throw tooLarge(what, limit);
                }
                return n;
            }

            @Override
            public void close() throws IOException {
                in.close();
            }
        };
    }

    /** How much of a refused body {@link #discardRest} reads at most. */
    static final long DISCARD_LIMIT = 64L << 20;

    /**
     * Reads and drops what is left of the request body, at most {@link #DISCARD_LIMIT} bytes, before a refusal is
     * answered on a connection that then closes. Closed with the body unread, the connection is reset under a client
     * that is still sending it (an upload over the limit), which then sees a connection error ("fetch failed") in
     * place of the answer. A body larger still is left unread.
     */
    static void discardRest(Request request) {
        try (InputStream in = Content.Source.asInputStream(request)) {
            byte[] buf = new byte[64 << 10];
            long left = DISCARD_LIMIT;
            int n;
            while (left > 0 && (n = in.read(buf, 0, (int) Math.min(buf.length, left))) > 0) {
                left -= n;
            }
        } catch (IOException | RuntimeException e) {
            // the client went away, or the body failed already: the connection closes after the answer anyway
        }
    }

    static E2bError tooLarge(String what, long limit) {
        return new E2bError(413, what + " is larger than the limit of " + limit + " bytes");
    }

    /** A JSON body (an empty body is an empty object). */
    static JsonNode json(Request request, long limit) throws IOException {
        byte[] bytes;
        try (InputStream in = body(request, limit, "the JSON body")) {
            bytes = in.readAllBytes();
        }
        if (bytes.length == 0) {
            return Wire.object();
        }
        JsonNode n = Wire.parse(bytes);
        if (!n.isObject()) {
            throw SandboxException.invalid("body", "a JSON object is expected");
        }
        return n;
    }

    static void json(Response response, Callback callback, int status, JsonNode body) {
        byte[] bytes = Wire.bytes(body);
        response.setStatus(status);
        response.getHeaders().put(HttpHeader.CONTENT_TYPE, "application/json");
        response.getHeaders().put(HttpHeader.CONTENT_LENGTH, bytes.length);
        response.write(true, ByteBuffer.wrap(bytes), callback);
    }

    static void text(Response response, Callback callback, int status, String body) {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        response.setStatus(status);
        response.getHeaders().put(HttpHeader.CONTENT_TYPE, "text/plain; charset=utf-8");
        response.getHeaders().put(HttpHeader.CONTENT_LENGTH, bytes.length);
        response.write(true, ByteBuffer.wrap(bytes), callback);
    }

    static void noContent(Response response, Callback callback) {
        response.setStatus(204);
        response.write(true, null, callback);
    }

    /** E2B's error body: {@code {"code": status, "message": ...}}. */
    static ObjectNode error(int status, String message) {
        ObjectNode o = Wire.object();
        o.put("code", status);
        o.put("message", message);
        return o;
    }
}
