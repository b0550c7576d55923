package io.paddock.runtime.internal.bundle;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The state directory every OCI tier shares: where it may be. */
class OciHostTest {
    @TempDir
    Path dir;

    /** Under a private parent every create failed with runc's "permission denied" while mounting the root. */
    @Test
    void aStateDirectoryUnderAPrivateParentIsRefusedUpFrontSayingWhichAndHow() throws Exception {
        Path parent = Files.createDirectory(dir.resolve("private"), PosixFilePermissions.asFileAttribute(
                PosixFilePermissions.fromString("rwx------")));
        Path state = parent.resolve("state");
        assertThatThrownBy(() -> OciHost.open(state, Path.of("/nonexistent/paddock-init")))
                .isInstanceOf(SandboxException.class)
                .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo(ErrorCode.FAILED_PRECONDITION))
                .hasMessageContaining(parent + " has mode rwx------")
                .hasMessageContaining("chmod o+x " + parent);

        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
        Files.setPosixFilePermissions(parent, PosixFilePermissions.fromString("rwx--x--x"));
        assertThatCode(() -> OciHost.requirePassable(state)).doesNotThrowAnyException();
    }
}
