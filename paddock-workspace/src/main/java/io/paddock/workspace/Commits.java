package io.paddock.workspace;

import io.paddock.CodebaseChange;
import io.paddock.Permission;
import io.paddock.workspace.internal.PermissionPlan;
import io.paddock.workspace.internal.Revisions;
import io.paddock.workspace.internal.Tree;
import io.paddock.workspace.internal.UpperDiff;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;

/**
 * Applying a sandbox's changes to a copy of a revision, and finding which conflict with a newer revision.
 * Revisions are read only through directory descriptors with O_NOFOLLOW at every step ({@link Revisions#stat},
 * {@link Revisions#openFile}): a path the sandbox chose never resolves through a link the revision holds, and
 * nothing but a regular file is ever opened.
 */
final class Commits {
    private Commits() {
    }

    /** One change as a commit treats it: applied, or refused with the reason ({@code null}: applied). */
    record Decided(UpperDiff.Change change, String refused) {
        boolean applied() {
            return refused == null;
        }
    }

    /**
     * Which changes a commit applies under {@code plan}. A change to a path the rules do not make writable is
     * refused. A deletion or a type change removes everything under the path, so it is applied whole only if
     * every path under it, in the base and in the head, is writable too; otherwise a deletion is refused for the
     * directory itself and applied to the writable parts under it (the rest stays), and a type change
     * (a directory replaced by a file or a link) is refused.
     */
    static List<Decided> decide(List<UpperDiff.Change> changes, PermissionPlan plan, Tree base, Tree head) {
        List<Decided> out = new ArrayList<>();
        for (UpperDiff.Change c : changes) {
            decide(c, plan, base, head, out);
        }
        return out;
    }

    private static void decide(UpperDiff.Change c, PermissionPlan plan, Tree base, Tree head, List<Decided> out) {
        if (plan.levelOf(c.path()) != Permission.WRITE) {
            out.add(new Decided(c, "not writable under the sandbox's rules"));
            return;
        }
        boolean removesDirectory = c.type() != UpperDiff.Kind.DIRECTORY && (base.isDirectory(c.path()) || head.isDirectory(c.path()));
        if (!removesDirectory) {
            out.add(new Decided(c, null));
            return;
        }
        TreeSet<String> under = new TreeSet<>();
        under(base, c.path(), under);
        under(head, c.path(), under);
        long hidden = under.stream().filter(p -> plan.levelOf(p) != Permission.WRITE).count();
        if (hidden == 0) {
            out.add(new Decided(c, null));
            return;
        }
        String why = hidden + " path" + (hidden == 1 ? "" : "s") + " under it "
                + (hidden == 1 ? "is" : "are") + " not writable under the sandbox's rules";
        if (c.type() != UpperDiff.Kind.DELETED) {
            out.add(new Decided(c, "would replace a directory; " + why));
            return;
        }
        out.add(new Decided(c, "kept: " + why));
        for (String p : under) {
            if (p.substring(0, p.lastIndexOf('/')).equals(c.path())) {
                decide(new UpperDiff.Change(p, CodebaseChange.Kind.DELETED, UpperDiff.Kind.DELETED, null, false, null),
                        plan, base, head, out);
            }
        }
    }

    private static void under(Tree tree, String dir, TreeSet<String> out) {
        String prefix = dir + "/";
        for (Tree.Entry e : tree.entries()) {
            if (e.path().startsWith(prefix)) {
                out.add(e.path());
            }
        }
    }

    /** Applies {@code changes} (in the tree's order) to {@code target}, a writable copy of a revision. */
    static void apply(List<UpperDiff.Change> changes, Path target) throws IOException {
        for (UpperDiff.Change c : changes) {
            switch (c.type()) {
                case DELETED -> Revisions.deleteTree(Revisions.safeTarget(target, c.path()));
                case DIRECTORY -> {
                    // A file or link the sandbox replaced with a directory goes first.
                    Path p = Revisions.safeTarget(target, c.path());
                    if (Files.exists(p, LinkOption.NOFOLLOW_LINKS) && !Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                        Revisions.deleteTree(p);
                    }
                    Revisions.makeDirectories(target, c.path());
                }
                case SYMLINK -> Revisions.writeLink(target, c.path(), c.linkTarget());
                case FILE -> {
                    try (InputStream in = c.content().open()) {
                        Revisions.writeFile(target, c.path(), in, c.executable());
                    }
                }
            }
        }
    }

    /**
     * The paths among {@code changes} that {@code head} changed since {@code base}, unless head already holds
     * what the sandbox wrote (the same commit applied twice is no conflict). Both revisions are read through
     * descriptors, never by path.
     */
    static List<String> conflicts(List<UpperDiff.Change> changes, Path base, Path head) throws IOException {
        List<String> out = new ArrayList<>();
        for (UpperDiff.Change c : changes) {
            Optional<Revisions.Node> b = Revisions.stat(base, c.path());
            Optional<Revisions.Node> h = Revisions.stat(head, c.path());
            if (sameEntry(base, b, head, h, c.path())) {
                continue;
            }
            if (c.type() == UpperDiff.Kind.DELETED && h.isEmpty()) {
                continue;
            }
            if (c.type() == UpperDiff.Kind.FILE && h.isPresent() && h.get().kind() == Tree.Kind.FILE) {
                try (InputStream x = c.content().open(); InputStream y = Revisions.openFile(head, c.path())) {
                    if (UpperDiff.equalStreams(x, y)) {
                        continue;
                    }
                }
            }
            if (c.type() == UpperDiff.Kind.DIRECTORY && h.isPresent() && h.get().kind() == Tree.Kind.DIRECTORY) {
                continue;
            }
            out.add(c.path());
        }
        return out;
    }

    /** Whether two stored entries are the same: both absent, or the same type with the same contents or target. */
    private static boolean sameEntry(Path base, Optional<Revisions.Node> a, Path head, Optional<Revisions.Node> b, String rel)
            throws IOException {
        if (a.isEmpty() || b.isEmpty()) {
            return a.isEmpty() == b.isEmpty();
        }
        Revisions.Node x = a.get();
        Revisions.Node y = b.get();
        if (x.kind() != y.kind()) {
            return false;
        }
        return switch (x.kind()) {
            case DIRECTORY -> true;
            case SYMLINK -> x.target().equals(y.target());
            case FILE -> {
                if (x.size() != y.size()) {
                    yield false;
                }
                try (InputStream i = Revisions.openFile(base, rel); InputStream j = Revisions.openFile(head, rel)) {
                    yield UpperDiff.equalStreams(i, j);
                }
            }
        };
    }
}
