package io.paddock.image.internal.build;

import io.paddock.Image;
import io.paddock.ImageStep;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The two front ends agree: the Java builder and the equivalent Dockerfile make the same steps. And real
 * Dockerfiles parse to the steps pinned in {@code golden/*.steps} (regenerate with
 * {@code -Dpaddock.golden.update=true}, then review the diff).
 */
class DockerfileGoldenTest {
    private static final String GOLDEN = "golden/";

    private static List<ImageStep> parse(String dockerfile) {
        return Dockerfile.parse(dockerfile, Map.of()).steps();
    }

    @Test
    void builderAndDockerfileMakeTheSameSteps() {
        assertThat(Image.debian("bookworm").run("apt-get update").env("A", "b").workdir("/opt").steps())
                .isEqualTo(parse("FROM debian:bookworm\nRUN apt-get update\nENV A=b\nWORKDIR /opt"));
    }

    @Test
    void everyInstructionOfTheBuilderHasTheSameDockerfileStep() {
        Image image = Image.debianSlim("bookworm")
                .env("DEBIAN_FRONTEND", "noninteractive")
                .run("apt-get update && apt-get install -y python3")
                .runArgv("python3", "-c", "print('hi')")
                .workdir("/srv")
                .workdir("app")
                .env("GREETING", "hello world")
                .label("org.opencontainers.image.title", "My App")
                .user("1000:1000")
                .expose(8000)
                .expose("53/udp")
                .entrypoint("/usr/bin/tini", "--")
                .cmd("python3", "-m", "http.server");
        String dockerfile = """
                FROM debian:bookworm-slim
                ENV DEBIAN_FRONTEND=noninteractive
                RUN apt-get update && apt-get install -y python3
                RUN ["python3", "-c", "print('hi')"]
                WORKDIR /srv
                WORKDIR app
                ENV GREETING="hello world"
                LABEL org.opencontainers.image.title="My App"
                USER 1000:1000
                EXPOSE 8000
                EXPOSE 53/udp
                ENTRYPOINT ["/usr/bin/tini", "--"]
                CMD python3 -m http.server
                """;
        List<ImageStep> parsed = parse(dockerfile);
        // the shell-form CMD differs only in being run by /bin/sh
        assertThat(parsed.subList(0, parsed.size() - 1)).isEqualTo(image.steps().subList(0, parsed.size() - 1));
        assertThat(parsed.get(parsed.size() - 1)).isEqualTo(new ImageStep.Cmd(List.of("/bin/sh", "-c", "python3 -m http.server")));
        assertThat(parse(dockerfile.replace("CMD python3 -m http.server", "CMD [\"python3\", \"-m\", \"http.server\"]")))
                .isEqualTo(image.steps());
    }

    @Test
    void builderCopyMatchesDockerfileCopyButForTheSourceName() {
        Image image = Image.debian("bookworm").workdir("/app").copy(Path.of("/home/me/project/app.py"), ".");
        List<ImageStep> parsed = parse("FROM debian:bookworm\nWORKDIR /app\nCOPY app.py .");
        assertThat(image.steps().subList(0, 2)).isEqualTo(parsed.subList(0, 2));
        ImageStep.Copy fromBuilder = (ImageStep.Copy) image.steps().get(2);
        ImageStep.Copy fromDockerfile = (ImageStep.Copy) parsed.get(2);
        assertThat(fromBuilder.dest()).isEqualTo(fromDockerfile.dest()).isEqualTo("/app/");
        assertThat(fromBuilder.sources()).containsExactly("local-0/app.py");
        assertThat(fromDockerfile.sources()).containsExactly("app.py");
    }

    @ParameterizedTest
    @ValueSource(strings = {"python-app", "node-service"})
    void realDockerfilesParseToThePinnedSteps(String name) throws IOException {
        ParsedDockerfile parsed = Dockerfile.parse(resource(name + ".Dockerfile"), Map.of());
        StringBuilder actual = new StringBuilder("# line, describe(), then cacheKey() indented\n");
        for (int i = 0; i < parsed.steps().size(); i++) {
            ImageStep step = parsed.steps().get(i);
            actual.append(parsed.line(i)).append(' ').append(step.describe()).append('\n')
                    .append("    ").append(step.cacheKey()).append('\n');
        }
        for (String warning : parsed.warnings()) {
            actual.append("warning: ").append(warning).append('\n');
        }
        if (Boolean.getBoolean("paddock.golden.update")) {
            Files.writeString(Path.of("src/test/resources/io/paddock/image/internal/build", GOLDEN, name + ".steps"),
                    actual.toString());
        }
        assertThat(actual.toString()).isEqualTo(resource(name + ".steps"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"python-app", "node-service"})
    void describedStepsParseBackToTheSameSteps(String name) throws IOException {
        List<ImageStep> steps = parse(resource(name + ".Dockerfile"));
        String described = steps.stream().map(ImageStep::describe).collect(Collectors.joining("\n"));
        assertThat(parse(described)).isEqualTo(steps);
    }

    private static String resource(String name) throws IOException {
        try (InputStream in = DockerfileGoldenTest.class.getResourceAsStream(GOLDEN + name)) {
            assertThat(in).as("test resource " + GOLDEN + name).isNotNull();
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
