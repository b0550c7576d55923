package io.paddock.runtime;

import io.paddock.SandboxId;
import io.paddock.SandboxSpec;

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
 * @param network  the network namespace to run in; empty for one of the sandbox's own with only loopback
 */
public record StartRequest(SandboxId id, SandboxSpec spec, String owner, byte[] preamble, Optional<ImageRootfs> image,
                           Optional<NetworkNamespace> network) {
    public StartRequest {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(spec, "spec");
        Objects.requireNonNull(owner, "owner");
        Objects.requireNonNull(image, "image");
        Objects.requireNonNull(network, "network");
        preamble = preamble.clone();
    }

    /** A sandbox of the {@code host} image. */
    public StartRequest(SandboxId id, SandboxSpec spec, String owner, byte[] preamble) {
        this(id, spec, owner, preamble, Optional.empty(), Optional.empty());
    }

    /** A sandbox of an image (or the host image, when empty), without a network. */
    public StartRequest(SandboxId id, SandboxSpec spec, String owner, byte[] preamble, Optional<ImageRootfs> image) {
        this(id, spec, owner, preamble, image, Optional.empty());
    }

    @Override
    public byte[] preamble() {
        return preamble.clone();
    }
}
