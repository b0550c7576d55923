package io.paddock.engine;

import io.paddock.LocalOptions;
import io.paddock.SandboxId;
import io.paddock.testkit.HostView;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * The host side of the attack suite for the runc tier: reads {@code /proc} and the cgroup filesystem
 * (v1 hierarchies or v2 unified) of this host. Signals nothing; spawns only read-only host tools (btrfs
 * qgroup show, stat, sync) for the disk layer; the only writes are the marker files of {@link #plantMarker}.
 */
class RuncHostView implements HostView {
    private static final Path CGROUP_ROOT = Path.of("/sys/fs/cgroup");
    private static final List<String> NAMESPACES = List.of("cgroup", "ipc", "mnt", "net", "pid", "user", "uts");

    private final Path stateDir;

    RuncHostView(Path stateDir) {
        this.stateDir = stateDir;
    }

    /** Every cgroup directory of the sandbox: {@code <hierarchy>/paddock/<id>} (v1) or {@code paddock/<id>} (v2). */
    @Override
    public List<String> cgroupDirs(SandboxId id) {
        List<String> out = new ArrayList<>();
        Path unified = CGROUP_ROOT.resolve("paddock").resolve(id.value());
        if (Files.isDirectory(unified)) {
            out.add(unified.toString());
        }
        for (Path hierarchy : list(CGROUP_ROOT)) {
            Path dir = hierarchy.resolve("paddock").resolve(id.value());
            if (Files.isDirectory(dir)) {
                out.add(dir.toString());
            }
        }
        return out;
    }

    @Override
    public boolean cgroupExists(SandboxId id) {
        return !cgroupDirs(id).isEmpty();
    }

    @Override
    public Set<Long> processes(SandboxId id) {
        Set<Long> out = new TreeSet<>();
        for (String dir : cgroupDirs(id)) {
            for (String line : lines(Path.of(dir, "cgroup.procs"))) {
                out.add(Long.parseLong(line.trim()));
            }
        }
        return out;
    }

    @Override
    public long initPid(SandboxId id) {
        for (long pid : processes(id)) {
            String nspid = status(pid).get("NSpid");
            if (nspid != null) {
                String[] ids = nspid.trim().split("\\s+");
                if (ids.length > 1 && ids[ids.length - 1].equals("1")) {
                    return pid;
                }
            }
        }
        throw new IllegalStateException("no init process in the cgroups of " + id + ": " + processes(id));
    }

    @Override
    public UidRange uidRange(SandboxId id) {
        for (String line : lines(Path.of("/proc", Long.toString(initPid(id)), "uid_map"))) {
            String[] f = line.trim().split("\\s+");
            if (f.length == 3 && f[0].equals("0")) {
                return new UidRange(Long.parseLong(f[1]), Long.parseLong(f[2]));
            }
        }
        throw new IllegalStateException("no uid_map line for uid 0 in " + id);
    }

    @Override
    public OptionalLong hostUid(long pid) {
        return firstId(pid, "Uid");
    }

    @Override
    public OptionalLong hostGid(long pid) {
        return firstId(pid, "Gid");
    }

    /** The real id of a {@code Uid:} or {@code Gid:} line of the process's status. */
    private OptionalLong firstId(long pid, String field) {
        String ids = status(pid).get(field);
        return ids == null ? OptionalLong.empty() : OptionalLong.of(Long.parseLong(ids.trim().split("\\s+")[0]));
    }

    @Override
    public Set<Long> processesWithUidIn(UidRange range) {
        Set<Long> out = new TreeSet<>();
        for (Path p : list(Path.of("/proc"))) {
            String name = p.getFileName().toString();
            if (!name.chars().allMatch(Character::isDigit)) {
                continue;
            }
            String uids = status(Long.parseLong(name)).get("Uid");
            if (uids == null) {
                continue;
            }
            for (String u : uids.trim().split("\\s+")) {
                if (range.contains(Long.parseLong(u))) {
                    out.add(Long.parseLong(name));
                    break;
                }
            }
        }
        return out;
    }

    @Override
    public char processState(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
            int rp = stat.lastIndexOf(')');
            return stat.charAt(rp + 2);
        } catch (IOException | RuntimeException e) {
            return '-';
        }
    }

    @Override
    public Map<Long, Map<String, String>> threadStatuses(long pid) {
        Map<Long, Map<String, String>> out = new TreeMap<>();
        for (Path task : list(Path.of("/proc", Long.toString(pid), "task"))) {
            Map<String, String> st = parseStatus(task.resolve("status"));
            if (!st.isEmpty()) {
                out.put(Long.parseLong(task.getFileName().toString()), st);
            }
        }
        return out;
    }

    @Override
    public Map<String, String> namespacesOf(long pid) {
        return namespaces(Path.of("/proc", Long.toString(pid), "ns"));
    }

    @Override
    public Map<String, String> hostNamespaces() {
        return namespaces(Path.of("/proc/self/ns"));
    }

    private static Map<String, String> namespaces(Path dir) {
        Map<String, String> out = new TreeMap<>();
        for (String ns : NAMESPACES) {
            try {
                out.put(ns, Files.readSymbolicLink(dir.resolve(ns)).toString());
            } catch (IOException e) {
                // the process is gone or the kernel lacks the namespace
            }
        }
        return out;
    }

    private Path controllerFile(SandboxId id, String controller, String v1File, String v2File) {
        Path v1 = CGROUP_ROOT.resolve(controller).resolve("paddock").resolve(id.value()).resolve(v1File);
        if (Files.exists(v1)) {
            return v1;
        }
        return CGROUP_ROOT.resolve("paddock").resolve(id.value()).resolve(v2File);
    }

    @Override
    public long pidsCurrent(SandboxId id) {
        return readLong(controllerFile(id, "pids", "pids.current", "pids.current"));
    }

    @Override
    public long pidsMax(SandboxId id) {
        return readLong(controllerFile(id, "pids", "pids.max", "pids.max"));
    }

    @Override
    public long memoryLimit(SandboxId id) {
        return readLong(controllerFile(id, "memory", "memory.limit_in_bytes", "memory.max"));
    }

    @Override
    public OptionalLong memoryPeak(SandboxId id) {
        Path p = controllerFile(id, "memory", "memory.max_usage_in_bytes", "memory.peak");
        return Files.exists(p) ? OptionalLong.of(readLong(p)) : OptionalLong.empty();
    }

    @Override
    public long cpuUsageNanos(SandboxId id) {
        Path v1 = CGROUP_ROOT.resolve("cpuacct").resolve("paddock").resolve(id.value()).resolve("cpuacct.usage");
        if (Files.exists(v1)) {
            return readLong(v1);
        }
        for (String line : lines(CGROUP_ROOT.resolve("paddock").resolve(id.value()).resolve("cpu.stat"))) {
            String[] f = line.trim().split("\\s+");
            if (f.length == 2 && f[0].equals("usage_usec")) {
                return Long.parseLong(f[1]) * 1000;
            }
        }
        throw new IllegalStateException("no CPU accounting for " + id);
    }

    @Override
    public List<String> openFiles(long pid) {
        List<String> out = new ArrayList<>();
        for (Path fd : list(Path.of("/proc", Long.toString(pid), "fd"))) {
            try {
                String target = Files.readSymbolicLink(fd).toString();
                boolean dir = Files.isDirectory(fd); // follows the magic link to what the fd really is
                out.add(fd.getFileName() + " -> " + target + (dir ? " (directory)" : ""));
            } catch (IOException e) {
                // closed meanwhile
            }
        }
        return out;
    }

    @Override
    public long engineOpenFds() {
        return list(Path.of("/proc/self/fd")).size();
    }

    @Override
    public long hostFreeDiskBytes() {
        try {
            return Files.getFileStore(stateDir).getUsableSpace();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * The quota group of the sandbox's subvolume ({@code <storage>/writable/<id>}), read with
     * {@code btrfs qgroup show --sync}: the sync commits the running transaction, at which btrfs accounts.
     */
    @Override
    public DiskLayer diskLayer(SandboxId id) {
        Path layer = LocalOptions.DEFAULT_STORAGE_DIR.resolve("writable").resolve(id.value());
        String out = host("btrfs", "qgroup", "show", "--raw", "-r", "--sync", "-f", layer.toString());
        // qgroupid rfer excl max_rfer [path]: the subvolume's own level-0 group
        for (String line : out.split("\n")) {
            String[] f = line.trim().split("\s+");
            if (f.length >= 4 && f[0].startsWith("0/") && !f[0].equals("0/5")) {
                long limit = f[3].equals("none") ? Long.MAX_VALUE : Long.parseLong(f[3]);
                return new DiskLayer(Long.parseLong(f[1]), limit);
            }
        }
        throw new IllegalStateException("no quota group for " + layer + " in: " + out);
    }

    /** The loop file's allocated blocks after {@code sync -f} of its filesystem (the host's, not the loop's). */
    @Override
    public long writableStoreHostBytes() {
        Path image = LocalOptions.DEFAULT_STORAGE_DIR.resolve("writable.btrfs");
        host("btrfs", "filesystem", "sync", LocalOptions.DEFAULT_STORAGE_DIR.resolve("writable").toString());
        host("sync", "-f", image.toString());
        String[] f = host("stat", "-c", "%b %B", image.toString()).trim().split(" ");
        return Long.parseLong(f[0]) * Long.parseLong(f[1]);
    }

    /** Runs a read-only host tool and returns its output; fails with the output if it fails. */
    private static String host(String... argv) {
        try {
            Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(60, java.util.concurrent.TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException(String.join(" ", argv) + " failed: " + out);
            }
            return out;
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Override
    public String readHostFile(String path) {
        // One stream read from offset 0: Files.readString reads a size-0 file (all of /proc) a byte at a time
        // first, and a sysctl file read at a non-zero offset answers EOF ("128" would read as "1").
        try (java.io.InputStream in = Files.newInputStream(Path.of(path))) {
            return new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }

    @Override
    public List<String> plantMarker(String name, String content) {
        List<String> out = new ArrayList<>();
        for (String dir : List.of("/tmp", "/root")) {
            Path d = Path.of(dir);
            if (!Files.isDirectory(d)) {
                continue;
            }
            Path f = d.resolve(name);
            try {
                Files.writeString(f, content);
                // World-readable: a sandbox that can reach the file at all must not be stopped by mode bits.
                Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-r--r--"));
                out.add(f.toString());
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
        return out;
    }

    @Override
    public void removeMarker(List<String> paths) {
        for (String p : paths) {
            try {
                Files.deleteIfExists(Path.of(p));
            } catch (IOException e) {
                // best effort
            }
        }
    }

    @Override
    public List<String> findHostFiles(String name) {
        List<String> out = new ArrayList<>();
        for (Path root : List.of(Path.of("/"), Path.of("/tmp"), Path.of("/var/tmp"), Path.of("/root"),
                Path.of("/etc"), Path.of(System.getProperty("user.dir")))) {
            for (Path p : list(root)) {
                if (p.getFileName() != null && p.getFileName().toString().contains(name)) {
                    out.add(p.toString());
                }
            }
        }
        // The state directory holds the shared image root: a write that escapes a sandbox's view lands here.
        try (Stream<Path> s = Files.walk(stateDir, 8)) {
            s.filter(p -> p.getFileName() != null && p.getFileName().toString().contains(name))
                    .forEach(p -> out.add(p.toString()));
        } catch (IOException | RuntimeException e) {
            // a sandbox directory vanished during the walk: its files vanished with it
        }
        return out;
    }

    // ---- /proc helpers ----

    static Map<String, String> status(long pid) {
        return parseStatus(Path.of("/proc", Long.toString(pid), "status"));
    }

    private static Map<String, String> parseStatus(Path file) {
        Map<String, String> out = new LinkedHashMap<>();
        for (String line : lines(file)) {
            int colon = line.indexOf(':');
            if (colon > 0) {
                out.put(line.substring(0, colon), line.substring(colon + 1).trim());
            }
        }
        return out;
    }

    private static long readLong(Path p) {
        try {
            String s = Files.readString(p).trim();
            return s.equals("max") ? Long.MAX_VALUE : Long.parseLong(s);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static List<Path> list(Path dir) {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.sorted().toList();
        } catch (IOException | RuntimeException e) {
            return List.of();
        }
    }

    static List<String> lines(Path file) {
        try {
            return Files.readAllLines(file).stream().filter(l -> !l.isBlank()).toList();
        } catch (IOException | RuntimeException e) {
            return List.of();
        }
    }
}
