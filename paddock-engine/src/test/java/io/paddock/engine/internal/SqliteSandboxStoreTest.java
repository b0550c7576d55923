package io.paddock.engine.internal;

import io.paddock.SandboxId;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

class SqliteSandboxStoreTest {
    @TempDir
    Path dataDir;

    @Test
    void deadlinesRoundTripOnBothClocks() {
        SandboxId id = new SandboxId("sb-" + "a".repeat(26));
        Deadlines.Deadline d = Deadlines.after(System.nanoTime(), Duration.ofMinutes(5));
        try (SqliteSandboxStore store = SqliteSandboxStore.open(dataDir)) {
            store.insert(new SandboxStore.Row(id, SandboxSpec.builder().build(), "daemon:x", SandboxState.RUNNING,
                    Optional.empty(), Instant.now(), d, 0, Optional.empty()));
            Deadlines.Deadline later = Deadlines.after(System.nanoTime(), Duration.ofMinutes(9));
            store.updateExpiry(id, later);
            d = later;
        }
        try (SqliteSandboxStore store = SqliteSandboxStore.open(dataDir)) {
            Deadlines.Deadline read = store.loadAll().get(0).deadline();
            assertThat(read.monotonic()).isEqualTo(d.monotonic());
            assertThat(read.boot()).isEqualTo(d.boot());
            assertThat(read.wall().toEpochMilli()).isEqualTo(d.wall().toEpochMilli());
        }
    }

    @Test
    void aVersionOneFileGainsTheMonotonicColumnsAndItsRowsFallBackToTheWallClock() throws Exception {
        Instant expires = Instant.parse("2026-01-01T12:10:00Z");
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + dataDir.resolve("paddock.db"));
             Statement s = c.createStatement()) {
            s.execute("""
                    CREATE TABLE sandboxes (id TEXT PRIMARY KEY, spec TEXT NOT NULL, owner TEXT NOT NULL,
                      state TEXT NOT NULL, stop_reason TEXT, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL,
                      entrypoint_channel INTEGER NOT NULL DEFAULT 0, entrypoint_exit TEXT)""");
            s.execute("INSERT INTO sandboxes VALUES ('sb-" + "b".repeat(26) + "', '{}', 'daemon:x', 'RUNNING', NULL, 0, "
                    + expires.toEpochMilli() + ", 0, NULL)");
            s.execute("PRAGMA user_version=1");
        }
        try (SqliteSandboxStore store = SqliteSandboxStore.open(dataDir)) {
            Deadlines.Deadline d = store.loadAll().get(0).deadline();
            assertThat(d.boot()).isEmpty();
            assertThat(d.wall()).isEqualTo(expires);
            assertThat(Deadlines.remaining(d, expires.minusSeconds(60), 0, Deadlines.BOOT)).isEqualTo(Duration.ofSeconds(60));
        }
    }
}
