package io.paddock.server.internal;

import io.paddock.ErrorCode;
import io.paddock.wire.HttpStatus;
import io.paddock.wire.Wire;
import org.eclipse.jetty.http.HttpException;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.util.Callback;

import java.nio.ByteBuffer;

/**
 * Errors Jetty raises itself (a malformed request line, headers too large, an ambiguous URI) in the one
 * {@code Error} shape. The message is the status's reason or Jetty's reason, never an exception's text.
 */
public final class JsonErrorHandler extends ErrorHandler {
    @Override
    protected void generateResponse(Request request, Response response, int code, String message, Throwable cause,
                                    Callback callback) {
        String text = cause instanceof HttpException he && he.getReason() != null ? he.getReason()
                : org.eclipse.jetty.http.HttpStatus.getMessage(code);
        byte[] body = Wire.bytes(Wire.error(codeOf(code), "HTTP " + code + ": " + text));
        response.getHeaders().put(HttpHeader.CONTENT_TYPE, "application/json");
        response.getHeaders().put(HttpHeader.CONTENT_LENGTH, body.length);
        response.write(true, ByteBuffer.wrap(body), callback);
    }

    /** {@link HttpStatus#toCode}, except that a client error it does not know is the client's fault, not INTERNAL. */
    static ErrorCode codeOf(int status) {
        ErrorCode c = HttpStatus.toCode(status);
        if (c == ErrorCode.INTERNAL && status >= 400 && status < 500) {
            return status == 413 || status == 414 || status == 431 ? ErrorCode.RESOURCE_EXHAUSTED : ErrorCode.INVALID_ARGUMENT;
        }
        return c;
    }
}
