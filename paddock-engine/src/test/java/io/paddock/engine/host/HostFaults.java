package io.paddock.engine.host;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Host-side faults for the fault-injection tests (ATTACKS.md R4-R8): killing a runtime helper, losing
 * everything a reboot loses, a tiny filesystem for the daemon's data. Test code only; everything it does
 * is undone by the test that does it.
 */
public final class HostFaults {
    private HostFaults() {
    }

    /** SIGKILL to one process, as the OOM killer or a crash would. */
    public static void kill(long pid) {
        ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
    }

    /**
     * Waits for a direct child of this JVM whose command line has all of {@code words} (e.g. {@code runc run
     * --detach}) and kills it with SIGKILL; returns its command line, or empty if none appeared in time.
     * Only this JVM's children are considered, so runtimes of other engines on the host are never touched.
     */
    public static Optional<String> killChildWhenItAppears(List<String> words, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            for (ProcessHandle child : ProcessHandle.current().children().toList()) {
                String cmd = cmdline(child.pid());
                if (!cmd.isEmpty() && words.stream().allMatch(cmd::contains)) {
                    child.destroyForcibly();
                    return Optional.of(cmd);
                }
            }
            Thread.sleep(1);
        }
        return Optional.empty();
    }

    /** The NUL-separated command line of a process, with spaces; empty if it is gone. */
    public static String cmdline(long pid) {
        try {
            return new String(Files.readAllBytes(Path.of("/proc", Long.toString(pid), "cmdline")), StandardCharsets.UTF_8)
                    .replace('\0', ' ').trim();
        } catch (IOException e) {
            return "";
        }
    }

    /**
     * What a reboot does to one sandbox: every process in its cgroups dies, and what lived on the state
     * directory's tmpfs ({@code /run}: its bundle, the runtime's state, its uid lease) is gone. Its (now
     * empty) cgroup directories are left on purpose: stale leftovers the next engine must reclaim. A real
     * reboot would not even leave those.
     */
    public static void rebootLoses(Path stateDir, String id) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        List<Long> pids;
        while (!(pids = cgroupProcesses(id)).isEmpty() && System.nanoTime() < deadline) {
            pids.forEach(HostFaults::kill);
            Thread.sleep(20);
        }
        if (!pids.isEmpty()) {
            throw new IllegalStateException("processes of " + id + " survived SIGKILL: " + pids);
        }
        deleteTree(stateDir.resolve("sandboxes").resolve(id));
        deleteTree(stateDir.resolve("runc").resolve(id));
        for (Path p : list(stateDir.resolve("runsc"))) {
            if (p.getFileName().toString().startsWith(id)) {
                Files.deleteIfExists(p);
            }
        }
        for (Path p : list(stateDir.resolve("uids"))) {
            if (read(p).trim().equals(id)) {
                Files.deleteIfExists(p);
            }
        }
    }

    /** Every pid in the sandbox's cgroups, in any hierarchy. */
    public static List<Long> cgroupProcesses(String id) {
        List<Long> out = new ArrayList<>();
        for (Path hierarchy : list(Path.of("/sys/fs/cgroup"))) {
            for (String line : read(hierarchy.resolve("paddock").resolve(id).resolve("cgroup.procs")).split("\n")) {
                if (!line.isBlank()) {
                    out.add(Long.parseLong(line.trim()));
                }
            }
        }
        return out;
    }

    /** Whether any cgroup directory of the sandbox exists, in any hierarchy. */
    public static boolean cgroupExists(String id) {
        return list(Path.of("/sys/fs/cgroup")).stream().anyMatch(h -> Files.isDirectory(h.resolve("paddock").resolve(id)));
    }

    /** Mounts a tmpfs of {@code size} (e.g. "2m") on {@code dir}; {@link #unmount} removes it. */
    public static void mountTmpfs(Path dir, String size) throws IOException, InterruptedException {
        run("mount", "-t", "tmpfs", "-o", "size=" + size + ",mode=0700", "tmpfs", dir.toString());
    }

    /** Unmounts {@code dir} (lazily, so that an engine still holding a file there cannot keep it mounted). */
    public static void unmount(Path dir) throws IOException, InterruptedException {
        run("umount", "-l", dir.toString());
    }

    /**
     * Fills the filesystem holding {@code file} until ENOSPC: big writes first, then small ones into a
     * second file for the last partial blocks. Returns the bytes written.
     */
    public static long fill(Path file) throws IOException {
        long written = 0;
        for (int chunk : new int[] {64 * 1024, 512}) {
            Path target = chunk == 512 ? file.resolveSibling(file.getFileName() + ".tail") : file;
            try (var out = Files.newOutputStream(target)) {
                while (true) {
                    out.write(new byte[chunk]);
                    written += chunk;
                }
            } catch (IOException e) {
                if (!String.valueOf(e.getMessage()).contains("No space left")) {
                    throw e;
                }
            }
        }
        return written;
    }

    private static void run(String... argv) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.waitFor() != 0) {
            throw new IOException(String.join(" ", argv) + " failed: " + out);
        }
    }

    private static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    private static List<Path> list(Path dir) {
        try (Stream<Path> s = Files.list(dir)) {
            return s.toList();
        } catch (IOException e) {
            return List.of();
        }
    }

    private static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (NoSuchFileException e) {
            return "";
        } catch (IOException e) {
            return "";
        }
    }
}
