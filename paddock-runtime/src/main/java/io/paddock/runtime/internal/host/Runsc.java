package io.paddock.runtime.internal.host;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The runsc (gVisor) command line: the only code that runs runsc. Every call passes the same global
 * flags, so that each command sees the sandbox as it was started:
 * <ul>
 *   <li>{@code --root <state>/runsc}: runsc's own state directory, Paddock's alone;</li>
 *   <li>{@code --network=none}: the sandbox gets only its own loopback (the Sentry's netstack), never
 *       the host's network; a sandbox with a network is started with {@code --network=sandbox} instead, and
 *       the Sentry's netstack then drives the interface of the namespace its spec names (made by Paddock's
 *       network layer), never the host's;</li>
 *   <li>{@code --oci-seccomp}: the OCI spec's seccomp allowlist is applied <em>inside</em> the Sentry to
 *       tenant syscalls (without it runsc ignores the spec's filter: gVisor always filters its own host
 *       syscalls, which is a different layer);</li>
 *   <li>{@code --cgroupfs}: the Sentry's own cgroup hierarchies at {@code /sys/fs/cgroup} (cpu, memory), in
 *       which the init keeps each exec in a cgroup of its own: the Sentry has no child subreapers, and a
 *       process that leaves its exec's session must still die with the exec;</li>
 *   <li>no {@code --platform}: the default (ptrace on this build) is used; {@code kvm} hangs on the
 *       development hosts, so it is never chosen automatically.</li>
 * </ul>
 */
public final class Runsc {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    /** A checkpoint or restore moves the sandbox's memory through the disk: seconds per GiB. */
    private static final Duration CHECKPOINT_TIMEOUT = Duration.ofMinutes(5);
    private static final ObjectMapper JSON = new ObjectMapper();
    /** What to run: ./paddock installs it itself as root on Debian (scripts/prereqs.sh), as it installs runc. */
    public static final String INSTALL_HINT = "Install it with: sudo apt-get install -y runsc   (Debian/Ubuntu; ./paddock"
            + " installs it itself when run as root), or elsewhere gVisor's release binary"
            + " (https://gvisor.dev/docs/user_guide/install/) with PADDOCK_RUNSC=/path/to/runsc";

    private final Path binary;
    private final Path stateRoot;

    public Runsc(Path binary, Path stateRoot) {
        this.binary = binary;
        this.stateRoot = stateRoot;
    }

    /** Finds runsc ({@code $PADDOCK_RUNSC} or the usual paths), or says how to install it. */
    public static Path locate() {
        return HostProcess.locate("runsc", "PADDOCK_RUNSC", "runsc (gVisor) is not installed. " + INSTALL_HINT);
    }

    /**
     * Checks that runsc can run sandboxes here, cheaply (no sandbox is started): the binary answers
     * {@code --version}, and the ptrace platform it uses by default is not forbidden by Yama.
     *
     * @throws SandboxException FAILED_PRECONDITION saying why not and what to do
     */
    public void checkUsable() {
        HostProcess.Result r = HostProcess.run(List.of(binary.toString(), "--version"), Duration.ofSeconds(10));
        if (!r.ok() || !r.output().startsWith("runsc version")) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, binary + " --version failed (exit " + r.exitCode()
                    + "): " + r.output() + ". Reinstall it: apt-get install --reinstall -y runsc");
        }
        try {
            String yama = Files.readString(Path.of("/proc/sys/kernel/yama/ptrace_scope")).trim();
            if (yama.equals("3")) {
                throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "runsc's ptrace platform cannot run:"
                        + " kernel.yama.ptrace_scope is 3 (ptrace disabled until reboot)");
            }
        } catch (NoSuchFileException e) {
            // no Yama: nothing forbids ptrace
        } catch (IOException e) {
            // unreadable: let the first sandbox tell
        }
    }

    public String version() {
        HostProcess.Result r = HostProcess.run(List.of(binary.toString(), "--version"), Duration.ofSeconds(10));
        return r.output().lines().findFirst().orElse("runsc (unknown version)");
    }

    public Path stateRoot() {
        return stateRoot;
    }

    private List<String> argv(String... command) {
        return argv(false, command);
    }

    private List<String> argv(boolean network, String... command) {
        List<String> argv = new ArrayList<>(List.of(binary.toString(), "--root", stateRoot.toString(),
                network ? "--network=sandbox" : "--network=none", "--oci-seccomp", "--cgroupfs"));
        argv.addAll(List.of(command));
        return argv;
    }

    /**
     * As {@link #argv(boolean, String...)} for a command that starts a sandbox from {@code bundle}: its Sentry's and
     * gofer's fatal errors (a Go panic, "failed to create new OS thread") go to {@link #PANIC_LOG} there, which
     * nothing else records, so that a sandbox that dies can say why.
     */
    private List<String> startArgv(boolean network, Path bundle, String... command) {
        List<String> argv = argv(network, command);
        argv.add(1, "--panic-log=" + bundle.resolve(PANIC_LOG));
        return argv;
    }

    /** Where in its bundle a runsc sandbox's Sentry writes its fatal errors. */
    public static final String PANIC_LOG = "panic.log";

    /**
     * The user namespace a sandbox's runsc runs in, so that its Sentry is a host uid of its own: {@code launcher}
     * (paddock-runsc-userns, see {@code src/main/c/runsc_userns.c}) makes it, mapping root to root, 65534 (the
     * uid runsc gives every Sentry) to {@code sentryId} and the sandbox's range {@code base}+{@code size} to
     * itself, and runs runsc in it as root.
     */
    public record SentryUserns(Path launcher, long sentryId, long base, long size) {
        List<String> prefix() {
            return List.of(launcher.toString(), Long.toString(sentryId), Long.toString(base), Long.toString(size));
        }

        /** The prefix that runs runsc as root of the user namespace that owns the network namespace it runs in. */
        List<String> joiningNetworkOwner() {
            return List.of(launcher.toString(), "-j");
        }
    }

    /** A process in a sandbox's {@link SentryUserns} until closed: the namespace's file is {@link #userns()}. */
    public static final class HeldUserns implements AutoCloseable {
        private final HostProcess.Held held;
        private final Path userns;

        private HeldUserns(HostProcess.Held held, Path userns) {
            this.held = held;
            this.userns = userns;
        }

        public Path userns() {
            return userns;
        }

        @Override
        public void close() {
            held.close();
        }
    }

    /**
     * Makes the user namespace a networked sandbox's runsc will run in and holds it open, so that its network
     * namespace can be made inside it (a network namespace pins the user namespace that owns it from then on; see
     * {@link #runDetached}).
     */
    public HeldUserns holdUserns(SentryUserns userns) {
        List<String> argv = new ArrayList<>(userns.prefix());
        argv.addAll(List.of("/bin/sh", "-c", "echo $$; exec cat"));
        HostProcess.Held held = HostProcess.hold(argv, HostProcess.HOLD_TIMEOUT);
        if (!held.firstLine().matches("[1-9][0-9]*")) {
            held.close();
            throw new SandboxException(ErrorCode.INTERNAL, "cannot make the sandbox's user namespace: "
                    + held.firstLine());
        }
        return new HeldUserns(held, Path.of("/proc", held.firstLine(), "ns", "user"));
    }

    /**
     * {@code runsc run --detach}: starts the sandbox (Sentry, gofer) detached, the init's stdin and stdout
     * connected to the given FIFOs (runsc hands them to the Sentry as the container's stdio) and runsc's
     * own stderr appended to {@code log}. Without a network, runsc runs in {@code userns} (the Sentry then has
     * its host uid). A networked sandbox's runsc must join the sandbox's network namespace, which takes
     * CAP_SYS_ADMIN in the user namespace that owns it: that namespace was made inside one like {@code userns}
     * ({@link #holdUserns}), and runsc runs as its root; in one the host's user namespace owns (made before this
     * was so), runsc runs as the host's root and the Sentry is uid 65534.
     */
    public void runDetached(String id, Path bundle, Path stdinFifo, Path stdoutFifo, Path log, java.util.Optional<Path> netns,
                            SentryUserns userns) {
        if (netns.isEmpty()) {
            List<String> run = new ArrayList<>(userns.prefix());
            run.addAll(startArgv(false, bundle, "run", "--detach", "--bundle", bundle.toString(), id));
            check(HostProcess.runWithFiles(run, stdinFifo, stdoutFifo, log, TIMEOUT), log);
            return;
        }
        // A networked sandbox is created, then started apart: runsc's start refuses to network a sandbox when
        // /proc/sys/net/core/rmem_default exists in the namespace it configures, its test for "the host's
        // namespace", which kernels since 6.x answer yes to in every namespace. The start alone runs where a
        // read-only empty directory hides that one: in the sandbox's network namespace (each namespace has its
        // own /proc/sys/net entries, so the mask must be made from inside it) and a private mount namespace,
        // gone with the process. The sandbox's processes, made by create, never see it.
        // Both in the sandbox's network namespace: create binds the sandbox's control socket, an abstract
        // socket, which only processes of that namespace reach (runsc start among them).
        List<String> create = new ArrayList<>(List.of(nsenter().toString(), "--net=" + netns.get()));
        create.addAll(userns.joiningNetworkOwner());
        create.addAll(startArgv(true, bundle, "create", "--bundle", bundle.toString(), id));
        check(HostProcess.runWithFiles(create, stdinFifo, stdoutFifo, log, TIMEOUT), log);
        List<String> start = maskedInNetns(netns.get());
        start.addAll(argv(true, "start", id));
        check(HostProcess.runWithFiles(start, Path.of("/dev/null"), Path.of("/dev/null"), log, TIMEOUT), log);
    }

    /**
     * The prefix that runs a runsc command in the sandbox's network namespace, in a private mount namespace
     * where a read-only empty tmpfs hides {@code /proc/sys/net/core} (see {@link #runDetached}: runsc's test
     * for "the host's namespace"), gone with the process.
     */
    private static List<String> maskedInNetns(Path netns) {
        return new ArrayList<>(List.of(nsenter().toString(), "--net=" + netns,
                unshare().toString(), "--mount", "--propagation", "private",
                "/bin/sh", "-c", "mount -t tmpfs -o ro,size=4k paddock-mask /proc/sys/net/core && exec \"$0\" \"$@\""));
    }

    /**
     * As {@link #maskedInNetns}, for a command that also starts the gofer and the Sentry (restore is create and
     * start in one). They mount a proc of their own in a user namespace, which the kernel allows only while some
     * proc mount of the mount namespace is fully visible (no locked mount over a non-empty directory of it): a
     * tmpfs over {@code /proc/sys/net/core} makes {@code /proc} not so, and the gofer dies with "error mounting
     * proc: operation not permitted". The mask is therefore a proc instance itself: its root holds no
     * {@code rmem_default}, and it is a fully visible proc mount. Both go when the gofer and Sentry pivot into
     * their own roots, and with the process's mount namespace.
     */
    private static List<String> procMaskedInNetns(Path netns) {
        return new ArrayList<>(List.of(nsenter().toString(), "--net=" + netns,
                unshare().toString(), "--mount", "--propagation", "private",
                "/bin/sh", "-c", "mount -t proc -o nosuid,nodev,noexec paddock-mask /proc/sys/net/core && exec \"$0\" \"$@\""));
    }

    /**
     * {@code runsc checkpoint}: writes the sandbox's whole state (processes, memory, the Sentry's kernel state)
     * into {@code imageDir} and ends its host processes; runsc keeps its state for the id as stopped.
     */
    public void checkpoint(String id, Path imageDir, Path log, java.util.Optional<Path> netns) {
        // A networked sandbox's control socket is an abstract socket of its network namespace: reached from there.
        List<String> command = new ArrayList<>();
        netns.ifPresent(ns -> command.addAll(List.of(nsenter().toString(), "--net=" + ns)));
        command.addAll(argv(netns.isPresent(), "checkpoint", "--image-path", imageDir.toString(), id));
        HostProcess.Result r = HostProcess.run(command, CHECKPOINT_TIMEOUT);
        if (!r.ok()) {
            throw new SandboxException(ErrorCode.INTERNAL, "runsc could not checkpoint sandbox " + id + " (exit "
                    + r.exitCode() + "): " + r.output().strip());
        }
    }

    /**
     * {@code runsc restore --detach}: starts the sandbox again from a checkpoint {@link #checkpoint} wrote, from
     * the same bundle, its init's stdio the given FIFOs again (gVisor gives the restored init the new host
     * descriptors in place of the saved ones). runsc's stopped state for the id is removed first, as destroy
     * removes it (the checkpoint ended its processes): {@code runsc delete} would wait over a second for the
     * host's init to reap a Sentry that is already gone.
     */
    public void restore(String id, Path bundle, Path imageDir, Path stdinFifo, Path stdoutFifo, Path log,
            java.util.Optional<Path> netns, SentryUserns userns) {
        killRecorded(id);
        removeState(id);
        // A networked sandbox is restored where it was started: restore is create and start in one command, so
        // it runs whole in the sandbox's network namespace (the control socket) under the start's mask, as root of
        // the user namespace that owns it; any other in its own user namespace, as run (runDetached).
        List<String> command = netns.map(ns -> {
            List<String> masked = procMaskedInNetns(ns);
            masked.addAll(userns.joiningNetworkOwner());
            return masked;
        }).orElseGet(() -> new ArrayList<>(userns.prefix()));
        command.addAll(startArgv(netns.isPresent(), bundle, "restore", "--detach", "--bundle", bundle.toString(),
                "--image-path", imageDir.toString(), id));
        int code = HostProcess.runWithFiles(command, stdinFifo, stdoutFifo, log, CHECKPOINT_TIMEOUT);
        if (code != 0) {
            throw new SandboxException(ErrorCode.INTERNAL, "runsc could not restore sandbox " + id + " (exit " + code
                    + "): " + Runc.lastLines(log));
        }
    }

    private static void check(int code, Path log) {
        if (code != 0) {
            throw new SandboxException(ErrorCode.INTERNAL, "runsc could not start the sandbox (exit " + code + "): "
                    + Runc.lastLines(log));
        }
    }

    /** util-linux's nsenter, which networked gVisor sandboxes need (here and in {@link NetHost#ipInNetnsOwnedBy}). */
    static Path nsenter() {
        return HostProcess.locate("nsenter", "PADDOCK_NSENTER",
                "nsenter (util-linux) is not installed; networked gVisor sandboxes need it: sudo apt-get install -y util-linux");
    }

    /** util-linux's unshare, as {@link #nsenter()}. */
    static Path unshare() {
        return HostProcess.locate("unshare", "PADDOCK_UNSHARE",
                "unshare (util-linux) is not installed; networked gVisor sandboxes need it: sudo apt-get install -y util-linux");
    }

    /** Whether runsc has state for this sandbox. */
    public boolean hasState(String id) {
        return !stateFiles(id).isEmpty();
    }

    /**
     * Kills the sandbox's host processes recorded in runsc's state (the Sentry and the gofer), checking
     * that each pid still is that sandbox's process. The engine's primary kill is by cgroup; this covers a
     * process that is somehow outside it.
     */
    public void killRecorded(String id) {
        for (Path f : stateFiles(id)) {
            if (!f.getFileName().toString().endsWith(".state")) {
                continue;
            }
            try {
                JsonNode state = JSON.readTree(Files.readAllBytes(f));
                List<Long> pids = new ArrayList<>();
                pids.add(state.path("goferPid").asLong(0));
                pids.add(state.path("sandbox").path("pid").asLong(0));
                for (long pid : pids) {
                    if (pid > 1 && cmdline(pid).contains(id)) {
                        ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
                    }
                }
            } catch (IOException | RuntimeException e) {
                // unreadable or half-written state: the cgroup kill is the primary path
            }
        }
    }

    /**
     * Removes runsc's state for this sandbox once its processes are dead. Equivalent to what
     * {@code runsc delete --force} leaves after it has killed the sandbox, without its wait for the host's
     * init to reap the Sentry's zombie (about a second on hosts whose PID 1 reaps slowly).
     */
    public void removeState(String id) {
        for (Path f : stateFiles(id)) {
            try {
                Files.deleteIfExists(f);
            } catch (IOException e) {
                throw new SandboxException(ErrorCode.INTERNAL, "cannot remove runsc state " + f + ": " + e);
            }
        }
    }

    /** {@code runsc delete --force}: the slow, complete path (kill, wait, cgroups, state). */
    public void deleteForce(String id) {
        HostProcess.Result r = HostProcess.run(argv("delete", "--force", id), TIMEOUT);
        if (!r.ok() && !r.output().contains("does not exist") && !r.output().contains("not found")
                && !r.output().contains("no such")) {
            throw new SandboxException(ErrorCode.INTERNAL, "runsc delete " + id + " failed: " + r.output());
        }
    }

    /** runsc's files for this sandbox: {@code <id>_sandbox:<id>.state} and {@code .lock}, named by the id. */
    List<Path> stateFiles(String id) {
        try (Stream<Path> s = Files.list(stateRoot)) {
            return s.filter(p -> {
                String n = p.getFileName().toString();
                return n.equals(id) || n.startsWith(id + "_");
            }).toList();
        } catch (NoSuchFileException e) {
            return List.of();
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot list " + stateRoot + ": " + e);
        }
    }

    private static String cmdline(long pid) {
        try {
            return new String(Files.readAllBytes(Path.of("/proc", Long.toString(pid), "cmdline")), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "";
        }
    }
}
