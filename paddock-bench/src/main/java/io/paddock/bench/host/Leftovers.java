package io.paddock.bench.host;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

/**
 * What the sandboxes of one figure left on the host after they were destroyed: each id is looked up where a
 * sandbox of the OCI tiers keeps something (bundle, runtime state, root and mount directories, writable layer,
 * uid lease, resolver files, checkpoint, cgroups in every hierarchy, mounts, processes naming it). Only the
 * given ids are looked for, so that other engines on the host (a daemon, another run) do not count.
 */
public final class Leftovers {
    private Leftovers() {
    }

    /** One line per thing found; empty when the ids left nothing. */
    public static List<String> of(Path stateDir, Path storageDir, Collection<String> ids) {
        Set<String> wanted = Set.copyOf(ids);
        List<String> out = new ArrayList<>();
        for (String id : wanted) {
            for (Path p : List.of(stateDir.resolve("sandboxes").resolve(id), stateDir.resolve("sandboxes").resolve("." + id),
                    stateDir.resolve("runc").resolve(id), stateDir.resolve("runsc").resolve(id),
                    stateDir.resolve("roots").resolve(id), stateDir.resolve("mounts").resolve(id),
                    stateDir.resolve("resolv").resolve(id), storageDir.resolve("writable").resolve(id),
                    storageDir.resolve("checkpoints").resolve(id))) {
                if (Files.exists(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                    out.add(p.toString());
                }
            }
        }
        for (Path lease : list(stateDir.resolve("uids"))) {
            String holder = read(lease).strip();
            if (wanted.contains(holder)) {
                out.add("uid lease " + lease.getFileName() + " of " + holder);
            }
        }
        List<Path> cgroupParents = new ArrayList<>(List.of(Path.of("/sys/fs/cgroup/paddock")));
        for (Path hierarchy : list(Path.of("/sys/fs/cgroup"))) {
            cgroupParents.add(hierarchy.resolve("paddock"));
        }
        for (Path parent : cgroupParents) {
            for (Path cg : list(parent)) {
                if (wanted.contains(cg.getFileName().toString())) {
                    out.add("cgroup " + cg);
                }
            }
        }
        for (String line : read(Path.of("/proc/self/mountinfo")).split("\n")) {
            if (wanted.stream().anyMatch(line::contains)) {
                out.add("mount " + line);
            }
        }
        for (Path proc : list(Path.of("/proc"))) {
            if (proc.getFileName().toString().chars().allMatch(Character::isDigit)) {
                String cmdline = read(proc.resolve("cmdline")).replace('\0', ' ');
                if (cmdline.contains("sb-") && wanted.stream().anyMatch(cmdline::contains)) {
                    out.add("process " + proc.getFileName() + ": " + cmdline.strip());
                }
            }
        }
        return out;
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
            return Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }
}
