package io.paddock.runtime.internal.host;

import io.paddock.runtime.internal.oci.BundlePlan;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Reads the host facts the OCI spec depends on. */
public final class HostFacts {
    private HostFacts() {
    }

    public static BundlePlan.HostFacts probe(Cgroups cgroups) {
        boolean swap = cgroups.version() == Cgroups.Version.V2
                ? false
                : cgroups.memoryDir("/").map(d -> Files.exists(d.resolve("memory.memsw.limit_in_bytes"))).orElse(false);
        return new BundlePlan.HostFacts(System.getProperty("os.arch"), swap, nofileHardLimit());
    }

    /** The hard RLIMIT_NOFILE of this process, which no sandbox may be asked to exceed. */
    public static long nofileHardLimit() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/limits"))) {
                if (line.startsWith("Max open files")) {
                    String[] f = line.substring("Max open files".length()).trim().split("\\s+");
                    return f[1].equals("unlimited") ? Long.MAX_VALUE : Long.parseLong(f[1]);
                }
            }
        } catch (IOException | RuntimeException e) {
            // fall through
        }
        return 1024;
    }

    /** Whether this process runs as root (needed for user namespaces with uid ranges, cgroups and mounts). */
    public static boolean isRoot() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("Uid:")) {
                    return line.split("\\s+")[2].equals("0");
                }
            }
        } catch (IOException e) {
            return false;
        }
        return false;
    }
}
