package io.paddock.bench.host;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * The native helper {@code pbench} (src/main/resources/io/paddock/bench/pbench.c), compiled at bench time
 * with gcc (static, so that the same binary also runs inside a sandbox) and cached by content hash.
 */
public final class Native {
    private final Path binary;

    private Native(Path binary) {
        this.binary = binary;
    }

    /** Builds (or finds the cached build of) the helper under {@code cacheDir}. */
    public static Native build(Path cacheDir) throws IOException {
        byte[] source;
        try (InputStream in = Native.class.getResourceAsStream("/io/paddock/bench/pbench.c")) {
            if (in == null) {
                throw new IOException("pbench.c is missing from the jar");
            }
            source = in.readAllBytes();
        }
        String hash;
        try {
            hash = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(source)).substring(0, 12);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IOException(e);
        }
        Files.createDirectories(cacheDir);
        Path bin = cacheDir.resolve("pbench-" + hash);
        if (Files.isExecutable(bin)) {
            return new Native(bin);
        }
        String cc = Host.onPath("gcc") ? "gcc" : Host.onPath("musl-gcc") ? "musl-gcc" : null;
        if (cc == null) {
            throw new IOException("no C compiler for the native spawn helper (apt-get install -y gcc)");
        }
        Path src = cacheDir.resolve("pbench-" + hash + ".c");
        Files.write(src, source);
        Path tmp = cacheDir.resolve("pbench-" + hash + ".tmp");
        Host.Result r = Host.run(Duration.ofMinutes(2), cc, "-O2", "-static", "-o", tmp.toString(), src.toString());
        if (!r.ok()) {
            throw new IOException(cc + " failed to build the native helper: " + Host.shorten(r.output()));
        }
        Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rwxr-xr-x"));
        Files.move(tmp, bin, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        return new Native(bin);
    }

    public Path binary() {
        return binary;
    }

    public byte[] bytes() throws IOException {
        return Files.readAllBytes(binary);
    }

    /** n posix_spawns of argv; returns {first-byte ns[], exit ns[]}. */
    public long[][] spawn(int n, String... argv) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(binary.toString(), "spawn", Integer.toString(n)));
        cmd.addAll(List.of(argv));
        Host.Result r = Host.run(Duration.ofMinutes(10), cmd);
        if (!r.ok()) {
            throw new IOException("native spawn failed: " + Host.shorten(r.output()));
        }
        List<String> lines = r.output().lines().filter(l -> !l.isBlank()).toList();
        long[] first = new long[lines.size()];
        long[] exit = new long[lines.size()];
        for (int i = 0; i < lines.size(); i++) {
            String[] f = lines.get(i).trim().split(" ");
            first[i] = Long.parseLong(f[0]);
            exit[i] = Long.parseLong(f[1]);
        }
        return new long[][] {first, exit};
    }

    /** Serial spawns of argv for the given time; returns spawns per second. */
    public double rate(double seconds, String... argv) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(binary.toString(), "rate", Double.toString(seconds)));
        cmd.addAll(List.of(argv));
        Host.Result r = Host.run(Duration.ofMinutes(15), cmd);
        if (!r.ok()) {
            throw new IOException("native rate failed: " + Host.shorten(r.output()));
        }
        String[] f = r.output().trim().split(" ");
        return Long.parseLong(f[0]) / (Long.parseLong(f[1]) / 1e9);
    }

    /** Host: ns per getppid call. */
    public double getppid(long n) throws IOException {
        Host.Result r = Host.run(Duration.ofMinutes(2), binary.toString(), "getppid", Long.toString(n));
        if (!r.ok()) {
            throw new IOException(r.output());
        }
        return Double.parseDouble(r.output().trim());
    }

    /** Host: ns for the CPU-bound loop of n iterations. */
    public long spin(long n) throws IOException {
        Host.Result r = Host.run(Duration.ofMinutes(5), binary.toString(), "spin", Long.toString(n));
        if (!r.ok()) {
            throw new IOException(r.output());
        }
        return Long.parseLong(r.output().trim());
    }
}
