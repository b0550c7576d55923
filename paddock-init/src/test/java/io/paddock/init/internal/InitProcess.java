package io.paddock.init.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** The real init binary as a plain child process; its stdin/stdout pipes are the channel. */
final class InitProcess implements AutoCloseable {
    static final Path BINARY = Path.of("target/classes/io/paddock/init/paddock-init");

    final Process process;
    final Path workdir;
    final Path log;
    final OutputStream toInit;
    final InputStream fromInit;
    final WritableByteChannel writeChannel;
    final ReadableByteChannel readChannel;
    InitClient client;

    InitProcess(Path dir, String... ignoredSignals) throws IOException {
        Files.createDirectories(dir);
        workdir = dir.resolve("work");
        log = dir.resolve("init.log");
        List<String> argv = new ArrayList<>();
        if (ignoredSignals.length > 0) {
            // As a runtime started from a shell that ignores them would: the init inherits them ignored.
            argv.addAll(List.of("/bin/sh", "-c", "trap '' " + String.join(" ", ignoredSignals) + "; exec \"$0\" \"$@\""));
        }
        argv.addAll(List.of(BINARY.toAbsolutePath().toString(), "--uid=" + uid(), "--gid=" + gid(), "--workdir=" + workdir));
        process = new ProcessBuilder(argv).redirectError(log.toFile()).start();
        toInit = process.getOutputStream();
        fromInit = process.getInputStream();
        writeChannel = flushing(toInit);
        readChannel = Channels.newChannel(fromInit);
    }

    static InitProcess started(Path dir, String... ignoredSignals) throws IOException {
        InitProcess p = new InitProcess(dir, ignoredSignals);
        p.client = p.attach(nonce());
        return p;
    }

    InitClient attach(byte[] nonce) {
        InitClient.writeHello(writeChannel, nonce, false);
        return InitClient.attach(readChannel, writeChannel, nonce, Duration.ofSeconds(5), "test");
    }

    static byte[] nonce() {
        byte[] n = new byte[16];
        new SecureRandom().nextBytes(n);
        return n;
    }

    /** Process's stdin is buffered: every write must be flushed to reach the init. */
    static WritableByteChannel flushing(OutputStream os) {
        return new WritableByteChannel() {
            private boolean open = true;

            @Override
            public int write(ByteBuffer src) throws IOException {
                int n = src.remaining();
                byte[] b = new byte[n];
                src.get(b);
                os.write(b);
                os.flush();
                return n;
            }

            @Override
            public boolean isOpen() {
                return open;
            }

            @Override
            public void close() throws IOException {
                open = false;
                os.close();
            }
        };
    }

    static int uid() {
        return idField("Uid:");
    }

    static int gid() {
        return idField("Gid:");
    }

    private static int idField(String key) {
        try {
            for (String l : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (l.startsWith(key)) {
                    return Integer.parseInt(l.substring(key.length()).trim().split("\\s+")[0]);
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        throw new IllegalStateException("no " + key);
    }

    String logText() {
        try {
            return Files.readString(log);
        } catch (IOException e) {
            return "";
        }
    }

    @Override
    public void close() throws InterruptedException {
        try {
            if (client != null && client.isOpen()) {
                client.shutdown();
            }
        } catch (RuntimeException ignored) {
            // already gone
        }
        if (!process.waitFor(5, TimeUnit.SECONDS)) {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
            process.waitFor(5, TimeUnit.SECONDS);
        }
        if (client != null) {
            client.close();
        }
    }
}
