package io.paddock.runtime.internal.host;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** The runc command line: the only code that runs runc. */
public final class Runc {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    /** The init's fd of a filter the launcher hands it: the first after stdio, which runc's --preserve-fds 1 keeps. */
    public static final int SECCOMP_FD = 3;

    private final Path binary;
    private final Path stateRoot;
    /** What {@code runc run} executes: a sealed copy of {@link #binary} (see {@link SealedCopy}), or null. */
    private final SealedCopy sealed;

    public Runc(Path binary, Path stateRoot) {
        this(binary, stateRoot, null);
    }

    /** As {@link #Runc(Path, Path)}, starting containers from {@code sealed}'s copy of the binary while it is held. */
    public Runc(Path binary, Path stateRoot, SealedCopy sealed) {
        this.binary = binary;
        this.stateRoot = stateRoot;
        this.sealed = sealed;
    }

    /** Finds runc on the usual paths, or says how to install it. */
    public static Path locate() {
        return HostProcess.locate("runc", "PADDOCK_RUNC",
                "runc is not installed. Install it with: sudo apt-get install -y runc   (Debian/Ubuntu; ./paddock installs"
                        + " it itself when run as root), or elsewhere runc's release binary"
                        + " (https://github.com/opencontainers/runc/releases) with PADDOCK_RUNC=/path/to/runc");
    }

    public String version() {
        HostProcess.Result r = HostProcess.run(List.of(binary.toString(), "--version"), Duration.ofSeconds(10));
        return r.output().lines().findFirst().orElse("runc (unknown version)");
    }

    public Path stateRoot() {
        return stateRoot;
    }

    /**
     * The user namespace a sandbox joins, and who makes it: {@code launcher} (paddock-userns-run, see
     * {@code src/main/c/userns_run.c}) creates it as {@code hostRoot}, the first id of the sandbox's host range
     * (uid and gid alike), maps container ids {@code 0 … size-1} to that range, points {@code link} (the path
     * config.json names) at it, sets the init's RLIMIT_NOFILE to {@code nofile} and RLIMIT_CORE to 0 on
     * itself, runs runc, and kills its namespace holder once runc has exited (the sandbox's processes then
     * hold the namespace). With {@code seccompFilter}, the launcher opens that compiled filter as fd
     * {@value #SECCOMP_FD}, runc passes it on to the init ({@code --preserve-fds}), and the spec's init installs it
     * ({@code OciSpec#withSeccompByInit}).
     */
    public record OwnUserns(Path launcher, long hostRoot, long size, long nofile, Path link, java.util.Optional<Netns> netns,
                            java.util.Optional<Path> seccompFilter) {
        public OwnUserns {
            java.util.Objects.requireNonNull(netns, "netns");
            java.util.Objects.requireNonNull(seccompFilter, "seccompFilter");
            if (hostRoot <= 0 || size <= 0 || nofile <= 0) {
                throw new IllegalArgumentException("bad user namespace: owner " + hostRoot + ", size " + size
                        + ", nofile " + nofile);
            }
        }
    }

    /**
     * A network namespace owned by the host for runc to run in, and where the launcher mounts the sysfs of that
     * namespace for the spec to bind at {@code /sys} (see userns_run.c).
     */
    public record Netns(Path netns, Path sysfs) {
    }

    /**
     * {@code runc run -d}: creates and starts the container detached, its init's stdin and stdout connected to the
     * given FIFOs and its stderr appended to {@code log}, with the sandbox's user namespace created by its own host
     * uid rather than by runc as root, so that the kernel charges the sandbox's per-user counts (inotify instances
     * and watches, user namespaces, queue bytes, pending signals) to that uid.
     */
    public void runDetached(String id, Path bundle, Path stdinFifo, Path stdoutFifo, Path log, OwnUserns userns) {
        List<String> argv = new ArrayList<>(List.of(userns.launcher().toString()));
        userns.seccompFilter().ifPresent(f -> argv.addAll(List.of("-s", f.toString())));
        userns.netns().ifPresent(ns -> argv.addAll(List.of("-n", ns.netns().toString(), ns.sysfs().toString())));
        argv.addAll(List.of(Long.toString(userns.hostRoot()),
                Long.toString(userns.hostRoot()), Long.toString(userns.size()), Long.toString(userns.nofile()),
                userns.link().toString()));
        argv.addAll(runArgv(id, bundle, userns.seccompFilter().isPresent()));
        start(argv, stdinFifo, stdoutFifo, log);
    }

    private List<String> runArgv(String id, Path bundle, boolean passSeccompFd) {
        Path runc = sealed == null ? binary : sealed.path();
        List<String> argv = new ArrayList<>(List.of(runc.toString(), "--root", stateRoot.toString(), "run", "--detach"));
        if (passSeccompFd) {
            argv.addAll(List.of("--preserve-fds", "1")); // fd 3, SECCOMP_FD
        }
        argv.addAll(List.of("--bundle", bundle.toString(), id));
        return argv;
    }

    private void start(List<String> argv, Path stdinFifo, Path stdoutFifo, Path log) {
        int code = HostProcess.runWithFiles(argv, stdinFifo, stdoutFifo, log, TIMEOUT);
        if (code != 0) {
            throw new SandboxException(ErrorCode.INTERNAL, "runc could not start the sandbox (exit " + code + "): "
                    + lastLines(log));
        }
    }

    /**
     * What {@code runc delete} does for a container whose processes are gone and whose cgroups are removed (see
     * {@link Cgroups#killAndRemove}), without starting runc: removes runc's state directory for it (its
     * {@code state.json}, and the exec FIFO of one never started). runc 1.1's delete of a stopped container is
     * exactly that (cgroups destroyed, then the state directory), as the spec has no hooks and its own pid
     * namespace; starting the Go binary for it costs ≈ 5 ms and ≈ 7 ms of CPU per destroy. Nothing there is
     * fine.
     */
    public void removeState(String id) {
        if (id.isEmpty() || id.contains("/") || id.equals(".") || id.equals("..")) {
            throw new IllegalArgumentException("bad container id " + id);
        }
        Path dir = stateRoot.resolve(id);
        try (java.util.stream.Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (java.nio.file.NoSuchFileException e) {
            // no state: nothing to do
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot remove runc's state of " + id + ": " + e, e);
        }
    }

    /**
     * {@code runc pause} / {@code runc resume}: freezes or thaws every process of the container (the cgroup
     * freezer, v1 or v2); the memory stays resident.
     */
    public void freeze(String id, boolean frozen) {
        String verb = frozen ? "pause" : "resume";
        HostProcess.Result r = HostProcess.run(
                List.of(binary.toString(), "--root", stateRoot.toString(), verb, id), TIMEOUT);
        if (!r.ok()) {
            throw new SandboxException(ErrorCode.INTERNAL, "runc " + verb + " " + id + " failed: " + r.output().strip());
        }
    }

    /** The host pid of the container's init, from runc's state file. */
    public long initPid(String id) {
        try {
            com.fasterxml.jackson.databind.JsonNode state = new com.fasterxml.jackson.databind.ObjectMapper()
                    .readTree(stateRoot.resolve(id).resolve("state.json").toFile());
            long pid = state.path("init_process_pid").asLong(0);
            if (pid <= 0) {
                throw new IOException("no init_process_pid");
            }
            return pid;
        } catch (IOException e) {
            throw new io.paddock.SandboxException(io.paddock.ErrorCode.NOT_FOUND, "no runc state for " + id + ": " + e.getMessage());
        }
    }

    /** Whether runc has state for this container. */
    public boolean hasState(String id) {
        return Files.isDirectory(stateRoot.resolve(id));
    }

    static String lastLines(Path log) {
        try {
            List<String> lines = Files.readAllLines(log);
            String tail = String.join("\n", lines.subList(Math.max(0, lines.size() - 5), lines.size()));
            return tail.isBlank() ? "(no output)" : tail;
        } catch (java.io.IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }
}
