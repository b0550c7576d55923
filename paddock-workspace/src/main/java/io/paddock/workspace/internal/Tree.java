package io.paddock.workspace.internal;

import io.paddock.SandboxException;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;

/**
 * A listing of a codebase: every directory, file and symbolic link under its root, as paths relative to the
 * root ({@code src/Main.java}; segments separated by {@code /}; the root itself is the empty path and always a
 * directory, not an entry). Immutable; entries are in depth-first order (a directory's entries right after it,
 * names compared as strings). Every entry's parent directories are entries too.
 *
 * <p>Built by {@link #walk(Path)} from a real directory (which never follows a link), or by {@link #of} from a
 * list, for tests and for a listing received over the wire.
 */
public record Tree(List<Entry> entries) {
    /** Depth-first: compare segment by segment, so that {@code a/b} comes right after {@code a}. */
    static final Comparator<String> ORDER = (x, y) -> {
        List<String> a = Paths.segments(x);
        List<String> b = Paths.segments(y);
        for (int i = 0; i < Math.min(a.size(), b.size()); i++) {
            int c = a.get(i).compareTo(b.get(i));
            if (c != 0) {
                return c;
            }
        }
        return Integer.compare(a.size(), b.size());
    };

    public enum Kind { DIRECTORY, FILE, SYMLINK }

    /**
     * One path of the tree.
     *
     * @param path relative, normalised, never empty
     * @param kind what it is; a symbolic link is never followed
     * @param size a file's size in bytes; 0 for the others
     * @param target a link's target as written; empty for the others
     */
    public record Entry(String path, Kind kind, long size, String target) {
        public Entry {
            Paths.check(path);
            if (path.isEmpty()) {
                throw SandboxException.invalid("path", "the root is not an entry");
            }
            Objects.requireNonNull(kind, "kind");
            Objects.requireNonNull(target, "target");
        }

        public static Entry directory(String path) {
            return new Entry(path, Kind.DIRECTORY, 0, "");
        }

        public static Entry file(String path, long size) {
            return new Entry(path, Kind.FILE, size, "");
        }

        public static Entry symlink(String path, String target) {
            return new Entry(path, Kind.SYMLINK, 0, target);
        }
    }

    public Tree {
        TreeMap<String, Entry> byPath = new TreeMap<>(ORDER);
        for (Entry e : entries) {
            if (byPath.put(e.path(), e) != null) {
                throw SandboxException.invalid("tree", "'" + e.path() + "' is listed twice");
            }
        }
        for (Entry e : byPath.values()) {
            String parent = Paths.parent(e.path());
            if (!parent.isEmpty() && (byPath.get(parent) == null || byPath.get(parent).kind() != Kind.DIRECTORY)) {
                throw SandboxException.invalid("tree", "'" + e.path() + "' has no parent directory '" + parent + "'");
            }
        }
        entries = List.copyOf(byPath.values());
    }

    /**
     * A tree from a list of paths: one ending in {@code /} is a directory, others are files of size 0; parents
     * are added as directories.
     */
    public static Tree of(String... paths) {
        Map<String, Entry> out = new TreeMap<>(ORDER);
        for (String p : paths) {
            boolean dir = p.endsWith("/");
            String path = dir ? p.substring(0, p.length() - 1) : p;
            out.put(path, dir ? Entry.directory(path) : Entry.file(path, 0));
            for (String parent = Paths.parent(path); !parent.isEmpty(); parent = Paths.parent(parent)) {
                out.putIfAbsent(parent, Entry.directory(parent));
            }
        }
        return new Tree(new ArrayList<>(out.values()));
    }

    /** Walks a directory with {@link TreeWalk.Options#defaults()}. */
    public static TreeWalk.Result walk(Path root) throws IOException {
        return TreeWalk.walk(root, TreeWalk.Options.defaults());
    }

    public Optional<Entry> get(String path) {
        int i = Collections.binarySearch(pathsView(), path, ORDER);
        return i >= 0 ? Optional.of(entries.get(i)) : Optional.empty();
    }

    /** Whether the path is the root or a directory entry. */
    public boolean isDirectory(String path) {
        return path.isEmpty() || get(path).map(e -> e.kind() == Kind.DIRECTORY).orElse(false);
    }

    private List<String> pathsView() {
        return new java.util.AbstractList<>() {
            @Override
            public String get(int index) {
                return entries.get(index).path();
            }

            @Override
            public int size() {
                return entries.size();
            }
        };
    }
}
