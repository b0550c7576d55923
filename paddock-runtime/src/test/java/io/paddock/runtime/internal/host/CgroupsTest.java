package io.paddock.runtime.internal.host;

import io.paddock.ByteSize;
import io.paddock.ResourceUsage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

class CgroupsTest {
    @Test
    void detectsHybridV1() {
        Cgroups c = Cgroups.parse(List.of(
                "30 25 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755",
                "31 30 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw",
                "32 30 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory",
                "33 30 0:29 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids",
                "34 30 0:30 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd"));
        assertThat(c.version()).isEqualTo(Cgroups.Version.V1);
        assertThat(c.memoryDir("/paddock/x")).contains(Path.of("/sys/fs/cgroup/memory/paddock/x"));
        assertThat(c.dirs("/paddock/x")).contains(Path.of("/sys/fs/cgroup/pids/paddock/x"),
                Path.of("/sys/fs/cgroup/systemd/paddock/x"), Path.of("/sys/fs/cgroup/unified/paddock/x"));
    }

    @Test
    void detectsUnifiedV2() {
        Cgroups c = Cgroups.parse(List.of("30 25 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate"));
        assertThat(c.version()).isEqualTo(Cgroups.Version.V2);
        assertThat(c.memoryDir("/paddock/x")).contains(Path.of("/sys/fs/cgroup/paddock/x"));
        assertThat(c.dirs("/paddock/x")).containsExactly(Path.of("/sys/fs/cgroup/paddock/x"));
    }

    @Test
    void readsTheOomKillCountOfV1AndV2(@TempDir Path dir) throws IOException {
        write(dir, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 17\n");
        write(dir, "memory.events", "low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\noom_group_kill 0\n");
        assertThat(Cgroups.oomKillsIn(dir.resolve("memory.oom_control"))).isEqualTo(17);
        assertThat(Cgroups.oomKillsIn(dir.resolve("memory.events"))).isEqualTo(2);
        assertThat(Cgroups.oomKillsIn(dir.resolve("gone"))).as("a removed cgroup").isZero();
    }

    @Test
    void readsForksRefusedAtThePidsLimitOnV1AndV2(@TempDir Path root) throws IOException {
        Cgroups v1 = Cgroups.parse(List.of("39 31 0:36 / " + root.resolve("pids") + " rw - cgroup cgroup rw,pids"));
        assertThat(v1.pidsLimitHits("/paddock/x")).as("a removed cgroup").isZero();
        write(root.resolve("pids/paddock/x"), "pids.events", "max 5\n");
        assertThat(v1.pidsLimitHits("/paddock/x")).isEqualTo(5);
        Cgroups v2 = Cgroups.parse(List.of("30 25 0:26 / " + root.resolve("v2") + " rw,nosuid - cgroup2 cgroup2 rw"));
        write(root.resolve("v2/paddock/x"), "pids.events", "max 0\n");
        assertThat(v2.pidsLimitHits("/paddock/x")).isZero();
        write(root.resolve("v2/paddock/x"), "pids.events", "max 12\n");
        assertThat(v2.pidsLimitHits("/paddock/x")).isEqualTo(12);
    }

    /** The attach lock warmer only ever moves this process into the cgroups it is in, and stops once released. */
    @Test
    void warmingTheAttachLockMovesNothingAndStops() throws Exception {
        Cgroups c = Cgroups.detect(); // fails, saying so, on a host without a cgroup filesystem (Paddock needs one)
        String before = Files.readString(Path.of("/proc/self/cgroup"));
        try (Cgroups.Warm a = c.attachLockWarm(); Cgroups.Warm b = c.attachLockWarm()) {
            a.close();
            a.close(); // a handle closes once
            Thread.sleep(30);
            assertThat(c.warming()).as("one handle is still open").isEqualTo(isRoot());
        }
        long until = System.nanoTime() + 2_000_000_000L;
        while (c.warming() && System.nanoTime() < until) {
            Thread.sleep(5);
        }
        assertThat(c.warming()).as("the warmer ends with the last handle").isFalse();
        assertThat(Files.readString(Path.of("/proc/self/cgroup"))).isEqualTo(before);
    }

    private static boolean isRoot() {
        return "root".equals(System.getProperty("user.name"));
    }

    private static void write(Path dir, String file, String content) throws IOException {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve(file), content);
    }

    @Test
    void readsUsageFromV1Controllers(@TempDir Path root) throws IOException {
        Cgroups c = Cgroups.parse(List.of(
                "32 31 0:29 / " + root.resolve("cpu") + " rw - cgroup cgroup rw,cpu",
                "33 31 0:30 / " + root.resolve("cpuacct") + " rw - cgroup cgroup rw,cpuacct",
                "35 31 0:32 / " + root.resolve("memory") + " rw - cgroup cgroup rw,memory",
                "39 31 0:36 / " + root.resolve("pids") + " rw - cgroup cgroup rw,pids"));
        assertThat(c.usage("/paddock/x")).isEmpty(); // gone: no memory cgroup
        write(root.resolve("memory/paddock/x"), "memory.usage_in_bytes", "4096000\n");
        write(root.resolve("memory/paddock/x"), "memory.limit_in_bytes", "134217728\n");
        write(root.resolve("cpuacct/paddock/x"), "cpuacct.usage", "2500000000\n");
        write(root.resolve("pids/paddock/x"), "pids.current", "3\n");
        assertThat(c.usage("/paddock/x")).contains(new ResourceUsage(ByteSize.bytes(4096000), Optional.of(ByteSize.mib(128)),
                Duration.ofMillis(2500), 3));
        write(root.resolve("memory/paddock/x"), "memory.limit_in_bytes", "9223372036854771712\n"); // v1's "unlimited"
        assertThat(c.usage("/paddock/x").orElseThrow().memoryLimit()).isEmpty();
    }

    @Test
    void readsUsageFromV2(@TempDir Path root) throws IOException {
        Cgroups c = Cgroups.parse(List.of("30 25 0:26 / " + root + " rw,nosuid - cgroup2 cgroup2 rw,nsdelegate"));
        assertThat(c.usage("/paddock/x")).isEmpty();
        Path dir = root.resolve("paddock/x");
        write(dir, "memory.current", "8192\n");
        write(dir, "memory.max", "max\n");
        write(dir, "cpu.stat", "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n");
        write(dir, "pids.current", "7\n");
        assertThat(c.usage("/paddock/x")).contains(new ResourceUsage(ByteSize.bytes(8192), Optional.empty(),
                Duration.ofNanos(1_500_000), 7));
    }
}
