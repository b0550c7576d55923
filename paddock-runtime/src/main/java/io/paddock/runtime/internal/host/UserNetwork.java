package io.paddock.runtime.internal.host;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * User-mode networking for one sandbox: {@code slirp4netns} gives the network namespace of a running
 * sandbox a {@code tap0} with an address (10.0.2.100), a default route and a DNS forwarder (10.0.2.3) that
 * asks the host's resolver. Connections leave as the host's own, so the sandbox reaches what the host
 * reaches, except the host's loopback ({@code --disable-host-loopback}). Image builds use it for their
 * RUN steps, as {@code docker build} has network; sandboxes have none.
 */
public final class UserNetwork implements AutoCloseable {
    /** What the sandbox's {@code /etc/resolv.conf} must say. */
    public static final String RESOLV_CONF = "nameserver 10.0.2.3\n";
    private static final long READY_TIMEOUT_MS = 10_000;

    private final Process process;

    private UserNetwork(Process process) {
        this.process = process;
    }

    /** Attaches to the network namespace of host process {@code pid} and waits until its default route is up. */
    public static UserNetwork attach(long pid) {
        Path slirp = HostProcess.locate("slirp4netns", "PADDOCK_SLIRP4NETNS",
                "slirp4netns is not installed; image builds give their RUN steps network with it. Install it:"
                        + " sudo apt-get install -y slirp4netns");
        ProcessBuilder pb = new ProcessBuilder(List.of(slirp.toString(), "--configure", "--mtu=65520",
                "--disable-host-loopback", Long.toString(pid), "tap0"))
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        pb.environment().clear();
        pb.environment().putAll(HostProcess.BASE_ENV);
        Process p;
        try {
            p = pb.start();
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "cannot run slirp4netns: " + e.getMessage(), e);
        }
        UserNetwork net = new UserNetwork(p);
        long deadline = System.currentTimeMillis() + READY_TIMEOUT_MS;
        Path routes = Path.of("/proc", Long.toString(pid), "net", "route");
        while (System.currentTimeMillis() < deadline) {
            try {
                if (Files.readAllLines(routes).stream().anyMatch(l -> l.startsWith("tap0\t00000000"))) {
                    return net;
                }
            } catch (IOException e) {
                net.close();
                throw new SandboxException(ErrorCode.UNAVAILABLE, "the sandbox went away while its network was set up");
            }
            if (!p.isAlive()) {
                throw new SandboxException(ErrorCode.UNAVAILABLE, "slirp4netns exited with " + p.exitValue()
                        + " before the sandbox's network was up");
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                net.close();
                throw new SandboxException(ErrorCode.UNAVAILABLE, "interrupted while setting up a network");
            }
        }
        net.close();
        throw new SandboxException(ErrorCode.UNAVAILABLE, "slirp4netns did not bring the sandbox's network up within "
                + READY_TIMEOUT_MS + " ms");
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
