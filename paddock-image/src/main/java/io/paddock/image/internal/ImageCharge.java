package io.paddock.image.internal;

import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.image.internal.oci.Digest;
import io.paddock.image.internal.store.ImageStore;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.LinkedHashSet;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Who one pull or build is for, and how much of the image store that owner may hold ({@code io.paddock.Images
 * #chargedTo}): each layer it brings into the store is charged to the owner ({@link ImageStore#charge}), at its
 * unpacked files' apparent sizes plus its compressed blob, and the operation fails RESOURCE_EXHAUSTED once the
 * owner's layers pass the maximum. It remembers what it brought in, for the caller to {@link ImageService#collect}
 * when it fails. {@link #NONE} charges nobody and limits nothing (the operator's, the CLI's). Used by one operation
 * at a time.
 */
public final class ImageCharge {
    /** Owners' names: what the store records. */
    public static final Pattern OWNER = Pattern.compile("[A-Za-z0-9._-]{1,64}");
    /** No owner: nothing is charged or refused. */
    public static final ImageCharge NONE = new ImageCharge(null, null, null);

    private final ImageStore store;
    private final String owner;
    private final ByteSize max;
    private final Set<Digest> layers = new LinkedHashSet<>();
    private final Set<Digest> blobs = new LinkedHashSet<>();

    private ImageCharge(ImageStore store, String owner, ByteSize max) {
        this.store = store;
        this.owner = owner;
        this.max = max;
    }

    /** A charge to {@code owner}, who may hold {@code max} in {@code store}. */
    public static ImageCharge of(ImageStore store, String owner, ByteSize max) {
        if (owner == null || !OWNER.matcher(owner).matches()) {
            throw SandboxException.invalid("owner", "1-64 letters, digits, '.', '_' or '-' are expected");
        }
        if (max == null) {
            throw SandboxException.invalid("maxBytes", "missing");
        }
        return new ImageCharge(store, owner, max);
    }

    public Optional<String> owner() {
        return Optional.ofNullable(owner);
    }

    /** What the owner may still bring in; unbounded for {@link #NONE}. */
    public long remaining() {
        return owner == null ? Long.MAX_VALUE : Math.max(0, max.bytes() - store.ownedBytes(owner));
    }

    /** Refuses {@code what} (a pull, a build) before it starts when the owner already holds its maximum or more. */
    public void checkBefore(String what) {
        if (owner != null && store.ownedBytes(owner) >= max.bytes()) {
            throw exhausted(what);
        }
    }

    /** Fails when {@code bytes} more (what {@code what} holds, not charged yet) would take the owner past its maximum. */
    void checkAdding(long bytes, String what) {
        long held = owner == null ? 0 : store.ownedBytes(owner);
        if (owner != null && bytes > 0 && held + bytes > max.bytes()) {
            throw exhausted(what + " (" + human(bytes) + ")", held);
        }
    }

    /**
     * Charges the layer {@code diffId}, just stored by this operation, to the owner; then fails when the owner's
     * layers hold more than its maximum. A layer already charged (to anyone) is not charged again.
     */
    void layerStored(Digest diffId, long blobBytes) {
        if (owner == null) {
            return;
        }
        long bytes = blobBytes + treeBytes(store.layerPath(diffId));
        if (store.charge(diffId, owner, bytes)) {
            layers.add(diffId);
        }
        long held = store.ownedBytes(owner);
        if (held > max.bytes()) {
            throw exhausted("a layer of " + human(bytes), held - bytes);
        }
    }

    /** A blob this operation fetched into the store (a pulled layer's, not yet unpacked): deleted if it fails. */
    void blobFetched(Digest digest) {
        if (owner != null) {
            blobs.add(digest);
        }
    }

    /** The layers this operation brought in and charged. */
    public Set<Digest> layers() {
        return Set.copyOf(layers);
    }

    /** The blobs this operation fetched. */
    public Set<Digest> blobs() {
        return Set.copyOf(blobs);
    }

    /** RESOURCE_EXHAUSTED saying {@code what} would pass the owner's maximum; starts {@code '<owner>' holds}. */
    public SandboxException exhausted(String what) {
        return exhausted(what, store.ownedBytes(owner));
    }

    private SandboxException exhausted(String what, long held) {
        return new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "'" + owner + "' holds " + human(held)
                + " in the image store, and " + what + " would pass its maximum of " + max);
    }

    /** Bytes as people read them: {@code 1.5 MiB}, {@code 512 KiB}, {@code 12 bytes}. */
    static String human(long bytes) {
        if (bytes < 1024) {
            return bytes + " bytes";
        }
        String[] units = {"KiB", "MiB", "GiB", "TiB"};
        double v = bytes / 1024.0;
        int u = 0;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return String.format(java.util.Locale.ROOT, v >= 100 ? "%.0f %s" : "%.1f %s", v, units[u]);
    }

    /** The apparent sizes of the regular files under {@code dir}, links not followed. */
    public static long treeBytes(Path dir) {
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            return 0;
        }
        long[] total = {0};
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.forEach(p -> {
                try {
                    BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
                    if (a.isRegularFile()) {
                        total[0] += a.size();
                    }
                } catch (IOException e) {
                    // gone meanwhile (a step's sandbox still writing): not counted
                }
            });
        } catch (IOException | UncheckedIOException e) {
            // counted so far
        }
        return total[0];
    }
}
