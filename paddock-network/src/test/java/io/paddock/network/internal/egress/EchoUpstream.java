package io.paddock.network.internal.egress;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;

/**
 * An HTTP/1.1 server on 127.0.0.1, over TLS or not, that records every request head and body it gets and answers
 * with a fixed head and {@code echo:} plus the body. {@code GET /hang} is never answered (until the connection is
 * closed). It echoes no header, so a value found in what a client received can only come from the proxy.
 */
final class EchoUpstream implements AutoCloseable {
    /** The head of every answer, less the Content-Length value. */
    static final String RESPONSE_HEAD = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Upstream: echo\r\n"
            + "Connection: close\r\nContent-Length: %d\r\n\r\n";

    final List<String> heads = new CopyOnWriteArrayList<>();
    final List<String> bodies = new CopyOnWriteArrayList<>();
    final AtomicInteger accepted = new AtomicInteger();
    final AtomicInteger failedHandshakes = new AtomicInteger();
    private final ServerSocket listener;
    private final SSLContext tls;
    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    private final Thread acceptLoop;

    /** @param tls presents the server's certificate; null for plain HTTP */
    EchoUpstream(SSLContext tls) throws IOException {
        this.tls = tls;
        this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        this.acceptLoop = new Thread(this::acceptLoop, "echo-upstream-accept");
        acceptLoop.setDaemon(true);
        acceptLoop.start();
    }

    InetSocketAddress address() {
        return new InetSocketAddress(InetAddress.getLoopbackAddress(), listener.getLocalPort());
    }

    private void acceptLoop() {
        while (!listener.isClosed()) {
            try {
                Socket socket = listener.accept();
                accepted.incrementAndGet();
                sockets.add(socket);
                Thread thread = new Thread(() -> serve(socket), "echo-upstream-conn");
                thread.setDaemon(true);
                thread.start();
            } catch (IOException e) {
                // closed
            }
        }
    }

    private void serve(Socket raw) {
        try (raw) {
            raw.setSoTimeout(10_000);
            Socket socket = raw;
            if (tls != null) {
                SSLSocket s = (SSLSocket) tls.getSocketFactory().createSocket(raw, null, raw.getPort(), true);
                s.setUseClientMode(false);
                try {
                    s.startHandshake();
                } catch (IOException e) {
                    failedHandshakes.incrementAndGet();
                    return;
                }
                socket = s;
            }
            InputStream in = socket.getInputStream();
            String head = readHead(in);
            if (head == null) {
                return;
            }
            heads.add(head);
            int length = contentLength(head);
            String body = new String(in.readNBytes(length), StandardCharsets.ISO_8859_1);
            bodies.add(body);
            if (head.startsWith("GET /hang ")) {
                while (in.read() >= 0) {
                    // never answer; wait for the proxy to give up
                }
                return;
            }
            byte[] answer = ("echo:" + body).getBytes(StandardCharsets.ISO_8859_1);
            OutputStream out = socket.getOutputStream();
            out.write(String.format(RESPONSE_HEAD, answer.length).getBytes(StandardCharsets.ISO_8859_1));
            out.write(answer);
            out.flush();
            socket.close();
        } catch (IOException e) {
            // the proxy went away
        } finally {
            sockets.remove(raw);
        }
    }

    /** The head up to (not including) the blank line, or null if the connection ended first. */
    private static String readHead(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        int matched = 0;
        byte[] end = {'\r', '\n', '\r', '\n'};
        while (matched < 4) {
            int b = in.read();
            if (b < 0) {
                return null;
            }
            head.write(b);
            matched = b == end[matched] ? matched + 1 : (b == '\r' ? 1 : 0);
        }
        String text = head.toString(StandardCharsets.ISO_8859_1);
        return text.substring(0, text.length() - 4);
    }

    private static int contentLength(String head) {
        for (String line : head.split("\r\n")) {
            if (line.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
                return Integer.parseInt(line.substring("content-length:".length()).strip());
            }
        }
        return 0;
    }

    @Override
    public void close() throws IOException {
        listener.close();
        sockets.forEach(s -> {
            try {
                s.close();
            } catch (IOException e) {
                // closing anyway
            }
        });
    }
}
