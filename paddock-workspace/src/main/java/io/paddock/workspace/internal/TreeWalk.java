package io.paddock.workspace.internal;

import io.paddock.SandboxException;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.charset.MalformedInputException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Lists a codebase for upload into a workspace, by the upload rules: no link is ever followed, ignore files are
 * honoured, big files are left out. What is left out and why is reported, never silently dropped.
 *
 * <ul>
 *   <li>Ignore patterns ({@link IgnoreRules} says which gitignore syntax): each directory's {@code .gitignore}
 *       and then its {@code .sandboxignore} (which wins over the {@code .gitignore} beside it) apply to that
 *       directory and below; a deeper file wins over a higher one; the extra patterns of
 *       {@link Options#extraIgnores()} apply from the root and win over every file. An ignored directory is not
 *       entered. Inside a {@code .git} directory no pattern applies (git never applies them there either); to
 *       leave {@code .git} out, name it: {@code .git/}. The ignore files themselves are uploaded.</li>
 *   <li>A file larger than {@link Options#maxFileSize()} (default 50 MB) is left out ({@link Reason#TOO_LARGE}).</li>
 *   <li>A symbolic link is recorded as a link, never followed. One whose target is absolute, or whose target
 *       resolved from its directory (through the codebase's other links, as the kernel would) climbs above the
 *       root, is left out ({@link Reason#SYMLINK_OUTSIDE}). So is a chain of more than 40 links.</li>
 *   <li>FIFOs, sockets and devices are left out ({@link Reason#SPECIAL}); a directory that cannot be read is
 *       reported ({@link Reason#UNREADABLE}) and the walk goes on.</li>
 * </ul>
 * The result is what gets uploaded: a mount layer must serve only these entries, never bind the host
 * directory whole (that would expose what was ignored and what the refused links reach).
 */
public final class TreeWalk {
    /** The default {@link Options#maxFileSize()}: 50 MB. */
    public static final long DEFAULT_MAX_FILE_SIZE = 50L * 1024 * 1024;
    private static final int MAX_LINK_HOPS = 40;

    public enum Reason { IGNORED, TOO_LARGE, SYMLINK_OUTSIDE, SPECIAL, UNREADABLE }

    /** A path left out, and why ({@code detail}: the size, the link's target, the error). */
    public record Skipped(String path, Reason reason, String detail) {
    }

    public record Result(Tree tree, List<Skipped> skipped) {
        public Result {
            skipped = List.copyOf(skipped);
        }
    }

    public record Options(long maxFileSize, List<String> extraIgnores) {
        public Options {
            if (maxFileSize < 0) {
                throw SandboxException.invalid("maxFileSize", "must not be negative: " + maxFileSize);
            }
            extraIgnores = List.copyOf(extraIgnores);
        }

        public static Options defaults() {
            return new Options(DEFAULT_MAX_FILE_SIZE, List.of());
        }
    }

    private record Scope(String dir, IgnoreRules rules) {
    }

    private final Path root;
    private final Options options;
    private final List<Tree.Entry> entries = new ArrayList<>();
    private final List<Skipped> skipped = new ArrayList<>();
    private final Map<String, String> links = new HashMap<>();

    private TreeWalk(Path root, Options options) {
        this.root = root;
        this.options = options;
    }

    public static Result walk(Path root, Options options) throws IOException {
        Objects.requireNonNull(options, "options");
        BasicFileAttributes attrs = Files.readAttributes(root, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        if (!attrs.isDirectory()) {
            throw SandboxException.invalid("workspace", "'" + root + "' is not a directory (links are not followed)");
        }
        TreeWalk w = new TreeWalk(root, options);
        Deque<Scope> scopes = new ArrayDeque<>();
        scopes.add(new Scope("", IgnoreRules.parse(options.extraIgnores())));
        w.directory("", scopes, false);
        return w.finish();
    }

    /** {@code scopes}: the extra patterns first, then the ignore files from the root down. */
    private void directory(String dir, Deque<Scope> scopes, boolean insideGit) throws IOException {
        Path path = dir.isEmpty() ? root : root.resolve(dir);
        int pushed = 0;
        if (!insideGit) {
            for (String name : List.of(".gitignore", ".sandboxignore")) {
                Path f = path.resolve(name);
                if (Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) {
                    scopes.addLast(new Scope(dir, IgnoreRules.parse(readLines(f))));
                    pushed++;
                }
            }
        }
        List<Path> children = new ArrayList<>();
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(path)) {
            stream.forEach(children::add);
        } catch (IOException e) {
            skipped.add(new Skipped(dir, Reason.UNREADABLE, String.valueOf(e.getMessage())));
        }
        children.sort((a, b) -> a.getFileName().toString().compareTo(b.getFileName().toString()));
        for (Path child : children) {
            String name = child.getFileName().toString();
            String rel = Paths.child(dir, name);
            BasicFileAttributes a;
            try {
                a = Files.readAttributes(child, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            } catch (IOException e) {
                skipped.add(new Skipped(rel, Reason.UNREADABLE, String.valueOf(e.getMessage())));
                continue;
            }
            if (!insideGit && ignored(rel, a.isDirectory(), scopes)) {
                skipped.add(new Skipped(rel, Reason.IGNORED, ""));
            } else if (a.isSymbolicLink()) {
                String target = Files.readSymbolicLink(child).toString();
                links.put(rel, target);
                entries.add(Tree.Entry.symlink(rel, target));
            } else if (a.isDirectory()) {
                entries.add(Tree.Entry.directory(rel));
                directory(rel, scopes, insideGit || name.equals(".git"));
            } else if (a.isRegularFile()) {
                if (a.size() > options.maxFileSize()) {
                    skipped.add(new Skipped(rel, Reason.TOO_LARGE, a.size() + " bytes > " + options.maxFileSize()));
                } else {
                    entries.add(Tree.Entry.file(rel, a.size()));
                }
            } else {
                skipped.add(new Skipped(rel, Reason.SPECIAL, "not a file, directory or link"));
            }
        }
        for (int i = 0; i < pushed; i++) {
            scopes.removeLast();
        }
    }

    private static boolean ignored(String path, boolean directory, Deque<Scope> scopes) {
        Boolean result = null;
        Scope extra = scopes.getFirst();
        for (Scope s : scopes) {
            if (s != extra) {
                Boolean d = s.rules().decide(s.dir().isEmpty() ? path : path.substring(s.dir().length() + 1), directory);
                result = d != null ? d : result;
            }
        }
        Boolean d = extra.rules().decide(path, directory);
        result = d != null ? d : result;
        return Boolean.TRUE.equals(result);
    }

    private static List<String> readLines(Path f) throws IOException {
        try {
            return Files.readAllLines(f, StandardCharsets.UTF_8);
        } catch (MalformedInputException e) {
            return Files.readAllLines(f, StandardCharsets.ISO_8859_1);
        }
    }

    private Result finish() {
        List<Tree.Entry> kept = new ArrayList<>();
        for (Tree.Entry e : entries) {
            if (e.kind() == Tree.Kind.SYMLINK) {
                String why = escapes(e.path());
                if (why != null) {
                    skipped.add(new Skipped(e.path(), Reason.SYMLINK_OUTSIDE, e.target() + ": " + why));
                    continue;
                }
            }
            kept.add(e);
        }
        skipped.sort((a, b) -> Tree.ORDER.compare(a.path(), b.path()));
        return new Result(new Tree(kept), skipped);
    }

    /** Why the link at {@code path} leads out of the root, resolved over the walked links; null if it does not. */
    private String escapes(String path) {
        return escapes(links, path);
    }

    /**
     * The links of {@code tree} that lead out of its root, each resolved from its directory through the tree's
     * other links as the kernel would (not lexically: {@code c -> b/../..} with {@code b -> ..} climbs above the
     * root), with why; in the tree's order.
     */
    public static Map<String, String> escapingLinks(Tree tree) {
        Map<String, String> links = new HashMap<>();
        for (Tree.Entry e : tree.entries()) {
            if (e.kind() == Tree.Kind.SYMLINK) {
                links.put(e.path(), e.target());
            }
        }
        Map<String, String> out = new java.util.TreeMap<>(Tree.ORDER);
        for (String path : links.keySet()) {
            String why = escapes(links, path);
            if (why != null) {
                out.put(path, why);
            }
        }
        return out;
    }

    private static String escapes(Map<String, String> links, String path) {
        List<String> current = new ArrayList<>(Paths.segments(Paths.parent(path)));
        Deque<String> todo = new ArrayDeque<>();
        String target = links.get(path);
        int hops = 0;
        while (true) {
            if (target != null) {
                if (++hops > MAX_LINK_HOPS) {
                    return "more than " + MAX_LINK_HOPS + " links";
                }
                if (target.startsWith("/")) {
                    return "an absolute target";
                }
                List<String> parts = List.of(target.split("/"));
                for (int i = parts.size() - 1; i >= 0; i--) {
                    todo.addFirst(parts.get(i));
                }
                target = null;
            }
            if (todo.isEmpty()) {
                return null;
            }
            String part = todo.removeFirst();
            if (part.isEmpty() || part.equals(".")) {
                continue;
            }
            if (part.equals("..")) {
                if (current.isEmpty()) {
                    return "climbs above the workspace root";
                }
                current.remove(current.size() - 1);
                continue;
            }
            current.add(part);
            String link = links.get(String.join("/", current));
            if (link != null) {
                // the kernel follows a link met along the way (and, for the last part, the caller would too)
                current.remove(current.size() - 1);
                target = link;
            }
        }
    }
}
