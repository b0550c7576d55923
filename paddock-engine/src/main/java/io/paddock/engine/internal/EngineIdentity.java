package io.paddock.engine.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Who owns a sandbox: a token {@code <pid>.<start-time>.<nonce>} naming the engine (process and instance)
 * that created it. A sandbox whose owner process is gone (or restarted: the start time differs) is an
 * orphan the reconciler may remove. Tokens of engines in this JVM are tracked so that two engines in one
 * process never reap each other's sandboxes.
 */
final class EngineIdentity {
    private static final Set<String> LIVE_IN_THIS_JVM = ConcurrentHashMap.newKeySet();
    private static final SecureRandom RANDOM = new SecureRandom();

    private final String token;

    private EngineIdentity(String token) {
        this.token = token;
    }

    static EngineIdentity create() {
        long pid = ProcessHandle.current().pid();
        byte[] nonce = new byte[8];
        RANDOM.nextBytes(nonce);
        String token = pid + "." + startTime(pid) + "." + HexFormat.of().formatHex(nonce);
        LIVE_IN_THIS_JVM.add(token);
        return new EngineIdentity(token);
    }

    /**
     * The identity of a long-lived engine (the daemon), kept in its data directory so that the same
     * engine restarted adopts its sandboxes. Such tokens start with {@code daemon:} and are never reaped
     * by other engines: only the owner knows whether it will come back.
     */
    static EngineIdentity persistent(Path dataDir) {
        Path file = dataDir.resolve("engine-id");
        try {
            if (Files.exists(file)) {
                String token = Files.readString(file).trim();
                if (token.startsWith("daemon:")) {
                    return new EngineIdentity(token);
                }
            }
            byte[] nonce = new byte[16];
            RANDOM.nextBytes(nonce);
            String token = "daemon:" + HexFormat.of().formatHex(nonce);
            Files.writeString(file, token + "\n");
            return new EngineIdentity(token);
        } catch (IOException e) {
            throw new io.paddock.SandboxException(io.paddock.ErrorCode.UNAVAILABLE,
                    "cannot read or write the engine identity " + file + ": " + e.getMessage(), e);
        }
    }

    String token() {
        return token;
    }

    void retire() {
        LIVE_IN_THIS_JVM.remove(token);
    }

    /**
     * Whether the engine that wrote this token may still be running. Unknown or unreadable tokens count as
     * alive: reaping a live engine's sandbox is far worse than leaving a dead one's for its owner.
     */
    static boolean isAlive(String token) {
        if (token.startsWith("daemon:")) {
            return true;
        }
        String[] parts = token.split("\\.");
        if (parts.length != 3) {
            return true;
        }
        long pid;
        try {
            pid = Long.parseLong(parts[0]);
        } catch (NumberFormatException e) {
            return true;
        }
        if (pid == ProcessHandle.current().pid()) {
            return LIVE_IN_THIS_JVM.contains(token);
        }
        String start = startTime(pid);
        return !start.isEmpty() && start.equals(parts[1]);
    }

    /** Field 22 of /proc/PID/stat (start time in clock ticks since boot), or "" if the process is gone. */
    static String startTime(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return f[19];
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }
}
