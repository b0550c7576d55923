package io.paddock.runtime.internal.runsc;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.paddock.runtime.internal.oci.OciSpec;
import io.paddock.runtime.internal.oci.OciSpec.Mount;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** The gVisor mount hints that let the Sentry cache the image's read-only bind mounts, and only those. */
class RunscMountHintsTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void onlyReadOnlyBindMountsAreHintedOncePerSource() {
        Map<String, String> hints = RunscRuntime.cachedMountHints(List.of(
                new Mount("/usr", "bind", "/usr", List.of("rbind", "ro", "nosuid", "nodev")),
                new Mount("/.paddock/init", "bind", "/var/lib/paddock/bin/paddock-init", List.of("bind", "ro")),
                new Mount("/data", "bind", "/srv/volume", List.of("rbind", "rw")),
                new Mount("/tmp", "tmpfs", "tmpfs", List.of("nosuid")),
                new Mount("/usr2", "bind", "/usr", List.of("rbind", "ro"))));
        assertThat(hints).containsExactlyInAnyOrderEntriesOf(Map.of(
                "dev.gvisor.spec.mount.paddock-image-0.source", "/usr",
                "dev.gvisor.spec.mount.paddock-image-0.type", "bind",
                "dev.gvisor.spec.mount.paddock-image-0.share", "container",
                "dev.gvisor.spec.mount.paddock-image-1.source", "/var/lib/paddock/bin/paddock-init",
                "dev.gvisor.spec.mount.paddock-image-1.type", "bind",
                "dev.gvisor.spec.mount.paddock-image-1.share", "container"));
        // runsc splits the key at dots: a hint's name must hold none.
        hints.keySet().forEach(k -> assertThat(k.substring(RunscRuntime.MOUNT_HINT.length()).split("\\.")).hasSize(2));
    }

    @Test
    void annotationsAreWrittenOnlyWhenThereAreSome() throws Exception {
        OciSpec spec = new OciSpec("1.0.2", null, new OciSpec.Root("/r", true), "sandbox", List.of(), null);
        assertThat(JSON.readTree(JSON.writeValueAsBytes(spec)).has("annotations")).isFalse();
        assertThat(JSON.readTree(JSON.writeValueAsBytes(spec.withAnnotations(Map.of()))).has("annotations")).isFalse();
        JsonNode with = JSON.readTree(JSON.writeValueAsBytes(spec.withAnnotations(Map.of("b", "2", "a", "1"))));
        assertThat(with.path("annotations").path("a").asText()).isEqualTo("1");
        assertThat(with.path("annotations").fieldNames()).toIterable().containsExactly("a", "b");
    }
}
