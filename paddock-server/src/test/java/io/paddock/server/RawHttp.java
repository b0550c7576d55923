package io.paddock.server;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/** A hand-written HTTP/1.1 exchange over a plain socket, for what java.net.http will not send. */
final class RawHttp {
    private RawHttp() {
    }

    record Reply(int status, Map<String, String> headers, String body) {
    }

    /**
     * Writes {@code head} (request line and headers, without the blank line) and then whatever
     * {@code body} writes, on a separate thread, while this thread reads the response: a server that
     * answers early (413) is seen even though the body is still being sent.
     */
    static Reply exchange(URI base, String head, BodyWriter body, int readTimeoutMillis) throws IOException {
        try (Socket s = new Socket(base.getHost(), base.getPort())) {
            s.setSoTimeout(readTimeoutMillis);
            OutputStream out = s.getOutputStream();
            out.write((head + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            Thread writer = new Thread(() -> {
                try {
                    body.write(out);
                    out.flush();
                } catch (IOException e) {
                    // the server closed the connection: expected when it refuses the body
                }
            }, "raw-http-body");
            writer.setDaemon(true);
            writer.start();
            Reply r = read(s.getInputStream());
            writer.interrupt();
            return r;
        }
    }

    /**
     * Writes {@code head} and all of {@code body} before it reads the response, as a client that does not watch for
     * an early answer does.
     */
    static Reply writeThenRead(URI base, String head, byte[] body, int readTimeoutMillis) throws IOException {
        try (Socket s = new Socket(base.getHost(), base.getPort())) {
            s.setSoTimeout(readTimeoutMillis);
            OutputStream out = s.getOutputStream();
            out.write((head + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
            out.write(body);
            out.flush();
            return read(s.getInputStream());
        }
    }

    interface BodyWriter {
        void write(OutputStream out) throws IOException;
    }

    static Reply read(InputStream in) throws IOException {
        String status = line(in);
        if (status == null) {
            throw new IOException("connection closed before a response");
        }
        Map<String, String> headers = new LinkedHashMap<>();
        for (String l; (l = line(in)) != null && !l.isEmpty(); ) {
            int c = l.indexOf(':');
            headers.put(l.substring(0, c).trim().toLowerCase(Locale.ROOT), l.substring(c + 1).trim());
        }
        int length = Integer.parseInt(headers.getOrDefault("content-length", "0"));
        byte[] body = in.readNBytes(length);
        return new Reply(Integer.parseInt(status.split(" ")[1]), headers, new String(body, StandardCharsets.UTF_8));
    }

    private static String line(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        for (int c; (c = in.read()) >= 0; ) {
            if (c == '\n') {
                String s = b.toString(StandardCharsets.ISO_8859_1);
                return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
            }
            b.write(c);
        }
        return b.size() == 0 ? null : b.toString(StandardCharsets.ISO_8859_1);
    }
}
