package io.paddock.engine.internal;

import io.paddock.ErrorCode;
import io.paddock.ExitStatus;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.SandboxState;
import io.paddock.StopReason;
import io.paddock.wire.Wire;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * {@link SandboxStore} in one SQLite file ({@code <dataDir>/paddock.db}, mode 0600, write-ahead log).
 * Every change is one statement, committed before the caller goes on, so a crash leaves the file
 * consistent (ATTACKS.md R8). A failing write (disk full, read-only) surfaces as {@code UNAVAILABLE}.
 * One connection, used under this object's lock.
 */
final class SqliteSandboxStore implements SandboxStore {
    /** 2: the monotonic deadline and its boot ({@link Deadlines}); version 1 files gain the columns on open. */
    private static final int SCHEMA = 2;

    private final Connection db;

    private SqliteSandboxStore(Connection db) {
        this.db = db;
    }

    static SqliteSandboxStore open(Path dataDir) {
        try {
            Files.createDirectories(dataDir);
            Files.setPosixFilePermissions(dataDir, PosixFilePermissions.fromString("rwx------"));
            Path file = dataDir.resolve("paddock.db");
            if (!Files.exists(file)) {
                Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            }
            Connection c = DriverManager.getConnection("jdbc:sqlite:" + file);
            try (Statement s = c.createStatement()) {
                s.execute("PRAGMA journal_mode=WAL");
                s.execute("PRAGMA synchronous=NORMAL");
                s.execute("PRAGMA busy_timeout=5000");
                s.execute("""
                        CREATE TABLE IF NOT EXISTS sandboxes (
                          id TEXT PRIMARY KEY,
                          spec TEXT NOT NULL,
                          owner TEXT NOT NULL,
                          state TEXT NOT NULL,
                          stop_reason TEXT,
                          created_at INTEGER NOT NULL,
                          expires_at INTEGER NOT NULL,
                          entrypoint_channel INTEGER NOT NULL DEFAULT 0,
                          entrypoint_exit TEXT,
                          expires_mono INTEGER NOT NULL DEFAULT 0,
                          boot_id TEXT NOT NULL DEFAULT '',
                          image_id TEXT
                        )""");
                if (!columns(c).contains("expires_mono")) {
                    // a version 1 file: its rows keep boot_id '', so their deadlines come from the wall clock
                    s.execute("ALTER TABLE sandboxes ADD COLUMN expires_mono INTEGER NOT NULL DEFAULT 0");
                    s.execute("ALTER TABLE sandboxes ADD COLUMN boot_id TEXT NOT NULL DEFAULT ''");
                }
                if (!columns(c).contains("image_id")) {
                    // a file from before images: its sandboxes are the host image's (no id)
                    s.execute("ALTER TABLE sandboxes ADD COLUMN image_id TEXT");
                }
                s.execute("PRAGMA user_version=" + SCHEMA);
            }
            return new SqliteSandboxStore(c);
        } catch (IOException | SQLException e) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot open the state database in " + dataDir + ": " + e.getMessage(), e);
        }
    }

    @Override
    public synchronized void insert(Row r) {
        update("INSERT INTO sandboxes(id, spec, owner, state, stop_reason, created_at, expires_at, entrypoint_channel,"
                + " entrypoint_exit, expires_mono, boot_id, image_id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", ps -> {
            ps.setString(1, r.id().value());
            ps.setString(2, Wire.JSON.writeValueAsString(Wire.json(r.spec())));
            ps.setString(3, r.owner());
            ps.setString(4, r.state().name());
            setNullable(ps, 5, r.stopReason().map(Enum::name).orElse(null));
            ps.setLong(6, r.createdAt().toEpochMilli());
            ps.setLong(7, r.expiresAt().toEpochMilli());
            ps.setInt(8, r.entrypointChannel());
            setNullable(ps, 9, r.entrypointExit().map(s -> Wire.json(s).toString()).orElse(null));
            ps.setLong(10, r.deadline().monotonic());
            ps.setString(11, r.deadline().boot());
            setNullable(ps, 12, r.imageId().orElse(null));
        });
    }

    @Override
    public synchronized void updateState(SandboxId id, SandboxState state, StopReason reason) {
        update("UPDATE sandboxes SET state = ?, stop_reason = ? WHERE id = ?", ps -> {
            ps.setString(1, state.name());
            setNullable(ps, 2, reason == null ? null : reason.name());
            ps.setString(3, id.value());
        });
    }

    @Override
    public synchronized void updateExpiry(SandboxId id, Deadlines.Deadline deadline) {
        update("UPDATE sandboxes SET expires_at = ?, expires_mono = ?, boot_id = ? WHERE id = ?", ps -> {
            ps.setLong(1, deadline.wall().toEpochMilli());
            ps.setLong(2, deadline.monotonic());
            ps.setString(3, deadline.boot());
            ps.setString(4, id.value());
        });
    }

    @Override
    public synchronized void updateSpec(SandboxId id, io.paddock.SandboxSpec spec) {
        update("UPDATE sandboxes SET spec = ? WHERE id = ?", ps -> {
            ps.setString(1, Wire.JSON.writeValueAsString(Wire.json(spec)));
            ps.setString(2, id.value());
        });
    }

    @Override
    public synchronized void updateEntrypoint(SandboxId id, int channel, ExitStatus exit) {
        update("UPDATE sandboxes SET entrypoint_channel = ?, entrypoint_exit = ? WHERE id = ?", ps -> {
            ps.setInt(1, channel);
            setNullable(ps, 2, exit == null ? null : Wire.json(exit).toString());
            ps.setString(3, id.value());
        });
    }

    @Override
    public synchronized void delete(SandboxId id) {
        update("DELETE FROM sandboxes WHERE id = ?", ps -> ps.setString(1, id.value()));
    }

    @Override
    public synchronized List<Row> loadAll() {
        List<Row> out = new ArrayList<>();
        try (Statement s = db.createStatement();
             ResultSet rs = s.executeQuery("SELECT id, spec, owner, state, stop_reason, created_at, expires_at,"
                     + " entrypoint_channel, entrypoint_exit, expires_mono, boot_id, image_id FROM sandboxes ORDER BY created_at, id")) {
            while (rs.next()) {
                String reason = rs.getString(5);
                String exit = rs.getString(9);
                out.add(new Row(new SandboxId(rs.getString(1)), Wire.spec(Wire.JSON.readTree(rs.getString(2))),
                        rs.getString(3), SandboxState.valueOf(rs.getString(4)),
                        reason == null ? Optional.empty() : Optional.of(StopReason.valueOf(reason)),
                        Instant.ofEpochMilli(rs.getLong(6)),
                        new Deadlines.Deadline(Instant.ofEpochMilli(rs.getLong(7)), rs.getLong(10), rs.getString(11)), rs.getInt(8),
                        exit == null ? Optional.empty() : Optional.of(Wire.exitStatus(Wire.JSON.readTree(exit))),
                        Optional.ofNullable(rs.getString(12))));
            }
        } catch (SQLException | IOException e) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot read the state database: " + e.getMessage(), e);
        }
        return out;
    }

    @Override
    public synchronized void close() {
        try {
            db.close();
        } catch (SQLException e) {
            // closing anyway
        }
    }

    private interface Binder {
        void bind(PreparedStatement ps) throws SQLException, IOException;
    }

    private void update(String sql, Binder binder) {
        try (PreparedStatement ps = db.prepareStatement(sql)) {
            binder.bind(ps);
            ps.executeUpdate();
        } catch (SQLException | IOException e) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot record the change in the state database"
                    + " (disk full or read-only?): " + e.getMessage(), e);
        }
    }

    private static java.util.Set<String> columns(Connection c) throws SQLException {
        java.util.Set<String> out = new java.util.HashSet<>();
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("PRAGMA table_info(sandboxes)")) {
            while (rs.next()) {
                out.add(rs.getString("name"));
            }
        }
        return out;
    }

    private static void setNullable(PreparedStatement ps, int i, String v) throws SQLException {
        if (v == null) {
            ps.setNull(i, Types.VARCHAR);
        } else {
            ps.setString(i, v);
        }
    }
}
