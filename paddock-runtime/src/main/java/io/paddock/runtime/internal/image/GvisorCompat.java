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
 * The runsc tier's preload library ({@code src/main/c/gvisor_compat.c}, built by make into the classpath
 * resource {@value #RESOURCE}): it drops {@code AT_NO_AUTOMOUNT} from {@code statx}/{@code fstatat}, which
 * the gVisor build Debian ships rejects with EINVAL, so that coreutils' {@code ls}, {@code stat},
 * {@code du} and {@code cp} work on that tier.
 */
public final class GvisorCompat {
    public static final String RESOURCE = "/io/paddock/runtime/gvisor-compat.so";

    private GvisorCompat() {
    }

    /** Writes the library as {@code dir/gvisor-compat-<sha12>.so} unless it is already there; returns its path. */
    public static Path extractTo(Path dir) {
        byte[] lib = resource(RESOURCE);
        String recorded = new String(resource(RESOURCE + ".sha256"), StandardCharsets.US_ASCII).trim();
        String actual = sha256(lib);
        if (!actual.equals(recorded)) {
            throw new SandboxException(ErrorCode.INTERNAL, RESOURCE + " is corrupt: sha256 " + actual + " but " + recorded
                    + " recorded");
        }
        Path target = dir.resolve("gvisor-compat-" + actual.substring(0, 12) + ".so");
        try {
            Files.createDirectories(dir);
            if (Files.isRegularFile(target) && sha256(Files.readAllBytes(target)).equals(actual)) {
                return target;
            }
            Path tmp = Files.createTempFile(dir, ".gvisor-compat-", ".tmp");
            try {
                Files.write(tmp, lib);
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
        try (InputStream in = GvisorCompat.class.getResourceAsStream(name)) {
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
