package io.paddock.envd.internal;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import com.google.protobuf.util.JsonFormat;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.zip.GZIPInputStream;

/**
 * Connect's framing on HTTP/1.1 (connectrpc.com/docs/protocol): unary bodies are one bare message; streaming
 * bodies are envelopes of one flag byte, a 4-byte big-endian length and the message, the response's last one
 * flagged end-of-stream and carrying JSON with the error, if any.
 */
public final class Wire {
    /** The largest request message taken (Connect answers a larger one with {@code resource_exhausted}). */
    public static final int MAX_MESSAGE = 16 << 20;
    public static final int FLAG_COMPRESSED = 0x01;
    public static final int FLAG_END_STREAM = 0x02;

    private static final JsonFormat.Printer PRINTER = JsonFormat.printer().omittingInsignificantWhitespace();

    private Wire() {
    }

    /** A whole unary body, at most {@link #MAX_MESSAGE} bytes, decompressed per {@code Content-Encoding}. */
    public static byte[] readUnary(InputStream body, String encoding) throws IOException {
        return decode(readAtMost(body, MAX_MESSAGE, "request body"), encoding);
    }

    /**
     * The one envelope of a server-streaming request, decompressed per {@code Connect-Content-Encoding}; anything
     * after it, a truncated envelope or an end-of-stream flag is {@code invalid_argument}.
     */
    public static byte[] readSingleEnvelope(InputStream body, String encoding) throws IOException {
        byte[] m = readEnvelope(body, encoding);
        if (m == null) {
            throw ConnectException.invalid("the request body holds no enveloped message");
        }
        if (body.read() != -1) {
            throw ConnectException.invalid("a server-streaming request holds exactly one enveloped message; more followed");
        }
        return m;
    }

    /** The next envelope's message, or {@code null} at the end of the body. */
    public static byte[] readEnvelope(InputStream body, String encoding) throws IOException {
        int flags = body.read();
        if (flags == -1) {
            return null;
        }
        byte[] len = body.readNBytes(4);
        if (len.length < 4) {
            throw ConnectException.invalid("truncated envelope: " + (1 + len.length) + " of its 5 header bytes");
        }
        long n = ((len[0] & 0xFFL) << 24) | ((len[1] & 0xFF) << 16) | ((len[2] & 0xFF) << 8) | (len[3] & 0xFF);
        if ((flags & FLAG_END_STREAM) != 0) {
            throw ConnectException.invalid("a request envelope may not carry the end-of-stream flag (0x02)");
        }
        if ((flags & ~FLAG_COMPRESSED) != 0) {
            throw ConnectException.invalid("unknown envelope flags 0x" + Integer.toHexString(flags));
        }
        if (n > MAX_MESSAGE) {
            throw new ConnectException(ConnectCode.RESOURCE_EXHAUSTED, "message of " + n + " bytes, over the limit of "
                    + MAX_MESSAGE);
        }
        byte[] data = body.readNBytes((int) n);
        if (data.length < n) {
            throw ConnectException.invalid("truncated envelope: " + data.length + " of its " + n + " message bytes");
        }
        if ((flags & FLAG_COMPRESSED) != 0) {
            if (encoding == null || encoding.isEmpty() || encoding.equals("identity")) {
                throw ConnectException.invalid("a compressed envelope without Connect-Content-Encoding");
            }
            return decode(data, encoding);
        }
        return data;
    }

    private static byte[] decode(byte[] data, String encoding) throws IOException {
        if (encoding == null || encoding.isEmpty() || encoding.equalsIgnoreCase("identity")) {
            return data;
        }
        if (!encoding.equalsIgnoreCase("gzip")) {
            throw new ConnectException(ConnectCode.UNIMPLEMENTED, "unsupported compression \"" + encoding
                    + "\"; supported: gzip, identity");
        }
        try (InputStream in = new GZIPInputStream(new java.io.ByteArrayInputStream(data))) {
            return readAtMost(in, MAX_MESSAGE, "decompressed message");
        } catch (java.util.zip.ZipException | EOFException e) {
            throw ConnectException.invalid("malformed gzip data: " + e.getMessage());
        }
    }

    private static byte[] readAtMost(InputStream in, int max, String what) throws IOException {
        byte[] data = in.readNBytes(max + 1);
        if (data.length > max) {
            throw new ConnectException(ConnectCode.RESOURCE_EXHAUSTED, what + " over the limit of " + max + " bytes");
        }
        return data;
    }

    public static void writeEnvelope(OutputStream out, int flags, byte[] data) throws IOException {
        byte[] head = {(byte) flags, (byte) (data.length >>> 24), (byte) (data.length >>> 16), (byte) (data.length >>> 8),
                (byte) data.length};
        out.write(head);
        out.write(data);
        out.flush();
    }

    /** A unary error's body: {@code {"code":"not_found","message":"…"}}. */
    public static byte[] errorJson(ConnectException e) {
        return print(errorStruct(e));
    }

    /** The end-of-stream message: {@code {}} or {@code {"error":{"code":…,"message":…}}}. */
    public static byte[] endStreamJson(ConnectException e) {
        Struct.Builder s = Struct.newBuilder();
        if (e != null) {
            s.putFields("error", Value.newBuilder().setStructValue(errorStruct(e)).build());
        }
        return print(s.build());
    }

    private static Struct errorStruct(ConnectException e) {
        Struct.Builder s = Struct.newBuilder().putFields("code", Value.newBuilder().setStringValue(e.code().wire()).build());
        if (e.getMessage() != null && !e.getMessage().isEmpty()) {
            s.putFields("message", Value.newBuilder().setStringValue(e.getMessage()).build());
        }
        return s.build();
    }

    private static byte[] print(Struct s) {
        try {
            return PRINTER.print(s).getBytes(StandardCharsets.UTF_8);
        } catch (InvalidProtocolBufferException e) {
            throw new UncheckedIOException(new IOException(e));
        }
    }
}
