package io.paddock.workspace;

import io.paddock.CodebaseChange;
import io.paddock.PermissionPreset;
import io.paddock.workspace.internal.PermissionPlan;
import io.paddock.workspace.internal.Revisions;
import io.paddock.workspace.internal.Tree;
import io.paddock.workspace.internal.TreeWalk;
import io.paddock.workspace.internal.UpperDiff;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * The commit's decisions and its conflict check, on real directories: what a deletion may remove under the
 * rules, link chains resolved as the kernel would, and revisions read only through descriptors (issue 32's
 * breaches 1 to 4).
 */
class CommitsTest {
    @TempDir
    Path tmp;

    static UpperDiff.Change file(String path, String text) {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        return new UpperDiff.Change(path, CodebaseChange.Kind.ADDED, UpperDiff.Kind.FILE, null, false,
                () -> new ByteArrayInputStream(b));
    }

    static UpperDiff.Change deleted(String path) {
        return new UpperDiff.Change(path, CodebaseChange.Kind.DELETED, UpperDiff.Kind.DELETED, null, false, null);
    }

    @Test
    void aDeletionRemovesOnlyWhatTheRulesMakeWritableAndATypeChangeOverHiddenPathsIsRefused() {
        Tree base = Tree.of("config/app.yml", "config/secrets/prod.key", "config/docs/a.md", "out/sub/.netrc",
                "out/sub/keep.txt", "out/free/x.txt");
        PermissionPlan plan = PermissionPlan.compile(PermissionPreset.DEVELOPMENT, List.of(), base);
        UpperDiff.Change subAsFile = new UpperDiff.Change("out/sub", CodebaseChange.Kind.MODIFIED, UpperDiff.Kind.FILE,
                null, false, () -> new ByteArrayInputStream(new byte[]{'x'}));
        List<Commits.Decided> d = Commits.decide(List.of(deleted("config"), subAsFile, deleted("out/free")), plan, base, base);
        assertThat(d.stream().filter(Commits.Decided::applied).map(x -> x.change().path()))
                .as("the writable parts of config go, wholly writable subtrees whole")
                .containsExactly("config/app.yml", "config/docs", "out/free");
        assertThat(d.stream().filter(x -> !x.applied()).map(x -> x.change().path() + ": " + x.refused()))
                .containsExactly("config: kept: 2 paths under it are not writable under the sandbox's rules",
                        "config/secrets: not writable under the sandbox's rules",
                        "out/sub: would replace a directory; 1 path under it is not writable under the sandbox's rules");
        // paths the head gained under a deleted directory count too
        Tree head = Tree.of("config/app.yml", "config/secrets/prod.key", "config/docs/a.md", "config/docs/.netrc",
                "out/sub/.netrc", "out/sub/keep.txt", "out/free/x.txt");
        assertThat(Commits.decide(List.of(deleted("config/docs")), plan, base, head).stream()
                .filter(Commits.Decided::applied).map(x -> x.change().path())).containsExactly("config/docs/a.md");
    }

    @Test
    void linkChainsAreResolvedAsTheKernelWould() {
        Tree t = new Tree(List.of(Tree.Entry.directory("sub"), Tree.Entry.symlink("sub/b", ".."),
                Tree.Entry.symlink("sub/c", "b/../.."), Tree.Entry.symlink("sub/e", "c/../.."),
                Tree.Entry.symlink("sub/g", "e/../.."), Tree.Entry.symlink("sub/ok", "b/sub/b"),
                Tree.Entry.symlink("abs", "/etc")));
        assertThat(TreeWalk.escapingLinks(t).keySet()).containsExactly("abs", "sub/c", "sub/e", "sub/g");
    }

    /** A base revision holding a link out of the codebase (what an older commit could store). */
    private Path[] revisionsWithALinkOut() throws IOException {
        Path outside = Files.createDirectories(tmp.resolve("host/root-only"));
        Files.writeString(outside.resolve("shadow"), "host secret");
        Path base = Files.createDirectories(tmp.resolve("r1/sub"));
        Files.createSymbolicLink(base.resolve("g"), outside);
        Path head = Files.createDirectories(tmp.resolve("r2/sub/g"));
        Files.writeString(tmp.resolve("r2/other"), "changed");
        return new Path[]{tmp.resolve("r1"), tmp.resolve("r2"), outside};
    }

    @Test
    void theConflictCheckNeverResolvesAPathThroughALinkOfTheRevision() throws IOException {
        Path[] r = revisionsWithALinkOut();
        // Through the base's link sub/g, 'shadow' exists on the host and 'absent' does not: the answer must not
        // tell them apart (the old check listed exactly the paths that exist on the host).
        assertThat(Commits.conflicts(List.of(file("sub/g/shadow", "x"), file("sub/g/absent", "x")), r[0], r[1])).isEmpty();
        assertThat(Revisions.stat(r[0], "sub/g/shadow")).isEmpty();
        assertThat(Revisions.stat(r[0], "sub/g")).get().extracting(Revisions.Node::kind).isEqualTo(Tree.Kind.SYMLINK);
        assertThatThrownBy(() -> Revisions.openFile(r[0], "sub/g/shadow")).isInstanceOf(IOException.class);
    }

    @Test
    void theConflictCheckNeverOpensAFifo() throws Exception {
        Path[] r = revisionsWithALinkOut();
        Path fifo = r[2].resolve("pipe");
        Process p = new ProcessBuilder("mkfifo", fifo.toString()).start();
        assertThat(p.waitFor()).isZero();
        Files.createSymbolicLink(r[1].resolve("pipe-link"), fifo);
        // a FIFO in the revisions themselves, and one reached through a link in each
        Process q = new ProcessBuilder("mkfifo", r[0].resolve("p").toString(), r[1].resolve("p").toString()).start();
        assertThat(q.waitFor()).isZero();
        Files.delete(r[1].resolve("sub/g"));
        Files.createSymbolicLink(r[1].resolve("sub/g"), r[2]);
        try {
            List<String> conflicts = assertTimeoutPreemptively(Duration.ofSeconds(10), () ->
                    Commits.conflicts(List.of(file("sub/g/pipe", "x"), file("p", "x")), r[0], r[1]));
            assertThat(conflicts).isEmpty();
            assertThatThrownBy(() -> Revisions.openFile(r[0], "p")).isInstanceOf(IOException.class);
        } finally {
            // a reader left blocked by the old code: O_RDWR on a FIFO never blocks and releases it
            for (Path f : List.of(fifo, r[0].resolve("p"), r[1].resolve("p"))) {
                new RandomAccessFile(f.toFile(), "rw").close();
            }
        }
    }
}
