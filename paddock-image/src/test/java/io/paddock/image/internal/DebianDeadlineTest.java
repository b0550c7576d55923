package io.paddock.image.internal;

import io.paddock.ErrorCode;
import io.paddock.ImageListener;
import io.paddock.SandboxException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Issue 32 round 3 (ATTACKS.md A83g): a build's FROM of a Debian base that is not stored yet runs mmdebstrap on the
 * host, which the build's time must bound too. The mirror is the test's, on loopback, and trickles: every request
 * is answered 200 with a long body sent a byte every half second, so apt never times out. Given 5 s, the base
 * is not built: DEADLINE_EXCEEDED well before the trickle would end, mmdebstrap and its children gone, no mount
 * of its chroot left and no image stored. Before, the timeout was looked at only once mmdebstrap's output ended,
 * that is once it exited: it ran as long as the mirror trickled. Needs root and mmdebstrap (CI has both).
 */
class DebianDeadlineTest {
    @TempDir
    Path tmp;

    @Test
    void aDebianBaseBuildStopsAtItsTimeAgainstATricklingMirror() throws Exception {
        AtomicInteger requests = new AtomicInteger();
        List<Socket> clients = new CopyOnWriteArrayList<>();
        try (ServerSocket mirror = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"))) {
            Thread server = new Thread(() -> {
                while (!mirror.isClosed()) {
                    try {
                        Socket c = mirror.accept();
                        clients.add(c);
                        Thread t = new Thread(() -> trickle(c, requests));
                        t.setDaemon(true);
                        t.start();
                    } catch (IOException e) {
                        return;
                    }
                }
            });
            server.setDaemon(true);
            server.start();
            ImageService images = new ImageService(tmp.resolve("images"),
                    "http://127.0.0.1:" + mirror.getLocalPort() + "/debian");
            Instant began = Instant.now();
            long t0 = System.nanoTime();
            assertThatThrownBy(() -> images.require("debian:bookworm", new ImageListener() { }, Duration.ofSeconds(5)))
                    .isInstanceOfSatisfying(SandboxException.class,
                            e -> assertThat(e.code()).as(e.getMessage()).isEqualTo(ErrorCode.DEADLINE_EXCEEDED));
            Duration took = Duration.ofNanos(System.nanoTime() - t0);
            assertThat(requests.get()).as("mmdebstrap asked the trickling mirror").isPositive();
            assertThat(took).as("stopped at its 5 s, with the grace to unmount").isLessThan(Duration.ofSeconds(40));
            assertThat(images.find("debian:bookworm")).isEmpty();
            List<String> left = ProcessHandle.allProcesses().filter(ProcessHandle::isAlive)
                    .filter(p -> p.info().startInstant().map(s -> !s.isBefore(began)).orElse(false))
                    .map(p -> p.info().commandLine().orElse(""))
                    .filter(c -> c.contains("mmdebstrap") || c.contains("apt") || c.contains(tmp.toString())).toList();
            assertThat(left).as("processes of the stopped build").isEmpty();
            assertThat(Files.readAllLines(Path.of("/proc/self/mountinfo")))
                    .as("mounts of its chroot").noneMatch(l -> l.contains("mmdebstrap."));
        } finally {
            for (Socket c : clients) {
                c.close();
            }
        }
    }

    /** Reads a request head, answers 200 with a 5 MB body (apt takes no Release over 10 MB) and sends it a byte every 500 ms. */
    private static void trickle(Socket c, AtomicInteger requests) {
        try (c; InputStream in = c.getInputStream(); OutputStream out = c.getOutputStream()) {
            int matched = 0;
            while (matched < 4) {
                int b = in.read();
                if (b < 0) {
                    return;
                }
                matched = b == "\r\n\r\n".charAt(matched) ? matched + 1 : b == '\r' ? 1 : 0;
            }
            requests.incrementAndGet();
            out.write(("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: " + 5_000_000
                    + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            for (int i = 0; i < 5_000_000; i++) {
                out.write('x');
                out.flush();
                Thread.sleep(500);
            }
        } catch (IOException | InterruptedException e) {
            // the client went away
        }
    }
}
