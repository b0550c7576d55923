package io.paddock.runtime.internal.bundle;

import io.paddock.runtime.ImageRootfs;
import io.paddock.runtime.internal.host.UserNetwork;
import io.paddock.runtime.internal.oci.OciSpec.Mount;
import io.paddock.runtime.internal.oci.OciSpecBuilder;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
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
     * Fills an empty upper directory: its root and {@code /tmp} owned by the sandbox's root, {@code /workspace}
     * by the image's user, and {@code /etc/hosts}, {@code hostname}, {@code resolv.conf} (and, with a preload
     * library, {@code ld.so.preload}) written fresh.
     */
    static void prepareUpper(Path upper, long uidBase, ImageRootfs image, Optional<String> preload) throws IOException {
        chown(upper, uidBase, uidBase, 0755);
        Path etc = Files.createDirectory(upper.resolve("etc"));
        chown(etc, uidBase, uidBase, 0755);
        write(etc.resolve("hosts"), "127.0.0.1\tlocalhost " + OciSpecBuilder.HOSTNAME
                + "\n::1\tlocalhost ip6-localhost ip6-loopback\n", uidBase);
        write(etc.resolve("hostname"), OciSpecBuilder.HOSTNAME + "\n", uidBase);
        // A build step gets user-mode network (UserNetwork), whose DNS forwarder is 10.0.2.3; a sandbox none.
        write(etc.resolve("resolv.conf"), image.buildStep() ? UserNetwork.RESOLV_CONF : "# no network\n", uidBase);
        if (preload.isPresent()) {
            write(etc.resolve("ld.so.preload"), preload.get() + "\n", uidBase);
        }
        chown(Files.createDirectory(upper.resolve("tmp")), uidBase, uidBase, 01777);
        Path workspace = Files.createDirectory(upper.resolve("workspace"));
        chown(workspace, uidBase + image.uid(), uidBase + image.gid(), 0755);
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

    private static void write(Path file, String content, long uidBase) throws IOException {
        Files.writeString(file, content, StandardCharsets.UTF_8);
        chown(file, uidBase, uidBase, 0644);
    }

    private static void chown(Path p, long uid, long gid, int mode) throws IOException {
        Files.setAttribute(p, "unix:uid", (int) uid, LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(p, "unix:gid", (int) gid, LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(p, "unix:mode", mode);
    }
}
