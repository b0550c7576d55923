package io.paddock.image.internal.registry;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.image.internal.oci.Digest;
import io.paddock.image.internal.oci.ImageRef;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@link ImageRef} (in the oci package; tested here with the registry client that uses it). */
class ImageRefTest {
    private static final String HEX = "a".repeat(64);

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', nullValues = "-", textBlock = """
            # input                              | registry        | repository           | tag    | digest | local | canonical                                  | familiar
            busybox                              | docker.io       | library/busybox      | latest | -      | true  | docker.io/library/busybox:latest           | busybox:latest
            busybox:1.36                         | docker.io       | library/busybox      | 1.36   | -      | true  | docker.io/library/busybox:1.36             | busybox:1.36
            acc-img:1                            | docker.io       | library/acc-img      | 1      | -      | true  | docker.io/library/acc-img:1                | acc-img:1
            library/busybox                      | docker.io       | library/busybox      | latest | -      | true  | docker.io/library/busybox:latest           | busybox:latest
            acc/busy                             | docker.io       | acc/busy             | latest | -      | true  | docker.io/acc/busy:latest                  | acc/busy:latest
            docker.io/library/busybox            | docker.io       | library/busybox      | latest | -      | false | docker.io/library/busybox:latest           | busybox:latest
            docker.io/busybox                    | docker.io       | library/busybox      | latest | -      | false | docker.io/library/busybox:latest           | busybox:latest
            index.docker.io/acc/x:2              | docker.io       | acc/x                | 2      | -      | false | docker.io/acc/x:2                          | acc/x:2
            127.0.0.1:5000/acc/busy:2            | 127.0.0.1:5000  | acc/busy             | 2      | -      | false | 127.0.0.1:5000/acc/busy:2                  | 127.0.0.1:5000/acc/busy:2
            localhost/x                          | localhost       | x                    | latest | -      | false | localhost/x:latest                         | localhost/x:latest
            localhost:5000/a/b/c:v1.0-rc_1       | localhost:5000  | a/b/c                | v1.0-rc_1 | -   | false | localhost:5000/a/b/c:v1.0-rc_1             | localhost:5000/a/b/c:v1.0-rc_1
            ghcr.io/Org-Name/x                   | ghcr.io         | -                    | -      | -      | -     | -                                          | -
            Registry.Example.COM/a               | Registry.Example.COM | a               | latest | -      | false | Registry.Example.COM/a:latest              | Registry.Example.COM/a:latest
            [::1]:5000/a                         | [::1]:5000      | a                    | latest | -      | false | [::1]:5000/a:latest                        | [::1]:5000/a:latest
            localhost:5000                       | docker.io       | library/localhost    | 5000   | -      | true  | docker.io/library/localhost:5000           | localhost:5000
            a.b-c__d---e_f                       | docker.io       | library/a.b-c__d---e_f | latest | -    | true  | docker.io/library/a.b-c__d---e_f:latest    | a.b-c__d---e_f:latest
            """)
    void parsesAndNormalises(String input, String registry, String repository, String tag, String digest, String local,
                             String canonical, String familiar) {
        if (repository == null) {
            assertThatThrownBy(() -> ImageRef.parse(input)).isInstanceOf(SandboxException.class)
                    .hasMessageContaining("must be lowercase");
            return;
        }
        ImageRef r = ImageRef.parse(input);
        assertThat(r.registry()).isEqualTo(registry);
        assertThat(r.repository()).isEqualTo(repository);
        assertThat(r.tag()).isEqualTo(Optional.ofNullable(tag));
        assertThat(r.digest()).isEqualTo(Optional.ofNullable(digest).map(Digest::parse));
        assertThat(r.isLocalName()).isEqualTo(Boolean.parseBoolean(local));
        assertThat(r.toString()).isEqualTo(canonical);
        assertThat(r.familiar()).isEqualTo(familiar);
        assertThat(ImageRef.parse(r.toString()).toString()).as("canonical form round-trips").isEqualTo(canonical);
    }

    @Test
    void aDigestPinsWithOrWithoutATag() {
        ImageRef pinned = ImageRef.parse("127.0.0.1:5000/acc/x@sha256:" + HEX);
        assertThat(pinned.tag()).isEmpty();
        assertThat(pinned.digest()).contains(new Digest(HEX));
        assertThat(pinned.reference()).isEqualTo("sha256:" + HEX);
        assertThat(pinned.toString()).isEqualTo("127.0.0.1:5000/acc/x@sha256:" + HEX);

        ImageRef both = ImageRef.parse("busybox:1@sha256:" + HEX);
        assertThat(both.tag()).contains("1");
        assertThat(both.reference()).as("the digest wins for fetching").isEqualTo("sha256:" + HEX);
        assertThat(both.familiar()).isEqualTo("busybox:1@sha256:" + HEX);
        assertThat(both.toString()).isEqualTo("docker.io/library/busybox:1@sha256:" + HEX);

        ImageRef tagged = ImageRef.parse("acc/x:7");
        assertThat(tagged.reference()).isEqualTo("7");
        assertThat(tagged.withDigest(new Digest(HEX)).toString()).isEqualTo("docker.io/acc/x:7@sha256:" + HEX);
    }

    @Test
    void localNamesAreThoseWithoutARegistry() {
        assertThat(ImageRef.parse("myimage").isLocalName()).isTrue();
        assertThat(ImageRef.parse("acc-img:1").isLocalName()).isTrue();
        assertThat(ImageRef.parse("team/tool:2").isLocalName()).isTrue();
        assertThat(ImageRef.parse("docker.io/library/myimage").isLocalName()).isFalse();
        assertThat(ImageRef.parse("localhost/myimage").isLocalName()).isFalse();
        assertThat(ImageRef.parse("myimage")).isNotEqualTo(ImageRef.parse("docker.io/library/myimage"));
        assertThat(ImageRef.parse("myimage").toString()).isEqualTo(ImageRef.parse("docker.io/library/myimage").toString());
    }

    @Test
    void valuesAreComparable() {
        assertThat(ImageRef.parse("127.0.0.1:5000/a:1")).isEqualTo(ImageRef.parse("127.0.0.1:5000/a:1"));
        assertThat(ImageRef.parse("busybox")).isEqualTo(ImageRef.parse("library/busybox:latest"));
    }

    @ParameterizedTest(name = "''{0}'' → {1}")
    @CsvSource(delimiter = '|', textBlock = """
            ''                                  | the reference is empty
            ' busybox'                          | whitespace
            'busy box'                          | whitespace
            'Busybox'                           | must be lowercase
            'acc/MyImage:1'                     | must be lowercase
            'registry.example/Acc/x'            | must be lowercase
            'acc//x'                            | empty path component
            'acc/'                              | empty path component
            '/acc'                              | empty path component
            '-acc'                              | is not a valid repository path component
            'acc-'                              | is not a valid repository path component
            'a..b'                              | is not a valid repository path component
            'a___b'                             | is not a valid repository path component
            'a._b'                              | is not a valid repository path component
            'a$b'                               | is not a valid repository path component
            'busybox:'                          | the tag after ':' is empty
            'busybox:-x'                        | the tag '-x' is not valid
            'busybox:.x'                        | the tag '.x' is not valid
            'busybox:a/b'                       | is not a valid registry host[:port]
            'busybox:a+b'                       | the tag 'a+b' is not valid
            'busybox@sha256:abc'                | is not sha256:<64 lowercase hex digits>
            'busybox@md5:0123'                  | is not sha256:<64 lowercase hex digits>
            'busybox@'                          | is not sha256:<64 lowercase hex digits>
            ':1'                                | has no repository name
            '@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' | has no repository name
            'host:99999/x'                      | the registry port 99999 is out of range
            'bad_host.com/x'                    | is not a valid registry host[:port]
            '-host.com/x'                       | is not a valid registry host[:port]
            'host.com:/x'                       | is not a valid registry host[:port]
            'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' | 64-digit hex string
            """)
    void refusesBadReferencesSayingWhy(String input, String problem) {
        assertThatThrownBy(() -> ImageRef.parse(input))
                .isInstanceOfSatisfying(SandboxException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT))
                .hasMessageStartingWith("image: ")
                .hasMessageContaining(problem);
    }

    @Test
    void limitsLengths() {
        String component = "a".repeat(100);
        String name = "r.example/" + component + "/" + component + "/" + "b".repeat(40); // 10 + 101 + 101 + 40 = 252
        assertThat(ImageRef.parse(name).repository()).hasSize(242);
        assertThatThrownBy(() -> ImageRef.parse(name + "cccc")).hasMessageContaining("at most 255");
        assertThat(ImageRef.parse("x:" + "t".repeat(128)).tag()).contains("t".repeat(128));
        assertThatThrownBy(() -> ImageRef.parse("x:" + "t".repeat(129))).hasMessageContaining("is not valid");
        assertThatThrownBy(() -> ImageRef.parse("x".repeat(10_000))).hasMessageContaining("too long");
    }

    @Test
    void adversarialInputIsRefusedQuickly() {
        // Components that would make a backtracking regex explode: refused in linear time.
        String evil = "a".repeat(200) + "!";
        long start = System.nanoTime();
        assertThatThrownBy(() -> ImageRef.parse(evil)).isInstanceOf(SandboxException.class);
        assertThatThrownBy(() -> ImageRef.parse("a-".repeat(100) + "-")).isInstanceOf(SandboxException.class);
        assertThat(System.nanoTime() - start).isLessThan(1_000_000_000L);
    }

    @Test
    void theConstructorKeepsInstancesValid() {
        assertThatThrownBy(() -> new ImageRef("docker.io", "Bad", Optional.of("1"), Optional.empty(), false))
                .hasMessageContaining("lowercase");
        assertThatThrownBy(() -> new ImageRef("docker.io", "a", Optional.empty(), Optional.empty(), false))
                .hasMessageContaining("a tag or a digest");
        assertThatThrownBy(() -> new ImageRef("127.0.0.1:5000", "a", Optional.of("1"), Optional.empty(), true))
                .hasMessageContaining("a local name has no registry");
        assertThatThrownBy(() -> new ImageRef("docker.io", "a", Optional.of("a b"), Optional.empty(), false))
                .hasMessageContaining("is not valid");
    }
}
