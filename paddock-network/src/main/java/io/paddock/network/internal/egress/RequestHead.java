package io.paddock.network.internal.egress;

import io.paddock.network.internal.egress.EgressProxy.EgressSecret;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The head of one HTTP/1.x request (request line and header fields), read from a sandbox and rewritten for the
 * upstream. The head is the only part of a request the proxy understands; the body, whatever its framing, is passed
 * on as bytes.
 *
 * <p>It is parsed strictly, because what the proxy and the upstream each take for a header must be the same thing:
 * lines end in CRLF (a bare CR or LF is refused), no obsolete line folding, no whitespace between a field name and
 * its colon, no control characters, exactly one {@code Host}, and the request target in origin form ({@code /path})
 * or {@code *}: an absolute-form target ({@code GET https://other.example/}) would name a host other than the one
 * whose secrets were put in, and servers must prefer it to {@code Host}.
 *
 * <p>The forwarded head is rebuilt from the parsed lines: the request line as it came, each field as
 * {@code name:value} with the placeholders of the request's host replaced in the value (never in a name, the
 * request line or the body), without the hop-by-hop fields that would keep the connection open or switch
 * protocols, and with {@code Connection: close}, so the upstream ends the exchange after one response.
 */
final class RequestHead {
    /** The longest head taken, its blank line included. */
    static final int MAX_BYTES = 64 * 1024;
    private static final byte[] END = {'\r', '\n', '\r', '\n'};
    /** Fields dropped: they concern this hop's connection, and the proxy serves one request per connection. */
    private static final Set<String> HOP_BY_HOP = Set.of("connection", "proxy-connection", "keep-alive", "upgrade");

    private final String requestLine;
    private final String method;
    private final List<Field> fields;
    private final byte[] rest;

    private record Field(String name, String value) {
        /** Names the field only: values may hold credentials. */
        @Override
        public String toString() {
            return name;
        }
    }

    /**
     * The head rebuilt for the upstream.
     *
     * @param bytes    what to send upstream; it may hold secret values, so it is never logged or kept
     * @param replaced how many placeholders were replaced
     */
    record Forwarded(byte[] bytes, int replaced) {
        @Override
        public String toString() {
            return "Forwarded[" + bytes.length + " bytes, " + replaced + " placeholder(s) replaced]";
        }
    }

    /** Not a request head this proxy takes; the message names the rule, never a value. */
    static final class Malformed extends IOException {
        private static final long serialVersionUID = 1L;

        Malformed(String message) {
            super(message);
        }
    }

    private RequestHead(String requestLine, String method, List<Field> fields, byte[] rest) {
        this.requestLine = requestLine;
        this.method = method;
        this.fields = fields;
        this.rest = rest;
    }

    /** Whether {@code b} may start a request line (a method is a token). */
    static boolean startsRequest(int b) {
        return b >= 0 && b < 128 && isTokenChar((char) b);
    }

    /**
     * Reads a head: {@code prefix} (bytes already read) and then {@code in}, up to the blank line that ends it, or
     * {@link #MAX_BYTES}.
     *
     * @throws Malformed   when the head breaks a rule, or is longer than {@link #MAX_BYTES}
     * @throws IOException when reading fails or the connection ends first
     */
    static RequestHead read(byte[] prefix, InputStream in) throws IOException {
        byte[] buffer = Arrays.copyOf(prefix, Math.max(4096, prefix.length));
        int size = prefix.length;
        int from = 0;
        while (true) {
            int end = indexOfEnd(buffer, from, size);
            if (end >= 0) {
                String head = new String(buffer, 0, end, StandardCharsets.ISO_8859_1);
                return parse(head, Arrays.copyOfRange(buffer, end + END.length, size));
            }
            if (size >= MAX_BYTES) {
                throw new Malformed("a request head over " + MAX_BYTES + " bytes");
            }
            from = Math.max(0, size - (END.length - 1));
            if (size == buffer.length) {
                buffer = Arrays.copyOf(buffer, Math.min(MAX_BYTES, buffer.length * 2));
            }
            int n = in.read(buffer, size, buffer.length - size);
            if (n < 0) {
                throw new EOFException("the connection ended inside the request head");
            }
            size += n;
        }
    }

    private static int indexOfEnd(byte[] buffer, int from, int size) {
        for (int i = from; i <= size - END.length; i++) {
            if (buffer[i] == '\r' && buffer[i + 1] == '\n' && buffer[i + 2] == '\r' && buffer[i + 3] == '\n') {
                return i;
            }
        }
        return -1;
    }

    private static RequestHead parse(String head, byte[] rest) throws Malformed {
        String[] lines = head.split("\r\n", -1);
        String requestLine = lines[0];
        String method = checkRequestLine(requestLine);
        List<Field> fields = new ArrayList<>(lines.length - 1);
        for (int i = 1; i < lines.length; i++) {
            fields.add(field(lines[i]));
        }
        return new RequestHead(requestLine, method, List.copyOf(fields), rest);
    }

    /** Checks {@code METHOD SP origin-form SP HTTP/1.x}; returns the method. */
    private static String checkRequestLine(String line) throws Malformed {
        String[] parts = line.split(" ", -1);
        if (parts.length != 3) {
            throw new Malformed("a request line that is not METHOD TARGET VERSION");
        }
        String method = parts[0];
        if (method.isEmpty() || !method.chars().allMatch(c -> isTokenChar((char) c))) {
            throw new Malformed("a method that is not a token");
        }
        String target = parts[1];
        if (!(target.startsWith("/") || target.equals("*"))) {
            throw new Malformed("a request target not in origin form (/path): an absolute URL or authority could"
                    + " name another host than Host");
        }
        if (!target.chars().allMatch(c -> c > 0x20 && c < 0x7F)) {
            throw new Malformed("a request target with a character outside visible ASCII");
        }
        if (!parts[2].equals("HTTP/1.1") && !parts[2].equals("HTTP/1.0")) {
            throw new Malformed("a version other than HTTP/1.1 or HTTP/1.0");
        }
        return method;
    }

    private static Field field(String line) throws Malformed {
        if (line.isEmpty()) {
            throw new Malformed("an empty header line");
        }
        if (line.charAt(0) == ' ' || line.charAt(0) == '\t') {
            throw new Malformed("a folded header line (obsolete, and read differently by different servers)");
        }
        int colon = line.indexOf(':');
        if (colon <= 0) {
            throw new Malformed("a header line without a name and a colon");
        }
        String name = line.substring(0, colon);
        if (!name.chars().allMatch(c -> isTokenChar((char) c))) {
            throw new Malformed("a header name that is not a token (whitespace before the colon?)");
        }
        String value = line.substring(colon + 1);
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c < 0x20 && c != '\t' || c == 0x7F) {
                throw new Malformed("a control character in the value of " + name);
            }
        }
        return new Field(name, value);
    }

    /**
     * The single {@code Host} field's host, lower-cased, without a port or one trailing dot; null when it is not a
     * DNS host name (an address literal, say).
     *
     * @throws Malformed when there is no {@code Host} field, or more than one
     */
    String host() throws Malformed {
        String value = null;
        for (Field field : fields) {
            if (field.name().equalsIgnoreCase("host")) {
                if (value != null) {
                    throw new Malformed("two Host fields");
                }
                value = field.value().strip();
            }
        }
        if (value == null) {
            throw new Malformed("no Host field");
        }
        int colon = value.lastIndexOf(':');
        if (colon >= 0) {
            String port = value.substring(colon + 1);
            if (port.isEmpty() || port.length() > 5 || !port.chars().allMatch(c -> c >= '0' && c <= '9')) {
                return null;
            }
            value = value.substring(0, colon);
        }
        return CertificateAuthority.normalizeHost(value);
    }

    String method() {
        return method;
    }

    /** The bytes read after the head: the start of the body, if any. */
    byte[] rest() {
        return rest.clone();
    }

    /**
     * The head for the upstream, with every placeholder of {@code secrets} in a field value replaced by its value.
     * The caller passes only the secrets of the request's host.
     */
    Forwarded forward(List<EgressSecret> secrets) {
        // Longest first: of two placeholders where one starts the other, the longer one is meant.
        List<EgressSecret> ordered = new ArrayList<>(secrets);
        ordered.sort(Comparator.comparingInt((EgressSecret s) -> s.placeholder().length()).reversed());
        StringBuilder out = new StringBuilder(256 + fields.size() * 64);
        out.append(requestLine).append("\r\n");
        int replaced = 0;
        for (Field field : fields) {
            if (HOP_BY_HOP.contains(field.name().toLowerCase(Locale.ROOT))) {
                continue;
            }
            out.append(field.name()).append(':');
            replaced += substitute(field.value(), ordered, out);
            out.append("\r\n");
        }
        out.append("Connection: close\r\n\r\n");
        return new Forwarded(out.toString().getBytes(StandardCharsets.ISO_8859_1), replaced);
    }

    /**
     * Appends {@code value} to {@code out} with each placeholder replaced, in one pass: a value put in is never
     * scanned again, so one secret's value cannot be taken for another's placeholder. Returns how many were replaced.
     */
    private static int substitute(String value, List<EgressSecret> secrets, StringBuilder out) {
        int replaced = 0;
        int i = 0;
        outer:
        while (i < value.length()) {
            for (EgressSecret secret : secrets) {
                if (value.startsWith(secret.placeholder(), i)) {
                    out.append(secret.value());
                    i += secret.placeholder().length();
                    replaced++;
                    continue outer;
                }
            }
            out.append(value.charAt(i++));
        }
        return replaced;
    }

    /** The method and the field names; no target, no value. */
    @Override
    public String toString() {
        return "RequestHead[" + method + ", fields " + fields + "]";
    }

    private static boolean isTokenChar(char c) {
        return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || "!#$%&'*+-.^_`|~".indexOf(c) >= 0;
    }
}
