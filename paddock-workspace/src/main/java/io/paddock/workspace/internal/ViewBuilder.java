package io.paddock.workspace.internal;

import io.paddock.Permission;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;

/**
 * Turns a copy of a codebase's revision into the view a sandbox gets under a plan, in place. The kernel then
 * enforces the levels without any check of Paddock's in the path of a file operation:
 * <ul>
 *   <li>{@code none}: deleted. It is not in the sandbox's filesystem at all, so no link, rename, descriptor or
 *       mapping can reach it;</li>
 *   <li>{@code view}: kept with its name, size and times, but its contents are dropped (a sparse file of the
 *       same size), owned by an id the sandbox cannot map ({@link #NOBODY}) and unreadable to others:
 *       opening it fails with EACCES, and even a kernel bug could only read zeros;</li>
 *   <li>{@code read}: owned by {@link #NOBODY}, readable and not writable by others. The sandbox has no
 *       capabilities, and none would apply to an owner it cannot map, so it can neither write nor chmod it;</li>
 *   <li>{@code write}: owned by the sandbox's user. A writable directory is sticky, so that the sandbox can
 *       add and remove its own entries but not delete or rename a child it does not own.</li>
 * </ul>
 * Directories are 0555 unless writable; a view directory lists its visible children. The sandbox's writes go
 * to its own overlay layer, never here.
 */
public final class ViewBuilder {
    /** An owner outside the image ids (0..65535) that a sandbox's id-mapped view maps to nobody it can act as. */
    public static final int NOBODY = 65536;

    private ViewBuilder() {
    }

    /** Applies {@code plan} (compiled against {@code root}'s own listing) to {@code root}; {@code uid}/{@code gid}: the sandbox's user. */
    public static void apply(Path root, PermissionPlan plan, int uid, int gid) throws IOException {
        String hidden = null;
        for (Tree.Entry e : plan.tree().entries()) {
            if (hidden != null && (e.path().startsWith(hidden + "/"))) {
                continue;
            }
            Path p = root.resolve(e.path());
            Permission level = plan.levelOf(e.path());
            if (level == Permission.NONE) {
                Revisions.deleteTree(p);
                hidden = e.path();
                continue;
            }
            hidden = null;
            switch (e.kind()) {
                case DIRECTORY -> directory(p, level, uid, gid);
                case SYMLINK -> own(p, level == Permission.WRITE ? uid : NOBODY, level == Permission.WRITE ? gid : NOBODY);
                case FILE -> file(p, e.size(), level, uid, gid);
            }
        }
        directory(root, plan.levelOf(""), uid, gid);
    }

    /** The mode of a directory of this level. */
    public static int directoryMode(Permission level) {
        return level == Permission.WRITE ? 01755 : 0555;
    }

    private static void directory(Path p, Permission level, int uid, int gid) throws IOException {
        boolean write = level == Permission.WRITE;
        own(p, write ? uid : NOBODY, write ? gid : NOBODY);
        Files.setAttribute(p, "unix:mode", directoryMode(level), LinkOption.NOFOLLOW_LINKS);
    }

    private static void file(Path p, long size, Permission level, int uid, int gid) throws IOException {
        boolean exec = Revisions.executable(p);
        switch (level) {
            case WRITE -> {
                own(p, uid, gid);
                Files.setAttribute(p, "unix:mode", exec ? 0755 : 0644, LinkOption.NOFOLLOW_LINKS);
            }
            case READ -> {
                own(p, NOBODY, NOBODY);
                Files.setAttribute(p, "unix:mode", exec ? 0555 : 0444, LinkOption.NOFOLLOW_LINKS);
            }
            default -> {
                // The contents go: a sparse file of the same size keeps what `ls -l` shows.
                try (RandomAccessFile f = new RandomAccessFile(p.toFile(), "rw")) {
                    f.setLength(0);
                    f.setLength(size);
                }
                own(p, NOBODY, NOBODY);
                Files.setAttribute(p, "unix:mode", exec ? 0700 : 0600, LinkOption.NOFOLLOW_LINKS);
            }
        }
    }

    private static void own(Path p, int uid, int gid) throws IOException {
        Files.setAttribute(p, "unix:uid", uid, LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(p, "unix:gid", gid, LinkOption.NOFOLLOW_LINKS);
    }
}
