package io.paddock;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.Arrays;
import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ImageStepTest {

    // --- From ----------------------------------------------------------------------------------------------

    @ParameterizedTest
    @ValueSource(strings = {"debian:bookworm", "debian", "registry:5000/x:1", "ghcr.io/org/app:v1.2",
            "python:3.12-slim", "localhost:5000/a/b/c",
            "alpine@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"})
    void fromAcceptsImageReferences(String ref) {
        assertThat(new ImageStep.From(ref).base()).isEqualTo(ref);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "Debian:bookworm", "debian:bookworm extra", "-x", "a//b", "debian:", "a:b:c"})
    void fromRefusesMalformedReferences(String ref) {
        assertInvalid(() -> new ImageStep.From(ref), "base");
    }

    @Test
    void hostIsNotABase() {
        assertThatThrownBy(() -> new ImageStep.From("host")).isInstanceOf(SandboxException.class)
                .hasMessageContaining("'host' cannot be a base image");
    }

    @Test
    void nullsAreInvalidArgumentsNotNullPointers() {
        assertInvalid(() -> new ImageStep.From(null), "base");
        assertInvalid(() -> new ImageStep.Run(null, false), "argv");
        assertInvalid(() -> new ImageStep.Run(Arrays.asList("echo", null), false), "argv");
        assertInvalid(() -> new ImageStep.Copy(List.of("a"), "/x", null, false), "chown");
        assertInvalid(() -> new ImageStep.Pip(List.of("x"), null, List.of()), "indexUrl");
        assertInvalid(() -> new ImageStep.Env("A", null), "value");
    }

    // --- Run -----------------------------------------------------------------------------------------------

    @Test
    void shellFormIsAnArgvForTheShell() {
        ImageStep.Run run = ImageStep.Run.shell("apt-get update && echo $HOME");
        assertThat(run.argv()).containsExactly("/bin/sh", "-c", "apt-get update && echo $HOME");
        assertThat(run.shell()).isTrue();
        assertThat(run.describe()).isEqualTo("RUN apt-get update && echo $HOME");
        assertThat(run.cacheKey()).isEqualTo("RUN [\"/bin/sh\",\"-c\",\"apt-get update && echo $HOME\"]");
    }

    @Test
    void execFormIsShownAsJson() {
        ImageStep.Run run = ImageStep.Run.exec(List.of("echo", "a \"b\""));
        assertThat(run.describe()).isEqualTo("RUN [\"echo\",\"a \\\"b\\\"\"]");
    }

    @Test
    void shellAndExecFormOfTheSameArgvShareTheCacheKey() {
        assertThat(ImageStep.Run.shell("echo hi").cacheKey())
                .isEqualTo(ImageStep.Run.exec(List.of("/bin/sh", "-c", "echo hi")).cacheKey());
    }

    @Test
    void runRefusesBadCommands() {
        assertInvalid(() -> ImageStep.Run.exec(List.of()), "argv");
        assertInvalid(() -> ImageStep.Run.exec(List.of("echo", "a\0b")), "argv");
        assertInvalid(() -> ImageStep.Run.shell(" "), "command");
        assertInvalid(() -> new ImageStep.Run(List.of("echo", "hi"), true), "argv");
    }

    @Test
    void multiLineShellCommandsAreShownOnOneLine() {
        assertThat(ImageStep.Run.shell("echo a\necho b").describe())
                .isEqualTo("RUN [\"/bin/sh\",\"-c\",\"echo a\\necho b\"]");
    }

    // --- Copy ----------------------------------------------------------------------------------------------

    @Test
    void copySourcesAreNormalisedContextPaths() {
        ImageStep.Copy copy = new ImageStep.Copy(List.of("./a//b/", "/c", ".", "*.txt"), "/app//x/", Optional.empty(), false);
        assertThat(copy.sources()).containsExactly("a/b", "c", ".", "*.txt");
        assertThat(copy.dest()).isEqualTo("/app/x/");
    }

    @Test
    void copyRefusesSourcesLeavingTheContext() {
        assertThatThrownBy(() -> ImageStep.Copy.of(List.of("../secret"), "/x"))
                .hasMessageContaining("leaves the build context");
        assertInvalid(() -> ImageStep.Copy.of(List.of("a/../../b"), "/x"), "sources");
    }

    @Test
    void copyNeedsAnAbsoluteDestinationAndADirectoryForSeveralSources() {
        assertInvalid(() -> ImageStep.Copy.of(List.of("a"), "x"), "dest");
        assertInvalid(() -> ImageStep.Copy.of(List.of("a"), "/x/../y"), "dest");
        assertInvalid(() -> ImageStep.Copy.of(List.of("a", "b"), "/x"), "dest");
        assertThat(ImageStep.Copy.of(List.of("a", "b"), "/x/").dest()).isEqualTo("/x/");
        assertThat(ImageStep.Copy.of(List.of("a"), "/").dest()).isEqualTo("/");
    }

    @Test
    void copyValidatesChown() {
        assertThat(new ImageStep.Copy(List.of("a"), "/x", Optional.of("app:1000"), false).chown()).contains("app:1000");
        assertInvalid(() -> new ImageStep.Copy(List.of("a"), "/x", Optional.of("a b"), false), "chown");
        assertInvalid(() -> new ImageStep.Copy(List.of("a"), "/x", Optional.of("a:b:c"), false), "chown");
    }

    @Test
    void destinationsResolveAgainstTheWorkdir() {
        assertThat(ImageStep.Copy.resolveDest("/app", "x")).isEqualTo("/app/x");
        assertThat(ImageStep.Copy.resolveDest("/app", "x/")).isEqualTo("/app/x/");
        assertThat(ImageStep.Copy.resolveDest("/app", ".")).isEqualTo("/app/");
        assertThat(ImageStep.Copy.resolveDest("/app/sub", "..")).isEqualTo("/app/");
        assertThat(ImageStep.Copy.resolveDest("/app", "/abs/./y")).isEqualTo("/abs/y");
        assertThat(ImageStep.Copy.resolveDest("/", ".")).isEqualTo("/");
        assertThat(ImageStep.Copy.resolveDest("/app", "../../../etc/x")).isEqualTo("/etc/x");
    }

    @Test
    void copyDescribesAndKeys() {
        ImageStep.Copy copy = new ImageStep.Copy(List.of("a", "b c"), "/x/", Optional.of("app"), true);
        assertThat(copy.describe()).isEqualTo("ADD --chown=app [\"a\",\"b c\",\"/x/\"]");
        assertThat(copy.cacheKey()).isEqualTo("ADD [[\"a\",\"b c\"],\"/x/\",\"app\"]");
        assertThat(ImageStep.Copy.of(List.of("a"), "/x").describe()).isEqualTo("COPY a /x");
        assertThat(ImageStep.Copy.of(List.of("a"), "/x").cacheKey()).isEqualTo("COPY [[\"a\"],\"/x\",null]");
    }

    // --- Env, Workdir, User, Label, Cmd, Entrypoint, Expose, Arg ------------------------------------------------

    @Test
    void envKeysAreVariableNames() {
        assertThat(new ImageStep.Env("A_1", "").value()).isEmpty();
        assertInvalid(() -> new ImageStep.Env("1A", "v"), "key");
        assertInvalid(() -> new ImageStep.Env("A-B", "v"), "key");
        assertInvalid(() -> new ImageStep.Env("A", "x\0"), "value");
    }

    @Test
    void envQuotesWhatNeedsQuoting() {
        assertThat(new ImageStep.Env("A", "b").describe()).isEqualTo("ENV A=b");
        assertThat(new ImageStep.Env("A", "v 2 \"q\" $x").describe()).isEqualTo("ENV A=\"v 2 \\\"q\\\" \\$x\"");
        assertThat(new ImageStep.Env("A", "").describe()).isEqualTo("ENV A=\"\"");
        assertThat(new ImageStep.Env("A", "v 2").cacheKey()).isEqualTo("ENV [\"A\",\"v 2\"]");
    }

    @Test
    void workdirIsAbsoluteAndClean() {
        assertThat(new ImageStep.Workdir("/opt//app/./x/..").path()).isEqualTo("/opt/app");
        assertThat(ImageStep.Workdir.resolve("/opt", "app").path()).isEqualTo("/opt/app");
        assertThat(ImageStep.Workdir.resolve("/opt", "../..").path()).isEqualTo("/");
        assertThat(ImageStep.Workdir.resolve("/opt", "/srv").path()).isEqualTo("/srv");
        assertInvalid(() -> new ImageStep.Workdir("opt"), "path");
        assertInvalid(() -> new ImageStep.Workdir(""), "path");
    }

    @Test
    void userIsUserOrUserAndGroup() {
        assertThat(new ImageStep.User("1000:1000").describe()).isEqualTo("USER 1000:1000");
        assertThat(new ImageStep.User("app").user()).isEqualTo("app");
        assertInvalid(() -> new ImageStep.User("root; rm"), "user");
        assertInvalid(() -> new ImageStep.User(""), "user");
    }

    @Test
    void labels() {
        assertThat(new ImageStep.Label("org.opencontainers.image.title", "My App").describe())
                .isEqualTo("LABEL org.opencontainers.image.title=\"My App\"");
        assertInvalid(() -> new ImageStep.Label("", "v"), "key");
        assertInvalid(() -> new ImageStep.Label("a=b", "v"), "key");
    }

    @Test
    void cmdAndEntrypointAreArgvLists() {
        assertThat(new ImageStep.Cmd(List.of("python", "app.py")).describe()).isEqualTo("CMD [\"python\",\"app.py\"]");
        assertThat(new ImageStep.Entrypoint(List.of()).describe()).isEqualTo("ENTRYPOINT []");
        assertInvalid(() -> new ImageStep.Cmd(Arrays.asList("a", null)), "argv");
    }

    @Test
    void exposeIsNormalisedToPortAndProtocol() {
        assertThat(new ImageStep.Expose("8000").portProto()).isEqualTo("8000/tcp");
        assertThat(new ImageStep.Expose("53/UDP").portProto()).isEqualTo("53/udp");
        assertThat(ImageStep.Expose.port(8000)).isEqualTo(new ImageStep.Expose("8000/tcp"));
        assertInvalid(() -> new ImageStep.Expose("0"), "port");
        assertInvalid(() -> new ImageStep.Expose("65536"), "port");
        assertInvalid(() -> new ImageStep.Expose("80/icmp"), "port");
        assertInvalid(() -> new ImageStep.Expose("8000-8010"), "port");
    }

    @Test
    void args() {
        assertThat(new ImageStep.Arg("V", Optional.of("1 2")).describe()).isEqualTo("ARG V=\"1 2\"");
        assertThat(new ImageStep.Arg("V", Optional.empty()).cacheKey()).isEqualTo("ARG [\"V\",null]");
        assertInvalid(() -> new ImageStep.Arg("9", Optional.empty()), "name");
    }

    // --- Apt, Pip, Npm -------------------------------------------------------------------------------------

    @ParameterizedTest
    @ValueSource(strings = {"git", "g++", "libc6-dev", "python3.11", "curl=7.88.1-10+deb12u5", "gcc:amd64",
            "git/bookworm-backports", "openjdk-17-jdk-headless"})
    void aptAcceptsPackages(String pkg) {
        assertThat(new ImageStep.Apt(List.of(pkg)).packages()).containsExactly(pkg);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "-y", "--allow-unauthenticated", "Git", "git jq", "a;b", "x=", "x=1 2"})
    void aptRefusesWhatIsNotAPackage(String pkg) {
        assertInvalid(() -> new ImageStep.Apt(List.of(pkg)), "packages");
    }

    @ParameterizedTest
    @ValueSource(strings = {"numpy", "NumPy", "torch==2.1.0", "pandas>=2,<3", "uvicorn[standard]",
            "a.b_c-d", "requests~=2.31", "x!=1.0", "flask[async,dotenv]>=3"})
    void pipAcceptsRequirements(String pkg) {
        assertThat(ImageStep.Pip.of(List.of(pkg)).packages()).containsExactly(pkg);
    }

    @ParameterizedTest
    @ValueSource(strings = {"-e", "--index-url=http://evil", "-r", "x @ https://a/b.whl", "https://a/b.whl",
            "numpy ==1", "a;b", "_x", "x-", "x==", ""})
    void pipRefusesOptionsUrlsAndJunk(String pkg) {
        assertInvalid(() -> ImageStep.Pip.of(List.of(pkg)), "packages");
    }

    @Test
    void pipIndexAndFindLinks() {
        ImageStep.Pip pip = new ImageStep.Pip(List.of("torch"), Optional.of("https://user:tok@download.pytorch.org/whl/cpu"),
                List.of("https://example.com/wheels/", "/opt/wheels", "file:///opt/more"));
        assertThat(pip.describe()).isEqualTo("PIP --index-url https://***@download.pytorch.org/whl/cpu"
                + " --find-links https://example.com/wheels/ --find-links /opt/wheels --find-links file:///opt/more torch");
        assertThat(pip.cacheKey()).contains("user:tok"); // the key is hashed, never shown
        assertInvalid(() -> new ImageStep.Pip(List.of("x"), Optional.of("ftp://a/b"), List.of()), "indexUrl");
        assertInvalid(() -> new ImageStep.Pip(List.of("x"), Optional.of("--extra"), List.of()), "indexUrl");
        assertInvalid(() -> new ImageStep.Pip(List.of("x"), Optional.of("file:///x"), List.of()), "indexUrl");
        assertInvalid(() -> new ImageStep.Pip(List.of("x"), Optional.empty(), List.of("-f")), "findLinks");
        assertInvalid(() -> new ImageStep.Pip(List.of(), Optional.empty(), List.of()), "packages");
    }

    @ParameterizedTest
    @ValueSource(strings = {"left-pad", "@types/node", "@scope/pkg@1.2.3", "typescript@^5", "JSONStream", "lodash@latest"})
    void npmAcceptsPackages(String pkg) {
        assertThat(new ImageStep.Npm(List.of(pkg)).packages()).containsExactly(pkg);
    }

    @ParameterizedTest
    @ValueSource(strings = {"-g", "--prefix=/", "@/x", "git+https://x/y.git", "a b", ".hidden", "_x", "x@"})
    void npmRefusesWhatIsNotAPackage(String pkg) {
        assertInvalid(() -> new ImageStep.Npm(List.of(pkg)), "packages");
    }

    @Test
    void higherLevelStepsDescribeAsPseudoInstructions() {
        assertThat(new ImageStep.Apt(List.of("git", "jq")).describe()).isEqualTo("APT git jq");
        assertThat(new ImageStep.Npm(List.of("left-pad")).describe()).isEqualTo("NPM left-pad");
        assertThat(ImageStep.Pip.of(List.of("numpy")).cacheKey()).isEqualTo("PIP [[\"numpy\"],null,[]]");
    }

    @Test
    void stepsAreValuesWithImmutableLists() {
        List<String> argv = new java.util.ArrayList<>(List.of("echo", "hi"));
        ImageStep.Run run = ImageStep.Run.exec(argv);
        argv.add("changed");
        assertThat(run.argv()).containsExactly("echo", "hi");
        assertThat(run).isEqualTo(ImageStep.Run.exec(List.of("echo", "hi")));
        assertThatThrownBy(() -> run.argv().add("x")).isInstanceOf(UnsupportedOperationException.class);
    }

    static void assertInvalid(Runnable r, String field) {
        assertThatThrownBy(r::run).isInstanceOfSatisfying(SandboxException.class, e -> {
            assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
            assertThat(e.getMessage()).startsWith(field + ":");
        });
    }
}
