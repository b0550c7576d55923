package io.paddock.runtime.internal.image;

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
 * ({@code <resource>.sha256}), written out to a root-owned directory under a name that carries its hash, so
 * that engines of different builds never run each other's copies.
 */
public final class NativeResource {
    private NativeResource() {
    }

    /**
     * Writes the resource as {@code dir/<prefix><sha12><suffix>} (read and execute only) unless it is already
     * there; returns its path.
     */
    public static Path extractTo(String resource, Path dir, String prefix, String suffix) {
        byte[] bytes = resource(resource);
        String recorded = new String(resource(resource + ".sha256"), StandardCharsets.US_ASCII).trim();
        String actual = sha256(bytes);
        if (!actual.equals(recorded)) {
            throw new SandboxException(ErrorCode.INTERNAL, resource + " is corrupt: sha256 " + actual + " but " + recorded
                    + " recorded");
        }
        Path target = dir.resolve(prefix + actual.substring(0, 12) + suffix);
        try {
            Files.createDirectories(dir);
            if (Files.isRegularFile(target) && sha256(Files.readAllBytes(target)).equals(actual)) {
                return target;
            }
            Path tmp = Files.createTempFile(dir, "." + prefix, ".tmp");
            try {
                Files.write(tmp, bytes);
                Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("r-xr-xr-x"));
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
            throw new SandboxException(ErrorCode.INTERNAL, "cannot write " + target + ": " + e, e);
        }
    }

    private static byte[] resource(String name) {
        try (InputStream in = NativeResource.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new SandboxException(ErrorCode.INTERNAL, "classpath resource " + name + " is missing (was make run?)");
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "reading " + name + ": " + e, e);
        }
    }

    private static String sha256(byte[] b) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
