package io.paddock;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * The images sandboxes are made from, the same embedded ({@link Paddock#local()}) and remote ({@link
 * Paddock#connect}). A reference is a name ({@code debian:bookworm}, {@code myapp:1},
 * {@code registry.example:5000/team/app:2}), an id ({@code sha256:…}) or an id's first 12+ hex digits.
 * {@code debian:<suite>} and {@code debian:<suite>-slim} are built from Debian's packages on first use.
 */
public interface Images {
    /** Pulls an image from an OCI registry and stores it under {@code reference}. */
    ImageInfo pull(String reference, RegistryAuth auth, ImageListener listener);

    /** Pushes the stored image {@code reference} to {@code target} (a reference with a registry). */
    ImageInfo push(String reference, String target, RegistryAuth auth, ImageListener listener);

    /**
     * {@link #pull(String, RegistryAuth, ImageListener)}, with every URL the pull is about to send a request to
     * (the registry, each redirect's target, each token realm) first given to {@code destinations}, which throws a
     * {@link SandboxException} to refuse it, and every connection going through its {@link DestinationRule#proxy()}
     * when it has one. A daemon pulling on a tenant's behalf uses it so that a registry (or a name rebound between
     * the check and the connect) cannot send the host where the tenant may not connect. Only where the pull runs in
     * this process can it be checked so: elsewhere (a remote client, whose daemon applies its own rules) this fails
     * {@code FAILED_PRECONDITION} and nothing is pulled.
     */
    default ImageInfo pull(String reference, RegistryAuth auth, ImageListener listener, DestinationRule destinations) {
        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "this client's pulls run elsewhere, which applies"
                + " its own destination rules; pull without a destination check");
    }

    /** {@link #push(String, String, RegistryAuth, ImageListener)} with every destination checked as for a pull. */
    default ImageInfo push(String reference, String target, RegistryAuth auth, ImageListener listener,
                           DestinationRule destinations) {
        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "this client's pushes run elsewhere, which applies"
                + " its own destination rules; push without a destination check");
    }

    /**
     * Builds from a Dockerfile: {@code dockerfile} relative to {@code context} ({@code Dockerfile} when null),
     * with {@code buildArgs}; RUN steps run in sandboxes of the image being built, each step a cached layer.
     * The result is named {@code tags}.
     */
    ImageInfo build(Path context, String dockerfile, Map<String, String> buildArgs, List<String> tags,
                    ImageListener listener);

    /** Builds an image described in Java ({@link Image}); the same steps and cache as a Dockerfile's. */
    ImageInfo build(Image image, List<String> tags, ImageListener listener);

    /**
     * {@link #build(Path, String, Map, List, ImageListener)} with each step and the whole build bounded by {@code limits}.
     * A daemon building on a tenant's behalf uses it. Only where the build runs in this process can its limits be set
     * so: elsewhere (a remote client, whose daemon applies its own) this fails {@code FAILED_PRECONDITION} and
     * nothing is built.
     */
    default ImageInfo build(Path context, String dockerfile, Map<String, String> buildArgs, List<String> tags,
                            BuildLimits limits, ImageListener listener) {
        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "this client's builds run elsewhere, which applies"
                + " its own limits; build without limits");
    }

    /** {@link #build(Image, List, ImageListener)} under {@code limits}, as the Dockerfile build above. */
    default ImageInfo build(Image image, List<String> tags, BuildLimits limits, ImageListener listener) {
        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "this client's builds run elsewhere, which applies"
                + " its own limits; build without limits");
    }

    /**
     * These images as pulled and built on {@code owner}'s behalf (a daemon's tenant): each layer a pull or build of the
     * view brings into the store (one already stored costs nothing) is recorded as {@code owner}'s, with the store and
     * across restarts, and {@link #ownedBytes} counts it while it is stored. A pull or build of the view is refused
     * before it starts while the owner already holds {@code maxBytes} or more (once its layers no image needs, its
     * build cache, have been deleted to make room); one that takes the owner past it as it
     * runs fails, and what it brought in that no image needs is deleted again; a build's RUN steps get at most what the
     * owner has left as their writable layer's disk. Both fail RESOURCE_EXHAUSTED with a message that starts
     * {@code '<owner>' holds}. {@link #remove} of the view deletes, with the name, the owner's layers that no image
     * needs any more (not only at the next {@link #prune()}). The rest of the view is these images as they are. Only
     * where pulls and builds run in this process can they be charged so: elsewhere this fails
     * {@code FAILED_PRECONDITION}.
     *
     * @param owner    1-64 letters, digits, '.', '_' or '-'
     * @param maxBytes what the owner's layers may hold in all
     */
    default Images chargedTo(String owner, ByteSize maxBytes) {
        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "this client's pulls and builds run elsewhere, which"
                + " applies its own quotas; pull and build without an owner");
    }

    /**
     * What the layers that {@code owner}'s pulls and builds brought in ({@link #chargedTo}) hold in the store now: their
     * unpacked files and their compressed blobs. The build cache is in it (cached steps' layers stay until a prune).
     */
    default ByteSize ownedBytes(String owner) {
        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "this client's images are stored elsewhere");
    }

    /**
     * The owner ({@link #chargedTo}) whose pull or build last wrote the name {@code reference}; empty for a name
     * written uncharged (by the operator, or before owners were recorded), an id, or an unknown name. A daemon lets
     * a tenant remove the names its own pulls wrote, stored under their registry's name.
     */
    default java.util.Optional<String> nameOwner(String reference) {
        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "this client's images are stored elsewhere");
    }

    /**
     * {@code sandbox}'s snapshot ({@link Sandbox#snapshot}) stored in these images: through a view
     * {@link #chargedTo} an owner, its new layer is the owner's, refused RESOURCE_EXHAUSTED as a pull or build is when
     * it would take the owner past its maximum (the image is then not made, and its layer not kept).
     */
    default ImageInfo snapshot(Sandbox sandbox, String tag) {
        return sandbox.snapshot(tag);
    }

    /** Every stored image, by name. */
    List<ImageInfo> list();

    /** One image; NOT_FOUND if there is none. */
    ImageInfo inspect(String reference);

    /**
     * Removes a name, and the image once no name points at it; FAILED_PRECONDITION while a sandbox or a warm
     * pool uses it. Its layers go at the next {@link #prune()}.
     */
    void remove(String reference);

    /** Deletes layers, blobs and build-cache entries no image needs; returns the bytes freed. */
    long prune();
}
