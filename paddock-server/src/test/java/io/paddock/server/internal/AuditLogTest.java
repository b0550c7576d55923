package io.paddock.server.internal;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.wire.Wire;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The audit log's file: one JSON line per entry, mode 0600, rotated by size and bounded, read back in order. */
class AuditLogTest {
    @TempDir
    Path dir;

    private static com.fasterxml.jackson.databind.node.ObjectNode entry(int n) {
        return Wire.object().put("n", n).put("action", n % 2 == 0 ? "even" : "odd").put("pad", "x".repeat(100));
    }

    @Test
    void rotatesBySizeKeepsNFilesAndReadsTheNewestInOrder() throws Exception {
        try (AuditLog log = AuditLog.open(dir, 4096, 3)) {
            for (int i = 0; i < 500; i++) {
                log.append(entry(i));
            }
            try (Stream<Path> files = Files.list(dir)) {
                assertThat(files.map(p -> p.getFileName().toString()).sorted().toList())
                        .containsExactly("audit.log", "audit.log.1", "audit.log.2", "audit.log.3");
            }
            for (String f : List.of("audit.log", "audit.log.1", "audit.log.2", "audit.log.3")) {
                assertThat(Files.size(dir.resolve(f))).as(f).isLessThanOrEqualTo(4096);
                assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve(f)))).as(f)
                        .isEqualTo("rw-------");
                for (String line : Files.readAllLines(dir.resolve(f))) {
                    assertThat(Wire.parse(line.getBytes(StandardCharsets.UTF_8)).isObject()).isTrue(); // whole lines only
                }
            }
            // the newest entries, oldest first; the oldest were dropped with the oldest file
            List<JsonNode> last = log.read(e -> true, 10);
            assertThat(last).extracting(e -> e.get("n").asInt()).containsExactly(490, 491, 492, 493, 494, 495, 496, 497, 498, 499);
            List<JsonNode> all = log.read(e -> true, 10_000);
            assertThat(all.size()).isLessThan(500).isGreaterThan(3 * 25);
            assertThat(all.get(all.size() - 1).get("n").asInt()).isEqualTo(499);
            for (int i = 1; i < all.size(); i++) {
                assertThat(all.get(i).get("n").asInt()).isEqualTo(all.get(i - 1).get("n").asInt() + 1); // none lost between files
            }
            assertThat(log.read(e -> e.get("action").asText().equals("odd"), 3)).extracting(e -> e.get("n").asInt())
                    .containsExactly(495, 497, 499);
        }
    }

    @Test
    void reopensByAppendingSkipsTornLinesAndRefusesALink() throws Exception {
        try (AuditLog log = AuditLog.open(dir, 1 << 20, 2)) {
            log.append(entry(1));
        }
        Files.writeString(dir.resolve(AuditLog.FILE), "{\"n\": 2, \"torn", java.nio.file.StandardOpenOption.APPEND);
        Files.setPosixFilePermissions(dir.resolve(AuditLog.FILE), PosixFilePermissions.fromString("rw-r--r--"));
        try (AuditLog log = AuditLog.open(dir, 1 << 20, 2)) {
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(log.file()))).isEqualTo("rw-------");
            log.append(entry(3)); // the torn line was ended at open: it alone is lost
            log.append(entry(4));
            assertThat(log.read(e -> true, 100)).extracting(e -> e.get("n").asInt()).containsExactly(1, 3, 4);
        }
        Path other = dir.resolve("elsewhere");
        Files.createDirectories(other);
        Files.createSymbolicLink(other.resolve(AuditLog.FILE), dir.resolve("target"));
        assertThatThrownBy(() -> AuditLog.open(other, 1 << 20, 2)).hasMessageContaining("not a regular file");
        assertThat(dir.resolve("target")).doesNotExist();
        assertThatThrownBy(() -> AuditLog.open(dir, 100, 2)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> AuditLog.open(dir, 1 << 20, 0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void concurrentAppendsAndReadsNeitherLoseNorTearEntries() throws Exception {
        int threads = 4;
        int each = 300;
        try (AuditLog log = AuditLog.open(dir, 64 * 1024, 50)) {
            ExecutorService pool = Executors.newFixedThreadPool(threads + 1);
            CountDownLatch go = new CountDownLatch(1);
            List<java.util.concurrent.Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int base = t * each;
                done.add(pool.submit(() -> {
                    go.await();
                    for (int i = 0; i < each; i++) {
                        log.append(entry(base + i));
                    }
                    return null;
                }));
            }
            done.add(pool.submit(() -> {
                go.await();
                for (int i = 0; i < 20; i++) {
                    List<JsonNode> seen = log.read(e -> true, 100_000);
                    assertThat(seen.stream().map(e -> e.get("n").asInt()).distinct().count()).isEqualTo(seen.size());
                }
                return null;
            }));
            go.countDown();
            for (java.util.concurrent.Future<?> f : done) {
                f.get(60, TimeUnit.SECONDS);
            }
            pool.shutdown();
            assertThat(log.read(e -> true, 100_000)).hasSize(threads * each);
        }
    }
}
