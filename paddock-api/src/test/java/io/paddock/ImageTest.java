package io.paddock;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static io.paddock.ImageStepTest.assertInvalid;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ImageTest {

    @Test
    void theFluentBuilderMakesTheSteps() {
        Path local = Path.of("/tmp/paddock-test/app.py");
        Image image = Image.debian("bookworm").apt("git", "jq").pip("numpy").npm("left-pad").run("echo hi")
                .copy(local, "/app/x").env("K", "V").workdir("/app");
        assertThat(image.steps()).containsExactly(
                new ImageStep.From("debian:bookworm"),
                new ImageStep.Apt(List.of("git", "jq")),
                ImageStep.Pip.of(List.of("numpy")),
                new ImageStep.Npm(List.of("left-pad")),
                ImageStep.Run.shell("echo hi"),
                ImageStep.Copy.of(List.of("local-0/app.py"), "/app/x"),
                new ImageStep.Env("K", "V"),
                new ImageStep.Workdir("/app"));
        assertThat(image.localSources()).containsExactly(Map.entry("local-0/app.py", local));
        assertThat(image.base()).isEqualTo("debian:bookworm");
    }

    @Test
    void everyInstructionHasABuilderMethod() {
        Image image = Image.from("registry:5000/x:1").user("app").label("k", "v").cmd("python", "app.py")
                .entrypoint(List.of("/entry")).expose(8000).expose("53/udp").runArgv("echo", "a b");
        assertThat(image.steps()).containsExactly(
                new ImageStep.From("registry:5000/x:1"),
                new ImageStep.User("app"),
                new ImageStep.Label("k", "v"),
                new ImageStep.Cmd(List.of("python", "app.py")),
                new ImageStep.Entrypoint(List.of("/entry")),
                new ImageStep.Expose("8000/tcp"),
                new ImageStep.Expose("53/udp"),
                ImageStep.Run.exec(List.of("echo", "a b")));
    }

    @Test
    void debianImages() {
        assertThat(Image.debian("bookworm").base()).isEqualTo("debian:bookworm");
        assertThat(Image.debianSlim("bookworm").base()).isEqualTo("debian:bookworm-slim");
        assertThat(Image.debian("sid").base()).isEqualTo("debian:sid");
        for (String bad : new String[] {"", "Bookworm", "bookworm-slim", "12", "bookworm:latest", null}) {
            assertInvalid(() -> Image.debian(bad), "suite");
        }
    }

    @Test
    void pipOptions() {
        Image image = Image.debian("bookworm").pip(Image.PipOptions.defaults()
                .withIndexUrl("https://download.pytorch.org/whl/cpu").withFindLinks("/opt/wheels"), "torch");
        assertThat(image.steps().get(1)).isEqualTo(new ImageStep.Pip(List.of("torch"),
                Optional.of("https://download.pytorch.org/whl/cpu"), List.of("/opt/wheels")));
        assertInvalid(() -> Image.PipOptions.defaults().withIndexUrl("not a url"), "indexUrl");
    }

    @Test
    void relativePathsResolveAgainstTheWorkdirSoFar() {
        Image image = Image.debian("bookworm").workdir("/app").workdir("sub").copy(Path.of("/src/a.txt"), "data/")
                .workdir("..").copy(Path.of("/src/b"), ".");
        assertThat(image.steps()).containsExactly(
                new ImageStep.From("debian:bookworm"),
                new ImageStep.Workdir("/app"),
                new ImageStep.Workdir("/app/sub"),
                ImageStep.Copy.of(List.of("local-0/a.txt"), "/app/sub/data/"),
                new ImageStep.Workdir("/app"),
                ImageStep.Copy.of(List.of("local-1/b"), "/app/"));
        assertThat(image.localSources().keySet()).containsExactly("local-0/a.txt", "local-1/b");
    }

    @Test
    void copyRecordsAnAbsoluteLocalPathAndChown() {
        Image image = Image.debian("bookworm").copy(Path.of("relative/dir/../file.txt"), "/x", "app:app");
        assertThat(image.localSources().get("local-0/file.txt"))
                .isEqualTo(Path.of("relative/file.txt").toAbsolutePath());
        assertThat(((ImageStep.Copy) image.steps().get(1)).chown()).contains("app:app");
        assertInvalid(() -> Image.debian("bookworm").copy(Path.of("/"), "/x"), "local");
        assertInvalid(() -> Image.debian("bookworm").copy(null, "/x"), "local");
    }

    @Test
    void anImageIsAnImmutableValue() {
        Image base = Image.debian("bookworm").apt("git");
        Image a = base.run("echo a");
        Image b = base.run("echo b");
        assertThat(base.steps()).hasSize(2);
        assertThat(a).isNotEqualTo(b);
        assertThat(a).isEqualTo(Image.debian("bookworm").apt("git").run("echo a"));
        assertThat(a.hashCode()).isEqualTo(Image.debian("bookworm").apt("git").run("echo a").hashCode());
        assertThatThrownBy(() -> a.steps().add(ImageStep.Run.shell("x")))
                .isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> a.localSources().put("x", Path.of("/x")))
                .isInstanceOf(UnsupportedOperationException.class);
    }

    @Test
    void localSourcesArePartOfEquality() {
        Image a = Image.debian("bookworm").copy(Path.of("/one/app.py"), "/app/");
        Image b = Image.debian("bookworm").copy(Path.of("/two/app.py"), "/app/");
        assertThat(a.steps()).isEqualTo(b.steps());
        assertThat(a).isNotEqualTo(b);
    }

    @Test
    void toStringListsTheSteps() {
        assertThat(Image.debian("bookworm").apt("git").run("echo hi").env("A", "b c"))
                .hasToString("Image[FROM debian:bookworm; APT git; RUN echo hi; ENV A=\"b c\"]");
    }

    @Test
    void invalidInputFailsAtTheCallThatGaveIt() {
        Image image = Image.debian("bookworm");
        assertInvalid(() -> image.apt("-y"), "packages");
        assertInvalid(() -> image.apt(), "packages");
        assertInvalid(() -> image.apt((String) null), "packages");
        assertInvalid(() -> image.pip("--pre"), "packages");
        assertInvalid(() -> image.env("1", "v"), "key");
        assertInvalid(() -> image.expose(70000), "port");
        assertInvalid(() -> image.runArgv(), "argv");
        assertInvalid(() -> Image.from("host"), "base");
    }
}
