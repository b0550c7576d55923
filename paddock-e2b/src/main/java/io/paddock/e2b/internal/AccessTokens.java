package io.paddock.e2b.internal;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Base64;

/**
 * Per-sandbox access tokens: what E2B calls {@code envdAccessToken} (and {@code trafficAccessToken}), given
 * out at create and connect to whoever may use the sandbox, and required on every in-sandbox call
 * ({@code X-Access-Token} or {@code E2B-Traffic-Access-Token}). A token is {@code HMAC-SHA256(key, "envd:" +
 * id)}, so the daemon stores nothing, tokens survive a restart, and a token opens one sandbox only. Checked
 * in constant time before the sandbox is looked up, so a wrong token says nothing about which ids exist.
 * Thread-safe.
 */
final class AccessTokens {
    private static final String PREFIX = "pdk_";
    private final SecretKeySpec key;

    AccessTokens(byte[] key) {
        this.key = new SecretKeySpec(key.clone(), "HmacSHA256");
    }

    String token(String sandboxId) {
        return PREFIX + Base64.getUrlEncoder().withoutPadding().encodeToString(mac(sandboxId));
    }

    /** Whether {@code presented} is the token of {@code sandboxId}; false for null. */
    boolean verify(String sandboxId, String presented) {
        byte[] expected = token(sandboxId).getBytes(StandardCharsets.US_ASCII);
        byte[] given = presented == null ? new byte[0] : presented.trim().getBytes(StandardCharsets.UTF_8);
        return MessageDigest.isEqual(expected, given);
    }

    private byte[] mac(String sandboxId) {
        try {
            Mac m = Mac.getInstance("HmacSHA256");
            m.init(key);
            return m.doFinal(("envd:" + sandboxId).getBytes(StandardCharsets.UTF_8));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is missing from this JVM", e);
        }
    }
}
