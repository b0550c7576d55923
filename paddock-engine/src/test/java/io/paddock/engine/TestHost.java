package io.paddock.engine;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A test host in a network namespace this test makes: {@code 198.18.N.2}, reached from the host through a
 * veth pair ({@code 198.18.N.1} on the host's side), serving a directory over HTTP on port 8080 with
 * busybox's httpd. The only place besides loopback that tests send traffic to. Closing removes the
 * namespace, the veth pair and the server.
 */
final class TestHost implements AutoCloseable {
    final String address;
    final Path www;
    private final String ns;
    private final Process httpd;

    TestHost(int subnet) throws IOException, InterruptedException {
        this.ns = "pdt" + subnet + "x" + ProcessHandle.current().pid() % 100_000; // + "h"/"n": within IFNAMSIZ
        this.address = "198.18." + subnet + ".2";
        this.www = Files.createTempDirectory("paddock-www");
        sh("ip netns add " + ns);
        sh("ip link add " + ns + "h type veth peer name " + ns + "n");
        sh("ip link set " + ns + "n netns " + ns);
        sh("ip addr add 198.18." + subnet + ".1/24 dev " + ns + "h && ip link set " + ns + "h up");
        sh("ip -n " + ns + " addr add " + address + "/24 dev " + ns + "n && ip -n " + ns + " link set " + ns
                + "n up && ip -n " + ns + " link set lo up");
        this.httpd = new ProcessBuilder("ip", "netns", "exec", ns, "busybox", "httpd", "-f", "-p", address + ":8080",
                "-h", www.toString()).inheritIO().start();
        Thread.sleep(300);
    }

    String url(String path) {
        return "http://" + address + ":8080/" + path;
    }

    static void sh(String command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("sh", "-c", command).inheritIO().start();
        assertThat(p.waitFor()).as(command).isZero();
    }

    @Override
    public void close() throws IOException, InterruptedException {
        httpd.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        sh("ip link del " + ns + "h 2>/dev/null; ip netns del " + ns + " 2>/dev/null; true");
        io.paddock.image.internal.store.ImageStore.deleteTree(www);
    }
}
