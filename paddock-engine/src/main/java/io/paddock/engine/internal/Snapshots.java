package io.paddock.engine.internal;

import io.paddock.ErrorCode;
import io.paddock.ImageInfo;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import io.paddock.image.internal.ImageService;
import io.paddock.image.internal.oci.Digest;
import io.paddock.image.internal.oci.ImageConfig;
import io.paddock.runtime.SandboxRuntime;

import java.util.ArrayList;
import java.util.List;

/**
 * Snapshots ({@code Sandbox.snapshot}): a running sandbox's writable layer, less Paddock's own files, becomes a
 * layer on top of its image's layers, with its image's configuration: a new image named by the caller. A
 * {@code host} sandbox's snapshot is based on the host image ({@link ImageConfig#BASE_LABEL}): its sandboxes get
 * the host root and {@code /usr} again, with the layer on top, as the same user. The sandbox's processes are
 * frozen (its cgroups, on every tier) while the layer is copied, so the copy is one moment of the sandbox.
 */
final class Snapshots {
    private Snapshots() {
    }

    static ImageInfo take(SandboxManager manager, ManagedSandbox sb, String tag) {
        return take(manager, sb, tag, io.paddock.image.internal.ImageCharge.NONE);
    }

    /** {@link #take(SandboxManager, ManagedSandbox, String)}, the new layer charged to {@code charge}'s owner. */
    static ImageInfo take(SandboxManager manager, ManagedSandbox sb, String tag, io.paddock.image.internal.ImageCharge charge) {
        String name = name(tag);
        sb.client(); // FAILED_PRECONDITION unless it is running
        SandboxRuntime runtime = manager.runtimeFor(sb);
        SandboxRuntime.WritableLayer layer = runtime.writableLayer(sb.id()).orElseThrow(() -> new SandboxException(
                ErrorCode.FAILED_PRECONDITION, "sandbox " + sb.id() + " has no writable layer to snapshot"));
        ImageService images = manager.images();
        SandboxRoot root = sb.root();
        ImageConfig base;
        if (root.imageId().isPresent()) {
            base = images.store().get(Digest.parse(root.imageId().get())).orElseThrow(() -> new SandboxException(
                    ErrorCode.FAILED_PRECONDITION, "the image sandbox " + sb.id() + " was made from ("
                    + root.imageId().get() + ") is gone; its snapshot would have no base")).config();
        } else {
            List<String> env = new ArrayList<>();
            root.env().forEach((k, v) -> env.add(k + "=" + v));
            base = ImageService.hostBase(env, root.uid(), root.gid(), root.workdir());
        }
        Digest committed;
        try (AutoCloseable frozen = runtime.freeze(sb.id())) {
            sb.client(); // it may have stopped meanwhile: its layer is then gone or going
            committed = images.commitUpper(layer.upper(), layer.uidBase(), layer.paddockFiles(), charge);
        } catch (SandboxException e) {
            throw e;
        } catch (Exception e) {
            throw new SandboxException(ErrorCode.INTERNAL, "thawing sandbox " + sb.id() + " failed: " + e, e);
        }
        return images.info(images.snapshot(base, committed, name));
    }

    /** The image name a tag gives ({@code app:1}, {@code team/app} → {@code team/app:latest}); never {@code host}. */
    static String name(String tag) {
        if (tag == null || tag.isBlank()) {
            throw SandboxException.invalid("tag", "name the snapshot's image, e.g. my-env:1");
        }
        if (tag.contains("@") || tag.startsWith("sha256:")) {
            throw SandboxException.invalid("tag", "'" + tag + "' is a digest; a snapshot is named NAME[:TAG]");
        }
        String name;
        try {
            name = ImageService.canonicalName(tag); // as builds name their tags
        } catch (SandboxException e) {
            throw SandboxException.invalid("tag", e.getMessage());
        }
        if (name.equals(SandboxSpec.DEFAULT_IMAGE) || name.startsWith(SandboxSpec.DEFAULT_IMAGE + ":")) {
            throw SandboxException.invalid("tag", "'" + SandboxSpec.DEFAULT_IMAGE + "' is the host image's name");
        }
        return name;
    }
}
