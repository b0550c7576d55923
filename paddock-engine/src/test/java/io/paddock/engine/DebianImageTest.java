package io.paddock.engine;

import io.paddock.ExecResult;
import io.paddock.ImageInfo;
import io.paddock.ImageListener;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A Debian base built by the real mmdebstrap from the host's Debian mirror (once per machine: the store
 * keeps it), and a Dockerfile on it whose RUN installs a package with apt-get through the build's network:
 * the one test that reaches a package registry, as image builds do. Runs on both tiers.
 */
class DebianImageTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);
    static final String BUILT = "paddock-test/debian-jq:1";
    static final String PIP = "paddock-test/debian-pip:1";

    static Paddock paddock;

    @BeforeAll
    static void start() {
        // The host's apt sources (the default) and the pip test's index on its test host.
        paddock = Paddock.local(LocalOptions.builder().buildAllow(LocalOptions.APT_SOURCES + ",198.18.8.2/32").build());
    }

    @AfterAll
    static void stop() {
        if (paddock != null) {
            for (String image : List.of(BUILT, PIP)) {
                try {
                    paddock.images().remove(image);
                } catch (SandboxException ignored) {
                    // not built
                }
            }
            paddock.close();
        }
    }

    /**
     * The Java builder's pip step against a PEP 503 index served by a test host, of a wheel this test makes:
     * no PyPI here, and none needed.
     */
    @Test
    void pipInstallsFromAnIndexOnATestHost() throws Exception {
        try (TestHost host = new TestHost(8)) {
            byte[] wheel = wheel();
            Path files = Files.createDirectories(host.www.resolve("files"));
            Files.write(files.resolve("paddock_hello-1.0-py3-none-any.whl"), wheel);
            Path project = Files.createDirectories(host.www.resolve("simple/paddock-hello"));
            Files.writeString(project.resolve("index.html"), "<!DOCTYPE html><html><body><a href=\"../../files/"
                    + "paddock_hello-1.0-py3-none-any.whl#sha256=" + java.util.HexFormat.of().formatHex(
                    java.security.MessageDigest.getInstance("SHA-256").digest(wheel)) + "\">paddock_hello-1.0-py3-none-any.whl"
                    + "</a></body></html>\n");
            Files.writeString(Files.createDirectories(host.www.resolve("simple")).resolve("index.html"),
                    "<!DOCTYPE html><html><body><a href=\"paddock-hello/\">paddock-hello</a></body></html>\n");
            io.paddock.Image image = io.paddock.Image.debianSlim("bookworm").apt("python3-pip")
                    .label("run", Long.toString(System.nanoTime()))
                    .pip(io.paddock.Image.PipOptions.defaults().withIndexUrl(host.url("simple/")), "paddock-hello");
            paddock.images().build(image, List.of(PIP), ImageListener.NONE);
            try (Sandbox sb = paddock.create(SandboxSpec.builder().image(PIP).build())) {
                ExecResult r = sb.exec("python3", "-c", "import paddock_hello; print(paddock_hello.GREETING)");
                assertThat(r.stdoutText()).as(r.stderrText()).isEqualTo("hello from a wheel\n");
            }
        }
    }

    /** A pure-Python wheel: a package, its METADATA, WHEEL and a RECORD with each file's hash. */
    static byte[] wheel() throws Exception {
        Map<String, String> files = new java.util.LinkedHashMap<>();
        files.put("paddock_hello/__init__.py", "GREETING = 'hello from a wheel'\n");
        files.put("paddock_hello-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: paddock-hello\nVersion: 1.0\n");
        files.put("paddock_hello-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: paddock-test\nRoot-Is-Purelib: true\n"
                + "Tag: py3-none-any\n");
        StringBuilder record = new StringBuilder();
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        try (java.util.zip.ZipOutputStream zip = new java.util.zip.ZipOutputStream(out)) {
            for (Map.Entry<String, String> f : files.entrySet()) {
                byte[] b = f.getValue().getBytes(java.nio.charset.StandardCharsets.UTF_8);
                zip.putNextEntry(new java.util.zip.ZipEntry(f.getKey()));
                zip.write(b);
                zip.closeEntry();
                record.append(f.getKey()).append(",sha256=").append(java.util.Base64.getUrlEncoder().withoutPadding()
                        .encodeToString(java.security.MessageDigest.getInstance("SHA-256").digest(b))).append(',')
                        .append(b.length).append('\n');
            }
            record.append("paddock_hello-1.0.dist-info/RECORD,,\n");
            zip.putNextEntry(new java.util.zip.ZipEntry("paddock_hello-1.0.dist-info/RECORD"));
            zip.write(record.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
            zip.closeEntry();
        }
        return out.toByteArray();
    }

    @Test
    void aDebianBaseRunsOnBothTiersAndAptWorksInABuild(@TempDir Path ctx) throws IOException {
        try (Sandbox sb = paddock.create(SandboxSpec.builder().image("debian:bookworm-slim").build())) {
            ExecResult r = sb.exec("sh", "-c", "cat /etc/debian_version; id -u; ls /usr/share/doc | wc -l");
            assertThat(r.stdoutText()).as(r.stderrText()).startsWith("12.");
        }
        Files.writeString(ctx.resolve("Dockerfile"), """
                FROM debian:bookworm-slim
                LABEL run=%d
                RUN apt-get update && apt-get install -y --no-install-recommends jq && rm -rf /var/lib/apt/lists/*
                RUN useradd --create-home --uid 1500 app
                USER app
                WORKDIR /home/app
                """.formatted(System.nanoTime()));
        ImageInfo info = paddock.images().build(ctx, null, Map.of(), List.of(BUILT), ImageListener.NONE);
        assertThat(info.user()).isEqualTo("app");
        for (String tier : List.of("runc", "runsc")) {
            try (Sandbox sb = paddock.create(SandboxSpec.builder().image(BUILT).runtime(tier).build())) {
                ExecResult r = sb.exec("sh", "-c", "echo '{\"a\":41}' | jq .a; id -u; pwd; touch mine && echo ok");
                assertThat(r.stdoutText()).as("%s: %s", tier, r.stderrText()).isEqualTo("41\n1500\n/home/app\nok\n");
            }
        }
    }
}
