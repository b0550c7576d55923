package io.paddock.engine;

import io.paddock.SandboxId;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * The host side of the attack suite for the gVisor tier. Tenant processes do not exist on the host: the
 * sandbox's cgroups hold its Sentry ({@code runsc-sandbox}), its gofer ({@code runsc-gofer}) and the ptrace
 * platform's stub processes. So "the init" seen from the host is the Sentry (the process that runs the
 * sandbox's PID 1), and the uid range is the gofer's, the one host process that honours the sandbox's uid
 * mapping. Cgroup counters, fds and files are read as on runc.
 */
final class RunscHostView extends RuncHostView {
    RunscHostView(Path stateDir) {
        super(stateDir);
    }

    /** The Sentry: the sandbox's {@code runsc-sandbox} process (it runs {@code boot … <id>}). */
    @Override
    public long initPid(SandboxId id) {
        for (long pid : processes(id)) {
            String cmd = cmdline(pid);
            if (cmd.startsWith("runsc-sandbox\0") && cmd.contains("\0boot\0") && cmd.endsWith("\0" + id.value() + "\0")) {
                return pid;
            }
        }
        throw new IllegalStateException("no runsc-sandbox process in the cgroups of " + id + ": " + processes(id));
    }

    /** The gofer's mapping: container root onto the sandbox's leased host range. */
    @Override
    public UidRange uidRange(SandboxId id) {
        for (long pid : processes(id)) {
            if (!cmdline(pid).startsWith("runsc-gofer\0")) {
                continue;
            }
            for (String line : lines(Path.of("/proc", Long.toString(pid), "uid_map"))) {
                String[] f = line.trim().split("\\s+");
                if (f.length == 3 && f[0].equals("0")) {
                    return new UidRange(Long.parseLong(f[1]), Long.parseLong(f[2]));
                }
            }
        }
        throw new IllegalStateException("no runsc-gofer with a uid_map in the cgroups of " + id);
    }

    /** Every runsc process on the host whose command line names this sandbox (its id or its bundle). */
    @Override
    public Set<Long> runtimeProcesses(SandboxId id) {
        Set<Long> out = new TreeSet<>();
        try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
            for (Path p : procs.toList()) {
                String name = p.getFileName().toString();
                if (!name.chars().allMatch(Character::isDigit)) {
                    continue;
                }
                String cmd = cmdline(Long.parseLong(name));
                if (cmd.startsWith("runsc") && cmd.contains(id.value())) {
                    out.add(Long.parseLong(name));
                }
            }
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return out;
    }

    static String cmdline(long pid) {
        try {
            return new String(Files.readAllBytes(Path.of("/proc", Long.toString(pid), "cmdline")), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "";
        }
    }
}
