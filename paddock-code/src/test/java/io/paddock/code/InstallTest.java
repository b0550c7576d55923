package io.paddock.code;

import io.paddock.ErrorCode;
import io.paddock.ExecRequest;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Offline installs: a wheel built here for pip, a tarball packed in the sandbox for npm, and the failures. */
class InstallTest extends SandboxTestBase {

    @Test
    void aLocalWheelInstallsAndImportsInRunsAndContexts() throws Exception {
        try (Sandbox sb = sandbox(); CodeInterpreter ci = CodeInterpreter.of(sb)) {
            sb.files().write("/workspace/wheels/tinymod-1.0-py3-none-any.whl", wheel("tinymod", "1.0",
                    "VALUE = 42\ndef hello():\n    return 'hello from tinymod'\n"));
            CodeContext early = ci.createContext("python"); // started before the install: sees it too
            assertThat(early.run("import tinymod").error().orElseThrow().name()).isEqualTo("ModuleNotFoundError");

            InstallResult r = ci.install("python", List.of("tinymod"), "/workspace/wheels");
            assertThat(r.manager()).isEqualTo("pip");
            assertThat(r.target()).isEqualTo("/workspace/.paddock/libs/python");
            assertThat(r.log()).contains("Successfully installed tinymod-1.0");

            CodeResult run = ci.run("python", "import tinymod\nprint(tinymod.hello(), tinymod.VALUE)");
            assertThat(run.stdout()).as(run.stderr()).isEqualTo("hello from tinymod 42\n");
            assertThat(early.run("import tinymod; tinymod.VALUE").value().orElseThrow().text()).isEqualTo("42");
            try (CodeContext late = ci.createContext("python")) {
                assertThat(late.run("from tinymod import hello; hello()").value().orElseThrow().text())
                        .isEqualTo("'hello from tinymod'");
            }

            // `libraries` on a run installs first (from the request's source)
            sb.files().write("/workspace/wheels/othermod-2.0-py3-none-any.whl", wheel("othermod", "2.0", "X = 'other'\n"));
            CodeResult withLib = ci.run(CodeRequest.builder().language("python").code("import othermod; print(othermod.X)")
                    .libraries("othermod").packageSource("/workspace/wheels").build());
            assertThat(withLib.stdout()).as(withLib.stderr()).isEqualTo("other\n");
        }
    }

    @Test
    void aLocalNpmTarballInstallsAndIsRequired() {
        try (Sandbox sb = sandbox(); CodeInterpreter ci = CodeInterpreter.of(sb)) {
            sb.files().writeString("/workspace/src/tinypkg/package.json", "{\"name\": \"tinypkg\", \"version\": \"1.2.3\", \"main\": \"index.js\"}");
            sb.files().writeString("/workspace/src/tinypkg/index.js", "module.exports = { greet: (n) => 'hi ' + n };");
            sb.files().mkdir("/workspace/pkgs");
            var pack = sb.exec(ExecRequest.builder().argv("npm", "pack", "--pack-destination", "/workspace/pkgs")
                    .cwd("/workspace/src/tinypkg").env("npm_config_cache", "/tmp/npm-cache").build());
            assertThat(pack.success()).as(pack.stderrText()).isTrue();
            assertThat(sb.files().exists("/workspace/pkgs/tinypkg-1.2.3.tgz")).isTrue();

            InstallResult r = ci.install("javascript", List.of("tinypkg"), "/workspace/pkgs");
            assertThat(r.manager()).isEqualTo("npm");
            CodeResult run = ci.run("javascript", "console.log(require('tinypkg').greet('paddock'))");
            assertThat(run.stdout()).as(run.stderr()).isEqualTo("hi paddock\n");
            try (CodeContext js = ci.createContext("javascript")) {
                assertThat(js.run("require('tinypkg').greet('ctx')").value().orElseThrow().text()).isEqualTo("'hi ctx'");
            }
            // a package directory is a source too
            sb.files().writeString("/workspace/src/dirpkg/package.json", "{\"name\": \"dirpkg\", \"version\": \"0.1.0\"}");
            sb.files().writeString("/workspace/src/dirpkg/index.js", "module.exports = 'from a directory';");
            ci.install("javascript", List.of(), "/workspace/src/dirpkg");
            assertThat(ci.run("javascript", "console.log(require('dirpkg'))").stdout()).isEqualTo("from a directory\n");
        }
    }

    @Test
    void anInstallWithNoReachableSourceFailsClearlyAndTheSandboxStaysUsable() throws Exception {
        try (Sandbox sb = sandbox(); CodeInterpreter ci = CodeInterpreter.of(sb)) {
            assertThatThrownBy(() -> ci.install("python", List.of("numpy")))
                    .isInstanceOf(SandboxException.class)
                    .hasMessageContaining("no package source given for pip").hasMessageContaining("no network")
                    .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.FAILED_PRECONDITION));
            assertThatThrownBy(() -> ci.install("python", List.of("numpy"), "/workspace/nowhere"))
                    .isInstanceOf(SandboxException.class).hasMessageContaining("'/workspace/nowhere' is not reachable");
            sb.files().write("/workspace/wheels/tinymod-1.0-py3-none-any.whl", wheel("tinymod", "1.0", "V = 1\n"));
            assertThatThrownBy(() -> ci.install("python", List.of("numpy"), "/workspace/wheels"))
                    .isInstanceOf(SandboxException.class).hasMessageContaining("pip could not install [numpy]")
                    .hasMessageContaining("No matching distribution found for numpy");
            assertThatThrownBy(() -> ci.install("javascript", List.of("left-pad"), "/workspace/wheels"))
                    .isInstanceOf(SandboxException.class).hasMessageContaining("package 'left-pad' is not in the package source");
            assertThatThrownBy(() -> ci.install("bash", List.of("x"), "/workspace/wheels"))
                    .isInstanceOf(SandboxException.class).hasMessageContaining("has no package manager");
            assertThatThrownBy(() -> ci.install("python", List.of("--index-url=http://evil"), "/workspace/wheels"))
                    .isInstanceOf(SandboxException.class).hasMessageContaining("not a package name");
            assertThatThrownBy(() -> ci.run(CodeRequest.builder().language("python").code("print(1)").libraries("numpy").build()))
                    .isInstanceOf(SandboxException.class).hasMessageContaining("no package source");
            assertThat(ci.run("python", "print('usable')").stdout()).isEqualTo("usable\n");
        }
    }

    /** A minimal pure-Python wheel: the module, METADATA, WHEEL and a RECORD with real hashes. */
    static byte[] wheel(String name, String version, String source) throws IOException {
        Map<String, byte[]> files = new LinkedHashMap<>();
        String info = name + "-" + version + ".dist-info";
        files.put(name + "/__init__.py", source.getBytes(StandardCharsets.UTF_8));
        files.put(info + "/METADATA", ("Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n")
                .getBytes(StandardCharsets.UTF_8));
        files.put(info + "/WHEEL", "Wheel-Version: 1.0\nGenerator: paddock-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
                .getBytes(StandardCharsets.UTF_8));
        StringBuilder record = new StringBuilder();
        for (Map.Entry<String, byte[]> f : files.entrySet()) {
            record.append(f.getKey()).append(",sha256=").append(sha256(f.getValue())).append(',')
                    .append(f.getValue().length).append('\n');
        }
        record.append(info).append("/RECORD,,\n");
        files.put(info + "/RECORD", record.toString().getBytes(StandardCharsets.UTF_8));
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ZipOutputStream zip = new ZipOutputStream(bytes)) {
            for (Map.Entry<String, byte[]> f : files.entrySet()) {
                zip.putNextEntry(new ZipEntry(f.getKey()));
                zip.write(f.getValue());
                zip.closeEntry();
            }
        }
        return bytes.toByteArray();
    }

    private static String sha256(byte[] data) {
        try {
            return Base64.getUrlEncoder().withoutPadding().encodeToString(MessageDigest.getInstance("SHA-256").digest(data));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
