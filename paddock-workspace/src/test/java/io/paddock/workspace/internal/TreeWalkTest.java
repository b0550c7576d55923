package io.paddock.workspace.internal;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class TreeWalkTest {
    @TempDir
    Path root;

    @Test
    void ignorePatternsFollowTheGitignoreSubset() {
        IgnoreRules r = IgnoreRules.parse(List.of("# comment", "", "*.log", "!keep.log", "build/", "/top.txt",
                "docs/**/draft-?.md", "**/cache", "a/**", "*.py[cod]", "\\#hash"));
        assertThat(r.decide("x/debug.log", false)).isTrue();
        assertThat(r.decide("x/keep.log", false)).as("negation: the last match decides").isFalse();
        assertThat(r.decide("build", true)).isTrue();
        assertThat(r.decide("build", false)).as("a trailing '/' is for directories").isNull();
        assertThat(r.decide("src/build", true)).as("no slash: any depth").isTrue();
        assertThat(r.decide("top.txt", false)).isTrue();
        assertThat(r.decide("sub/top.txt", false)).as("a leading '/' anchors").isNull();
        assertThat(r.decide("docs/draft-1.md", false)).isTrue();
        assertThat(r.decide("docs/x/y/draft-2.md", false)).isTrue();
        assertThat(r.decide("docs/draft-10.md", false)).isNull();
        assertThat(r.decide("p/q/cache", true)).isTrue();
        assertThat(r.decide("a/b/c", false)).isTrue();
        assertThat(r.decide("a", true)).as("'a/**' is what is inside a").isNull();
        assertThat(r.decide("m.pyc", false)).isTrue();
        assertThat(r.decide("m.pyx", false)).isNull();
        assertThat(r.decide("#hash", false)).isTrue();
        assertThat(r.decide("x/readme.md", false)).isNull();
    }

    @Test
    void walkHonoursIgnoreFilesAndExtraPatternsAndReportsWhatItLeavesOut() throws IOException {
        write(".gitignore", "*.log\nnode_modules/\n!important.log\n");
        write(".sandboxignore", "private/\n");
        write("app.log", "x");
        write("important.log", "x");
        write("node_modules/dep/index.js", "x");
        write("private/notes", "x");
        write("src/.gitignore", "generated/\n!app.log\n");
        write("src/app.log", "re-included by the deeper file");
        write("src/generated/G.java", "x");
        write("src/Main.java", "x");
        write("scratch/tmp.txt", "x");
        write(".git/logs/HEAD", "patterns do not apply inside .git");
        write(".git/x.log", "x");
        TreeWalk.Result r = TreeWalk.walk(root, new TreeWalk.Options(TreeWalk.DEFAULT_MAX_FILE_SIZE, List.of("scratch/")));
        assertThat(paths(r)).containsExactly(".git", ".git/logs", ".git/logs/HEAD", ".git/x.log", ".gitignore",
                ".sandboxignore", "important.log", "src", "src/.gitignore", "src/Main.java", "src/app.log");
        assertThat(r.skipped()).extracting(TreeWalk.Skipped::path).containsExactly("app.log", "node_modules",
                "private", "scratch", "src/generated");
        assertThat(r.skipped()).allMatch(s -> s.reason() == TreeWalk.Reason.IGNORED);
    }

    @Test
    void bigFilesAreLeftOutAndReported() throws IOException {
        write("small.txt", "12345");
        try (RandomAccessFile f = new RandomAccessFile(root.resolve("big.bin").toFile(), "rw")) {
            f.setLength(TreeWalk.DEFAULT_MAX_FILE_SIZE + 1); // sparse: no 50 MB written
        }
        TreeWalk.Result r = Tree.walk(root);
        assertThat(paths(r)).containsExactly("small.txt");
        assertThat(r.tree().get("small.txt").orElseThrow().size()).isEqualTo(5);
        assertThat(r.skipped()).containsExactly(new TreeWalk.Skipped("big.bin", TreeWalk.Reason.TOO_LARGE,
                (TreeWalk.DEFAULT_MAX_FILE_SIZE + 1) + " bytes > " + TreeWalk.DEFAULT_MAX_FILE_SIZE));
    }

    @Test
    void linksAreNeverFollowedAndThoseLeadingOutAreRefused() throws IOException {
        Path outside = Files.createTempDirectory("walk-outside");
        Files.writeString(outside.resolve("secret"), "host file");
        write("a/b/file.txt", "x");
        link("in", "a/b/file.txt");
        link("a/b/up", "../../a");
        link("a/dirlink", "b");
        link("abs", outside.resolve("secret").toString());
        link("climb", "../" + outside.getFileName() + "/secret");
        link("a/b/top", "../..");
        link("a/b/sneaky", "top/..");          // lexically a/b, really the root's parent
        link("viaother", "a/dirlink/../../x"); // a/dirlink is a/b: a/b/../../x is x, inside
        link("loop1", "loop2");
        link("loop2", "loop1");
        link("dangling", "a/nothing");
        link(outside.getFileName() + "-dir", outside.toString());
        TreeWalk.Result r;
        try {
            r = Tree.walk(root);
        } finally {
            Files.delete(outside.resolve("secret"));
            Files.delete(outside);
        }
        assertThat(paths(r)).containsExactly("a", "a/b", "a/b/file.txt", "a/b/top", "a/b/up", "a/dirlink",
                "dangling", "in", "viaother");
        assertThat(r.tree().get("in").orElseThrow().kind()).isEqualTo(Tree.Kind.SYMLINK);
        assertThat(r.tree().get("in").orElseThrow().target()).isEqualTo("a/b/file.txt");
        assertThat(r.skipped()).allMatch(s -> s.reason() == TreeWalk.Reason.SYMLINK_OUTSIDE)
                .extracting(TreeWalk.Skipped::path)
                .containsExactlyInAnyOrder("a/b/sneaky", "abs", "climb", "loop1", "loop2", outside.getFileName() + "-dir");
        assertThat(r.skipped()).filteredOn(s -> s.path().equals("loop1")).singleElement()
                .extracting(TreeWalk.Skipped::detail).asString().contains("more than 40 links");
        assertThat(paths(r)).noneMatch(p -> p.contains("secret"));
    }

    private static List<String> paths(TreeWalk.Result r) {
        return r.tree().entries().stream().map(Tree.Entry::path).toList();
    }

    private void write(String path, String text) throws IOException {
        Path p = root.resolve(path);
        Files.createDirectories(p.getParent());
        Files.writeString(p, text);
    }

    private void link(String path, String target) throws IOException {
        Files.createSymbolicLink(root.resolve(path), Path.of(target));
    }
}
