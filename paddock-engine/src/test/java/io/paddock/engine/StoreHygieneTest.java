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

    private static void makeImageSandbox() {
        try (Paddock paddock = Paddock.local(LocalOptions.builder().build());
             Sandbox sb = paddock.create(SandboxSpec.builder().image(ImageFixtures.BUSYBOX).build())) {
            assertThat(sb.exec("true").exitCode()).isZero();
        }
    }

    @Test
    void staleQuotaGroupsOfDeletedLayersAreClearedWhenAnEngineOpensTheStore() throws Exception {
        ImageFixtures.busybox();
        makeImageSandbox(); // the store is set up
        Path store = LocalOptions.DEFAULT_STORAGE_DIR.resolve("writable");
        // A group with no subvolume, as a layer deleted while the kernel still cleaned it up leaves.
        String stale = "0/" + (4_000_000_000L + ProcessHandle.current().pid() % 100_000);
        btrfs("qgroup", "create", stale, store.toString());
        assertThat(btrfs("qgroup", "show", "--raw", store.toString())).contains(stale);
        makeImageSandbox();
        assertThat(btrfs("qgroup", "show", "--raw", store.toString())).as("the quota groups after an engine opened the store")
                .doesNotContain(stale + " ");
    }
}
