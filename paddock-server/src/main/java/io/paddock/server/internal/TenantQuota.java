package io.paddock.server.internal;

import io.paddock.ByteSize;

import java.util.Locale;

/**
 * What one tenant may keep on the host's shared store (ATTACKS.md A83d): at most {@code volumes} volumes reserving
 * {@code volumeBytes} in all, and at most {@code codebases} codebases holding {@code codebaseBytes} in all (each
 * codebase counted at its current revision's size). Set per tenant in the tenants file as {@code key=value} fields
 * after the token ({@link #KEYS}); what a line leaves out is {@link #DEFAULT}. The operator has no quota.
 */
public record TenantQuota(int volumes, ByteSize volumeBytes, int codebases, ByteSize codebaseBytes) {
    /** A tenant's quota when its line sets none: 16 volumes of 64 GiB in all, 16 codebases of 16 GiB in all. */
    public static final TenantQuota DEFAULT = new TenantQuota(16, ByteSize.gib(64), 16, ByteSize.gib(16));
    /** The tenants file's keys, as they are written there. */
    public static final String KEYS = "volumes, volume-bytes, codebases, codebase-bytes";

    public TenantQuota {
        if (volumes < 0 || codebases < 0 || volumeBytes == null || codebaseBytes == null) {
            throw new IllegalArgumentException("a quota is not negative");
        }
    }

    /**
     * This quota with one {@code key=value} field of the tenants file applied.
     *
     * @throws IllegalArgumentException naming the key and the forms it takes
     */
    public TenantQuota with(String field) {
        int eq = field.indexOf('=');
        if (eq <= 0) {
            throw new IllegalArgumentException("expected KEY=VALUE after the token, got '" + Limits.shorten(field)
                    + "' (keys: " + KEYS + ")");
        }
        String key = field.substring(0, eq).toLowerCase(Locale.ROOT);
        String value = field.substring(eq + 1);
        return switch (key) {
            case "volumes" -> new TenantQuota(count(key, value), volumeBytes, codebases, codebaseBytes);
            case "volume-bytes" -> new TenantQuota(volumes, size(key, value), codebases, codebaseBytes);
            case "codebases" -> new TenantQuota(volumes, volumeBytes, count(key, value), codebaseBytes);
            case "codebase-bytes" -> new TenantQuota(volumes, volumeBytes, codebases, size(key, value));
            default -> throw new IllegalArgumentException("unknown key '" + Limits.shorten(key) + "' (keys: " + KEYS + ")");
        };
    }

    private static int count(String key, String value) {
        try {
            int n = Integer.parseInt(value);
            if (n >= 0) {
                return n;
            }
        } catch (NumberFormatException e) {
            // said below
        }
        throw new IllegalArgumentException(key + ": expected a count (0 or more), got '" + Limits.shorten(value) + "'");
    }

    private static ByteSize size(String key, String value) {
        try {
            return ByteSize.parse(value);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(key + ": expected a size such as 64g or 512m, got '"
                    + Limits.shorten(value) + "'");
        }
    }
}
