package io.paddock.testkit;

import io.paddock.SandboxId;

import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;

/**
 * What the attack suite needs to see of the host a sandbox runs on: the "host check" half of each attack
 * in ATTACKS.md. A tier implements it for its own isolation (runc: {@code /proc} and the cgroup
 * filesystem; runsc: the sandbox and gofer processes; a remote daemon: an inspection endpoint).
 *
 * <p>Implementations only <em>look</em>: nothing here changes a sandbox or the host, except
 * {@link #plantMarker}, which writes a marker file the test removes again.
 *
 * <p>Pids are host pids (the host's PID namespace), uids host uids.
 */
public interface HostView {

    /** The host uid range a sandbox's user namespace maps onto: {@code [base, base + size)}. */
    record UidRange(long base, long size) {
        public boolean contains(long uid) {
            return uid >= base && uid < base + size;
        }

        public boolean overlaps(UidRange o) {
            return base < o.base + o.size && o.base < base + size;
        }
    }

    /** Every process (thread-group leader) in the sandbox's cgroups, in any hierarchy; empty if none. */
    Set<Long> processes(SandboxId id);

    /**
     * The host pid of the process that runs the sandbox's init (its PID 1): the init itself on runc, the
     * Sentry on runsc. Fails if the sandbox has no running init.
     */
    long initPid(SandboxId id);

    /**
     * Host processes of the tier's own machinery that name this sandbox wherever they are (runsc: its
     * {@code runsc-sandbox} and {@code runsc-gofer}), in or out of its cgroups; empty on tiers without any.
     * After destroy there must be none (ATTACKS.md leak checklist).
     */
    default Set<Long> runtimeProcesses(SandboxId id) {
        return Set.of();
    }

    /** The host uid range mapped into the sandbox, read from its init's {@code uid_map}. */
    UidRange uidRange(SandboxId id);

    /** The real host uid of a process; empty once it is gone. */
    OptionalLong hostUid(long pid);

    /** The real host gid of a process; empty once it is gone. */
    OptionalLong hostGid(long pid);

    /** Every process on the host whose real, effective, saved or filesystem uid is in the range. */
    Set<Long> processesWithUidIn(UidRange range);

    /** The process's state letter ({@code R S D T t Z X}), or {@code '-'} once it is gone. */
    char processState(long pid);

    /** The {@code /proc/<pid>/task/<tid>/status} fields of every thread of a process, by tid. */
    Map<Long, Map<String, String>> threadStatuses(long pid);

    /** Namespace links of a process ({@code "net" -> "net:[4026531833]"}), for cgroup ipc mnt net pid user uts. */
    Map<String, String> namespacesOf(long pid);

    /** The namespace links of the engine (host) side, to compare sandboxes against. */
    Map<String, String> hostNamespaces();

    /** The sandbox's {@code pids.current}. */
    long pidsCurrent(SandboxId id);

    /** The sandbox's {@code pids.max}. */
    long pidsMax(SandboxId id);

    /** The sandbox's memory limit in bytes. */
    long memoryLimit(SandboxId id);

    /** The highest memory usage the sandbox's cgroup has recorded, if the host records one. */
    OptionalLong memoryPeak(SandboxId id);

    /**
     * The CPU time, in nanoseconds, every task of the sandbox's cgroup has used so far (runc: the tenant's
     * processes; runsc: the Sentry, gofer and stubs, which run all tenant code).
     */
    long cpuUsageNanos(SandboxId id);

    /** Whether any cgroup directory of the sandbox still exists, in any hierarchy. */
    boolean cgroupExists(SandboxId id);

    /** Paths of every cgroup directory of the sandbox still present; empty when cleaned. */
    List<String> cgroupDirs(SandboxId id);

    /**
     * The open descriptors of a process, one {@code "<fd> -> <target>"} each; a target that is a directory
     * ends with {@code " (directory)"}.
     */
    List<String> openFiles(long pid);

    /** The engine process's open file descriptor count. */
    long engineOpenFds();

    /** Free bytes on the filesystem holding the engine's state directory. */
    long hostFreeDiskBytes();

    /**
     * The sandbox's disk layer as its store accounts it, once the store has committed everything written so
     * far: on the host tiers the btrfs quota group of its subvolume after a filesystem sync (the quota group
     * counts at transaction commit, so an unsynced read lags behind the writes).
     *
     * @param usedBytes bytes the layer holds (data and its metadata: the quota group's referenced bytes)
     * @param limitBytes the limit the store enforces on it
     */
    record DiskLayer(long usedBytes, long limitBytes) {
    }

    /** The sandbox's writable layer, synced and read from its store; fails if it has none. */
    DiskLayer diskLayer(SandboxId id);

    /**
     * Bytes of the host disk the store of every sandbox's writable layer occupies right now: on the host
     * tiers the blocks allocated to the sparse btrfs loop file (what {@code du} says), after a sync.
     */
    long writableStoreHostBytes();

    /** The content of a host file, or empty text if it cannot be read. */
    String readHostFile(String path);

    /**
     * Plants a host file called {@code name} containing {@code content} in each of the host's {@code /tmp}
     * and {@code /root} (where they exist), and returns their paths; tests delete them with
     * {@link #removeMarker}.
     */
    List<String> plantMarker(String name, String content);

    void removeMarker(List<String> paths);

    /** Host paths (under the usual places a traversal lands: /, /tmp, /root, /etc, the state dir) named {@code name}. */
    List<String> findHostFiles(String name);
}
