package io.paddock.bench.host;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** Debian's {@code docker-registry} on a free 127.0.0.1 port, storing under {@code dir}: P11's registry. */
public final class LoopbackRegistry implements AutoCloseable {
    private final Process process;
    private final String address;

    private LoopbackRegistry(Process process, String address) {
        this.process = process;
        this.address = address;
    }

    public static LoopbackRegistry start(Path dir) throws IOException, InterruptedException {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("config.yml"), "version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: "
                + dir.resolve("data") + "\nhttp:\n  addr: 127.0.0.1:" + port + "\n");
        Process p = new ProcessBuilder("docker-registry", "serve", dir.resolve("config.yml").toString())
                .redirectErrorStream(true).redirectOutput(dir.resolve("log").toFile()).start();
        LoopbackRegistry r = new LoopbackRegistry(p, "127.0.0.1:" + port);
        long until = System.nanoTime() + 20_000_000_000L;
        while (System.nanoTime() < until) {
            try (Socket s = new Socket("127.0.0.1", port)) {
                return r;
            } catch (IOException e) {
                Thread.sleep(100);
            }
        }
        r.close();
        throw new IOException("the registry did not start on port " + port + ": see " + dir.resolve("log"));
    }

    /** {@code 127.0.0.1:PORT}. */
    public String address() {
        return address;
    }

    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }
}
