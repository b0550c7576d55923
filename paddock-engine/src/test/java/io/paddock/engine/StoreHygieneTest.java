package io.paddock.engine;

import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the host keeps of sandboxes long gone is collected (issue 36, item 5): the quota groups of deleted
 * writable layers, which the kernel refuses to destroy while it is still cleaning the subvolume up and which
 * would otherwise pile up for the life of the store, are cleared when an engine opens the store.
 */
class StoreHygieneTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    private static String btrfs(String... args) {
        List<String> argv = new java.util.ArrayList<>(List.of("btrfs"));
        argv.addAll(List.of(args));
        io.paddock.runtime.internal.host.HostProcess.Result r =
                io.paddock.runtime.internal.host.HostProcess.run(argv, Duration.ofSeconds(30));
        assertThat(r.ok()).as("btrfs " + String.join(" ", args) + ": " + r.output()).isTrue();
        return r.output();
    }

    /** Makes and destroys an image sandbox; answers its writable layer's subvolume id. */
    private static String makeImageSandbox() throws Exception {
        Path store = LocalOptions.DEFAULT_STORAGE_DIR.resolve("writable");
        try (Paddock paddock = Paddock.local(LocalOptions.builder().build());
             Sandbox sb = paddock.create(SandboxSpec.builder().image(ImageFixtures.BUSYBOX).build())) {
            assertThat(sb.exec("sh", "-c", "echo x > /file").exitCode()).isZero();
            return btrfs("subvolume", "show", store.resolve(sb.id().value()).toString()).lines()
                    .filter(l -> l.strip().startsWith("Subvolume ID:"))
                    .map(l -> l.strip().substring("Subvolume ID:".length()).strip()).findFirst().orElseThrow();
        }
    }

    /**
     * A deleted layer's quota group is gone once the kernel has finished dropping the subvolume: destroyed by the
     * kernel itself (6.x does once its cleaner is done), or by the next engine's {@code btrfs qgroup clear-stale}
     * (older kernels keep it). Measured on the 6.18 kernel here: a burst of deletions left 9 groups {@code <stale>}
     * until {@code btrfs subvolume sync} returned (5 s), then none.
     */
    @Test
    void aDeletedLayersQuotaGroupDoesNotOutliveIt() throws Exception {
        ImageFixtures.busybox();
        Path store = LocalOptions.DEFAULT_STORAGE_DIR.resolve("writable");
        String id = makeImageSandbox();
        btrfs("subvolume", "sync", store.toString(), id);
        makeImageSandbox(); // an engine opens the store again
        assertThat(btrfs("qgroup", "show", "--raw", store.toString())).as("the quota groups once layer " + id + " was dropped")
                .doesNotContain("0/" + id + " ");
    }
}
