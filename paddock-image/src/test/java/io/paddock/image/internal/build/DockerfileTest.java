package io.paddock.image.internal.build;

import io.paddock.ErrorCode;
import io.paddock.ImageStep;
import io.paddock.SandboxException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Every instruction form the parser accepts, and every error it gives, with its line. */
class DockerfileTest {
    private static final ImageStep.From DEBIAN = new ImageStep.From("debian:bookworm");

    private static List<ImageStep> steps(String text) {
        return Dockerfile.parse(text, Map.of()).steps();
    }

    /** The steps after the FROM. */
    private static List<ImageStep> after(String text) {
        List<ImageStep> steps = steps("FROM debian:bookworm\n" + text);
        assertThat(steps.get(0)).isEqualTo(DEBIAN);
        return steps.subList(1, steps.size());
    }

    private static void assertError(String text, int line, String problem) {
        assertThatThrownBy(() -> Dockerfile.parse(text, Map.of())).isInstanceOfSatisfying(SandboxException.class, e -> {
            assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
            assertThat(e.getMessage()).startsWith("Dockerfile line " + line + ": ").contains(problem);
        });
    }

    private static ImageStep.Run sh(String command) {
        return ImageStep.Run.shell(command);
    }

    // --- lexical -------------------------------------------------------------------------------------------

    @Test
    void commentsBlankLinesAndCaseInsensitiveInstructions() {
        ParsedDockerfile parsed = Dockerfile.parse("""
                # a comment
                
                from debian:bookworm
                   # indented comment
                Run echo hi # not a comment
                
                """, Map.of());
        assertThat(parsed.steps()).containsExactly(DEBIAN, sh("echo hi # not a comment"));
        assertThat(parsed.lines()).containsExactly(3, 5);
    }

    @Test
    void lineContinuationsJoinLinesAndSkipCommentsAndBlankLinesInside() {
        ParsedDockerfile parsed = Dockerfile.parse("""
                FROM debian:bookworm
                RUN apt-get update \\
                    && apt-get install -y \\
                # a comment between
                
                       git
                ENV A=1
                """, Map.of());
        assertThat(parsed.steps()).containsExactly(DEBIAN,
                sh("apt-get update     && apt-get install -y        git"), new ImageStep.Env("A", "1"));
        assertThat(parsed.lines()).containsExactly(1, 2, 7);
    }

    @Test
    void continuationWithTrailingWhitespaceAndCrlf() {
        assertThat(steps("FROM debian:bookworm\r\nRUN a \\  \r\n b\r\n"))
                .containsExactly(DEBIAN, sh("a  b"));
    }

    @Test
    void aContinuationAtTheEndOfTheFileEndsTheInstruction() {
        assertThat(steps("FROM debian:bookworm\nRUN echo a \\")).containsExactly(DEBIAN, sh("echo a"));
    }

    @Test
    void escapeDirectiveMakesBacktickTheEscapeCharacter() {
        ParsedDockerfile parsed = Dockerfile.parse("""
                # escape=`
                # syntax=docker/dockerfile:1
                FROM debian:bookworm
                RUN echo C:\\path `
                    && echo done
                ENV A="a `"quoted`" \\ b"
                """, Map.of());
        assertThat(parsed.steps()).containsExactly(DEBIAN, sh("echo C:\\path     && echo done"),
                new ImageStep.Env("A", "a \"quoted\" \\ b"));
    }

    @Test
    void directivesCountOnlyAtTheTop() {
        // after an instruction, "# escape=`" is a comment and the backslash stays the escape character
        assertThat(steps("FROM debian:bookworm\n# escape=`\nRUN a \\\n b")).containsExactly(DEBIAN, sh("a  b"));
        assertError("# escape=x\nFROM debian:bookworm", 1, "invalid escape token");
        assertError("# escape=`\n# escape=\\\nFROM debian:bookworm", 2, "only one escape parser directive");
    }

    // --- FROM and ARG --------------------------------------------------------------------------------------

    @Test
    void fromWithAStageNameIgnoresTheName() {
        assertThat(steps("FROM python:3.12-slim AS build")).containsExactly(new ImageStep.From("python:3.12-slim"));
        assertThat(steps("FROM python:3.12-slim as build")).containsExactly(new ImageStep.From("python:3.12-slim"));
    }

    @Test
    void argsBeforeFromAreSubstitutedInFromAndOverriddenByBuildArgs() {
        String text = """
                ARG SUITE=bookworm
                ARG VARIANT
                FROM debian:${SUITE}${VARIANT:+-}${VARIANT}
                """;
        assertThat(Dockerfile.parse(text, Map.of()).steps()).containsExactly(DEBIAN);
        assertThat(Dockerfile.parse(text, Map.of("SUITE", "trixie", "VARIANT", "slim")).steps())
                .containsExactly(new ImageStep.From("debian:trixie-slim"));
    }

    @Test
    void argsBeforeFromAreNotVisibleAfterItUnlessRedeclared() {
        ParsedDockerfile parsed = Dockerfile.parse("""
                ARG V=1
                FROM debian:bookworm
                ENV BEFORE=[$V]
                ARG V
                ENV AFTER=[$V]
                """, Map.of());
        assertThat(parsed.steps()).containsExactly(DEBIAN, new ImageStep.Env("BEFORE", "[]"),
                new ImageStep.Arg("V", Optional.of("1")), new ImageStep.Env("AFTER", "[1]"));
    }

    @Test
    void argStepsCarryTheValueTheBuildUses() {
        String text = "FROM debian:bookworm\nARG A=default B C=\"x y\"\nLABEL a=$A b=${B:-unset} c=$C";
        assertThat(Dockerfile.parse(text, Map.of()).steps()).containsExactly(DEBIAN,
                new ImageStep.Arg("A", Optional.of("default")), new ImageStep.Arg("B", Optional.empty()),
                new ImageStep.Arg("C", Optional.of("x y")), new ImageStep.Label("a", "default"),
                new ImageStep.Label("b", "unset"), new ImageStep.Label("c", "x y"));
        assertThat(Dockerfile.parse(text, Map.of("A", "given", "B", "b")).steps()).containsExactly(DEBIAN,
                new ImageStep.Arg("A", Optional.of("given")), new ImageStep.Arg("B", Optional.of("b")),
                new ImageStep.Arg("C", Optional.of("x y")), new ImageStep.Label("a", "given"),
                new ImageStep.Label("b", "b"), new ImageStep.Label("c", "x y"));
    }

    @Test
    void envWinsOverArgOfTheSameName() {
        assertThat(after("ARG X=arg\nENV X=env\nARG X=again\nLABEL x=$X")).endsWith(new ImageStep.Label("x", "env"));
    }

    @Test
    void undeclaredBuildArgsAreIgnoredWithAWarning() {
        ParsedDockerfile parsed = Dockerfile.parse("ARG USED\nFROM debian:bookworm", Map.of("USED", "1", "EXTRA", "2"));
        assertThat(parsed.steps()).containsExactly(DEBIAN);
        assertThat(parsed.warnings()).singleElement().asString().contains("[EXTRA]").contains("not declared");
    }

    // --- RUN, CMD, ENTRYPOINT ------------------------------------------------------------------------------

    @Test
    void runShellAndExecForms() {
        assertThat(after("RUN echo $HOME \"quoted\"\nRUN [\"echo\", \"a b\", \"$HOME\"]\nRUN [ -f /etc/os-release ]"))
                .containsExactly(sh("echo $HOME \"quoted\""), ImageStep.Run.exec(List.of("echo", "a b", "$HOME")),
                        sh("[ -f /etc/os-release ]"));
    }

    @Test
    void runIsNotSubstitutedByTheParser() {
        assertThat(after("ENV X=1\nRUN echo $X ${X:-y}")).endsWith(sh("echo $X ${X:-y}"));
    }

    @Test
    void cmdAndEntrypointInBothForms() {
        assertThat(after("""
                CMD ["python", "app.py"]
                CMD python app.py --port 80
                ENTRYPOINT ["/entry.sh"]
                ENTRYPOINT exec /entry.sh
                CMD []
                """)).containsExactly(
                new ImageStep.Cmd(List.of("python", "app.py")),
                new ImageStep.Cmd(List.of("/bin/sh", "-c", "python app.py --port 80")),
                new ImageStep.Entrypoint(List.of("/entry.sh")),
                new ImageStep.Entrypoint(List.of("/bin/sh", "-c", "exec /entry.sh")),
                new ImageStep.Cmd(List.of()));
    }

    @Test
    void jsonFormEscapes() {
        assertThat(after("CMD [\"a\\\"b\", \"\\u00e9\\n\", \"c\\\\d\"]"))
                .containsExactly(new ImageStep.Cmd(List.of("a\"b", "é\n", "c\\d")));
    }

    // --- COPY and ADD --------------------------------------------------------------------------------------

    @Test
    void copyForms() {
        assertThat(after("""
                COPY app.py /app/
                COPY --chown=app:app a b /dst/
                COPY ["with space.txt", "/opt/x y"]
                ADD archive.tar.gz /opt/
                ADD --chown=1000 ./src/ /srv
                COPY *.txt data/?.csv /data/
                """)).containsExactly(
                new ImageStep.Copy(List.of("app.py"), "/app/", Optional.empty(), false),
                new ImageStep.Copy(List.of("a", "b"), "/dst/", Optional.of("app:app"), false),
                new ImageStep.Copy(List.of("with space.txt"), "/opt/x y", Optional.empty(), false),
                new ImageStep.Copy(List.of("archive.tar.gz"), "/opt/", Optional.empty(), true),
                new ImageStep.Copy(List.of("src"), "/srv", Optional.of("1000"), true),
                new ImageStep.Copy(List.of("*.txt", "data/?.csv"), "/data/", Optional.empty(), false));
    }

    @Test
    void copyDestinationIsResolvedAgainstTheWorkdir() {
        assertThat(after("COPY a rel\nWORKDIR /app\nCOPY a rel\nCOPY a .\nCOPY a sub/\nCOPY a ../up")).containsExactly(
                ImageStep.Copy.of(List.of("a"), "/rel"), new ImageStep.Workdir("/app"),
                ImageStep.Copy.of(List.of("a"), "/app/rel"), ImageStep.Copy.of(List.of("a"), "/app/"),
                ImageStep.Copy.of(List.of("a"), "/app/sub/"), ImageStep.Copy.of(List.of("a"), "/up"));
    }

    @Test
    void copyArgumentsAreSubstituted() {
        assertThat(after("ARG SRC=app\nENV DEST=/opt/app U=app\nCOPY --chown=$U ${SRC}/ $DEST/")).endsWith(
                new ImageStep.Copy(List.of("app"), "/opt/app/", Optional.of("app"), false));
    }

    @Test
    void copyErrors() {
        assertError("FROM debian:bookworm\nCOPY --from=build /a /b", 2, "COPY --from is not supported");
        assertError("FROM debian:bookworm\nCOPY --chmod=755 a /b", 2, "COPY --chmod is not supported");
        assertError("FROM debian:bookworm\nADD --checksum=sha256:x a /b", 2, "ADD --checksum is not supported");
        assertError("FROM debian:bookworm\nCOPY onlyone", 2, "COPY requires at least two arguments");
        assertError("FROM debian:bookworm\nCOPY a b /notadir", 2, "several sources");
        assertError("FROM debian:bookworm\nCOPY ../secret /x", 2, "COPY sources: '../secret' leaves the build context");
        assertError("FROM debian:bookworm\n\nADD https://example.com/x.tgz /x", 3,
                "ADD from a URL is not supported; use RUN curl");
        assertError("FROM debian:bookworm\nADD git@github.com:a/b.git /x", 2, "ADD from a URL is not supported");
        assertError("FROM debian:bookworm\nCOPY http://example.com/x /x", 2, "COPY from a URL is not supported");
        assertError("FROM debian:bookworm\nCOPY --chown= a /b", 2, "--chown needs a value");
        assertError("FROM debian:bookworm\nCOPY <<EOF /x\nhello\nEOF", 2, "heredocs (<<EOF) are not supported");
    }

    // --- ENV and LABEL -------------------------------------------------------------------------------------

    @Test
    void envForms() {
        assertThat(after("""
                ENV A=1 B="v 2" C='single $A' D=
                ENV LEGACY the rest of "the" line
                ENV E=$A-${B}-${UNSET:-dflt} F=\\$A G=a\\ b
                """)).containsExactly(
                new ImageStep.Env("A", "1"), new ImageStep.Env("B", "v 2"), new ImageStep.Env("C", "single $A"),
                new ImageStep.Env("D", ""), new ImageStep.Env("LEGACY", "the rest of the line"),
                new ImageStep.Env("E", "1-v 2-dflt"), new ImageStep.Env("F", "$A"), new ImageStep.Env("G", "a b"));
    }

    @Test
    void envValuesSeeTheVariablesFromBeforeTheInstruction() {
        assertThat(after("ENV A=old\nENV A=new B=$A")).endsWith(new ImageStep.Env("A", "new"), new ImageStep.Env("B", "old"));
    }

    @Test
    void labelForms() {
        assertThat(after("LABEL a=b c=\"d e\" \"org.x.y\"=z\nLABEL legacy value here")).containsExactly(
                new ImageStep.Label("a", "b"), new ImageStep.Label("c", "d e"), new ImageStep.Label("org.x.y", "z"),
                new ImageStep.Label("legacy", "value here"));
    }

    @Test
    void maintainerBecomesAnAuthorsLabel() {
        ParsedDockerfile parsed = Dockerfile.parse("FROM debian:bookworm\nMAINTAINER Jane <jane@example.com>", Map.of());
        assertThat(parsed.steps()).endsWith(new ImageStep.Label("org.opencontainers.image.authors", "Jane <jane@example.com>"));
        assertThat(parsed.warnings()).singleElement().asString().contains("MAINTAINER is deprecated");
    }

    @Test
    void envAndLabelErrors() {
        assertError("FROM debian:bookworm\nENV A=1 B", 2, "can't find = in \"B\"");
        assertError("FROM debian:bookworm\nENV ONLYKEY", 2, "has no value");
        assertError("FROM debian:bookworm\nENV 1A=x", 2, "ENV key: '1A' is not a valid variable name");
        assertError("FROM debian:bookworm\nENV A=\"unterminated", 2, "unterminated double quote");
        assertError("FROM debian:bookworm\nENV A=${B", 2, "missing '}'");
        assertError("FROM debian:bookworm\nENV A=${B#x}", 2, "unsupported modifier (#)");
        assertError("FROM debian:bookworm\nENV A=\"${B:?must be set}\"", 2, "B: must be set");
        assertError("FROM debian:bookworm\nLABEL =x", 2, "names can not be blank");
        assertError("FROM debian:bookworm\nENV", 2, "ENV requires at least one argument");
    }

    // --- WORKDIR, USER, EXPOSE -----------------------------------------------------------------------------

    @Test
    void workdirResolvesRelativePathsAgainstThePreviousOne() {
        assertThat(after("WORKDIR app\nWORKDIR sub\nWORKDIR ../other\nWORKDIR /abs\nENV D=data\nWORKDIR $D")).containsExactly(
                new ImageStep.Workdir("/app"), new ImageStep.Workdir("/app/sub"), new ImageStep.Workdir("/app/other"),
                new ImageStep.Workdir("/abs"), new ImageStep.Env("D", "data"), new ImageStep.Workdir("/abs/data"));
    }

    @Test
    void userAndExpose() {
        assertThat(after("ENV U=app\nUSER $U:1000\nEXPOSE 8000 8001/tcp 53/udp\nARG P=9000\nEXPOSE $P")).containsExactly(
                new ImageStep.Env("U", "app"), new ImageStep.User("app:1000"), new ImageStep.Expose("8000/tcp"),
                new ImageStep.Expose("8001/tcp"), new ImageStep.Expose("53/udp"), new ImageStep.Arg("P", Optional.of("9000")),
                new ImageStep.Expose("9000/tcp"));
    }

    @Test
    void workdirUserExposeErrors() {
        assertError("FROM debian:bookworm\nWORKDIR", 2, "WORKDIR requires exactly one argument");
        assertError("FROM debian:bookworm\nUSER a b", 2, "USER requires exactly one argument");
        assertError("FROM debian:bookworm\nEXPOSE 8000-8010", 2, "EXPOSE port: '8000-8010' is not port");
        assertError("FROM debian:bookworm\nEXPOSE", 2, "EXPOSE requires at least one argument");
    }

    // --- structure errors ----------------------------------------------------------------------------------

    @Test
    void aSecondFromIsAMultiStageBuild() {
        assertError("FROM golang:1.22 AS build\nRUN go build\n\nFROM debian:bookworm", 4,
                "multi-stage builds are not supported");
    }

    @Test
    void missingFromIsAnError() {
        assertThatThrownBy(() -> Dockerfile.parse("# nothing\n", Map.of()))
                .hasMessage("Dockerfile: no FROM instruction; a Dockerfile starts with FROM (only ARG may come before it)");
        assertThatThrownBy(() -> Dockerfile.parse("ARG X=1", Map.of())).hasMessageContaining("no FROM instruction");
        assertError("\nRUN echo hi\nFROM debian:bookworm", 2, "RUN before FROM");
    }

    static Stream<Arguments> unsupported() {
        return Stream.of(
                Arguments.of("HEALTHCHECK CMD curl -f http://localhost/", "HEALTHCHECK is not supported"),
                Arguments.of("ONBUILD RUN echo", "ONBUILD is not supported"),
                Arguments.of("STOPSIGNAL SIGTERM", "STOPSIGNAL is not supported"),
                Arguments.of("SHELL [\"/bin/bash\", \"-c\"]", "SHELL is not supported"),
                Arguments.of("VOLUME /data", "VOLUME is not supported"),
                Arguments.of("FROBNICATE x", "unknown instruction: FROBNICATE"),
                Arguments.of("RUN --mount=type=cache,target=/root/.cache pip install x", "RUN --mount is not supported"),
                Arguments.of("RUN", "RUN requires at least one argument"),
                Arguments.of("RUN []", "RUN requires at least one argument"),
                Arguments.of("RUN [\"a\", 1]", "arrays must be comprised of strings only"),
                Arguments.of("RUN python - <<'EOF'", "heredocs (<<'EOF') are not supported"),
                Arguments.of("CMD", "CMD requires at least one argument"),
                Arguments.of("ARG", "ARG requires at least one argument"),
                Arguments.of("ARG 1X=2", "ARG name: '1X' is not a valid variable name"));
    }

    @ParameterizedTest
    @MethodSource("unsupported")
    void unsupportedInstructionsAndSyntaxErrorsNameTheirLine(String instruction, String problem) {
        assertError("FROM debian:bookworm\n# comment\n" + instruction, 3, problem);
    }

    @Test
    void errorsNameTheFirstLineOfAContinuedInstruction() {
        assertError("FROM debian:bookworm\nHEALTHCHECK \\\n  --interval=5s \\\n  CMD true", 2, "HEALTHCHECK is not supported");
    }

    @Test
    void fromErrors() {
        assertError("FROM --platform=linux/amd64 debian:bookworm", 1, "FROM --platform is not supported");
        assertError("FROM a b", 1, "FROM requires either one or three arguments");
        assertError("FROM host", 1, "FROM base: 'host' cannot be a base image");
        assertError("ARG IMG\nFROM $IMG", 2, "FROM names no image");
        assertError("FROM debian:bookworm AS 1bad", 1, "invalid stage name");
    }
}
