package io.paddock.network.internal.egress;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

/**
 * Reads a TLS ClientHello off a connection just far enough to learn the server name it asks for (SNI), keeping
 * every byte it read so that the TLS server can be handed them back. The client is a sandbox, so every length is
 * checked against what is left before it is used, the hello is bounded ({@link #MAX_BYTES}), and anything a
 * well-formed hello would not contain is refused rather than guessed at: a record other than handshake, a first
 * message other than ClientHello, an extension twice, two host names, a name that is not a plain DNS name.
 *
 * <p>A hello may span several records (large post-quantum key shares do); the records' fragments are joined until
 * the whole message is there. Nothing is decrypted or answered here.
 */
final class ClientHello {
    /** TLS record content type "handshake". */
    static final int HANDSHAKE = 22;
    private static final int CLIENT_HELLO = 1;
    private static final int SERVER_NAME = 0;
    private static final int HOST_NAME = 0;
    /** TLSPlaintext.length may not exceed 2^14. */
    private static final int MAX_RECORD = 1 << 14;
    /** Every byte read for one hello, record headers included; real ones are well under 4 KiB. */
    static final int MAX_BYTES = 32 * 1024;

    /**
     * What was read.
     *
     * @param consumed   every byte taken off the connection, to be replayed to the TLS server
     * @param serverName the SNI host name as sent (not normalised), or null when the hello names none
     */
    record Peeked(byte[] consumed, String serverName) {
    }

    /** The bytes are no ClientHello this proxy takes. */
    static final class Malformed extends IOException {
        private static final long serialVersionUID = 1L;

        Malformed(String message) {
            super(message);
        }
    }

    private ClientHello() {
    }

    /**
     * Reads one ClientHello, whose first byte ({@code first}, the record type) was already read from {@code in}.
     *
     * @throws Malformed   when the bytes are not a ClientHello this proxy takes
     * @throws IOException when reading fails, or the connection ends before the hello does
     */
    static Peeked read(int first, InputStream in) throws IOException {
        ByteArrayOutputStream consumed = new ByteArrayOutputStream(1024);
        ByteArrayOutputStream handshake = new ByteArrayOutputStream(1024);
        consumed.write(first);
        boolean firstRecord = true;
        long messageEnd = -1; // length of the handshake message with its 4-byte header, once known
        while (messageEnd < 0 || handshake.size() < messageEnd) {
            int type = firstRecord ? first : readByte(in, consumed);
            firstRecord = false;
            if (type != HANDSHAKE) {
                throw new Malformed("record type " + type + " where a handshake record belongs");
            }
            byte[] header = readFully(in, 4, consumed);
            if (header[0] != 3) {
                throw new Malformed("record version " + (header[0] & 0xFF) + "." + (header[1] & 0xFF));
            }
            int length = (header[2] & 0xFF) << 8 | header[3] & 0xFF;
            if (length == 0 || length > MAX_RECORD) {
                throw new Malformed("record length " + length);
            }
            if (consumed.size() + length > MAX_BYTES) {
                throw new Malformed("a ClientHello over " + MAX_BYTES + " bytes");
            }
            handshake.write(readFully(in, length, consumed));
            if (messageEnd < 0 && handshake.size() >= 4) {
                byte[] h = handshake.toByteArray();
                if (h[0] != CLIENT_HELLO) {
                    throw new Malformed("handshake message " + (h[0] & 0xFF) + " where a ClientHello belongs");
                }
                messageEnd = 4L + ((h[1] & 0xFF) << 16 | (h[2] & 0xFF) << 8 | h[3] & 0xFF);
                if (messageEnd > MAX_BYTES) {
                    throw new Malformed("a ClientHello of " + messageEnd + " bytes");
                }
            }
            if (messageEnd >= 0 && handshake.size() > messageEnd) {
                // A client sends nothing after its hello before the server answers; bytes after it are not TLS.
                throw new Malformed("data after the ClientHello in its record");
            }
        }
        byte[] message = handshake.toByteArray();
        String name = serverName(new Cursor(message, 4, message.length));
        return new Peeked(consumed.toByteArray(), name);
    }

    /** The host name of the hello's server_name extension, null when it has none. */
    private static String serverName(Cursor body) throws Malformed {
        int version = body.u16();
        if (version >> 8 != 3) {
            throw new Malformed("client version " + Integer.toHexString(version));
        }
        body.skip(32); // random
        int sessionId = body.u8();
        if (sessionId > 32) {
            throw new Malformed("session id of " + sessionId + " bytes");
        }
        body.skip(sessionId);
        int suites = body.u16();
        if (suites < 2 || suites % 2 != 0) {
            throw new Malformed("cipher suites of " + suites + " bytes");
        }
        body.skip(suites);
        int compressions = body.u8();
        if (compressions < 1) {
            throw new Malformed("no compression methods");
        }
        body.skip(compressions);
        if (body.remaining() == 0) {
            return null; // no extensions at all (SSL 3 style)
        }
        Cursor extensions = body.sub(body.u16());
        if (body.remaining() != 0) {
            throw new Malformed("data after the extensions");
        }
        Set<Integer> seen = new HashSet<>();
        String name = null;
        while (extensions.remaining() > 0) {
            int type = extensions.u16();
            Cursor data = extensions.sub(extensions.u16());
            if (!seen.add(type)) {
                throw new Malformed("extension " + type + " twice");
            }
            if (type == SERVER_NAME) {
                name = hostName(data);
            }
        }
        return name;
    }

    private static String hostName(Cursor extension) throws Malformed {
        Cursor list = extension.sub(extension.u16());
        if (extension.remaining() != 0) {
            throw new Malformed("data after the server name list");
        }
        String host = null;
        while (list.remaining() > 0) {
            int nameType = list.u8();
            byte[] name = list.bytes(list.u16());
            if (nameType != HOST_NAME) {
                continue; // no other type is defined; a future one is none of this proxy's business
            }
            if (host != null) {
                throw new Malformed("two host names");
            }
            host = new String(name, StandardCharsets.ISO_8859_1);
            if (CertificateAuthority.normalizeHost(host) == null) {
                throw new Malformed("a server name that is no DNS host name");
            }
        }
        if (host == null) {
            throw new Malformed("a server_name extension without a host name");
        }
        return host;
    }

    private static int readByte(InputStream in, ByteArrayOutputStream consumed) throws IOException {
        int b = in.read();
        if (b < 0) {
            throw new EOFException("the connection ended inside a ClientHello");
        }
        consumed.write(b);
        return b;
    }

    private static byte[] readFully(InputStream in, int n, ByteArrayOutputStream consumed) throws IOException {
        byte[] bytes = in.readNBytes(n);
        consumed.write(bytes);
        if (bytes.length < n) {
            throw new EOFException("the connection ended inside a ClientHello");
        }
        return bytes;
    }

    /** Reads big-endian fields of a slice of an array, never past its end. */
    private static final class Cursor {
        private final byte[] bytes;
        private int position;
        private final int end;

        Cursor(byte[] bytes, int position, int end) {
            this.bytes = bytes;
            this.position = position;
            this.end = end;
        }

        int remaining() {
            return end - position;
        }

        private void need(int n) throws Malformed {
            if (n > remaining()) {
                throw new Malformed("a length past the end of the ClientHello");
            }
        }

        int u8() throws Malformed {
            need(1);
            return bytes[position++] & 0xFF;
        }

        int u16() throws Malformed {
            need(2);
            int value = (bytes[position] & 0xFF) << 8 | bytes[position + 1] & 0xFF;
            position += 2;
            return value;
        }

        void skip(int n) throws Malformed {
            need(n);
            position += n;
        }

        byte[] bytes(int n) throws Malformed {
            need(n);
            byte[] slice = Arrays.copyOfRange(bytes, position, position + n);
            position += n;
            return slice;
        }

        Cursor sub(int n) throws Malformed {
            need(n);
            Cursor sub = new Cursor(bytes, position, position + n);
            position += n;
            return sub;
        }
    }
}
