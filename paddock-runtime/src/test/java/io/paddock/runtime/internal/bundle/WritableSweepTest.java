package io.paddock.runtime.internal.bundle;

import io.paddock.SandboxId;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The writable-layer sweep's decision (issue 37, defect 1): the storage directory is shared by engines with state
 * directories of their own, so a layer is an orphan only when the engine that made it has no bundle of it.
 */
class WritableSweepTest {
    @Test
    void aLayerIsAnOrphanOnlyWhenItsOwnersStateDirectoryHasNoBundleOfIt(@TempDir Path tmp) throws Exception {
        SandboxId id = new SandboxId("sb-abcdefghijklmnopqrstuvwxyz");
        Path owner = tmp.resolve("a");
        Path other = tmp.resolve("b");
        Files.createDirectories(owner.resolve("sandboxes").resolve(id.value()));
        Files.createDirectories(other.resolve("sandboxes"));
        assertThat(OciHost.orphaned(owner, id)).as("its owner's bundle is there").isFalse();
        assertThat(OciHost.orphaned(other, id)).as("another engine's state directory never names it").isTrue();
        Files.delete(owner.resolve("sandboxes").resolve(id.value()));
        Files.createDirectories(owner.resolve("sandboxes").resolve("." + id.value() + "@owner"));
        assertThat(OciHost.orphaned(owner, id)).as("a staged bundle").isFalse();
        assertThat(OciHost.orphaned(tmp.resolve("gone"), id)).as("the owner's state directory is gone").isTrue();
    }
}
