package io.paddock;

import java.time.Instant;
import java.util.List;

/**
 * A volume.
 *
 * @param name      its name
 * @param size      its size limit
 * @param used      what its files take
 * @param created   when it was made
 * @param sandboxes the live sandboxes that mount it
 */
public record VolumeInfo(String name, ByteSize size, long used, Instant created, List<SandboxId> sandboxes) {
    public VolumeInfo {
        sandboxes = List.copyOf(sandboxes);
    }
}
