package io.paddock.bench.host;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The harness's host side: runs tools, installs missing ones (as root, with apt), and reads the host's
 * counters (/proc/meminfo, /proc/loadavg, this process's CPU time and RSS). Every process the harness
 * starts outside a sandbox is started here or in {@link Peers}, {@link Native} and {@link PodmanImage}.
 */
public final class Host {
    private Host() {
    }

    /** A finished command: exit code and its output (stdout and stderr together). */
    public record Result(int code, String output) {
        public boolean ok() {
            return code == 0;
        }
    }

    public static Result run(Duration timeout, String... argv) {
        return run(timeout, List.of(argv));
    }

    public static Result run(Duration timeout, List<String> argv) {
        try {
            Process p = new ProcessBuilder(argv).redirectErrorStream(true).redirectInput(new File("/dev/null")).start();
            byte[] out;
            try (InputStream in = p.getInputStream()) {
                out = in.readAllBytes();
            }
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                return new Result(124, argv.get(0) + " timed out after " + timeout);
            }
            return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8).strip());
        } catch (IOException e) {
            return new Result(127, e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Result(130, "interrupted");
        }
    }

    /** The first line a tool prints for {@code --version}, or "unavailable: reason". */
    public static String version(String tool, String... args) {
        List<String> argv = new ArrayList<>(List.of(tool));
        argv.addAll(List.of(args.length == 0 ? new String[] {"--version"} : args));
        Result r = run(Duration.ofSeconds(20), argv);
        return r.ok() ? r.output().lines().findFirst().orElse("?") : "unavailable: " + shorten(r.output());
    }

    public static boolean onPath(String tool) {
        return which(tool) != null;
    }

    /** The tool's path on PATH (or /usr/sbin, /sbin), or null. */
    public static Path which(String tool) {
        List<String> dirs = new ArrayList<>(List.of(System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")));
        dirs.addAll(List.of("/usr/sbin", "/sbin"));
        for (String dir : dirs) {
            Path p = Path.of(dir.isEmpty() ? "." : dir, tool);
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        return null;
    }

    public static boolean isRoot() {
        return "root".equals(System.getProperty("user.name"));
    }

    /**
     * Installs the Debian packages of the missing tools when running as root; returns, per tool still
     * missing afterwards, why (so that the peer is reported unavailable with that reason).
     */
    public static Map<String, String> ensureTools(Map<String, String> toolToPackage, java.io.PrintStream log) {
        Map<String, String> missing = new LinkedHashMap<>();
        List<String> packages = new ArrayList<>();
        for (Map.Entry<String, String> e : toolToPackage.entrySet()) {
            if (!onPath(e.getKey())) {
                packages.add(e.getValue());
            }
        }
        if (!packages.isEmpty() && isRoot()) {
            log.println("installing missing tools: apt-get install -y " + String.join(" ", packages));
            List<String> argv = new ArrayList<>(List.of("apt-get", "install", "-y", "--no-install-recommends"));
            argv.addAll(packages);
            Result r = run(Duration.ofMinutes(10), argv);
            if (!r.ok()) {
                log.println("apt-get failed: " + shorten(r.output()));
            }
        }
        for (Map.Entry<String, String> e : toolToPackage.entrySet()) {
            if (!onPath(e.getKey())) {
                missing.put(e.getKey(), e.getKey() + " is not installed (apt-get install -y " + e.getValue() + ", as root)");
            }
        }
        return missing;
    }

    /**
     * Installs, as root, the Debian packages of the modules that {@code python} cannot import; returns why it
     * still cannot import them (empty when it can), naming the command to run.
     */
    public static java.util.Optional<String> ensurePythonModules(String python, Map<String, String> moduleToPackage,
                                                                 java.io.PrintStream log) {
        List<String> packages = new ArrayList<>();
        for (Map.Entry<String, String> e : moduleToPackage.entrySet()) {
            if (!run(Duration.ofSeconds(30), python, "-c", "import " + e.getKey()).ok()) {
                packages.add(e.getValue());
            }
        }
        if (packages.isEmpty()) {
            return java.util.Optional.empty();
        }
        if (isRoot() && onPath("apt-get")) {
            log.println("installing missing Python modules: apt-get install -y " + String.join(" ", packages));
            List<String> argv = new ArrayList<>(List.of("apt-get", "install", "-y", "--no-install-recommends"));
            argv.addAll(packages);
            Result r = run(Duration.ofMinutes(10), argv);
            if (!r.ok()) {
                log.println("apt-get failed: " + shorten(r.output()));
            }
        }
        List<String> still = new ArrayList<>();
        for (Map.Entry<String, String> e : moduleToPackage.entrySet()) {
            if (!run(Duration.ofSeconds(30), python, "-c", "import " + e.getKey()).ok()) {
                still.add(e.getValue());
            }
        }
        return still.isEmpty() ? java.util.Optional.empty() : java.util.Optional.of(python + " cannot import "
                + String.join(", ", moduleToPackage.keySet()) + " (apt-get install -y " + String.join(" ", still) + ", as root)");
    }

    /** /proc/meminfo in KiB. */
    public static Map<String, Long> meminfo() {
        Map<String, Long> m = new LinkedHashMap<>();
        try {
            for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
                String[] f = line.split("[:\\s]+");
                if (f.length >= 2) {
                    m.put(f[0], Long.parseLong(f[1]));
                }
            }
        } catch (IOException e) {
            // empty
        }
        return m;
    }

    public static String loadavg() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).strip();
        } catch (IOException e) {
            return "unknown";
        }
    }

    public static double load1() {
        try {
            return Double.parseDouble(loadavg().split(" ")[0]);
        } catch (RuntimeException e) {
            return -1;
        }
    }

    /** This process's user+system CPU time, in nanoseconds (from /proc/self/stat; clock ticks of 10 ms). */
    public static long processCpuNanos() {
        try {
            String s = Files.readString(Path.of("/proc/self/stat"));
            String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
            long ticks = Long.parseLong(f[11]) + Long.parseLong(f[12]);
            return ticks * 10_000_000L;
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** Machine-wide CPU time from /proc/stat: {busy, total} in clock ticks. */
    public static long[] machineCpuTicks() {
        try {
            String[] f = Files.readAllLines(Path.of("/proc/stat")).get(0).trim().split("\\s+");
            long total = 0;
            for (int i = 1; i < Math.min(f.length, 9); i++) {
                total += Long.parseLong(f[i]);
            }
            long idle = Long.parseLong(f[4]) + Long.parseLong(f[5]);
            return new long[] {total - idle, total};
        } catch (IOException | RuntimeException e) {
            return new long[] {0, 0};
        }
    }

    /** Summed resident set (KiB) and count of the processes (other than pid 1) with this command name. */
    public static long[] rssOf(String comm) {
        long kib = 0;
        long n = 0;
        try (var dirs = Files.list(Path.of("/proc"))) {
            for (Path d : dirs.filter(p -> p.getFileName().toString().chars().allMatch(Character::isDigit)).toList()) {
                try {
                    if (d.getFileName().toString().equals("1") || !Files.readString(d.resolve("comm")).strip().equals(comm)) {
                        continue;
                    }
                    for (String line : Files.readAllLines(d.resolve("status"))) {
                        if (line.startsWith("VmRSS:")) {
                            kib += Long.parseLong(line.replaceAll("[^0-9]", ""));
                            n++;
                        }
                    }
                } catch (IOException | RuntimeException e) {
                    // the process went away
                }
            }
        } catch (IOException e) {
            // nothing
        }
        return new long[] {kib, n};
    }

    /** This process's resident set, KiB. */
    public static long rssKib() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", ""));
                }
            }
        } catch (IOException e) {
            // fall through
        }
        return -1;
    }

    public static String kernel() {
        Result r = run(Duration.ofSeconds(5), "uname", "-srm");
        return r.ok() ? r.output() : System.getProperty("os.name") + " " + System.getProperty("os.version");
    }

    public static String cpuModel() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (line.startsWith("model name")) {
                    return line.substring(line.indexOf(':') + 1).strip();
                }
            }
        } catch (IOException e) {
            // fall through
        }
        return "unknown";
    }

    public static String shorten(String s) {
        String one = s == null ? "" : s.replaceAll("\\s+", " ").strip();
        return one.length() > 300 ? one.substring(0, 300) + "…" : one;
    }

    static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (var walk = Files.walk(root)) {
            for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
