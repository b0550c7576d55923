package io.paddock.internal;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * A native file built by make into the classpath ({@code src/main/c}) with its sha256 beside it
 * ({@code <resource>.sha256}): the init binary, the userns launcher, the gVisor preload library. It is
 * checked against that hash when loaded, and written out to a root-owned directory under a name that
 * carries the hash, so that engines of different builds share one directory and never run each other's
 * copies.
 */
public final class NativeResource {
    private final String name;
    private final byte[] bytes;
    private final String sha256;

    private NativeResource(String name, byte[] bytes, String sha256) {
        this.name = name;
        this.bytes = bytes;
        this.sha256 = sha256;
    }

    /** Loads {@code resource} through {@code owner}'s class loader and checks it against its recorded sha256. */
    public static NativeResource load(Class<?> owner, String resource) {
        byte[] bytes = read(owner, resource);
        String recorded = new String(read(owner, resource + ".sha256"), StandardCharsets.US_ASCII).trim();
        String actual = sha256Hex(bytes);
        if (!actual.equals(recorded)) {
            throw new SandboxException(ErrorCode.INTERNAL, resource + " is corrupt: sha256 " + actual + " but "
                    + recorded + " recorded");
        }
        return new NativeResource(resource, bytes, actual);
    }

    public String sha256() {
        return sha256;
    }

    public int size() {
        return bytes.length;
    }

    /**
     * Writes the file as {@code dir/<prefix><first 12 hex of sha256><suffix>} with {@code permissions} (for
     * example {@code r-xr-xr-x}) unless an intact copy is already there; atomic (temp file + rename), so a
     * concurrent reader never sees half a file. Returns its path.
     */
    public Path extractTo(Path dir, String prefix, String suffix, String permissions) {
        Path target = dir.resolve(prefix + sha256.substring(0, 12) + suffix);
        try {
            Files.createDirectories(dir);
            if (Files.isRegularFile(target) && Files.size(target) == bytes.length
                    && sha256Hex(Files.readAllBytes(target)).equals(sha256)) {
                return target;
            }
            Path tmp = Files.createTempFile(dir, "." + prefix, ".tmp");
            try {
                Files.write(tmp, bytes);
                Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString(permissions));
                try {
                    Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                } catch (AtomicMoveNotSupportedException e) {
                    Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
                }
            } finally {
                Files.deleteIfExists(tmp);
            }
            return target;
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot write " + name + " to " + target + ": " + e, e);
        }
    }

    public static String sha256Hex(byte[] b) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static byte[] read(Class<?> owner, String name) {
        try (InputStream in = owner.getResourceAsStream(name)) {
            if (in == null) {
                throw new SandboxException(ErrorCode.INTERNAL, "classpath resource " + name + " is missing (was make run?)");
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "reading " + name + ": " + e, e);
        }
    }
}
