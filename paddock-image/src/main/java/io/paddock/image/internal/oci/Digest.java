package io.paddock.image.internal.oci;

import io.paddock.SandboxException;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * A content digest as the OCI specs write it: {@code sha256:<64 lowercase hex>}. Only sha256 is accepted
 * (the only algorithm registries and images use in practice); anything else is refused when parsed, so a
 * digest can always be used as a file name.
 */
public record Digest(String hex) {
    private static final Pattern HEX = Pattern.compile("[0-9a-f]{64}");
    public static final String ALGORITHM = "sha256";

    public Digest {
        Objects.requireNonNull(hex, "hex");
        if (!HEX.matcher(hex).matches()) {
            throw new IllegalArgumentException("not a sha256 hex digest: " + hex);
        }
    }

    /** Parses {@code sha256:<hex>}; INVALID_ARGUMENT naming {@code field} otherwise. */
    public static Digest parse(String s, String field) {
        if (s != null && s.startsWith(ALGORITHM + ":") && HEX.matcher(s.substring(7)).matches()) {
            return new Digest(s.substring(7));
        }
        throw SandboxException.invalid(field, "'" + (s == null ? "" : s.length() > 80 ? s.substring(0, 80) + "…" : s)
                + "' is not a sha256 digest (sha256:<64 hex digits>)");
    }

    public static Digest parse(String s) {
        return parse(s, "digest");
    }

    public static Digest of(byte[] content) {
        return new Digest(HexFormat.of().formatHex(sha256().digest(content)));
    }

    public static Digest of(MessageDigest finished) {
        return new Digest(HexFormat.of().formatHex(finished.digest()));
    }

    public static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The first {@code n} hex digits: short names for directories and listings. */
    public String shortHex(int n) {
        return hex.substring(0, n);
    }

    @Override
    public String toString() {
        return ALGORITHM + ":" + hex;
    }
}
