package io.paddock.runtime.internal.bundle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.runtime.SandboxMount;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * What a sandbox's filesystems are made of, recorded in its bundle ({@value #FILE}) when they are mounted, so
 * that a fork can mount the same again over a copy of the writable layer: the root's layers and the extra
 * mounts, in order.
 *
 * @param root   the root overlay's layers directory and lower layers, topmost first
 * @param mounts the extra mounts, in the order they are mounted
 */
record Filesystems(Optional<Root> root, List<SandboxMount> mounts) {
    static final String FILE = "filesystems.json";
    private static final ObjectMapper JSON = new ObjectMapper();

    record Root(Path layersDir, List<String> lowers) {
    }

    static Filesystems read(Path bundle) throws IOException {
        Path f = bundle.resolve(FILE);
        if (!Files.isRegularFile(f)) {
            return new Filesystems(Optional.empty(), List.of());
        }
        JsonNode o = JSON.readTree(f.toFile());
        Optional<Root> root = Optional.empty();
        if (o.has("root")) {
            List<String> lowers = new ArrayList<>();
            o.get("root").get("lowers").forEach(l -> lowers.add(l.asText()));
            root = Optional.of(new Root(Path.of(o.get("root").get("layers_dir").asText()), List.copyOf(lowers)));
        }
        List<SandboxMount> mounts = new ArrayList<>();
        for (JsonNode m : o.path("mounts")) {
            if (m.get("kind").asText().equals("shared")) {
                mounts.add(new SandboxMount.Shared(Path.of(m.get("dir").asText()), m.get("target").asText(),
                        m.get("read_only").asBoolean()));
            } else {
                mounts.add(new SandboxMount.Layered(Path.of(m.get("lower").asText()), m.get("target").asText(),
                        m.get("mode").asInt(), m.get("uid").asInt(), m.get("gid").asInt()));
            }
        }
        return new Filesystems(root, List.copyOf(mounts));
    }

    static void recordRoot(Path bundle, Path layersDir, List<String> lowers) throws IOException {
        ObjectNode o = load(bundle);
        ObjectNode r = o.putObject("root").put("layers_dir", layersDir.toString());
        ArrayNode a = r.putArray("lowers");
        lowers.forEach(a::add);
        JSON.writeValue(bundle.resolve(FILE).toFile(), o);
    }

    static void recordMounts(Path bundle, List<SandboxMount> mounts) throws IOException {
        ObjectNode o = load(bundle);
        ArrayNode a = o.putArray("mounts");
        for (SandboxMount m : mounts) {
            if (m instanceof SandboxMount.Shared s) {
                a.addObject().put("kind", "shared").put("dir", s.dir().toString()).put("target", s.target())
                        .put("read_only", s.readOnly());
            } else if (m instanceof SandboxMount.Layered l) {
                a.addObject().put("kind", "layered").put("lower", l.lower().toString()).put("target", l.target())
                        .put("mode", l.rootMode()).put("uid", l.rootUid()).put("gid", l.rootGid());
            }
        }
        JSON.writeValue(bundle.resolve(FILE).toFile(), o);
    }

    private static ObjectNode load(Path bundle) throws IOException {
        Path f = bundle.resolve(FILE);
        return Files.isRegularFile(f) ? (ObjectNode) JSON.readTree(f.toFile()) : JSON.createObjectNode();
    }

    /**
     * Moves every owner and group under {@code dir} (itself included, links not followed) from the range that
     * starts at {@code from} to the one at {@code to}: a copy of one sandbox's writable layer made another's.
     * Set-id bits, which a change of owner clears, are put back.
     */
    static void moveIds(Path dir, long from, long to) throws IOException {
        Files.walkFileTree(dir, Set.of(), Integer.MAX_VALUE, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path d, BasicFileAttributes attrs) throws IOException {
                move(d, false);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path f, BasicFileAttributes attrs) throws IOException {
                move(f, attrs.isSymbolicLink());
                return FileVisitResult.CONTINUE;
            }

            private void move(Path p, boolean link) throws IOException {
                int mode = (Integer) Files.getAttribute(p, "unix:mode", LinkOption.NOFOLLOW_LINKS);
                boolean changed = false;
                for (String id : List.of("uid", "gid")) {
                    long v = ((Integer) Files.getAttribute(p, "unix:" + id, LinkOption.NOFOLLOW_LINKS)) & 0xffffffffL;
                    if (v >= from && v < from + UidLeases.RANGE) {
                        Files.setAttribute(p, "unix:" + id, (int) (to + (v - from)), LinkOption.NOFOLLOW_LINKS);
                        changed = true;
                    }
                }
                if (changed && !link && (mode & 06000) != 0) {
                    Files.setAttribute(p, "unix:mode", mode & 07777, LinkOption.NOFOLLOW_LINKS);
                }
            }
        });
    }

    /** Empties an overlay's work directory (a copy of a mounted one's may hold its leftovers). */
    static void freshWork(Path work) throws IOException {
        if (Files.exists(work, LinkOption.NOFOLLOW_LINKS)) {
            OciTier.deleteTree(work);
        }
        Files.createDirectory(work);
        Files.setPosixFilePermissions(work, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
    }
}
