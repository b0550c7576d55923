package io.paddock.server.internal;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.image.internal.layer.LayerExtractor;
import io.paddock.image.internal.oci.MediaTypes;
import io.paddock.image.internal.store.ImageStore;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * A build context a client sent as an uncompressed tar, unpacked on this host for one build and deleted
 * after it ({@link #close()}). The tar is hostile input; it is unpacked by the image layer's hardened
 * {@link LayerExtractor}, so:
 * <ul>
 *   <li>nothing outside the context directory is created or changed: names are normalised lexically (a
 *       leading {@code /} is dropped, as tar does), a name or hard link that climbs above the root with
 *       {@code ..} refuses the whole context (400), no symlink is ever followed while unpacking (an entry
 *       that would go through one refuses the context), and symlinks are stored as they are;</li>
 *   <li>device nodes and FIFOs are skipped, xattrs are ignored, and whiteout names ({@code .wh.*}) refuse
 *       the context: a context is not a layer;</li>
 *   <li>the work is bounded: the body by the daemon's upload limit (413) and minimum rate (408), as it
 *       streams, and the number of entries.</li>
 * </ul>
 * The directory is {@code <tmp>/paddock-context-<random>/c}, under a parent only root can enter, so the tar
 * cannot open its root to anyone else by listing {@code ./} with a loose mode. What a build then reads from it
 * is the engine's to confine ({@code BuildContext}: sources that lead outside the context through a symlink
 * are refused, symlinks under a copied directory are copied as symlinks); the Dockerfile and
 * {@code .dockerignore}, which the engine reads directly, are checked by {@link ImageApi} before the build.
 *
 * <p>Not thread-safe; one per request.
 */
final class ContextTar implements AutoCloseable {
    /** Entries of one context at most: a large monorepo's worth, well below what would hurt the host. */
    static final long MAX_ENTRIES = 1_000_000;
    private static final LayerExtractor EXTRACTOR = new LayerExtractor(path -> {
        throw new SandboxException(ErrorCode.INVALID_ARGUMENT, "it holds a whiteout ('.wh." + path.getFileName()
                + "'); a build context is files, not a layer");
    });

    private final Path parent;
    private final Path root;

    private ContextTar(Path parent, Path root) {
        this.parent = parent;
        this.root = root;
    }

    /**
     * Unpacks {@code body} (read to its end) into a fresh directory. Errors: 400 for a tar that is corrupt,
     * escapes, or holds whiteouts; 413 and 408 as {@code body} raises them; 429 for too many entries.
     */
    static ContextTar receive(InputStream body, long maxBytes) {
        return receive(body, maxBytes, "the build context");
    }

    /** As {@link #receive(InputStream, long)}, naming the upload {@code what} in errors. */
    static ContextTar receive(InputStream body, long maxBytes, String what) {
        Path parent;
        Path root;
        try {
            parent = Files.createTempDirectory("paddock-context-",
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
            root = Files.createDirectory(parent.resolve("c"));
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot create a directory for the build context: " + e, e);
        }
        ContextTar context = new ContextTar(parent, root);
        Transport source = new Transport(body);
        try {
            // The body is the whole limit; the extractor's own count is a backstop past it, never hit first.
            EXTRACTOR.extract(source, MediaTypes.OCI_LAYER, root, new LayerExtractor.Limits(maxBytes + (1 << 20), MAX_ENTRIES));
            return context;
        } catch (RuntimeException e) {
            context.close();
            if (source.failure != null) {
                throw source.failure; // the body's own limit or deadline (413, 408), not a corrupt tar
            }
            if (e instanceof SandboxException s) {
                throw new SandboxException(s.code(), what + ": " + contextTerms(s.getMessage()), s);
            }
            throw e;
        }
    }

    /** The extractor speaks of layers; a client sent a build context. */
    private static String contextTerms(String message) {
        return message.replace("layer entry", "entry").replace("corrupt layer", "not a valid tar")
                .replace("layer has", "it has");
    }

    /** The unpacked context: a directory only this request uses. */
    Path root() {
        return root;
    }

    /** Whether {@code path} exists, not following a symlink at its last component. */
    static boolean exists(Path path) {
        return Files.exists(path, LinkOption.NOFOLLOW_LINKS);
    }

    /** Deletes everything unpacked (never following a symlink). Idempotent. */
    @Override
    public void close() {
        ImageStore.deleteTree(parent);
    }

    /**
     * The request body as the extractor reads it: an {@link HttpError} it raises (over the limit, too slow) is
     * remembered, so that it is answered as such and not as a corrupt tar.
     */
    private static final class Transport extends FilterInputStream {
        HttpError failure;

        Transport(InputStream in) {
            super(in);
        }

        @Override
        public int read() throws IOException {
            try {
                return super.read();
            } catch (HttpError e) {
                failure = e;
                throw e;
            }
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            try {
                return super.read(b, off, len);
            } catch (HttpError e) {
                failure = e;
                throw e;
            }
        }
    }
}
