package io.paddock.runtime.internal.bundle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** A fork's config.json: the id in host paths and the uid ranges move; what the sandbox sees does not. */
class ForkSpecTest {
    private static final String SOURCE = """
            {"root":{"path":"/run/paddock/roots/sb-aaaaaaaaaaaaaaaaaaaaaaaaaa","readonly":true},
             "mounts":[{"destination":"/tmp","type":"tmpfs","source":"tmpfs"},
                       {"destination":"/etc/resolv.conf","type":"bind","source":"/run/paddock/resolv/sb-aaaaaaaaaaaaaaaaaaaaaaaaaa"}],
             "process":{"args":["/.paddock/init","--uid=1000"]},
             "linux":{"cgroupsPath":"/paddock/sb-aaaaaaaaaaaaaaaaaaaaaaaaaa",
                      "uidMappings":[{"containerID":0,"hostID":1073807360,"size":65536}],
                      "gidMappings":[{"containerID":0,"hostID":1073807360,"size":65536},{"containerID":70000,"hostID":5,"size":1}]}}
            """;

    @Test
    void movesTheIdAndTheUidRangeOnly() throws Exception {
        JsonNode fork = new ObjectMapper().readTree(ForkSpec.retarget(SOURCE, "sb-aaaaaaaaaaaaaaaaaaaaaaaaaa",
                "sb-bbbbbbbbbbbbbbbbbbbbbbbbbb", 1073807360L, 1074003968L));
        assertThat(fork.at("/root/path").asText()).isEqualTo("/run/paddock/roots/sb-bbbbbbbbbbbbbbbbbbbbbbbbbb");
        assertThat(fork.at("/linux/cgroupsPath").asText()).isEqualTo("/paddock/sb-bbbbbbbbbbbbbbbbbbbbbbbbbb");
        assertThat(fork.at("/mounts/1/source").asText()).endsWith("sb-bbbbbbbbbbbbbbbbbbbbbbbbbb");
        assertThat(fork.at("/mounts/1/destination").asText()).isEqualTo("/etc/resolv.conf");
        assertThat(fork.at("/linux/uidMappings/0/hostID").asLong()).isEqualTo(1074003968L);
        assertThat(fork.at("/linux/gidMappings/0/hostID").asLong()).isEqualTo(1074003968L);
        assertThat(fork.at("/linux/gidMappings/1/hostID").asLong()).as("outside the source's range: kept").isEqualTo(5);
        assertThat(fork.at("/process/args/1").asText()).isEqualTo("--uid=1000");
        assertThat(fork.toString()).doesNotContain("sb-aaaaaaaaaaaaaaaaaaaaaaaaaa");
    }
}
