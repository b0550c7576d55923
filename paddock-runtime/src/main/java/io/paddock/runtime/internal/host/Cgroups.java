package io.paddock.runtime.internal.host;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The host's cgroup layout, detected from {@code /proc/self/mountinfo}: cgroup v2 (unified), or v1 with
 * its per-controller hierarchies (possibly with an empty v2 hierarchy beside them, the "hybrid" layout).
 * Reads counters and, as the fallback when the runtime's own state is lost, kills and removes a
 * sandbox's cgroups by path.
 */
public final class Cgroups {
    public enum Version { V1, V2 }

    private final Version version;
    /** Mount points of every hierarchy (for v1 keyed by controller list, e.g. "memory", "name=systemd"). */
    private final Map<String, Path> hierarchies;

    Cgroups(Version version, Map<String, Path> hierarchies) {
        this.version = version;
        this.hierarchies = Map.copyOf(hierarchies);
    }

    public static Cgroups detect() {
        try {
            return parse(Files.readAllLines(Path.of("/proc/self/mountinfo"), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "cannot read /proc/self/mountinfo: " + e);
        }
    }

    static Cgroups parse(List<String> mountinfo) {
        Map<String, Path> v1 = new LinkedHashMap<>();
        Path unified = null;
        for (String line : mountinfo) {
            String[] halves = line.split(" - ", 2);
            if (halves.length != 2) {
                continue;
            }
            String[] left = halves[0].split(" ");
            String[] right = halves[1].split(" ");
            if (left.length < 5 || right.length < 3) {
                continue;
            }
            Path mountPoint = Path.of(left[4]);
            String fsType = right[0];
            if (fsType.equals("cgroup2")) {
                unified = mountPoint;
            } else if (fsType.equals("cgroup")) {
                List<String> controllers = new ArrayList<>();
                for (String opt : right[2].split(",")) {
                    if (opt.startsWith("name=") || List.of("cpu", "cpuacct", "cpuset", "memory", "devices", "freezer",
                            "net_cls", "net_prio", "blkio", "perf_event", "hugetlb", "pids", "rdma", "misc").contains(opt)) {
                        controllers.add(opt);
                    }
                }
                if (!controllers.isEmpty()) {
                    v1.put(String.join(",", controllers), mountPoint);
                }
            }
        }
        if (v1.isEmpty()) {
            if (unified == null) {
                throw new SandboxException(ErrorCode.FAILED_PRECONDITION,
                        "no cgroup filesystem is mounted; Paddock needs cgroups (v1 or v2) to enforce limits");
            }
            return new Cgroups(Version.V2, Map.of("", unified));
        }
        if (unified != null) {
            v1.put("unified", unified);
        }
        return new Cgroups(Version.V1, v1);
    }

    public Version version() {
        return version;
    }

    /**
     * Keeps the kernel's cgroup attach lock warm until the handle is closed, for a runtime about to move its
     * container's first processes into new cgroups. Moving a process between cgroups (a write to
     * {@code cgroup.procs}) takes the global {@code cgroup_threadgroup_rwsem} for writing, and the first writer after
     * about 10 ms without one waits for an RCU grace period: 6–15 ms on the hosts measured, on the critical path of
     * every cold create (runc's and runsc's first {@code cgroup.procs} writes; BENCHMARKS.md, "Cold create and
     * churn"). While a handle is open a worker moves this process into the cgroup it is already in (a move the kernel
     * skips, after taking the lock) every {@value #WARM_INTERVAL_MS} ms: the grace period passes while the engine
     * makes the root and the bundle and the runtime starts, and the runtime's writes find the lock warm. Best effort:
     * an engine that cannot write its own cgroup leaves the wait to the runtime.
     */
    public Warm attachLockWarm() {
        if (!warmable) {
            return () -> { };
        }
        synchronized (warmLock) {
            warmHolders++;
            if (!warmerRunning) {
                warmerRunning = true;
                try {
                    io.paddock.internal.Workers.pool().execute(this::warm);
                } catch (java.util.concurrent.RejectedExecutionException e) {
                    warmerRunning = false;
                }
            }
        }
        java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();
        return () -> {
            if (closed.compareAndSet(false, true)) {
                synchronized (warmLock) {
                    warmHolders--;
                }
            }
        };
    }

    private static final long WARM_INTERVAL_MS = 5;
    private final Object warmLock = new Object();
    private int warmHolders; // guarded by warmLock
    private boolean warmerRunning; // guarded by warmLock
    private volatile boolean warmable = true;

    /**
     * The warmer: while anyone holds the lock warm, a no-op move of this process every WARM_INTERVAL_MS into the
     * cgroup /proc/self/cgroup says it is in now (read each time: a process moved meanwhile is never moved back).
     */
    private void warm() {
        byte[] pid = Long.toString(ProcessHandle.current().pid()).getBytes(StandardCharsets.US_ASCII);
        try {
            while (warmWanted()) {
                Optional<Path> procs = ownProcs();
                if (procs.isEmpty()) {
                    warmable = false;
                    break;
                }
                try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(procs.get(),
                        java.nio.file.StandardOpenOption.WRITE)) {
                    ch.write(java.nio.ByteBuffer.wrap(pid));
                }
                Thread.sleep(WARM_INTERVAL_MS);
            }
            if (warmable) {
                return;
            }
        } catch (IOException e) {
            warmable = false; // not ours to write (an unprivileged engine): the runtime pays the wait
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        synchronized (warmLock) {
            warmerRunning = false;
        }
    }

    /** Whether anyone holds the lock warm; if not, the warmer ends (and says so) in the same step. */
    private boolean warmWanted() {
        synchronized (warmLock) {
            if (warmHolders == 0) {
                warmerRunning = false;
                return false;
            }
            return true;
        }
    }

    /** Whether the warmer runs now (for tests). */
    boolean warming() {
        synchronized (warmLock) {
            return warmerRunning;
        }
    }

    /** An {@link #attachLockWarm} handle. */
    public interface Warm extends AutoCloseable {
        @Override
        void close();
    }

    /** The {@code cgroup.procs} of this process's own cgroup in one of the hierarchies, from /proc/self/cgroup. */
    private Optional<Path> ownProcs() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/cgroup"), StandardCharsets.UTF_8)) {
                String[] f = line.split(":", 3);
                if (f.length != 3) {
                    continue;
                }
                Path mount = hierarchies.get(f[1].isEmpty() ? (version == Version.V2 ? "" : "unified") : f[1]);
                if (mount == null) {
                    continue;
                }
                Path procs = mount.resolve(f[2].startsWith("/") ? f[2].substring(1) : f[2]).resolve("cgroup.procs");
                if (Files.isWritable(procs)) {
                    return Optional.of(procs);
                }
            }
        } catch (IOException | RuntimeException e) {
            // no /proc/self/cgroup: nothing to keep warm
        }
        return Optional.empty();
    }

    /** Every directory a sandbox with this cgroups path has (or would have) on the host. */
    public List<Path> dirs(String cgroupsPath) {
        String rel = relative(cgroupsPath);
        List<Path> out = new ArrayList<>();
        for (Path mount : hierarchies.values()) {
            out.add(mount.resolve(rel));
        }
        return out;
    }

    /** The directory holding the memory controller's files for this path. */
    public Optional<Path> memoryDir(String cgroupsPath) {
        return filesOf("memory", cgroupsPath);
    }

    /** Where a controller's files for this path are: its v1 hierarchy's directory, or the one v2 directory. */
    private Optional<Path> filesOf(String controller, String cgroupsPath) {
        return version == Version.V2 ? Optional.of(hierarchies.get("").resolve(relative(cgroupsPath)))
                : controllerDir(controller, cgroupsPath);
    }

    /**
     * The file {@link #oomKillsIn} reads for this cgroup, where the kernel counts how many times its OOM killer
     * killed a process in it: empty when it has no memory controller.
     */
    public Optional<Path> oomKillsFile(String cgroupsPath) {
        return memoryDir(cgroupsPath).map(dir -> dir.resolve(version == Version.V2 ? "memory.events" : "memory.oom_control"));
    }

    /**
     * The {@code oom_kill} count in a cgroup's {@link #oomKillsFile} (0 if unknown or gone). Parsed from the bytes:
     * every exec reads it, and a line reader with its decoder cost about 40 µs of an exec's start.
     */
    public static long oomKillsIn(Path file) {
        return counterIn(file, OOM_KILL);
    }

    /**
     * How many times a fork or clone in this cgroup failed at its {@code pids.max} (the {@code max} count of
     * {@code pids.events}, where the kernel keeps it on v1 and v2); 0 if unknown or gone.
     */
    public long pidsLimitHits(String cgroupsPath) {
        return filesOf("pids", cgroupsPath).map(d -> counterIn(d.resolve("pids.events"), PIDS_MAX)).orElse(0L);
    }

    private static String relative(String cgroupsPath) {
        return cgroupsPath.startsWith("/") ? cgroupsPath.substring(1) : cgroupsPath;
    }

    /** The number after {@code key} at the start of a line of {@code file} (0 if unknown or gone). */
    private static long counterIn(Path file, byte[] key) {
        byte[] b;
        try {
            b = Files.readAllBytes(file);
        } catch (IOException e) {
            return 0;
        }
        for (int line = 0; line < b.length; ) {
            boolean match = line + key.length <= b.length;
            for (int i = 0; match && i < key.length; i++) {
                match = b[line + i] == key[i];
            }
            if (match) {
                long n = 0;
                for (int i = line + key.length; i < b.length && b[i] >= '0' && b[i] <= '9'; i++) {
                    n = n * 10 + (b[i] - '0');
                }
                return n;
            }
            while (line < b.length && b[line] != '\n') {
                line++;
            }
            line++;
        }
        return 0;
    }

    private static final byte[] OOM_KILL = "oom_kill ".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] PIDS_MAX = "max ".getBytes(StandardCharsets.US_ASCII);

    /**
     * The cgroup's counters: memory charged now and its limit, CPU time used, tasks. Empty when the sandbox has no
     * memory cgroup (it is gone); a counter another controller keeps reads as zero when that one is missing.
     */
    public Optional<io.paddock.ResourceUsage> usage(String cgroupsPath) {
        Optional<Path> memoryDir = memoryDir(cgroupsPath);
        if (memoryDir.isEmpty()) {
            return Optional.empty();
        }
        Path mem = memoryDir.get();
        OptionalLong memory = readLong(mem.resolve(version == Version.V2 ? "memory.current" : "memory.usage_in_bytes"));
        if (memory.isEmpty()) {
            return Optional.empty();
        }
        // v1 says "no limit" with a huge number (PAGE_COUNTER_MAX pages), v2 with "max"
        OptionalLong limit = readLong(mem.resolve(version == Version.V2 ? "memory.max" : "memory.limit_in_bytes"));
        Optional<io.paddock.ByteSize> memoryLimit = limit.isPresent() && limit.getAsLong() < (1L << 62)
                ? Optional.of(io.paddock.ByteSize.bytes(limit.getAsLong())) : Optional.empty();
        long cpuNanos;
        if (version == Version.V2) {
            cpuNanos = statField(mem.resolve("cpu.stat"), "usage_usec") * 1000;
        } else {
            cpuNanos = controllerDir("cpuacct", cgroupsPath).map(d -> readLong(d.resolve("cpuacct.usage")).orElse(0)).orElse(0L);
        }
        long tasks = filesOf("pids", cgroupsPath).map(d -> readLong(d.resolve("pids.current")).orElse(0)).orElse(0L);
        return Optional.of(new io.paddock.ResourceUsage(io.paddock.ByteSize.bytes(Math.max(0, memory.getAsLong())),
                memoryLimit, java.time.Duration.ofNanos(Math.max(0, cpuNanos)), Math.max(0, tasks)));
    }

    /** A v1 controller's directory for this path. */
    private Optional<Path> controllerDir(String controller, String cgroupsPath) {
        String rel = relative(cgroupsPath);
        return hierarchies.entrySet().stream()
                .filter(e -> List.of(e.getKey().split(",")).contains(controller))
                .map(e -> e.getValue().resolve(rel)).findFirst();
    }

    /** A file holding one number; empty when it is missing or says something else ("max"). */
    private static OptionalLong readLong(Path file) {
        try {
            return OptionalLong.of(Long.parseLong(Files.readString(file, StandardCharsets.UTF_8).trim()));
        } catch (IOException | NumberFormatException e) {
            return OptionalLong.empty();
        }
    }

    /** A {@code key value} line's value in a flat-keyed file such as cpu.stat; 0 when missing. */
    private static long statField(Path file, String key) {
        try {
            for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
                if (line.startsWith(key + " ")) {
                    return Long.parseLong(line.substring(key.length() + 1).trim());
                }
            }
        } catch (IOException | NumberFormatException e) {
            return 0;
        }
        return 0;
    }

    /**
     * Whether any process is left in the sandbox's cgroups: in any hierarchy, in the directory or any below it (a
     * runsc exec's own). True too when a directory cannot be read: a caller that reclaims what is empty must not
     * take a sandbox it cannot see into for one that ended.
     */
    public boolean populated(String cgroupsPath) {
        for (Path dir : dirs(cgroupsPath)) {
            try (java.util.stream.Stream<Path> walk = Files.walk(dir)) {
                for (Path d : walk.filter(Files::isDirectory).toList()) {
                    try (java.io.InputStream in = Files.newInputStream(d.resolve("cgroup.procs"))) {
                        if (in.read() >= 0) {
                            return true;
                        }
                    } catch (NoSuchFileException e) {
                        // removed meanwhile
                    }
                }
            } catch (NoSuchFileException e) {
                // no directory in this hierarchy
            } catch (IOException | java.io.UncheckedIOException e) {
                if (!(e.getCause() instanceof NoSuchFileException)) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * Whether the sandbox's cgroup is frozen (v1 {@code freezer.state} FROZEN or FREEZING, else v2
     * {@code cgroup.freeze} 1): a paused sandbox, whose processes make no progress until someone thaws it.
     */
    public boolean frozen(String cgroupsPath) {
        List<Path> dirs = dirs(cgroupsPath);
        try {
            // v1's freezer hierarchy decides where there is one: a hybrid host's unified hierarchy says "frozen 0"
            for (Path dir : dirs) {
                if (Files.exists(dir.resolve("freezer.state"))) {
                    String state = Files.readString(dir.resolve("freezer.state")).trim();
                    return state.equals("FROZEN") || state.equals("FREEZING");
                }
            }
            for (Path dir : dirs) {
                if (Files.exists(dir.resolve("cgroup.freeze"))) {
                    return Files.readString(dir.resolve("cgroup.freeze")).trim().equals("1");
                }
            }
        } catch (IOException e) {
            // gone meanwhile: not frozen
        }
        return false;
    }

    /** Whether any hierarchy still has a directory for this path. */
    public boolean exists(String cgroupsPath) {
        return dirs(cgroupsPath).stream().anyMatch(Files::isDirectory);
    }

    /**
     * Kills every process in the sandbox's cgroups and removes the directories. The fallback for when the
     * runtime's state is gone (ATTACKS.md R6): the cgroup path alone is enough to clean up.
     *
     * @throws SandboxException if a directory cannot be removed because processes will not die
     */
    public void killAndRemove(String cgroupsPath) {
        List<Path> dirs = dirs(cgroupsPath);
        List<Path> present = dirs.stream().filter(Files::isDirectory).toList();
        if (present.isEmpty()) {
            return; // gone already (a second call of a destroy): nothing to thaw, kill or remove
        }
        present.forEach(Cgroups::thaw); // frozen tasks act on SIGKILL only once thawed (ATTACKS.md R12)
        // First the tasks of one hierarchy (on v1 every task of the sandbox is in each), watched with one small read
        // per step until they are gone, rather than killing and trying every hierarchy again at each step; then the
        // passes below kill whatever any hierarchy still has and remove the directories. Killed tasks leave within
        // a few milliseconds: wait 1, 2, 4, 8, 16 ms, then 20 ms at a time (≈ 1 s in all).
        Path watch = present.get(0);
        killProcesses(watch);
        for (int step = 0; step < 10 && hasTasks(watch); step++) {
            sleep(Math.min(20, 1L << step));
        }
        for (int attempt = 0; attempt < 53; attempt++) {
            boolean left = false;
            for (Path dir : dirs) {
                if (!Files.isDirectory(dir)) {
                    continue;
                }
                killProcesses(dir);
                try {
                    Files.deleteIfExists(dir);
                } catch (IOException e) {
                    left = true; // busy: processes are still exiting
                }
            }
            if (!left) {
                return;
            }
            sleep(Math.min(20, 1L << attempt));
        }
        throw new SandboxException(ErrorCode.INTERNAL, "cgroup " + cgroupsPath
                + " still has processes that do not die (uninterruptible?); cleanup will be retried");
    }

    /**
     * Freezes every task of the sandbox's cgroup (v1 {@code freezer.state}, v2 {@code cgroup.freeze}) and waits
     * until the kernel says it is frozen.
     *
     * <p>A freeze can stall: a runsc sandbox (a Sentry tracing its stub processes, ptrace platform) once stayed
     * FREEZING for the whole 5 s in CI (the same test passes on reruns). A stalled attempt is thawed, so that
     * whatever held it back can run on, and tried again, up to three times.
     *
     * @throws SandboxException FAILED_PRECONDITION when there is no freezer for it, UNAVAILABLE when three attempts of
     *                          three seconds did not freeze it (it is thawed again)
     */
    public void freeze(String cgroupsPath) {
        Path dir = dirs(cgroupsPath).stream().filter(d -> Files.exists(d.resolve("freezer.state"))
                || Files.exists(d.resolve("cgroup.freeze"))).findFirst().orElseThrow(() -> new SandboxException(
                ErrorCode.FAILED_PRECONDITION, "cgroup " + cgroupsPath + " has no freezer here (" + this + ")"));
        boolean v1 = Files.exists(dir.resolve("freezer.state"));
        for (int attempt = 0; attempt < FREEZE_ATTEMPTS; attempt++) {
            try {
                Files.writeString(dir.resolve(v1 ? "freezer.state" : "cgroup.freeze"), v1 ? "FROZEN" : "1");
                for (int i = 0; i < 300; i++) {
                    String state = v1 ? Files.readString(dir.resolve("freezer.state")).trim()
                            : Files.readString(dir.resolve("cgroup.events"));
                    if (v1 ? state.equals("FROZEN") : state.contains("frozen 1")) {
                        return;
                    }
                    sleep(10);
                }
            } catch (IOException e) {
                thaw(dir);
                throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot freeze cgroup " + cgroupsPath + ": " + e, e);
            }
            thaw(dir);
            System.getLogger("io.paddock.runtime").log(System.Logger.Level.WARNING, "cgroup " + cgroupsPath
                    + " did not freeze within 3 s (attempt " + (attempt + 1) + " of " + FREEZE_ATTEMPTS + "); thawed it");
            sleep(50);
        }
        throw new SandboxException(ErrorCode.UNAVAILABLE, "cgroup " + cgroupsPath + " did not freeze in "
                + FREEZE_ATTEMPTS + " attempts of 3 s");
    }

    private static final int FREEZE_ATTEMPTS = 3;

    /** Thaws the sandbox's cgroups after {@link #freeze}; nothing when they are gone. */
    public void thaw(String cgroupsPath) {
        dirs(cgroupsPath).forEach(Cgroups::thaw);
    }

    /** Thaws a frozen cgroup (v1 freezer, v2 cgroup.freeze); nothing for others or when it is gone. */
    private static void thaw(Path dir) {
        try {
            if (Files.exists(dir.resolve("freezer.state"))) {
                Files.writeString(dir.resolve("freezer.state"), "THAWED");
            } else if (Files.exists(dir.resolve("cgroup.freeze"))) {
                Files.writeString(dir.resolve("cgroup.freeze"), "0");
            }
        } catch (IOException e) {
            // gone meanwhile, or not a freezer: the kill loop below reports what stays
        }
    }

    /** Whether the cgroup directory lists any task (false when it is gone or unreadable). */
    private static boolean hasTasks(Path dir) {
        try (java.io.InputStream in = Files.newInputStream(dir.resolve("cgroup.procs"))) {
            return in.read() >= 0;
        } catch (IOException e) {
            return false;
        }
    }

    private void killProcesses(Path dir) {
        Path kill = dir.resolve("cgroup.kill");
        if (version == Version.V2 && Files.exists(kill)) {
            try {
                Files.writeString(kill, "1");
                return;
            } catch (IOException e) {
                // fall through to killing pid by pid
            }
        }
        try {
            for (String line : Files.readAllLines(dir.resolve("cgroup.procs"), StandardCharsets.UTF_8)) {
                if (!line.isBlank()) {
                    ProcessHandle.of(Long.parseLong(line.trim())).ifPresent(ProcessHandle::destroyForcibly);
                }
            }
        } catch (NoSuchFileException e) {
            // already gone
        } catch (IOException | NumberFormatException e) {
            // best effort; the caller retries and reports what stays
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return "cgroup " + (version == Version.V2 ? "v2" : "v1") + " " + hierarchies;
    }
}
