package io.paddock.testkit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * The leak checklist of ATTACKS.md as a reusable step: a snapshot of everything a sandbox can leave on the
 * host (processes in Paddock cgroups, cgroup directories, mounts, runtime state, bundles, uid leases, and
 * the engine JVM's threads and file descriptors), compared before and after a test.
 *
 * <p>Read-only: it inspects {@code /proc}, {@code /sys/fs/cgroup} and the state directory, never changes them.
 */
public final class HostLeakCheck {
    private final Path stateDir;
    private final Path storageDir;

    public HostLeakCheck(Path stateDir) {
        this(stateDir, io.paddock.LocalOptions.DEFAULT_STORAGE_DIR);
    }

    /** With the storage directory whose {@code writable/} holds image sandboxes' writable layers. */
    public HostLeakCheck(Path stateDir, Path storageDir) {
        this.stateDir = stateDir;
        this.storageDir = storageDir;
    }

    /**
     * Everything that names a sandbox on this host right now, one line per item, except the sandboxes of
     * engines in other live processes (another test run, a daemon): what they hold is theirs to clean.
     */
    public Set<String> sandboxResources() {
        Set<String> all = allSandboxResources();
        Set<String> foreign = foreignSandboxIds();
        Set<String> out = new TreeSet<>();
        for (String r : all) {
            if (foreign.stream().noneMatch(r::contains)) {
                out.add(r);
            }
        }
        return out;
    }

    /**
     * Ids of sandboxes whose owner is an engine in another process that is still running: an embedded engine's
     * token names its process; a daemon's ({@code daemon:<nonce>}) names its owner record, which names its
     * process, and a daemon this JVM started (a child, a grandchild) is not another's.
     */
    private Set<String> foreignSandboxIds() {
        Set<String> out = new TreeSet<>();
        long self = ProcessHandle.current().pid();
        for (Path bundle : list(stateDir.resolve("sandboxes"))) {
            String owner = lines(bundle.resolve("owner")).stream().findFirst().orElse("");
            String[] parts = owner.split("\\.");
            if (parts.length == 3 && parts[0].matches("\\d+")) {
                long pid = Long.parseLong(parts[0]);
                if (pid != self && ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
                    out.add(bundle.getFileName().toString());
                }
            } else if (owner.matches("daemon:[0-9a-f]{16,64}")) {
                String process = lines(stateDir.resolve("owners").resolve(owner.substring("daemon:".length()))).stream()
                        .filter(l -> l.startsWith("process ")).findFirst().orElse("");
                java.util.regex.Matcher m = java.util.regex.Pattern.compile("process (\\d+)\\.(\\d+)").matcher(process);
                if (m.matches() && anotherLiveProcess(Long.parseLong(m.group(1)), m.group(2), self)) {
                    out.add(bundle.getFileName().toString());
                }
            }
        }
        return out;
    }

    /** Whether {@code pid}, started at {@code startTime} (clock ticks after boot), runs and is neither this JVM nor below it. */
    private static boolean anotherLiveProcess(long pid, String startTime, long self) {
        Optional<ProcessHandle> p = ProcessHandle.of(pid);
        if (p.isEmpty() || !p.get().isAlive() || !startTime.equals(startTimeOf(pid))) {
            return false;
        }
        for (Optional<ProcessHandle> up = Optional.of(p.get()); up.isPresent(); up = up.get().parent()) {
            if (up.get().pid() == self) {
                return false;
            }
        }
        return true;
    }

    /** Field 22 of {@code /proc/<pid>/stat}: when the process started. */
    private static String startTimeOf(long pid) {
        List<String> stat = lines(Path.of("/proc", Long.toString(pid), "stat"));
        if (stat.isEmpty()) {
            return "";
        }
        String line = stat.get(0);
        String[] f = line.substring(line.lastIndexOf(')') + 2).split(" ");
        return f.length > 19 ? f[19] : "";
    }

    /** A sandbox id, or a bundle being staged under one ("." + id): other names are not Paddock's. */
    private static boolean paddockName(Path p) {
        return p.getFileName().toString().matches("\\.?sb-[a-z2-7]{26}");
    }

    /** Everything that names a sandbox on this host right now, whoever owns it. */
    public Set<String> allSandboxResources() {
        Set<String> out = new TreeSet<>();
        list(stateDir.resolve("sandboxes")).stream().filter(HostLeakCheck::paddockName)
                .forEach(p -> out.add("bundle " + p.getFileName()));
        list(stateDir.resolve("runc")).stream().filter(HostLeakCheck::paddockName)
                .forEach(p -> out.add("runc-state " + p.getFileName()));
        // runsc's --root holds <id>_sandbox:<id>.state and .lock per sandbox
        list(stateDir.resolve("runsc")).stream().filter(p -> p.getFileName().toString().matches("sb-[a-z2-7]{26}(_.*)?"))
                .forEach(p -> out.add("runsc-state " + p.getFileName()));
        out.addAll(runscProcesses());
        out.addAll(launcherProcesses());
        list(storageDir.resolve("writable")).stream().filter(HostLeakCheck::paddockName)
                .forEach(p -> out.add("writable-layer " + p.getFileName()));
        list(storageDir.resolve("writable.owners")).stream().filter(HostLeakCheck::paddockName)
                .forEach(p -> out.add("writable-layer-owner " + p.getFileName()));
        // a paused gVisor sandbox's memory checkpoint: gone with its resume or its destroy
        list(storageDir.resolve("checkpoints")).stream().filter(HostLeakCheck::paddockName)
                .forEach(p -> out.add("checkpoint " + p.getFileName()));
        list(stateDir.resolve("uids")).forEach(p -> out.add("uid-lease " + p.getFileName() + " "
                + lines(p).stream().findFirst().orElse("?")));
        for (Path hierarchy : list(Path.of("/sys/fs/cgroup"))) {
            Path parent = hierarchy.resolve("paddock");
            for (Path cg : list(parent)) {
                if (Files.isDirectory(cg) && paddockName(cg)) {
                    out.add("cgroup " + hierarchy.getFileName() + "/" + cg.getFileName());
                    for (String pid : lines(cg.resolve("cgroup.procs"))) {
                        out.add("process " + pid + " in cgroup " + cg.getFileName());
                    }
                }
            }
        }
        if (Files.isDirectory(Path.of("/sys/fs/cgroup/paddock"))) {
            for (Path cg : list(Path.of("/sys/fs/cgroup/paddock"))) {
                if (Files.isDirectory(cg) && paddockName(cg)) {
                    out.add("cgroup " + cg.getFileName());
                }
            }
        }
        list(stateDir.resolve("roots")).stream().filter(HostLeakCheck::paddockName)
                .forEach(p -> out.add("root-dir " + p.getFileName()));
        list(stateDir.resolve("mounts")).stream().filter(HostLeakCheck::paddockName)
                .forEach(p -> out.add("mounts-dir " + p.getFileName()));
        out.addAll(networkResources());
        String sandboxesDir = stateDir.resolve("sandboxes").toString();
        String rootsDir = stateDir.resolve("roots").toString();
        String mountsDir = stateDir.resolve("mounts").toString();
        for (String line : lines(Path.of("/proc/self/mountinfo"))) {
            if (line.contains(sandboxesDir) || line.contains(rootsDir) || line.contains(mountsDir)) {
                out.add("mount " + line);
            }
        }
        return out;
    }

    /**
     * Sandbox networks: namespaces ({@code /run/netns/paddock-<id>}), network slots, resolver files, host-side
     * veths ({@code pdk<slot>}) and nftables objects of the {@code inet paddock} table named by a slot. A veth
     * or rule is named with the sandbox holding its slot (so that other engines' sandboxes are filtered out);
     * one whose slot is free is a leak of nobody's.
     */
    private List<String> networkResources() {
        List<String> out = new ArrayList<>();
        java.util.Map<String, String> holders = new java.util.HashMap<>();
        for (Path slot : list(stateDir.resolve("net"))) {
            String holder = lines(slot).stream().findFirst().orElse("?");
            holders.put(slot.getFileName().toString(), holder);
            out.add("net-slot " + slot.getFileName() + " " + holder);
        }
        list(Path.of("/run/netns")).stream().filter(p -> p.getFileName().toString().startsWith("paddock-"))
                .forEach(p -> out.add("netns " + p.getFileName()));
        list(stateDir.resolve("resolv")).forEach(p -> out.add("resolv-conf " + p.getFileName()));
        for (Path link : list(Path.of("/sys/class/net"))) {
            String name = link.getFileName().toString();
            if (name.matches("pdk\\d+")) {
                out.add("veth " + name + " " + holders.getOrDefault(name.substring(3), "(slot free)"));
            }
        }
        try {
            Process p = new ProcessBuilder("nft", "list", "table", "inet", "paddock").redirectErrorStream(true).start();
            String listing = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            p.waitFor();
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^\\s*(chain|set) (sb[fain]?(\\d+)[cds]?) \\{")
                    .matcher(listing);
            while (m.find()) {
                out.add("nft-" + m.group(1) + " " + m.group(2) + " " + holders.getOrDefault(m.group(3), "(slot free)"));
            }
        } catch (IOException e) {
            // no nft: no rules either
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return out;
    }

    /**
     * runsc processes (the Sentry {@code runsc-sandbox}, {@code runsc-gofer}, a {@code runsc} command, and
     * {@code paddock-runsc-userns}, which runs runsc) started with this state directory's runsc root, each named
     * with the sandbox it serves so that the foreign filter applies. None may outlive destroy: the checklist's "no runsc-sandbox or gofer processes".
     */
    private List<String> runscProcesses() {
        return processes("runsc-process", "runsc",
                List.of("--root=" + stateDir.resolve("runsc"), stateDir.resolve("runsc").toString()));
    }

    /**
     * The runc tier's user-namespace launcher ({@code paddock-userns-run}) and its namespace holder (a fork,
     * with the same command line), started with this state directory's runc root. Both end before create
     * returns; one found later leaked.
     */
    private List<String> launcherProcesses() {
        return processes("userns-launcher", "paddock-userns-run", List.of(stateDir.resolve("runc").toString()));
    }

    /** Processes whose argv[0] contains {@code binary} and whose argv holds one of {@code rootMarkers}. */
    private static List<String> processes(String label, String binary, List<String> rootMarkers) {
        List<String> out = new ArrayList<>();
        for (Path p : list(Path.of("/proc"))) {
            String pid = p.getFileName().toString();
            if (!pid.chars().allMatch(Character::isDigit)) {
                continue;
            }
            String cmd;
            try {
                cmd = new String(Files.readAllBytes(p.resolve("cmdline")), java.nio.charset.StandardCharsets.UTF_8);
            } catch (IOException e) {
                continue;
            }
            List<String> argv = List.of(cmd.split("\0"));
            if (argv.isEmpty() || !argv.get(0).contains(binary) || rootMarkers.stream().noneMatch(argv::contains)) {
                continue;
            }
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("sb-[a-z2-7]{26}").matcher(cmd);
            out.add(label + " " + pid + " " + argv.get(0) + " " + (m.find() ? m.group() : "?"));
        }
        return out;
    }

    /** Threads of this JVM whose names mark them as Paddock's. */
    public static List<String> paddockThreads() {
        List<String> out = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.isAlive() && t.getName().startsWith("paddock-init-")) {
                out.add(t.getName());
            }
        }
        return out;
    }

    /** Open file descriptors of this JVM that point into the state directory. */
    public List<String> stateDirFds() {
        List<String> out = new ArrayList<>();
        for (Path fd : list(Path.of("/proc/self/fd"))) {
            try {
                String target = Files.readSymbolicLink(fd).toString();
                if (target.startsWith(stateDir.resolve("sandboxes").toString())) {
                    out.add(fd.getFileName() + " -> " + target);
                }
            } catch (IOException e) {
                // closed meanwhile
            }
        }
        return out;
    }

    /** One snapshot of all counters. */
    public Snapshot snapshot() {
        return new Snapshot(sandboxResources(), paddockThreads().size(), stateDirFds());
    }

    public record Snapshot(Set<String> resources, int paddockThreads, List<String> stateDirFds) {
        /** What this snapshot has that {@code before} did not, in words; empty when nothing leaked. */
        public List<String> leaksSince(Snapshot before) {
            List<String> leaks = new ArrayList<>();
            for (String r : resources) {
                if (!before.resources.contains(r)) {
                    leaks.add(r);
                }
            }
            if (paddockThreads > before.paddockThreads) {
                leaks.add("init-channel threads: " + before.paddockThreads + " -> " + paddockThreads);
            }
            for (String fd : stateDirFds) {
                if (!before.stateDirFds.contains(fd)) {
                    leaks.add("fd " + fd);
                }
            }
            return leaks;
        }
    }

    private static List<Path> list(Path dir) {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.sorted().toList();
        } catch (IOException e) {
            return List.of();
        }
    }

    private static List<String> lines(Path file) {
        try {
            return Files.readAllLines(file).stream().filter(l -> !l.isBlank()).toList();
        } catch (IOException e) {
            return List.of();
        }
    }
}
