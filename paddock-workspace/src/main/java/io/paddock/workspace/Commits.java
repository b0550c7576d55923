package io.paddock.workspace;

import io.paddock.workspace.internal.Revisions;
import io.paddock.workspace.internal.UpperDiff;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Applying a sandbox's changes to a copy of a revision, and finding which conflict with a newer revision. */
final class Commits {
    private Commits() {
    }

    /** Applies {@code changes} (in the tree's order) to {@code target}, a writable copy of a revision. */
    static void apply(List<UpperDiff.Change> changes, Path target) throws IOException {
        for (UpperDiff.Change c : changes) {
            switch (c.type()) {
                case DELETED -> Revisions.deleteTree(Revisions.safeTarget(target, c.path()));
                case DIRECTORY -> {
                    // A file or link the sandbox replaced with a directory goes first.
                    java.nio.file.Path p = Revisions.safeTarget(target, c.path());
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
     * what the sandbox wrote (the same commit applied twice is no conflict).
     */
    static List<String> conflicts(List<UpperDiff.Change> changes, Path base, Path head) throws IOException {
        List<String> out = new ArrayList<>();
        for (UpperDiff.Change c : changes) {
            Path b = base.resolve(c.path());
            Path h = head.resolve(c.path());
            if (sameEntry(b, h)) {
                continue;
            }
            if (c.type() == UpperDiff.Kind.DELETED && !Files.exists(h, LinkOption.NOFOLLOW_LINKS)) {
                continue;
            }
            if (c.type() == UpperDiff.Kind.FILE && Files.isRegularFile(h, LinkOption.NOFOLLOW_LINKS)) {
                try (InputStream x = c.content().open(); InputStream y = Files.newInputStream(h, LinkOption.NOFOLLOW_LINKS)) {
                    if (UpperDiff.equalStreams(x, y)) {
                        continue;
                    }
                }
            }
            if (c.type() == UpperDiff.Kind.DIRECTORY && Files.isDirectory(h, LinkOption.NOFOLLOW_LINKS)) {
                continue;
            }
            out.add(c.path());
        }
        return out;
    }

    /** Whether two stored entries are the same: both absent, or the same type with the same contents or target. */
    private static boolean sameEntry(Path a, Path b) throws IOException {
        boolean ea = Files.exists(a, LinkOption.NOFOLLOW_LINKS);
        boolean eb = Files.exists(b, LinkOption.NOFOLLOW_LINKS);
        if (!ea || !eb) {
            return ea == eb;
        }
        if (Files.isSymbolicLink(a) || Files.isSymbolicLink(b)) {
            return Files.isSymbolicLink(a) && Files.isSymbolicLink(b)
                    && Files.readSymbolicLink(a).equals(Files.readSymbolicLink(b));
        }
        if (Files.isDirectory(a, LinkOption.NOFOLLOW_LINKS) || Files.isDirectory(b, LinkOption.NOFOLLOW_LINKS)) {
            return Files.isDirectory(a, LinkOption.NOFOLLOW_LINKS) && Files.isDirectory(b, LinkOption.NOFOLLOW_LINKS);
        }
        try (InputStream x = Files.newInputStream(a, LinkOption.NOFOLLOW_LINKS);
             InputStream y = Files.newInputStream(b, LinkOption.NOFOLLOW_LINKS)) {
            return UpperDiff.equalStreams(x, y);
        }
    }
}
