package io.paddock.wire;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.ErrorCode;
import io.paddock.Image;
import io.paddock.ImageInfo;
import io.paddock.ImageListener;
import io.paddock.RegistryAuth;
import io.paddock.SandboxException;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ImageWireTest {
    private static final ImageInfo INFO = new ImageInfo("sha256:" + "a".repeat(64), List.of("app:1", "127.0.0.1:5000/t/app:1"),
            1234, 2, Optional.of(Instant.parse("2024-05-01T10:00:00Z")), List.of("PATH=/bin", "A=b"), "1000:1000", "/app",
            List.of("/entry"), List.of("run", "--x"), Map.of("k", "v"), List.of("8000/tcp"));

    private static JsonNode parse(String json) {
        return Wire.parse(json.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void imageInfoRoundTrips() {
        assertThat(ImageWire.imageInfo(ImageWire.json(INFO))).isEqualTo(INFO);
        ImageInfo bare = new ImageInfo("sha256:" + "b".repeat(64), List.of(), 0, 0, Optional.empty(), List.of(), "", "",
                List.of(), List.of(), Map.of(), List.of());
        assertThat(ImageWire.json(bare).get("created").isNull()).isTrue();
        assertThat(ImageWire.imageInfo(ImageWire.json(bare))).isEqualTo(bare);
        assertThat(ImageWire.imageList(ImageWire.imageList(List.of(INFO, bare)))).containsExactly(INFO, bare);
        assertThat(ImageWire.pruned(ImageWire.pruned(77))).isEqualTo(77);
    }

    @Test
    void pullAndPushRequestsCarryOnlyTheirFields() {
        ImageWire.PullRequest pull = ImageWire.pullRequest(ImageWire.pullRequest("r:5000/a:1",
                RegistryAuth.none().insecure().credentials("u", "p")));
        assertThat(pull.ref()).isEqualTo("r:5000/a:1");
        assertThat(pull.auth().isInsecure()).isTrue();
        assertThat(pull.auth().username()).hasValue("u");
        assertThat(pull.auth().password()).hasValue("p");
        assertThat(pull.auth().configFile()).isEmpty();

        ImageWire.PushRequest push = ImageWire.pushRequest(ImageWire.pushRequest("app:1", "r:5000/app:1", RegistryAuth.none()));
        assertThat(push.target()).isEqualTo("r:5000/app:1");
        assertThat(push.auth().isInsecure()).isFalse();
        assertThat(push.auth().username()).isEmpty();

        // a config file path is the client's; it never goes on the wire
        assertThatThrownBy(() -> ImageWire.pullRequest("a", RegistryAuth.none().configFile(Path.of("/root/.docker/config.json"))))
                .isInstanceOf(IllegalArgumentException.class);
        invalid(() -> ImageWire.pullRequest(parse("{\"ref\":\"a\",\"config_file\":\"/etc/shadow\"}")), "config_file");
        invalid(() -> ImageWire.pullRequest(parse("{\"ref\":\"a\",\"username\":\"u\"}")), "password");
        invalid(() -> ImageWire.pullRequest(parse("{\"ref\":\"a\",\"insecure\":\"yes\"}")), "insecure");
        invalid(() -> ImageWire.pullRequest(parse("{}")), "ref");
        invalid(() -> ImageWire.pushRequest(parse("{\"ref\":\"a\"}")), "target");
    }

    @Test
    void eventsReachTheListenerAndDoneEndsTheStream() {
        List<String> heard = new ArrayList<>();
        ImageListener l = new ImageListener() {
            @Override
            public void log(String line) {
                heard.add("log " + line);
            }

            @Override
            public void step(int index, int count, String description, boolean cached) {
                heard.add("step " + index + "/" + count + " " + description + " " + cached);
            }

            @Override
            public void layer(String digest, long done, long total, boolean complete, boolean cached) {
                heard.add("layer " + digest + " " + done + "/" + total + " " + complete + " " + cached);
                throw new IllegalStateException("a listener's failure is its own");
            }
        };
        assertThat(ImageWire.deliver(ImageWire.logEvent("hi"), l)).isEmpty();
        assertThat(ImageWire.deliver(ImageWire.stepEvent(2, 3, "RUN echo", true), l)).isEmpty();
        assertThat(ImageWire.deliver(ImageWire.layerEvent("sha256:x", 5, 10, false, false), l)).isEmpty();
        assertThat(ImageWire.deliver(parse("{\"type\":\"future\"}"), l)).isEmpty();
        assertThat(ImageWire.deliver(ImageWire.doneEvent(INFO), l)).hasValue(INFO);
        assertThat(heard).containsExactly("log hi", "step 2/3 RUN echo true", "layer sha256:x 5/10 false false");
        assertThatThrownBy(() -> ImageWire.deliver(ImageWire.errorEvent(Wire.error(ErrorCode.NOT_FOUND, "gone")), l))
                .isInstanceOfSatisfying(SandboxException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.NOT_FOUND);
                    assertThat(e.getMessage()).isEqualTo("gone");
                });
    }

    @Test
    void anImageRoundTripsWithItsLocalSourcesElsewhere() {
        Image image = Image.from("127.0.0.1:5000/base:1")
                .apt("git")
                .pip(Image.PipOptions.defaults().withIndexUrl("https://example.org/simple").withFindLinks("/wheels"), "numpy>=2")
                .npm("left-pad")
                .copy(Path.of("/home/me/app.py"), "app/")
                .workdir("/srv")
                .copy(Path.of("/home/me/data"), "d", "1000:1000")
                .env("A", "b c").user("app").label("k", "v").expose(8000).run("echo hi > /x").runArgv("true")
                .cmd("python", "app.py").entrypoint("/bin/sh", "-c");
        List<String> asked = new ArrayList<>();
        Image back = ImageWire.image(Wire.parse(Wire.bytes(ImageWire.json(image))), name -> {
            asked.add(name);
            return Path.of("/tmp/ctx").resolve(name);
        });
        assertThat(back.steps()).isEqualTo(image.steps());
        assertThat(asked).containsExactly("local-0/app.py", "local-1/data");
        assertThat(back.localSources()).containsEntry("local-1/data", Path.of("/tmp/ctx/local-1/data"));
    }

    @Test
    void aBadImageDescriptionIsRefusedNamingTheField() {
        invalid(() -> ImageWire.image(parse("{\"steps\":[]}"), n -> Path.of("/x")), "steps");
        invalid(() -> ImageWire.image(parse("{\"steps\":[{\"type\":\"run\",\"argv\":[\"true\"]}]}"), n -> Path.of("/x")), "steps");
        invalid(() -> ImageWire.image(parse("{\"steps\":[{\"type\":\"from\",\"base\":\"a\"},{\"type\":\"from\",\"base\":\"b\"}]}"),
                n -> Path.of("/x")), "steps");
        invalid(() -> ImageWire.image(parse("{\"steps\":[{\"type\":\"from\",\"base\":\"a\"},{\"type\":\"shell\"}]}"),
                n -> Path.of("/x")), "type");
        invalid(() -> ImageWire.image(parse("{\"steps\":[{\"type\":\"from\",\"base\":\"a\"},"
                + "{\"type\":\"run\",\"argv\":[\"sh\",\"-c\",\"x\"],\"shell\":true}]}"), n -> Path.of("/x")), "argv");
        // a copy must name the source the builder would: local-<n>/<its file name>, in order
        invalid(() -> ImageWire.image(parse("{\"steps\":[{\"type\":\"from\",\"base\":\"a\"},"
                + "{\"type\":\"copy\",\"source\":\"local-1/a\",\"dest\":\"/a\"}]}"), n -> Path.of("/ctx").resolve(n)), "source");
        invalid(() -> ImageWire.image(parse("{\"steps\":[{\"type\":\"from\",\"base\":\"a\"},"
                + "{\"type\":\"copy\",\"source\":\"local-0/a\",\"dest\":\"/a\",\"add\":true}]}"), n -> Path.of("/ctx").resolve(n)), "add");
        invalid(() -> ImageWire.image(parse("{\"steps\":[{\"type\":\"from\",\"base\":\"host\"}]}"), n -> Path.of("/x")), "base");
    }

    private static void invalid(Runnable r, String field) {
        assertThatThrownBy(r::run).isInstanceOfSatisfying(SandboxException.class, e -> {
            assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
            assertThat(e.getMessage()).startsWith(field + ":");
        });
    }
}
