package io.paddock.image.internal;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.image.internal.oci.Digest;
import io.paddock.image.internal.oci.ImageConfig;
import io.paddock.image.internal.store.ImageStore;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What a sandbox of a stored image runs on: its layer directories (topmost first) and how its processes
 * start: environment, user and working directory, resolved from the image's configuration the way Docker
 * does (a user name is looked up in the image's own {@code /etc/passwd}; no user means root, which in a
 * sandbox is an unprivileged host id with no capabilities). {@code onHostRoot}: the layers stack on the host
 * image's root ({@link ImageConfig#BASE_LABEL}).
 */
public record SandboxImage(Digest id, Path layersDir, List<String> layers, Map<String, String> env, int uid, int gid,
                           String workdir, List<String> entrypoint, List<String> cmd, boolean onHostRoot) {
    /** Where commands start in an image that names no working directory. */
    public static final String DEFAULT_WORKDIR = "/workspace";
    static final String DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    private static final long MAX_ID_FILE = 4 << 20;

    public SandboxImage {
        layers = List.copyOf(layers);
        env = Collections.unmodifiableMap(new LinkedHashMap<>(env));
        entrypoint = List.copyOf(entrypoint);
        cmd = List.copyOf(cmd);
    }

    static SandboxImage of(ImageStore store, ImageStore.StoredImage image) {
        ImageConfig c = image.config();
        List<String> layers = new ArrayList<>();
        for (Digest d : c.diffIds()) {
            layers.add(0, ImageStore.layerName(d));
        }
        if (layers.isEmpty()) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "image " + image.id() + " has no layers");
        }
        Map<String, String> env = new LinkedHashMap<>(c.envMap());
        env.putIfAbsent("PATH", DEFAULT_PATH);
        int[] ids = resolveUser(c.user(), store.layersDir(), layers);
        String workdir = c.workingDir().isEmpty() ? DEFAULT_WORKDIR : c.workingDir();
        // An image based on the host image (a snapshot of a host sandbox) stacks on the tier's host root.
        return new SandboxImage(image.id(), store.layersDir(), layers, env, ids[0], ids[1], workdir, c.entrypoint(), c.cmd(),
                c.hostBased());
    }

    /**
     * Docker's {@code USER} forms: empty (root), {@code uid}, {@code uid:gid}, {@code name}, {@code name:group};
     * names from the image's {@code /etc/passwd} and {@code /etc/group}. Ids above 65535 do not exist in a
     * sandbox and are refused.
     */
    static int[] resolveUser(String user, Path layersDir, List<String> layersTopFirst) {
        if (user.isEmpty()) {
            return new int[]{0, 0};
        }
        String u = user;
        String g = null;
        int colon = user.indexOf(':');
        if (colon >= 0) {
            u = user.substring(0, colon);
            g = user.substring(colon + 1);
        }
        int uid;
        int gid;
        if (u.matches("\\d{1,9}")) {
            uid = Integer.parseInt(u);
            gid = uid;
            Optional<String[]> entry = lookup(layersDir, layersTopFirst, "etc/passwd", 2, u);
            if (entry.isPresent() && entry.get().length > 3 && entry.get()[3].matches("\\d{1,9}")) {
                gid = Integer.parseInt(entry.get()[3]);
            }
        } else {
            String[] entry = lookup(layersDir, layersTopFirst, "etc/passwd", 0, u).orElseThrow(() ->
                    new SandboxException(ErrorCode.FAILED_PRECONDITION, "the image's user '" + user
                            + "' is not in its /etc/passwd"));
            if (entry.length < 4 || !entry[2].matches("\\d{1,9}") || !entry[3].matches("\\d{1,9}")) {
                throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "the image's /etc/passwd entry for '" + u + "' is malformed");
            }
            uid = Integer.parseInt(entry[2]);
            gid = Integer.parseInt(entry[3]);
        }
        if (g != null && !g.isEmpty()) {
            if (g.matches("\\d{1,9}")) {
                gid = Integer.parseInt(g);
            } else {
                String group = g;
                String[] entry = lookup(layersDir, layersTopFirst, "etc/group", 0, g).orElseThrow(() ->
                        new SandboxException(ErrorCode.FAILED_PRECONDITION, "the image's group '" + group
                                + "' is not in its /etc/group"));
                if (entry.length < 3 || !entry[2].matches("\\d{1,9}")) {
                    throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "the image's /etc/group entry for '" + g + "' is malformed");
                }
                gid = Integer.parseInt(entry[2]);
            }
        }
        if (uid > 65535 || gid > 65535) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "the image's user '" + user
                    + "' has an id above 65535, which a sandbox does not have");
        }
        return new int[]{uid, gid};
    }

    /** The line of a passwd-style file whose field {@code field} is {@code value}, read from the merged layers. */
    private static Optional<String[]> lookup(Path layersDir, List<String> layersTopFirst, String file, int field, String value) {
        Optional<byte[]> content = readMerged(layersDir, layersTopFirst, file);
        if (content.isEmpty()) {
            return Optional.empty();
        }
        for (String line : new String(content.get(), StandardCharsets.UTF_8).split("\n")) {
            String[] f = line.split(":", -1);
            if (f.length > field && f[field].equals(value)) {
                return Optional.of(f);
            }
        }
        return Optional.empty();
    }

    /**
     * A file as the overlay of the layers would show it: the topmost layer that has it wins; a whiteout, an
     * opaque parent or a non-regular file (a symbolic link is never followed on the host) ends the search
     * with nothing.
     */
    static Optional<byte[]> readMerged(Path layersDir, List<String> layersTopFirst, String relative) {
        for (String layer : layersTopFirst) {
            Path root = layersDir.resolve(layer);
            Path p = root;
            boolean hidden = false;
            String[] parts = relative.split("/");
            for (int i = 0; i < parts.length; i++) {
                p = p.resolve(parts[i]);
                try {
                    PosixFileAttributes a = Files.readAttributes(p, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
                    if (i < parts.length - 1) {
                        if (!a.isDirectory()) {
                            return Optional.empty();
                        }
                        if (opaque(p)) {
                            hidden = true;
                        }
                    } else if (a.isRegularFile()) {
                        try (InputStream in = Files.newInputStream(p, LinkOption.NOFOLLOW_LINKS)) {
                            byte[] b = in.readNBytes((int) MAX_ID_FILE + 1);
                            return b.length > MAX_ID_FILE ? Optional.empty() : Optional.of(b);
                        }
                    } else {
                        return Optional.empty(); // a whiteout, a link or anything else
                    }
                } catch (java.nio.file.NoSuchFileException e) {
                    break;
                } catch (IOException e) {
                    return Optional.empty();
                }
            }
            if (hidden) {
                return Optional.empty();
            }
        }
        return Optional.empty();
    }

    private static boolean opaque(Path dir) {
        try {
            var view = Files.getFileAttributeView(dir, java.nio.file.attribute.UserDefinedFileAttributeView.class,
                    LinkOption.NOFOLLOW_LINKS);
            if (view == null || !view.list().contains("overlay.opaque")) {
                return false;
            }
            java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(16);
            view.read("overlay.opaque", b);
            b.flip();
            return b.remaining() == 1 && b.get() == 'y';
        } catch (IOException e) {
            return false;
        }
    }
}
