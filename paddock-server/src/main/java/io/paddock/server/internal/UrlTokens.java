package io.paddock.server.internal;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.SandboxId;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.Arrays;
import java.util.Base64;
import java.util.Optional;
import java.util.Set;

/**
 * Signed port-URL tokens: a bearer capability for one sandbox port until an instant, which needs no other
 * credential (for a browser). A token is {@code base64url(payload || HMAC-SHA256(key, context || payload))}
 * where the payload is a version byte, the port (2 bytes), the expiry in epoch milliseconds (8 bytes), the
 * id's length (1 byte) and the sandbox id (ASCII). Only a daemon holding the key makes tokens it accepts.
 *
 * <p>The key is 32 random bytes: in {@code <dataDir>/}{@value #KEY_FILE} (mode 0600, created on first use;
 * removing it revokes every URL the daemon gave out), or, for a daemon without a data directory, in memory
 * only (URLs then die with the daemon). Tokens are never logged. Thread-safe.
 */
public final class UrlTokens {
    /** The key's file in the daemon's data directory. */
    public static final String KEY_FILE = "url-signing-key";
    /** The longest a token may live, whatever the sandbox's own deadline. */
    public static final java.time.Duration MAX_LIFETIME = java.time.Duration.ofDays(7);
    private static final int KEY_BYTES = 32;
    private static final int MAC_BYTES = 32;
    private static final byte VERSION = 1;
    /** Longer texts are refused before decoding: a real token has about 96 characters. */
    private static final int MAX_TOKEN_CHARS = 256;
    private static final byte[] CONTEXT = "paddock port url\0".getBytes(StandardCharsets.US_ASCII);

    /** What a verified token grants: {@code port} of sandbox {@code id}, until {@code expiresAt}. */
    public record Claims(SandboxId id, int port, Instant expiresAt) {
        public boolean expired(Instant now) {
            return !now.isBefore(expiresAt);
        }
    }

    private final Path keyFile;
    private volatile byte[] key;

    private UrlTokens(Path keyFile, byte[] key) {
        this.keyFile = keyFile;
        this.key = key;
    }

    /** Tokens signed with a random key held in memory only. */
    public static UrlTokens inMemory() {
        byte[] k = new byte[KEY_BYTES];
        new SecureRandom().nextBytes(k);
        return new UrlTokens(null, k);
    }

    /** Tokens signed with the key of {@code <dataDir>/}{@value #KEY_FILE}, read or created on first use. */
    public static UrlTokens inDirectory(Path dataDir) {
        return new UrlTokens(dataDir.resolve(KEY_FILE), null);
    }

    /** Tokens signed with this key (tests). */
    public static UrlTokens withKey(byte[] key) {
        if (key.length != KEY_BYTES) {
            throw new IllegalArgumentException("a key has " + KEY_BYTES + " bytes");
        }
        return new UrlTokens(null, key.clone());
    }

    /** A token for {@code port} of {@code id} until {@code expiresAt}. */
    public String sign(SandboxId id, int port, Instant expiresAt) {
        byte[] ascii = id.value().getBytes(StandardCharsets.US_ASCII);
        ByteBuffer payload = ByteBuffer.allocate(1 + 2 + 8 + 1 + ascii.length);
        payload.put(VERSION).putShort((short) port).putLong(expiresAt.toEpochMilli()).put((byte) ascii.length).put(ascii);
        byte[] p = payload.array();
        byte[] out = Arrays.copyOf(p, p.length + MAC_BYTES);
        System.arraycopy(mac(p), 0, out, p.length, MAC_BYTES);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(out);
    }

    /**
     * The claims of a token this daemon signed, expired or not (the caller decides; saying "expired" tells
     * nothing to someone without the key); empty for anything else, with no hint of what was wrong. The MAC
     * is checked, in constant time, before anything of the payload is believed.
     */
    public Optional<Claims> verify(String token) {
        if (token == null || token.isEmpty() || token.length() > MAX_TOKEN_CHARS) {
            return Optional.empty();
        }
        byte[] raw;
        try {
            raw = Base64.getUrlDecoder().decode(token);
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
        if (raw.length < 1 + 2 + 8 + 1 + MAC_BYTES) {
            return Optional.empty();
        }
        byte[] payload = Arrays.copyOf(raw, raw.length - MAC_BYTES);
        byte[] presented = Arrays.copyOfRange(raw, raw.length - MAC_BYTES, raw.length);
        if (!MessageDigest.isEqual(mac(payload), presented)) {
            return Optional.empty();
        }
        ByteBuffer b = ByteBuffer.wrap(payload);
        if (b.get() != VERSION) {
            return Optional.empty();
        }
        int port = Short.toUnsignedInt(b.getShort());
        long expires = b.getLong();
        int idLength = Byte.toUnsignedInt(b.get());
        if (idLength != b.remaining()) {
            return Optional.empty();
        }
        String id = new String(payload, b.position(), idLength, StandardCharsets.US_ASCII);
        if (!SandboxId.isValid(id) || port < 1) {
            return Optional.empty();
        }
        return Optional.of(new Claims(new SandboxId(id), port, Instant.ofEpochMilli(expires)));
    }

    private byte[] mac(byte[] payload) {
        try {
            Mac m = Mac.getInstance("HmacSHA256");
            m.init(new SecretKeySpec(key(), "HmacSHA256"));
            m.update(CONTEXT);
            return m.doFinal(payload);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is missing from this JVM", e);
        }
    }

    /**
     * A key for another purpose, derived from this one ({@code HMAC-SHA256(key, purpose)}): the E2B listener's
     * access tokens, so that deleting the key file revokes them too.
     */
    public byte[] derive(String purpose) {
        try {
            Mac m = Mac.getInstance("HmacSHA256");
            m.init(new SecretKeySpec(key(), "HmacSHA256"));
            return m.doFinal(purpose.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        } catch (java.security.GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is missing from this JVM", e);
        }
    }

    private byte[] key() {
        byte[] k = key;
        if (k == null) {
            synchronized (this) {
                k = key;
                if (k == null) {
                    k = loadOrCreate(keyFile);
                    key = k;
                }
            }
        }
        return k;
    }

    /** Reads the key file, or creates it (mode 0600) with a fresh key; refuses a loose or malformed one. */
    static byte[] loadOrCreate(Path file) {
        try {
            if (!Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
                byte[] k = new byte[KEY_BYTES];
                new SecureRandom().nextBytes(k);
                Files.createDirectories(file.getParent());
                try (SeekableByteChannel ch = Files.newByteChannel(file, Set.of(StandardOpenOption.CREATE_NEW,
                        StandardOpenOption.WRITE), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))) {
                    ch.write(ByteBuffer.wrap(k));
                    return k;
                } catch (FileAlreadyExistsException e) {
                    // another daemon on this data directory made it first: use theirs
                }
            }
            if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
                throw new IOException(file + " is not a regular file");
            }
            Set<PosixFilePermission> perms = Files.getPosixFilePermissions(file, LinkOption.NOFOLLOW_LINKS);
            if (perms.contains(PosixFilePermission.GROUP_READ) || perms.contains(PosixFilePermission.OTHERS_READ)
                    || perms.contains(PosixFilePermission.GROUP_WRITE) || perms.contains(PosixFilePermission.OTHERS_WRITE)) {
                throw new IOException(file + " is readable or writable by other users; run chmod 600 " + file);
            }
            byte[] k = Files.readAllBytes(file);
            if (k.length != KEY_BYTES) {
                throw new IOException(file + " holds " + k.length + " bytes, not a " + KEY_BYTES + "-byte key; remove it"
                        + " to have a new one made (URLs given out so far stop working)");
            }
            return k;
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot set up the port-URL signing key: " + e.getMessage(), e);
        }
    }
}
