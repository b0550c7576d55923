package io.paddock.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What P6 (density) reads from the host besides /proc/meminfo: the kernel's slab caches, the engine's threads
 * and descriptors, the sandboxes' own processes (found by their cgroup, so other engines' sandboxes on the
 * same host do not count) and what destroying them left behind. Linux only; needs root for slabinfo.
 */
final class Density {
    private static final Pattern SANDBOX_CGROUP = Pattern.compile("/paddock/([A-Za-z0-9-]+)");

    private Density() {
    }

    /** Bytes held by each slab cache (objects allocated times object size); empty when unreadable. */
    static Map<String, Long> slabBytes() {
        Map<String, Long> m = new TreeMap<>();
        try {
            List<String> lines = Files.readAllLines(Path.of("/proc/slabinfo"));
            for (String line : lines.subList(Math.min(2, lines.size()), lines.size())) {
                String[] f = line.trim().split("\\s+");
                if (f.length > 3) {
                    m.put(f[0], Long.parseLong(f[2]) * Long.parseLong(f[3]));
                }
            }
        } catch (IOException | RuntimeException e) {
            // not root, or no slabinfo: the breakdown is left out
        }
        return m;
    }

    /** The caches that grew most between two {@link #slabBytes()} readings, KiB per sandbox, largest first. */
    static Map<String, Object> slabGrowth(Map<String, Long> before, Map<String, Long> after, int n, int top) {
        Map<String, Object> out = new LinkedHashMap<>();
        after.entrySet().stream()
                .map(e -> Map.entry(e.getKey(), e.getValue() - before.getOrDefault(e.getKey(), 0L)))
                .filter(e -> e.getValue() > 0)
                .sorted((a, b) -> Long.compare(b.getValue(), a.getValue()))
                .limit(top)
                .forEach(e -> out.put(e.getKey() + "_kib_per_sandbox", Math.round(e.getValue() / 102.4 / n) / 10.0));
        return out;
    }

    /** A line's number from /proc/self/status (e.g. "Threads"), or -1. */
    static long selfStatus(String key) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith(key + ":")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", ""));
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux
        }
        return -1;
    }

    /** Open file descriptors of this process, or -1. */
    static long openFds() {
        try (var s = Files.list(Path.of("/proc/self/fd"))) {
            return s.count();
        } catch (IOException e) {
            return -1;
        }
    }

    /** Threads the JDK runs to wait for child processes (pooled, idle ones linger 60 s). */
    static int reaperThreads() {
        int n = 0;
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            n += t.getName().startsWith("process reaper") ? 1 : 0;
        }
        return n;
    }

    /** This process's threads: id to (name, CPU clock ticks), from /proc/self/task. */
    static Map<Long, Map.Entry<String, Long>> threadTicks() {
        Map<Long, Map.Entry<String, Long>> m = new java.util.HashMap<>();
        try (var s = Files.list(Path.of("/proc/self/task"))) {
            for (Path t : s.toList()) {
                try {
                    String stat = Files.readString(t.resolve("stat"));
                    String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
                    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                    m.put(Long.parseLong(t.getFileName().toString()),
                            Map.entry(name, Long.parseLong(f[11]) + Long.parseLong(f[12])));
                } catch (IOException | RuntimeException e) {
                    // the thread ended
                }
            }
        } catch (IOException e) {
            // not Linux
        }
        return m;
    }

    /**
     * CPU between two {@link #threadTicks()} readings, in % of one core, by thread name (numbers and sandbox
     * ids dropped, so e.g. every channel reader is one "paddock-init-sb"); names under 0.05 % are left out.
     */
    static Map<String, Object> ticksByName(Map<Long, Map.Entry<String, Long>> before,
                                           Map<Long, Map.Entry<String, Long>> after, long wallNanos) {
        Map<String, Long> by = new TreeMap<>();
        for (var e : after.entrySet()) {
            Map.Entry<String, Long> b = before.get(e.getKey());
            long d = e.getValue().getValue() - (b == null ? 0 : b.getValue());
            by.merge(e.getValue().getKey().replaceAll("[#-]?[0-9]+$", ""), d, Long::sum);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        by.entrySet().stream().sorted((x, y) -> Long.compare(y.getValue(), x.getValue()))
                .filter(e -> e.getValue() * 1e9 / wallNanos >= 0.05)
                .forEach(e -> out.put(e.getKey() + "_percent", Math.round(e.getValue() * 1e10 / wallNanos) / 10.0));
        return out;
    }

    /** CPU time (clock ticks) of the processes in these sandboxes' cgroups. */
    static long sandboxCpuTicks(Set<String> ids) {
        return scan(ids, false)[2];
    }

    /**
     * The live processes in these sandboxes' cgroups: {count, proportional set size in KiB (shared pages such
     * as the init's text divided among their sharers), CPU time in clock ticks, zombies}. A zombie (an init
     * whose parent, runc, exited, waiting for the host's PID 1 to reap it) holds no memory and is counted apart.
     */
    static long[] sandboxProcesses(Set<String> ids) {
        return scan(ids, true);
    }

    private static long[] scan(Set<String> ids, boolean pssToo) {
        long count = 0;
        long pss = 0;
        long ticks = 0;
        long zombies = 0;
        try (var dirs = Files.list(Path.of("/proc"))) {
            for (Path d : dirs.filter(p -> p.getFileName().toString().chars().allMatch(Character::isDigit)).toList()) {
                try {
                    Matcher m = SANDBOX_CGROUP.matcher(Files.readString(d.resolve("cgroup")));
                    if (!m.find() || !ids.contains(m.group(1))) {
                        continue;
                    }
                    String stat = Files.readString(d.resolve("stat"));
                    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                    ticks += Long.parseLong(f[11]) + Long.parseLong(f[12]); // utime, stime
                    if (f[0].equals("Z")) {
                        zombies++;
                        continue;
                    }
                    count++;
                    if (pssToo) {
                        for (String line : Files.readAllLines(d.resolve("smaps_rollup"))) {
                            if (line.startsWith("Pss:")) {
                                pss += Long.parseLong(line.replaceAll("[^0-9]", ""));
                            }
                        }
                    }
                } catch (IOException | RuntimeException e) {
                    // the process went away
                }
            }
        } catch (IOException e) {
            // not Linux
        }
        return new long[] {count, pss, ticks, zombies};
    }

    /**
     * What is left of these sandboxes after they were destroyed, by kind: runc state, bundle and root
     * directories, cgroups (any hierarchy), mounts, uid-range leases, live processes. All zero when nothing
     * leaked. Processes are given up to 5 s to go (a kill is asynchronous).
     */
    static Map<String, Integer> leftovers(Set<String> ids, Path stateDir) throws InterruptedException {
        long until = System.nanoTime() + 5_000_000_000L;
        while (sandboxProcesses(ids)[0] > 0 && System.nanoTime() < until) {
            Thread.sleep(200);
        }
        Map<String, Integer> m = new LinkedHashMap<>();
        int runc = 0;
        int dirs = 0;
        int cgroups = 0;
        List<Path> hierarchies = List.of();
        try (var s = Files.list(Path.of("/sys/fs/cgroup"))) {
            hierarchies = s.toList();
        } catch (IOException e) {
            // no cgroup fs
        }
        for (String id : ids) {
            runc += Files.exists(stateDir.resolve("runc").resolve(id)) ? 1 : 0;
            dirs += Files.exists(stateDir.resolve("sandboxes").resolve(id)) ? 1 : 0;
            dirs += Files.exists(stateDir.resolve("roots").resolve(id)) ? 1 : 0;
            for (Path h : hierarchies) {
                cgroups += Files.exists(h.resolve("paddock").resolve(id)) ? 1 : 0;
            }
        }
        int mounts = 0;
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
                Matcher x = Pattern.compile("sb-[a-z0-9]+").matcher(line);
                while (x.find()) {
                    if (ids.contains(x.group())) {
                        mounts++;
                        break;
                    }
                }
            }
        } catch (IOException e) {
            // not Linux
        }
        int leases = 0;
        try (var s = Files.list(stateDir.resolve("uids"))) {
            for (Path p : s.toList()) {
                try {
                    leases += ids.contains(Files.readString(p, StandardCharsets.UTF_8).strip()) ? 1 : 0;
                } catch (IOException e) {
                    // released meanwhile
                }
            }
        } catch (IOException e) {
            // no leases directory
        }
        m.put("runc_state", runc);
        m.put("bundle_or_root_dirs", dirs);
        m.put("cgroups", cgroups);
        m.put("mounts", mounts);
        m.put("uid_leases", leases);
        m.put("processes", (int) sandboxProcesses(ids)[0]);
        return m;
    }
}
