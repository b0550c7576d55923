package io.paddock;

import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A snapshot of a sandbox's identity and state.
 *
 * @param id             the sandbox id
 * @param name           its name, unique among live sandboxes
 * @param labels         its labels
 * @param state          its lifecycle state at the time of the snapshot
 * @param stopReason     why it stopped, once it is stopping or stopped
 * @param createdAt      when it was created
 * @param expiresAt      when its lifetime timeout destroys it
 * @param image          its image reference
 * @param runtime        the isolation tier running it, for example {@code runc}
 * @param entrypointExit the entrypoint's exit status, once it has exited
 * @param network        its network policy now (it may have changed since create)
 * @param ports          the ports the daemon proxies to
 * @param traffic        what it sent and received, while it has a network interface
 */
public record SandboxInfo(SandboxId id, Optional<String> name, Map<String, String> labels, SandboxState state,
                          Optional<StopReason> stopReason, Instant createdAt, Instant expiresAt, String image,
                          String runtime, Optional<ExitStatus> entrypointExit, NetworkPolicy network,
                          java.util.List<Integer> ports, Optional<NetworkTraffic> traffic) {
    public SandboxInfo {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(name, "name");
        labels = Map.copyOf(labels);
        Objects.requireNonNull(state, "state");
        Objects.requireNonNull(stopReason, "stopReason");
        Objects.requireNonNull(createdAt, "createdAt");
        Objects.requireNonNull(expiresAt, "expiresAt");
        Objects.requireNonNull(image, "image");
        Objects.requireNonNull(runtime, "runtime");
        Objects.requireNonNull(entrypointExit, "entrypointExit");
        Objects.requireNonNull(network, "network");
        ports = java.util.List.copyOf(ports);
        Objects.requireNonNull(traffic, "traffic");
    }

    /** A sandbox without a network. */
    public SandboxInfo(SandboxId id, Optional<String> name, Map<String, String> labels, SandboxState state,
                       Optional<StopReason> stopReason, Instant createdAt, Instant expiresAt, String image,
                       String runtime, Optional<ExitStatus> entrypointExit) {
        this(id, name, labels, state, stopReason, createdAt, expiresAt, image, runtime, entrypointExit,
                NetworkPolicy.none(), java.util.List.of(), Optional.empty());
    }
}
