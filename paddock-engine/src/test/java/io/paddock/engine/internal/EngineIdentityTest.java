package io.paddock.engine.internal;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/** When a sandbox's owner counts as gone: what the reconciler may reclaim of another engine's. */
class EngineIdentityTest {
    /** A pid that no process has: the pid limit is above it on no Linux. */
    private static final String DEAD_PROCESS = "4194305.123";

    @TempDir
    Path state;
    @TempDir
    Path data;

    @Test
    void aDaemonIsGoneOnlyWhenItsProcessAndItsDataDirectorysIdentityBothAre() throws Exception {
        EngineIdentity daemon = EngineIdentity.persistent(data, state);
        String token = daemon.token();
        Path record = EngineIdentity.ownerRecord(token, state).orElseThrow();
        assertThat(Files.readString(record)).contains("dataDir " + data.toAbsolutePath().normalize());
        assertThat(EngineIdentity.isAlive(token, state)).as("open in this JVM").isTrue();

        daemon.retire();
        assertThat(EngineIdentity.isAlive(token, state)).as("closed, its data directory holds its identity").isTrue();
        Files.writeString(record, "dataDir " + data + "\nprocess " + DEAD_PROCESS + "\n");
        assertThat(EngineIdentity.isAlive(token, state)).as("process gone, data directory in place").isTrue();

        Files.writeString(data.resolve("engine-id"), "daemon:" + "ab".repeat(16) + "\n");
        assertThat(EngineIdentity.isAlive(token, state)).as("its data directory made anew by another daemon").isFalse();
        Files.delete(data.resolve("engine-id"));
        assertThat(EngineIdentity.isAlive(token, state)).as("its data directory removed").isFalse();

        long self = ProcessHandle.current().pid();
        Files.writeString(record, "dataDir " + data + "\nprocess 1." + EngineIdentity.startTime(1) + "\n");
        assertThat(EngineIdentity.isAlive(token, state)).as("its process (pid 1 here) still runs").isTrue();
        assertThat(self).isNotEqualTo(1);
    }

    @Test
    void daemonsWithoutAnOwnerRecordOrWithAnUnreadableOneCountAsAlive() throws Exception {
        assertThat(EngineIdentity.isAlive("daemon:" + "cd".repeat(16), state)).as("no record: from before records").isTrue();
        assertThat(EngineIdentity.isAlive("daemon:not-hex", state)).isTrue();
        Path record = EngineIdentity.ownerRecord("daemon:" + "ef".repeat(16), state).orElseThrow();
        Files.createDirectories(record.getParent());
        Files.writeString(record, "garbage\n");
        assertThat(EngineIdentity.isAlive("daemon:" + "ef".repeat(16), state)).isTrue();
    }

    @Test
    void anEmbeddedEngineIsGoneWithItsProcessOrWhenClosed() {
        EngineIdentity embedded = EngineIdentity.create();
        assertThat(EngineIdentity.isAlive(embedded.token(), state)).isTrue();
        embedded.retire();
        assertThat(EngineIdentity.isAlive(embedded.token(), state)).isFalse();
        assertThat(EngineIdentity.isAlive(DEAD_PROCESS + ".00112233aabbccdd", state)).isFalse();
        assertThat(EngineIdentity.isAlive("", state)).as("unknown").isTrue();
    }

    @Test
    void onlyTheRecordsOfDaemonsGoneForGoodThatNoSandboxNamesAreCollected() throws Exception {
        EngineIdentity gone = EngineIdentity.persistent(data, state);
        gone.retire();
        Files.delete(data.resolve("engine-id"));
        Path goneRecord = EngineIdentity.ownerRecord(gone.token(), state).orElseThrow();
        Path other = Files.createTempDirectory(data.getParent(), "other-daemon");
        try {
            EngineIdentity live = EngineIdentity.persistent(other, state);
            Path liveRecord = EngineIdentity.ownerRecord(live.token(), state).orElseThrow();

            EngineIdentity.collectOwnerRecords(state, Set.of(gone.token()));
            assertThat(goneRecord).as("still named by a sandbox").exists();
            EngineIdentity.collectOwnerRecords(state, Set.of());
            assertThat(goneRecord).as("gone, named by none").doesNotExist();
            assertThat(liveRecord).as("alive").exists();
            live.retire();
        } finally {
            io.paddock.image.internal.store.ImageStore.deleteTree(other);
        }
    }
}
