package io.paddock.runtime.internal.host;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;

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
}
