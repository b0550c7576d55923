package io.paddock.engine.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Who owns a sandbox: a token {@code <pid>.<start-time>.<nonce>} naming the engine (process and instance)
 * that created it, or a daemon's {@code daemon:<nonce>} ({@link #persistent}). A sandbox whose owner is gone
 * ({@link #isAlive}) is an orphan the reconciler may remove. Tokens of engines in this JVM are tracked so that two engines in one
 * process never reap each other's sandboxes.
 */
final class EngineIdentity {
    private static final Set<String> LIVE_IN_THIS_JVM = ConcurrentHashMap.newKeySet();
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final String DAEMON = "daemon:";
    private static final String ID_FILE = "engine-id";
    static final String OWNERS_DIR = "owners";

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
     * engine restarted adopts its sandboxes. Such tokens start with {@code daemon:}. The daemon's owner record
     * ({@link #ownerRecord}) in the state directory, written here before it makes any sandbox, names its data
     * directory and its process, so that other engines can tell when it is gone for good ({@link #isAlive}).
     */
    static EngineIdentity persistent(Path dataDir, Path stateDir) {
        Path file = dataDir.resolve(ID_FILE);
        String token = null;
        try {
            if (Files.exists(file)) {
                String held = Files.readString(file).trim();
                if (held.startsWith(DAEMON)) {
                    token = held;
                }
            }
            if (token == null) {
                byte[] nonce = new byte[16];
                RANDOM.nextBytes(nonce);
                token = DAEMON + HexFormat.of().formatHex(nonce);
                Files.writeString(file, token + "\n");
            }
        } catch (IOException e) {
            throw new io.paddock.SandboxException(io.paddock.ErrorCode.UNAVAILABLE,
                    "cannot read or write the engine identity " + file + ": " + e.getMessage(), e);
        }
        Optional<Path> record = ownerRecord(token, stateDir);
        if (record.isPresent()) {
            long pid = ProcessHandle.current().pid();
            String text = "dataDir " + dataDir.toAbsolutePath().normalize() + "\nprocess " + pid + "." + startTime(pid) + "\n";
            try {
                Files.createDirectories(record.get().getParent());
                Path tmp = Files.createTempFile(record.get().getParent(), ".owner", ".tmp");
                try {
                    Files.writeString(tmp, text);
                    Files.move(tmp, record.get(), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                } finally {
                    Files.deleteIfExists(tmp);
                }
            } catch (IOException e) {
                throw new io.paddock.SandboxException(io.paddock.ErrorCode.UNAVAILABLE,
                        "cannot write the daemon's owner record " + record.get() + ": " + e.getMessage(), e);
            }
        }
        LIVE_IN_THIS_JVM.add(token);
        return new EngineIdentity(token);
    }

    String token() {
        return token;
    }

    void retire() {
        LIVE_IN_THIS_JVM.remove(token);
    }

    /**
     * Where a daemon's owner record is: {@code <state>/owners/<nonce>}, two lines {@code dataDir <path>} and
     * {@code process <pid>.<start-time>}. Empty for a token that is not a daemon's of this form.
     */
    static Optional<Path> ownerRecord(String token, Path stateDir) {
        if (!token.startsWith(DAEMON) || !token.substring(DAEMON.length()).matches("[0-9a-f]{32}")) {
            return Optional.empty();
        }
        return Optional.of(stateDir.resolve(OWNERS_DIR).resolve(token.substring(DAEMON.length())));
    }

    /** Whether {@code token} is a daemon's ({@link #persistent}): its sandboxes outlive its process. */
    static boolean isDaemon(String token) {
        return token.startsWith(DAEMON);
    }

    /**
     * Whether the engine that wrote this token may still be running, or (a daemon) come back for its sandboxes.
     * An embedded engine is gone when its process is. A daemon is gone for good only when both its process is gone
     * and its data directory no longer holds its identity (removed, or made anew with another): a daemon stopped
     * with its data directory in place adopts its sandboxes when it starts again. Unknown or unreadable tokens and
     * daemons without an owner record (made before owner records were) count as alive: reaping a live engine's
     * sandbox is far worse than leaving a dead one's for its owner.
     */
    static boolean isAlive(String token, Path stateDir) {
        if (token.startsWith(DAEMON)) {
            return daemonAlive(token, stateDir);
        }
        String[] parts = token.split("\\.");
        if (parts.length != 3) {
            return true;
        }
        return processAlive(token, parts[0], parts[1]);
    }

    private static boolean daemonAlive(String token, Path stateDir) {
        Optional<Path> record = ownerRecord(token, stateDir);
        if (record.isEmpty()) {
            return true;
        }
        String dataDir = null;
        String process = null;
        try {
            for (String line : Files.readAllLines(record.get())) {
                if (line.startsWith("dataDir ")) {
                    dataDir = line.substring("dataDir ".length());
                } else if (line.startsWith("process ")) {
                    process = line.substring("process ".length());
                }
            }
        } catch (IOException e) {
            return true; // no record (a daemon from before them), or one that cannot be read
        }
        String[] proc = process == null ? new String[0] : process.split("\\.");
        if (dataDir == null || proc.length != 2 || processAlive(token, proc[0], proc[1])) {
            return true;
        }
        try {
            return Files.readString(Path.of(dataDir).resolve(ID_FILE)).trim().equals(token);
        } catch (NoSuchFileException e) {
            return false; // the data directory or its identity is gone: no daemon can come back as this one
        } catch (IOException | RuntimeException e) {
            return true;
        }
    }

    /** Whether the process {@code pid} started at {@code start} runs (in this JVM: whether the engine {@code token} is open). */
    private static boolean processAlive(String token, String pidText, String start) {
        long pid;
        try {
            pid = Long.parseLong(pidText);
        } catch (NumberFormatException e) {
            return true;
        }
        if (pid == ProcessHandle.current().pid()) {
            return LIVE_IN_THIS_JVM.contains(token);
        }
        String now = startTime(pid);
        return !now.isEmpty() && now.equals(start);
    }

    /**
     * Removes the owner records of daemons gone for good ({@link #isAlive}) that no sandbox on the host names any
     * more ({@code named}): their last sandboxes were reclaimed.
     */
    static void collectOwnerRecords(Path stateDir, Set<String> named) {
        try (java.util.stream.Stream<Path> files = Files.list(stateDir.resolve(OWNERS_DIR))) {
            for (Path f : files.toList()) {
                String token = DAEMON + f.getFileName();
                if (ownerRecord(token, stateDir).isPresent() && !named.contains(token) && !isAlive(token, stateDir)) {
                    Files.deleteIfExists(f);
                }
            }
        } catch (IOException e) {
            // no owners directory yet, or one removed meanwhile: nothing to collect
        }
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
