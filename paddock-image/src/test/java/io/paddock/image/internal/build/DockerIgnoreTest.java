package io.paddock.image.internal.build;

import io.paddock.SandboxException;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Docker's .dockerignore semantics (moby/patternmatcher), pattern by pattern. */
class DockerIgnoreTest {

    private static void assertIgnores(String patterns, String... paths) {
        DockerIgnore ignore = DockerIgnore.parse(patterns);
        for (String path : paths) {
            assertThat(ignore.ignored(path)).as("%s ignores %s", ignore, path).isTrue();
        }
    }

    private static void assertKeeps(String patterns, String... paths) {
        DockerIgnore ignore = DockerIgnore.parse(patterns);
        for (String path : paths) {
            assertThat(ignore.ignored(path)).as("%s keeps %s", ignore, path).isFalse();
        }
    }

    @Test
    void aStarStaysInOneDirectory() {
        assertIgnores("*.log", "a.log", ".log", "x.log/inside");
        assertKeeps("*.log", "dir/a.log", "a.log.txt", "alog");
    }

    @Test
    void doubleStarCrossesDirectories() {
        assertIgnores("**/*.log", "a.log", "dir/a.log", "x/y/z.log");
        assertIgnores("a/**/b", "a/b", "a/x/b", "a/x/y/b", "a/x/b/c");
        assertKeeps("a/**/b", "b", "x/a/b", "a/bb");
        assertIgnores("**", "anything", "a/b/c");
        assertIgnores("dir/**", "dir/x", "dir/x/y");
        assertKeeps("dir/**", "dir", "other");
    }

    @Test
    void aDirectoryPatternCoversEverythingUnderIt() {
        assertIgnores("node_modules", "node_modules", "node_modules/x/y.js");
        assertKeeps("node_modules", "src/node_modules", "node_modules2");
        assertIgnores("*/temp*", "somedir/temporary.txt", "somedir/temp");
        assertIgnores("*/*/temp*", "somedir/subdir/temporary.txt");
        assertKeeps("*/temp*", "temp", "a/b/temp");
    }

    @Test
    void questionMarksAndClasses() {
        assertIgnores("file?.txt", "file1.txt", "filea.txt");
        assertKeeps("file?.txt", "file10.txt", "file.txt", "file/.txt");
        assertIgnores("[a-c].txt", "a.txt", "c.txt");
        assertKeeps("[a-c].txt", "d.txt", "ab.txt");
        assertIgnores("[^a-c].txt", "d.txt");
        assertKeeps("[^a-c].txt", "a.txt");
        assertIgnores("x\\*y", "x*y");
        assertKeeps("x\\*y", "xzy");
        assertIgnores("a.b", "a.b");
        assertKeeps("a.b", "axb");
    }

    @Test
    void exceptionsPutPathsBackAndTheLastMatchWins() {
        String docs = "*.md\n!README*.md\nREADME-secret.md\n";
        assertIgnores(docs, "CHANGES.md", "README-secret.md");
        assertKeeps(docs, "README.md", "README-public.md", "src/x.md");
        assertIgnores("!README.md\n*.md", "README.md");
        String dir = "secret\n!secret/public.txt\n";
        assertIgnores(dir, "secret", "secret/private.txt", "secret/sub/x");
        assertKeeps(dir, "secret/public.txt", "secretive");
        assertThat(DockerIgnore.parse(dir).hasExceptions()).isTrue();
        assertThat(DockerIgnore.parse("a\nb").hasExceptions()).isFalse();
        // an exception covering a directory covers what is in it
        assertKeeps("build\n!build/keep\n", "build/keep/a/b.txt");
    }

    @Test
    void patternsAreCleanedAndRelativeToTheRoot() {
        assertThat(DockerIgnore.parse("/build/\n./dist//\n!  /keep\n a/../b \n").patterns())
                .containsExactly("build", "dist", "!keep", "b");
        assertIgnores("/build", "build/x");
        assertIgnores("dist/", "dist", "dist/a");
        assertIgnores("*.log", "./a.log", "/a.log");
    }

    @Test
    void commentsAndBlankLines() {
        DockerIgnore ignore = DockerIgnore.parse("\uFEFF# comment\n\n   \r\n*.tmp\r\n #notcomment\n");
        assertThat(ignore.patterns()).containsExactly("*.tmp", "#notcomment");
        assertThat(ignore.ignored("# comment")).isFalse();
        assertThat(ignore.ignored("x.tmp")).isTrue();
    }

    @Test
    void theRootIsNeverIgnored() {
        assertKeeps("**\n*", ".", "");
        assertThat(DockerIgnore.NONE.ignored("anything")).isFalse();
    }

    @Test
    void malformedPatternsNameTheirLine() {
        assertThatThrownBy(() -> DockerIgnore.parse("ok\n\n!\n")).isInstanceOf(SandboxException.class)
                .hasMessage(".dockerignore line 3: illegal exclusion pattern: \"!\"");
        assertThatThrownBy(() -> DockerIgnore.parse("a[\n")).hasMessageStartingWith(".dockerignore line 1: bad pattern");
        assertThatThrownBy(() -> DockerIgnore.parse("[]\n")).hasMessageStartingWith(".dockerignore line 1: bad pattern");
        assertThatThrownBy(() -> DockerIgnore.parse("[z-a]\n")).hasMessageStartingWith(".dockerignore line 1: bad pattern");
    }
}
