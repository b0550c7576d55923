package io.paddock.init.internal;

import io.paddock.internal.NativeResource;

import java.nio.file.Path;

/**
 * The native init binary, shipped as the classpath resource {@value #RESOURCE} (built by make) with its
 * sha256 beside it. {@link #extractTo} writes it once per content under a name carrying the hash, so
 * several daemons and versions can share one directory.
 */
public final class InitBinary {
    public static final String RESOURCE = "/io/paddock/init/paddock-init";

    private final NativeResource binary;

    private InitBinary(NativeResource binary) {
        this.binary = binary;
    }

    /** Loads the binary from the classpath and checks it against its recorded sha256. */
    public static InitBinary load() {
        return new InitBinary(NativeResource.load(InitBinary.class, RESOURCE));
    }

    static String sha256Hex(byte[] b) {
        return NativeResource.sha256Hex(b);
    }

    public String sha256() {
        return binary.sha256();
    }

    public int size() {
        return binary.size();
    }

    /**
     * Writes the binary as {@code dir/paddock-init-<first 12 hex of sha256>} (mode 0755) unless an intact
     * copy is already there; atomic (temp file + rename), so a concurrent reader never sees half a binary.
     */
    public Path extractTo(Path dir) {
        return binary.extractTo(dir, "paddock-init-", "", "rwxr-xr-x");
    }
}
