package io.paddock.image.internal.store;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.image.internal.oci.Digest;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * Content-addressed blobs (compressed layers, configs, manifests) under {@code <root>/sha256/<hex>}, as an
 * OCI image layout keeps them. A blob is written to a temporary file beside its final place, its digest
 * verified while it streams, and renamed into place only when complete and correct: a reader never sees a
 * partial or wrong blob, and a crash leaves only a {@code .tmp-*} file that {@link #removeTemporaries()}
 * deletes. Safe for concurrent writers of the same blob.
 */
public final class BlobStore {
    private final Path dir;

    public BlobStore(Path root) {
        this.dir = root.resolve(Digest.ALGORITHM);
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot create the blob store " + dir + ": " + e, e);
        }
    }

    public Path path(Digest digest) {
        return dir.resolve(digest.hex());
    }

    public boolean has(Digest digest) {
        return Files.isRegularFile(path(digest));
    }

    public long size(Digest digest) {
        try {
            return Files.size(path(digest));
        } catch (IOException e) {
            throw notFound(digest);
        }
    }

    public InputStream open(Digest digest) {
        try {
            return Files.newInputStream(path(digest));
        } catch (NoSuchFileException e) {
            throw notFound(digest);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot read blob " + digest + ": " + e, e);
        }
    }

    public byte[] read(Digest digest, long maxBytes) {
        try (InputStream in = open(digest)) {
            byte[] b = in.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, maxBytes + 1));
            if (b.length > maxBytes) {
                throw new SandboxException(ErrorCode.INVALID_ARGUMENT, "blob " + digest + " is larger than " + maxBytes + " bytes");
            }
            return b;
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot read blob " + digest + ": " + e, e);
        }
    }

    public Digest put(byte[] content) {
        Digest d = Digest.of(content);
        if (!has(d)) {
            try (InputStream in = new java.io.ByteArrayInputStream(content)) {
                put(in, content.length, d);
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }
        return d;
    }

    /**
     * Streams {@code in} into the store, at most {@code maxBytes} bytes. When {@code expected} is given the
     * content must hash to it (else INVALID_ARGUMENT: "digest mismatch", nothing is kept).
     *
     * @return the content's digest
     */
    public Digest put(InputStream in, long maxBytes, Digest expected) {
        Path tmp = null;
        try {
            tmp = Files.createTempFile(dir, ".tmp-", "");
            MessageDigest md = Digest.sha256();
            long n;
            try (OutputStream out = new DigestOutputStream(Files.newOutputStream(tmp, StandardOpenOption.WRITE), md)) {
                n = copyAtMost(in, out, maxBytes);
            }
            if (n > maxBytes) {
                throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED,
                        "blob " + (expected == null ? "" : expected + " ") + "is larger than the limit of " + maxBytes + " bytes");
            }
            Digest actual = Digest.of(md);
            if (expected != null && !expected.equals(actual)) {
                throw new SandboxException(ErrorCode.INVALID_ARGUMENT,
                        "digest mismatch: expected " + expected + ", the content is " + actual);
            }
            Path target = path(actual);
            try {
                Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
            } catch (FileAlreadyExistsException | AtomicMoveNotSupportedException e) {
                Files.deleteIfExists(tmp);
            }
            tmp = null;
            return actual;
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot store blob: " + e, e);
        } finally {
            if (tmp != null) {
                try {
                    Files.deleteIfExists(tmp);
                } catch (IOException ignored) {
                    // removeTemporaries() gets it
                }
            }
        }
    }

    /** Copies up to {@code max + 1} bytes, so that the caller can tell "exactly max" from "more". */
    private static long copyAtMost(InputStream in, OutputStream out, long max) throws IOException {
        byte[] buf = new byte[64 * 1024];
        long total = 0;
        int r;
        while ((r = in.read(buf)) > 0) {
            total += r;
            if (total > max) {
                return total;
            }
            out.write(buf, 0, r);
        }
        return total;
    }

    public void delete(Digest digest) {
        try {
            Files.deleteIfExists(path(digest));
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot remove blob " + digest + ": " + e, e);
        }
    }

    public List<Digest> list() {
        List<Digest> out = new ArrayList<>();
        try (Stream<Path> s = Files.list(dir)) {
            s.map(p -> p.getFileName().toString()).filter(n -> n.length() == 64 && !n.startsWith("."))
                    .sorted().forEach(n -> out.add(new Digest(n)));
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot list " + dir + ": " + e, e);
        }
        return out;
    }

    /** Removes what interrupted writes left. */
    public void removeTemporaries() {
        try (Stream<Path> s = Files.list(dir)) {
            for (Path p : s.filter(p -> p.getFileName().toString().startsWith(".tmp-")).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot clean " + dir + ": " + e, e);
        }
    }

    private static SandboxException notFound(Digest digest) {
        return new SandboxException(ErrorCode.NOT_FOUND, "blob " + digest + " is not in the store");
    }
}
