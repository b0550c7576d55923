package io.paddock.image.internal.build;

import io.paddock.ErrorCode;
import io.paddock.FileType;
import io.paddock.Image;
import io.paddock.ImageStep;
import io.paddock.SandboxException;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Resolving COPY sources in a real directory: wildcards, .dockerignore, refusals of everything that leaves
 * the context, and the inputs hash.
 */
class BuildContextTest {
    @TempDir
    Path tmp;
    Path ctx;
    Path outside;

    @BeforeEach
    void layout() throws IOException {
        ctx = Files.createDirectories(tmp.resolve("ctx"));
        outside = Files.createDirectories(tmp.resolve("outside"));
        Files.writeString(outside.resolve("secret.txt"), "host secret");
        write("app.py", "print('hi')");
        write("requirements.txt", "numpy\n");
        write("src/a.py", "a = 1");
        write("src/b.txt", "b");
        write("src/sub/c.py", "c = 1");
        write("docs/guide.md", "# guide");
        write("node_modules/left-pad/index.js", "module.exports = 1");
        write("secret/private.txt", "private");
        write("secret/public.txt", "public");
        write(".dockerignore", "node_modules\n**/*.md\nsecret\n!secret/public.txt\n");
    }

    private void write(String path, String content) throws IOException {
        Path file = ctx.resolve(path);
        Files.createDirectories(file.getParent());
        Files.writeString(file, content);
    }

    private BuildContext context() {
        return BuildContext.open(ctx);
    }

    private static ImageStep.Copy copy(String... sourcesThenDest) {
        List<String> all = List.of(sourcesThenDest);
        return ImageStep.Copy.of(all.subList(0, all.size() - 1), all.get(all.size() - 1));
    }

    private List<String> names(String... sourcesThenDest) {
        return context().resolve(copy(sourcesThenDest), 7).stream().map(ResolvedSource::name).toList();
    }

    private static void assertRefused(Runnable r, String... parts) {
        assertThatThrownBy(r::run).isInstanceOfSatisfying(SandboxException.class, e -> {
            assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
            assertThat(e.getMessage()).contains(parts);
        });
    }

    // --- resolving -----------------------------------------------------------------------------------------

    @Test
    void literalSources() throws IOException {
        List<ResolvedSource> sources = context().resolve(copy("app.py", "src", "/app/"), 7);
        assertThat(sources).containsExactly(
                new ResolvedSource("app.py", ctx.resolve("app.py").toRealPath(), FileType.FILE),
                new ResolvedSource("src", ctx.resolve("src").toRealPath(), FileType.DIRECTORY));
    }

    @Test
    void wildcardsMatchOneComponentEach() {
        assertThat(names("*.py", "/app/")).containsExactly("app.py");
        assertThat(names("src/*.py", "/app/")).containsExactly("src/a.py");
        assertThat(names("src/*/*.py", "/app/")).containsExactly("src/sub/c.py");
        assertThat(names("s?c/[ab].*", "/app/")).containsExactly("src/a.py", "src/b.txt");
        // node_modules is ignored; secret is ignored but has an exception inside
        assertThat(names("*", "/app/")).containsExactly(".dockerignore", "app.py", "docs", "requirements.txt", "secret", "src");
    }

    @Test
    void sourcesAreSortedAndDeduplicated() {
        assertThat(names("src", "*.txt", "app.py", "src", "/app/")).containsExactly("app.py", "requirements.txt", "src");
    }

    @Test
    void theRootAndAbsoluteSourcesAreInsideTheContext() {
        assertThat(names(".", "/app/")).containsExactly(".");
        assertThat(names("/app.py", "/app/")).containsExactly("app.py");
        // "/etc/passwd" is <context>/etc/passwd, as in Docker: never the host's file
        assertRefused(() -> context().resolve(copy("/etc/passwd", "/x"), 7),
                "Dockerfile line 7: COPY failed: no source files were specified: 'etc/passwd' matches nothing");
    }

    @Test
    void aSourceThatMatchesNothingNamesTheLine() {
        assertRefused(() -> context().resolve(copy("missing.txt", "/x"), 12),
                "Dockerfile line 12: COPY failed: no source files were specified: 'missing.txt'");
        assertRefused(() -> context().resolve(copy("*.rs", "/x/"), 3), "Dockerfile line 3:", "'*.rs' matches nothing");
        assertRefused(() -> context().resolve(new ImageStep.Copy(List.of("nope"), "/x", Optional.empty(), true), 0),
                "ADD: ADD failed: no source files");
    }

    @Test
    void ignoredPathsDoNotExistForTheBuild() {
        assertRefused(() -> context().resolve(copy("node_modules", "/x"), 4), "(.dockerignore leaves it out)");
        assertRefused(() -> context().resolve(copy("docs/guide.md", "/x"), 4), "no source files were specified");
        assertThat(names("docs", "/x")).containsExactly("docs"); // the directory stays, its .md does not
        assertThat(context().entries(context().resolve(copy("docs", "/x"), 1).get(0))).extracting(ContextEntry::relativePath)
                .containsExactly("");
        assertThat(names("secret/*", "/x/")).containsExactly("secret/public.txt");
    }

    @Test
    void severalSourcesNeedADirectoryDestination() {
        assertRefused(() -> context().resolve(copy("src/[ab].*", "/app/x"), 5), "COPY failed: 2 sources");
        assertThat(names("src/a.py", "/app/x")).containsExactly("src/a.py");
    }

    // --- escapes -------------------------------------------------------------------------------------------

    @Test
    void aSymlinkToOutsideIsRefusedAsASource() throws IOException {
        Files.createSymbolicLink(ctx.resolve("passwd"), outside.resolve("secret.txt"));
        Files.createSymbolicLink(ctx.resolve("abs-root"), Path.of("/"));
        assertRefused(() -> context().resolve(copy("passwd", "/x"), 9),
                "Dockerfile line 9: source 'passwd' leads outside the build context");
        assertRefused(() -> context().resolve(copy("abs-root", "/x"), 9), "'abs-root' is a symlink to a path outside it");
    }

    @Test
    void aParentDirectoryThatIsASymlinkToOutsideIsRefused() throws IOException {
        Files.createSymbolicLink(ctx.resolve("out"), outside);
        Files.createDirectories(ctx.resolve("deep"));
        Files.createSymbolicLink(ctx.resolve("deep/up"), Path.of("../.."));
        assertRefused(() -> context().resolve(copy("out/secret.txt", "/x"), 2),
                "source 'out/secret.txt' leads outside the build context: 'out' is a symlink");
        assertRefused(() -> context().resolve(copy("deep/up/outside/secret.txt", "/x"), 2), "'deep/up' is a symlink");
        assertRefused(() -> context().resolve(copy("*/secret.txt", "/x/"), 2), "'out' is a symlink");
    }

    @Test
    void aRoundTripThroughOutsideIsRefusedEvenIfItEndsInside() throws IOException {
        Files.createSymbolicLink(ctx.resolve("out"), outside);
        Files.createSymbolicLink(outside.resolve("back"), ctx.resolve("src"));
        assertRefused(() -> context().resolve(copy("out/back/a.py", "/x"), 2), "'out' is a symlink");
    }

    @Test
    void dotDotIsRefusedBeforeTheContextIsRead() {
        assertRefused(() -> copy("../outside/secret.txt", "/x"), "leaves the build context");
    }

    @Test
    void symlinksInsideTheContextAreFollowedAsSources() throws IOException {
        Files.createSymbolicLink(ctx.resolve("link-to-src"), Path.of("src"));
        Files.createSymbolicLink(ctx.resolve("abs-link"), ctx.resolve("app.py")); // absolute, but inside
        assertThat(context().resolve(copy("link-to-src", "abs-link", "/x/"), 1)).containsExactly(
                new ResolvedSource("abs-link", ctx.resolve("app.py").toRealPath(), FileType.FILE),
                new ResolvedSource("link-to-src", ctx.resolve("src").toRealPath(), FileType.DIRECTORY));
    }

    @Test
    void aDanglingSymlinkMatchesNothing() throws IOException {
        Files.createSymbolicLink(ctx.resolve("dangling"), Path.of("nowhere"));
        assertRefused(() -> context().resolve(copy("dangling", "/x"), 1), "no source files were specified");
    }

    @Test
    void symlinksUnderACopiedDirectoryAreListedAsLinksAndNeverFollowed() throws IOException {
        Files.createSymbolicLink(ctx.resolve("src/host-passwd"), Path.of("/etc/passwd"));
        Files.createSymbolicLink(ctx.resolve("src/escape"), Path.of("../../outside"));
        List<ContextEntry> entries = context().entries(context().resolve(copy("src", "/app"), 1).get(0));
        assertThat(entries).extracting(ContextEntry::relativePath)
                .containsExactly("", "a.py", "b.txt", "escape", "host-passwd", "sub", "sub/c.py");
        ContextEntry link = entries.stream().filter(e -> e.relativePath().equals("host-passwd")).findFirst().orElseThrow();
        assertThat(link.type()).isEqualTo(FileType.SYMLINK);
        assertThat(link.symlinkTarget()).contains("/etc/passwd");
        assertThat(entries).noneMatch(e -> e.path().startsWith(outside));
    }

    // --- entries -------------------------------------------------------------------------------------------

    @Test
    void entriesOfTheRootLeaveOutIgnoredPathsButKeepExceptions() throws IOException {
        List<ContextEntry> entries = context().entries(context().resolve(copy(".", "/app"), 1).get(0));
        assertThat(entries).extracting(ContextEntry::relativePath).containsExactly("", ".dockerignore", "app.py", "docs",
                "requirements.txt", "secret", "secret/public.txt", "src", "src/a.py", "src/b.txt", "src/sub", "src/sub/c.py");
        ContextEntry app = entries.stream().filter(e -> e.relativePath().equals("app.py")).findFirst().orElseThrow();
        assertThat(app.type()).isEqualTo(FileType.FILE);
        assertThat(app.size()).isEqualTo(11);
        assertThat(app.path()).isEqualTo(ctx.resolve("app.py").toRealPath());
    }

    @Test
    void entriesCarryModes() throws IOException {
        Files.setPosixFilePermissions(ctx.resolve("app.py"), PosixFilePermissions.fromString("rwxr-x---"));
        ContextEntry entry = context().entries(context().resolve(copy("app.py", "/x"), 1).get(0)).get(0);
        assertThat(entry.relativePath()).isEmpty();
        assertThat(entry.mode()).isEqualTo(0750);
    }

    @Test
    void specialFilesAreRefused() throws Exception {
        Path fifo = ctx.resolve("src/pipe");
        Process mkfifo = new ProcessBuilder("mkfifo", fifo.toString()).start();
        assertThat(mkfifo.waitFor()).as("mkfifo (coreutils) must work here").isZero();
        ResolvedSource src = context().resolve(copy("src", "/x"), 1).get(0);
        assertRefused(() -> context().entries(src), "'src/pipe' is a special file");
        assertRefused(() -> context().resolve(copy("src/pipe", "/x"), 4), "Dockerfile line 4: COPY source 'src/pipe' is a special file");
    }

    // --- the inputs hash -----------------------------------------------------------------------------------

    private String hash(String... sourcesThenDest) {
        BuildContext context = context();
        return context.inputsHash(context.resolve(copy(sourcesThenDest), 1));
    }

    @Test
    void theHashChangesWithContentButNotWithModificationTimes() throws IOException {
        String before = hash(".", "/app");
        assertThat(before).matches("sha256:[0-9a-f]{64}");
        assertThat(hash(".", "/app")).isEqualTo(before);

        Files.setLastModifiedTime(ctx.resolve("src/a.py"), FileTime.from(Instant.parse("2001-01-01T00:00:00Z")));
        Files.setLastModifiedTime(ctx.resolve("src"), FileTime.from(Instant.parse("2002-01-01T00:00:00Z")));
        assertThat(hash(".", "/app")).isEqualTo(before);

        write("src/a.py", "a = 2");
        assertThat(hash(".", "/app")).isNotEqualTo(before);
        write("src/a.py", "a = 1");
        assertThat(hash(".", "/app")).isEqualTo(before);
    }

    @Test
    void theHashCoversNamesModesAndSymlinkTargets() throws IOException {
        String before = hash("src", "/app");
        Files.setPosixFilePermissions(ctx.resolve("src/a.py"), PosixFilePermissions.fromString("rwxr-xr-x"));
        String chmodded = hash("src", "/app");
        assertThat(chmodded).isNotEqualTo(before);

        Files.move(ctx.resolve("src/b.txt"), ctx.resolve("src/b2.txt"));
        String renamed = hash("src", "/app");
        assertThat(renamed).isNotEqualTo(chmodded);

        Files.createSymbolicLink(ctx.resolve("src/link"), Path.of("a.py"));
        String linked = hash("src", "/app");
        Files.delete(ctx.resolve("src/link"));
        Files.createSymbolicLink(ctx.resolve("src/link"), Path.of("b2.txt"));
        assertThat(hash("src", "/app")).isNotEqualTo(linked).isNotEqualTo(renamed);

        Files.createDirectories(ctx.resolve("src/empty"));
        assertThat(hash("src", "/app")).isNotEqualTo(linked);
    }

    @Test
    void theHashIgnoresIgnoredFilesAndFilesOutsideTheSources() throws IOException {
        String root = hash(".", "/app");
        String src = hash("src", "/app");
        write("node_modules/left-pad/index.js", "changed");
        write("docs/guide.md", "changed");
        write("secret/private.txt", "changed");
        assertThat(hash(".", "/app")).isEqualTo(root);
        write("app.py", "changed");
        assertThat(hash("src", "/app")).isEqualTo(src);
        write("secret/public.txt", "changed");
        assertThat(hash(".", "/app")).isNotEqualTo(root);
    }

    @Test
    void theHashDependsOnTheContentNotOnWhereTheContextIs() throws IOException {
        String here = hash("src", "/app");
        Path copy = Files.createDirectories(tmp.resolve("elsewhere"));
        for (String f : List.of("src/a.py", "src/b.txt", "src/sub/c.py")) {
            Files.createDirectories(copy.resolve(f).getParent());
            Files.copy(ctx.resolve(f), copy.resolve(f));
        }
        BuildContext other = BuildContext.of(copy, DockerIgnore.NONE);
        assertThat(other.inputsHash(other.resolve(copy("src", "/app"), 1))).isEqualTo(here);
    }

    // --- local sources of the Java builder -----------------------------------------------------------------

    @Test
    void localSourcesOfAnImage() throws IOException {
        Image image = Image.debian("bookworm").copy(ctx.resolve("app.py"), "/app/").copy(ctx.resolve("src"), "/app/src");
        BuildContext local = BuildContext.local(image.localSources());
        ImageStep.Copy first = (ImageStep.Copy) image.steps().get(1);
        ImageStep.Copy second = (ImageStep.Copy) image.steps().get(2);
        assertThat(local.resolve(first, 0)).containsExactly(
                new ResolvedSource("local-0/app.py", ctx.resolve("app.py").toRealPath(), FileType.FILE));
        ResolvedSource dir = local.resolve(second, 0).get(0);
        // no .dockerignore for local sources: everything under the directory is copied
        assertThat(local.entries(dir)).extracting(ContextEntry::relativePath)
                .containsExactly("", "a.py", "b.txt", "sub", "sub/c.py");
        String before = local.inputsHash(List.of(dir));
        write("src/sub/c.py", "c = 2");
        assertThat(local.inputsHash(List.of(dir))).isNotEqualTo(before);
        assertRefused(() -> local.resolve(copy("local-9/x", "/x"), 0), "'local-9/x' is not one of the image's local sources");
        Image missing = Image.debian("bookworm").copy(ctx.resolve("nope"), "/x");
        assertRefused(() -> BuildContext.local(missing.localSources()).resolve((ImageStep.Copy) missing.steps().get(1), 0),
                "cannot be read");
    }
}
