package io.paddock;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A stored image: its id, the names that point at it, and how its sandboxes start.
 *
 * @param id           the image id: the digest of its configuration, {@code sha256:<hex>}
 * @param names        the names that point at it ({@code debian:bookworm}, {@code 127.0.0.1:5000/team/app:1})
 * @param size         bytes of its layers as stored (compressed when known, else unpacked)
 * @param layers       how many layers it has
 * @param created      when it was made, if its configuration says
 * @param env          its environment, {@code KEY=VALUE}
 * @param user         the user its processes run as ({@code ""}: root, with no capabilities)
 * @param workdir      its working directory ({@code ""}: none named)
 * @param entrypoint   its entrypoint
 * @param cmd          its command
 * @param labels       its labels
 * @param exposedPorts its exposed ports, for example {@code 8000/tcp} (recorded, not published)
 */
public record ImageInfo(String id, List<String> names, long size, int layers, Optional<Instant> created,
                        List<String> env, String user, String workdir, List<String> entrypoint, List<String> cmd,
                        Map<String, String> labels, List<String> exposedPorts) {
    public ImageInfo {
        Objects.requireNonNull(id, "id");
        names = List.copyOf(names);
        Objects.requireNonNull(created, "created");
        env = List.copyOf(env);
        Objects.requireNonNull(user, "user");
        Objects.requireNonNull(workdir, "workdir");
        entrypoint = List.copyOf(entrypoint);
        cmd = List.copyOf(cmd);
        labels = Map.copyOf(labels);
        exposedPorts = List.copyOf(exposedPorts);
    }

    /** The first 12 hex digits of the id, as listings show it. */
    public String shortId() {
        return id.startsWith("sha256:") && id.length() >= 19 ? id.substring(7, 19) : id;
    }
}
