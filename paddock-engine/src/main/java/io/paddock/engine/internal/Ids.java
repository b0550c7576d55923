package io.paddock.engine.internal;

import io.paddock.SandboxId;

import java.security.SecureRandom;

/** Random identifiers. Sandbox ids carry 128 bits from a SecureRandom, so they cannot be guessed. */
final class Ids {
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final char[] BASE32 = "abcdefghijklmnopqrstuvwxyz234567".toCharArray();

    private Ids() {
    }

    static SandboxId newSandboxId() {
        byte[] b = new byte[17];
        RANDOM.nextBytes(b);
        StringBuilder s = new StringBuilder("sb-");
        // 26 characters of 5 bits = 130 bits from 17 random bytes.
        long acc = 0;
        int bits = 0;
        int i = 0;
        while (s.length() < 3 + 26) {
            if (bits < 5) {
                acc = (acc << 8) | (b[i++] & 0xff);
                bits += 8;
            }
            s.append(BASE32[(int) ((acc >> (bits - 5)) & 31)]);
            bits -= 5;
        }
        return new SandboxId(s.toString());
    }

    static byte[] nonce() {
        byte[] n = new byte[16];
        RANDOM.nextBytes(n);
        return n;
    }
}
