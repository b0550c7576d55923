package io.paddock.runtime;

import io.paddock.SandboxId;
import io.paddock.SandboxSpec;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * What a runtime needs to start a sandbox.
 *
 * @param id       the sandbox id (also the runtime's container id)
 * @param spec     the sandbox spec
 * @param owner    an opaque token naming the engine that owns the sandbox, stored with it for the reconciler
 * @param preamble bytes written to the init's input before it starts (the protocol's HELLO)
 * @param image    the layers of the sandbox's image; empty for the {@code host} image
 * @param network  what makes the network namespace to run in, called once during the start; empty for one of the
 *                 sandbox's own with only loopback
 * @param mounts   directories the sandbox gets besides its root (codebases, volumes), mounted in this order
 */
public record StartRequest(SandboxId id, SandboxSpec spec, String owner, byte[] preamble, Optional<ImageRootfs> image,
                           Optional<NetworkMaker> network, List<SandboxMount> mounts) {
    public StartRequest {
        mounts = List.copyOf(mounts);
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(spec, "spec");
        Objects.requireNonNull(owner, "owner");
        Objects.requireNonNull(image, "image");
        Objects.requireNonNull(network, "network");
        preamble = preamble.clone();
    }

    /** A sandbox of the {@code host} image. */
    public StartRequest(SandboxId id, SandboxSpec spec, String owner, byte[] preamble) {
        this(id, spec, owner, preamble, Optional.empty(), Optional.empty(), List.of());
    }

    /** A sandbox of an image (or the host image, when empty), without a network. */
    public StartRequest(SandboxId id, SandboxSpec spec, String owner, byte[] preamble, Optional<ImageRootfs> image) {
        this(id, spec, owner, preamble, image, Optional.empty(), List.of());
    }

    /** The same request in the network namespace {@code maker} makes. */
    public StartRequest inNetwork(NetworkMaker maker) {
        return new StartRequest(id, spec, owner, preamble, image, Optional.of(maker), mounts);
    }

    @Override
    public byte[] preamble() {
        return preamble.clone();
    }
}
