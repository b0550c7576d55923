package io.paddock.image.internal.layer;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.UserDefinedFileAttributeView;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import io.paddock.image.internal.oci.Digest;

/** Test helpers: a directory tree described as text, so that two trees compare with one assertion. */
final class Trees {
    private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;

    private Trees() {
    }

    /** Every entry under {@code root} (not root itself): relative name → type, mode, owner, mtime, content. */
    static TreeMap<String, String> snapshot(Path root) {
        return snapshot(root, 0);
    }

    /** As {@link #snapshot(Path)}, with owners shifted down by {@code uidShift}. */
    static TreeMap<String, String> snapshot(Path root, long uidShift) {
        TreeMap<String, String> out = new TreeMap<>();
        try (Stream<Path> s = Files.walk(root)) {
            for (Path p : (Iterable<Path>) s::iterator) {
                if (!p.equals(root)) {
                    out.put(root.relativize(p).toString(), describe(p, uidShift));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
    }

    static String describe(Path p, long uidShift) {
        try {
            Map<String, Object> a = Files.readAttributes(p, "unix:mode,uid,gid,rdev,lastModifiedTime", NOFOLLOW);
            int mode = (Integer) a.get("mode");
            long mtime = ((FileTime) a.get("lastModifiedTime")).to(TimeUnit.SECONDS);
            String owner = ((Integer) a.get("uid") - uidShift) + ":" + ((Integer) a.get("gid") - uidShift);
            String common = String.format("%06o %s t=%d", mode, owner, mtime);
            switch (mode & 0170000) {
                case 0040000:
                    return "dir " + common + (opaque(p) ? " opaque" : "");
                case 0100000:
                    return "file " + common + " " + sha256(p);
                case 0120000:
                    // a symlink's own mode is always 0777 and not settable
                    return "symlink " + owner + " t=" + mtime + " -> " + Files.readSymbolicLink(p);
                case 0020000:
                    return "chr rdev=" + a.get("rdev");
                default:
                    return "other " + common;
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static boolean opaque(Path dir) throws IOException {
        UserDefinedFileAttributeView v = Files.getFileAttributeView(dir, UserDefinedFileAttributeView.class, NOFOLLOW);
        if (!v.list().contains("overlay.opaque")) {
            return false;
        }
        ByteBuffer b = ByteBuffer.allocate(v.size("overlay.opaque"));
        v.read("overlay.opaque", b);
        return new String(b.array(), StandardCharsets.UTF_8).equals("y");
    }

    static List<String> xattrs(Path p) throws IOException {
        return new ArrayList<>(Files.getFileAttributeView(p, UserDefinedFileAttributeView.class, NOFOLLOW).list());
    }

    static String sha256(Path file) throws IOException {
        MessageDigest md = Digest.sha256();
        try (InputStream in = Files.newInputStream(file, NOFOLLOW)) {
            byte[] b = new byte[65536];
            for (int n; (n = in.read(b)) > 0; ) {
                md.update(b, 0, n);
            }
        }
        return HexFormat.of().formatHex(md.digest()).substring(0, 16);
    }

    static long inode(Path p) throws IOException {
        return (Long) Files.getAttribute(p, "unix:ino", NOFOLLOW);
    }

    /** Runs a host program; fails the test on a non-zero exit. Returns its output. */
    static String run(Path cwd, String... command) {
        return new String(runIn(cwd, true, command), StandardCharsets.UTF_8);
    }

    /** Runs a host program and returns its standard output as bytes. */
    static byte[] runBytes(String... command) {
        return runIn(null, false, command);
    }

    private static byte[] runIn(Path cwd, boolean mergeErrors, String... command) {
        try {
            ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(mergeErrors);
            if (!mergeErrors) {
                pb.redirectError(ProcessBuilder.Redirect.INHERIT);
            }
            if (cwd != null) {
                pb.directory(cwd.toFile());
            }
            Process p = pb.start();
            byte[] out = p.getInputStream().readAllBytes();
            if (p.waitFor() != 0) {
                throw new AssertionError(String.join(" ", command) + " failed: " + new String(out, StandardCharsets.UTF_8));
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    static void setMtime(Path p, long seconds) throws IOException {
        Files.getFileAttributeView(p, java.nio.file.attribute.BasicFileAttributeView.class, NOFOLLOW)
                .setTimes(FileTime.from(seconds, TimeUnit.SECONDS), null, null);
    }

    static void chown(Path p, int uid, int gid) throws IOException {
        Files.setAttribute(p, "unix:uid", uid, NOFOLLOW);
        Files.setAttribute(p, "unix:gid", gid, NOFOLLOW);
    }

    static void chmod(Path p, int mode) throws IOException {
        Files.setAttribute(p, "unix:mode", mode, NOFOLLOW);
    }
}
