package io.paddock.runtime.internal.bundle;

import io.paddock.runtime.ImageRootfs;
import io.paddock.runtime.internal.oci.OciSpec.Mount;
import io.paddock.runtime.internal.oci.OciSpecBuilder;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * What a sandbox of an image gets besides the image's layers, decided here as data and files before the
 * overlay is mounted: the writable layer's first contents (its root, {@code /tmp}, {@code /workspace} and
 * the few {@code /etc} files every sandbox needs, owned by the sandbox's host ids), and the bind mounts of
 * Paddock's own files (the init; on runsc the preload library). Nothing of Paddock is written into the
 * image's layers, so they stay shared and unchanged.
 */
final class ImageRoots {
    /** Where Paddock's own files appear in a sandbox; never part of a committed layer. */
    static final String PADDOCK_DIR = "/.paddock";

    private ImageRoots() {
    }

    /**
     * What an empty upper directory starts with, as {@code paddock-rootfs create} entries: its root and
     * {@code /tmp} owned by the sandbox's root, {@code /workspace} by the image's user, and {@code /etc/hosts},
     * {@code hostname}, {@code resolv.conf} (and, with a preload library, {@code ld.so.preload}) written fresh.
     */
    static List<String> upperEntries(long uidBase, ImageRootfs image, Optional<String> preload) {
        List<String> e = new ArrayList<>();
        e.add(dir("", 0755, uidBase, uidBase));
        e.add(dir("etc", 0755, uidBase, uidBase));
        e.add(file("etc/hosts", "127.0.0.1\tlocalhost " + OciSpecBuilder.HOSTNAME
                + "\n::1\tlocalhost ip6-localhost ip6-loopback\n", uidBase));
        e.add(file("etc/hostname", OciSpecBuilder.HOSTNAME + "\n", uidBase));
        // A sandbox with a network (a build step's included) gets Paddock's resolver bound over this file.
        e.add(file("etc/resolv.conf", "# no network\n", uidBase));
        preload.ifPresent(p -> e.add(file("etc/ld.so.preload", p + "\n", uidBase)));
        e.add(dir("tmp", 01777, uidBase, uidBase));
        e.add(dir("workspace", 0755, uidBase + image.uid(), uidBase + image.gid()));
        return List.copyOf(e);
    }

    /**
     * What the writable layer over the host image's root starts with: its root, owned by the sandbox's root, and
     * {@code /opt}, owned by the sandbox user ({@code uid}:{@code gid} inside the sandbox), the one directory of
     * the root the user may write besides {@code /tmp} and {@code /workspace}. The host root directory itself
     * stays root's on the host, shared and unchanged.
     */
    static List<String> hostUpperEntries(long uidBase, int uid, int gid) {
        return List.of(dir("", 0755, uidBase, uidBase), userOpt(uidBase, uid, gid));
    }

    /**
     * As {@link #hostUpperEntries(long, int, int)}, with the working directory {@code workdir} made when the host
     * root lacks it (outside {@code /workspace} and {@code /tmp}, which are mounts of their own): the directories
     * the host root has are entered as its own (the sandbox's root, 0755), the ones it lacks are the user's.
     */
    static List<String> hostUpperEntries(long uidBase, int uid, int gid, Path hostRoot, String workdir) {
        List<String> e = new ArrayList<>(hostUpperEntries(uidBase, uid, gid));
        if (workdir.equals("/workspace") || workdir.startsWith("/workspace/") || workdir.equals("/tmp")
                || workdir.startsWith("/tmp/") || workdir.equals("/opt") || workdir.equals("/")) {
            return List.copyOf(e);
        }
        String rel = "";
        for (String part : workdir.substring(1).split("/")) {
            rel = rel.isEmpty() ? part : rel + "/" + part;
            if (rel.equals("opt")) {
                continue; // made above, the user's
            }
            boolean there = java.nio.file.Files.isDirectory(hostRoot.resolve(rel), java.nio.file.LinkOption.NOFOLLOW_LINKS);
            e.add(there ? dir(rel, 0755, uidBase, uidBase) : dir(rel, 0755, uidBase + uid, uidBase + gid));
        }
        return List.copyOf(e);
    }

    /** {@code /opt} owned by the sandbox user, over the host root's (see {@link #hostUpperEntries}). */
    static String userOpt(long uidBase, int uid, int gid) {
        return dir("opt", 0755, uidBase + uid, uidBase + gid);
    }

    private static String dir(String path, int mode, long uid, long gid) {
        return "d:" + path + ":" + Integer.toOctalString(mode) + ":" + uid + ":" + gid;
    }

    private static String file(String path, String content, long uidBase) {
        return "f:" + path + ":644:" + uidBase + ":" + uidBase + ":" + content;
    }

    /** The bind mounts of Paddock's files into an image's root: the init, and a preload library if any. */
    static List<Mount> mounts(Path initBinary, Optional<Path> preloadLibrary) {
        List<Mount> m = new ArrayList<>();
        m.add(new Mount(OciSpecBuilder.INIT_PATH, "bind", initBinary.toString(), List.of("bind", "ro", "nosuid", "nodev")));
        preloadLibrary.ifPresent(lib -> m.add(new Mount(preloadPath(lib), "bind", lib.toString(),
                List.of("bind", "ro", "nosuid", "nodev"))));
        return List.copyOf(m);
    }

    static String preloadPath(Path lib) {
        return PADDOCK_DIR + "/" + lib.getFileName();
    }

}
