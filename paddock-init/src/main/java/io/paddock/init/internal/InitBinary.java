package io.paddock.init.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
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
 * The native init binary, shipped as the classpath resource {@value #RESOURCE} (built by make) with its
 * sha256 beside it. {@link #extractTo} writes it once per content under a name carrying the hash, so
 * several daemons and versions can share one directory.
 */
public final class InitBinary {
    public static final String RESOURCE = "/io/paddock/init/paddock-init";

    private final byte[] binary;
    private final String sha256;

    private InitBinary(byte[] binary, String sha256) {
        this.binary = binary;
        this.sha256 = sha256;
    }

    /** Loads the binary from the classpath and checks it against its recorded sha256. */
    public static InitBinary load() {
        byte[] bin = resource(RESOURCE);
        String recorded = new String(resource(RESOURCE + ".sha256"), StandardCharsets.US_ASCII).trim();
        String actual = sha256Hex(bin);
        if (!actual.equals(recorded)) {
            throw new IllegalStateException("paddock-init resource is corrupt: sha256 " + actual
                    + " but " + recorded + " recorded");
        }
        return new InitBinary(bin, actual);
    }

    private static byte[] resource(String name) {
        try (InputStream in = InitBinary.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("classpath resource " + name + " is missing (was make run?)");
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + name, e);
        }
    }

    static String sha256Hex(byte[] b) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    public String sha256() {
        return sha256;
    }

    public int size() {
        return binary.length;
    }

    /**
     * Writes the binary as {@code dir/paddock-init-<first 12 hex of sha256>} (mode 0755) unless an intact
     * copy is already there; atomic (temp file + rename), so a concurrent reader never sees half a binary.
     */
    public Path extractTo(Path dir) {
        Path target = dir.resolve("paddock-init-" + sha256.substring(0, 12));
        try {
            Files.createDirectories(dir);
            if (Files.isRegularFile(target) && Files.size(target) == binary.length
                    && sha256Hex(Files.readAllBytes(target)).equals(sha256)) {
                return target;
            }
            Path tmp = Files.createTempFile(dir, ".paddock-init-", ".tmp");
            try {
                Files.write(tmp, binary);
                Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rwxr-xr-x"));
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
            throw new UncheckedIOException("extracting paddock-init to " + dir, e);
        }
    }
}
