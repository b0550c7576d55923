package io.paddock.server.internal;

import io.paddock.BuildLimits;
import io.paddock.ByteSize;

import java.time.Duration;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What one tenant may keep on the host's shared store and use of its shared CPUs (ATTACKS.md A83d, A83f-h): at most
 * {@code volumes} volumes reserving {@code volumeBytes} in all, at most {@code codebases} codebases holding
 * {@code codebaseBytes} in all (each codebase counted at its current revision's size), live sandboxes whose specs
 * reserve at most {@code sandboxDisk} of disk in all, at most {@code builds} image builds at once, each running at
 * most {@code buildTime} with {@code buildCpus} CPUs and {@code buildMemory} per step, and image layers (pulled,
 * built, cached) holding at most {@code imageBytes} in the image store ({@code io.paddock.Images#chargedTo}). Set per tenant in the tenants
 * file as {@code key=value} fields after the token ({@link #KEYS}); what a line leaves out is {@link #DEFAULT}. The
 * operator has no quota.
 */
public record TenantQuota(int volumes, ByteSize volumeBytes, int codebases, ByteSize codebaseBytes, ByteSize sandboxDisk,
                          int builds, Duration buildTime, double buildCpus, ByteSize buildMemory, ByteSize imageBytes) {
    /**
     * A tenant's quota when its line sets none: 16 volumes of 64 GiB in all, 16 codebases of 16 GiB in all, 64 GiB of
     * sandbox disk (64 sandboxes of the default 1 GiB, a quarter of the default 256 sandboxes' worst case), 2 builds
     * at once of at most an hour each (what one build step could take before), with 2 CPUs and 2 GiB per step (one
     * tenant's build no longer takes every CPU of the host), and 32 GiB of image layers (two build steps' full disk).
     */
    public static final TenantQuota DEFAULT = new TenantQuota(16, ByteSize.gib(64), 16, ByteSize.gib(16), ByteSize.gib(64),
            2, Duration.ofHours(1), 2, ByteSize.gib(2), ByteSize.gib(32));
    /** The tenants file's keys, as they are written there. */
    public static final String KEYS = "volumes, volume-bytes, codebases, codebase-bytes, sandbox-disk, builds, build-time,"
            + " build-cpus, build-memory, image-bytes";
    private static final Pattern DURATION = Pattern.compile("([1-9][0-9]{0,6})([smh])");

    public TenantQuota {
        if (volumes < 0 || codebases < 0 || builds < 0 || volumeBytes == null || codebaseBytes == null
                || sandboxDisk == null || buildTime == null || buildMemory == null || imageBytes == null) {
            throw new IllegalArgumentException("a quota is not negative");
        }
        buildLimits(buildCpus, buildMemory, buildTime); // IllegalArgumentException naming what is wrong
    }

    /** The store quotas with the defaults of the rest. */
    public TenantQuota(int volumes, ByteSize volumeBytes, int codebases, ByteSize codebaseBytes) {
        this(volumes, volumeBytes, codebases, codebaseBytes, DEFAULT.sandboxDisk, DEFAULT.builds, DEFAULT.buildTime,
                DEFAULT.buildCpus, DEFAULT.buildMemory, DEFAULT.imageBytes);
    }

    /** What each of the tenant's builds runs under. */
    public BuildLimits buildLimits() {
        return new BuildLimits(Optional.of(buildCpus), buildMemory, buildTime);
    }

    /** This quota with the sandbox-disk and build fields replaced. */
    public TenantQuota withSandboxesAndBuilds(ByteSize sandboxDisk, int builds, Duration buildTime, double buildCpus,
                                              ByteSize buildMemory) {
        return new TenantQuota(volumes, volumeBytes, codebases, codebaseBytes, sandboxDisk, builds, buildTime, buildCpus,
                buildMemory, imageBytes);
    }

    /** This quota with {@code image-bytes} replaced. */
    public TenantQuota withImageBytes(ByteSize imageBytes) {
        return new TenantQuota(volumes, volumeBytes, codebases, codebaseBytes, sandboxDisk, builds, buildTime, buildCpus,
                buildMemory, imageBytes);
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
        TenantQuota q = this;
        return switch (key) {
            case "volumes" -> new TenantQuota(count(key, value), volumeBytes, codebases, codebaseBytes, sandboxDisk,
                    builds, buildTime, buildCpus, buildMemory, imageBytes);
            case "volume-bytes" -> new TenantQuota(volumes, size(key, value), codebases, codebaseBytes, sandboxDisk,
                    builds, buildTime, buildCpus, buildMemory, imageBytes);
            case "codebases" -> new TenantQuota(volumes, volumeBytes, count(key, value), codebaseBytes, sandboxDisk,
                    builds, buildTime, buildCpus, buildMemory, imageBytes);
            case "codebase-bytes" -> new TenantQuota(volumes, volumeBytes, codebases, size(key, value), sandboxDisk,
                    builds, buildTime, buildCpus, buildMemory, imageBytes);
            case "sandbox-disk" -> q.withSandboxesAndBuilds(size(key, value), builds, buildTime, buildCpus, buildMemory);
            case "builds" -> q.withSandboxesAndBuilds(sandboxDisk, count(key, value), buildTime, buildCpus, buildMemory);
            case "build-time" -> q.withSandboxesAndBuilds(sandboxDisk, builds, duration(key, value), buildCpus, buildMemory);
            case "build-cpus" -> q.withSandboxesAndBuilds(sandboxDisk, builds, buildTime, cpus(key, value), buildMemory);
            case "build-memory" -> q.withSandboxesAndBuilds(sandboxDisk, builds, buildTime, buildCpus, memory(key, value));
            case "image-bytes" -> q.withImageBytes(size(key, value));
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

    private static ByteSize memory(String key, String value) {
        ByteSize s = size(key, value);
        if (s.compareTo(io.paddock.SandboxSpec.MIN_MEMORY) < 0) {
            throw new IllegalArgumentException(key + ": must be at least " + io.paddock.SandboxSpec.MIN_MEMORY + ", got "
                    + Limits.shorten(value));
        }
        return s;
    }

    private static double cpus(String key, String value) {
        try {
            double n = Double.parseDouble(value);
            if (n >= 0.01 && n <= 1024) {
                return n;
            }
        } catch (NumberFormatException e) {
            // said below
        }
        throw new IllegalArgumentException(key + ": expected CPUs between 0.01 and 1024 such as 2 or 0.5, got '"
                + Limits.shorten(value) + "'");
    }

    private static Duration duration(String key, String value) {
        Matcher m = DURATION.matcher(value);
        if (!m.matches()) {
            throw new IllegalArgumentException(key + ": expected a duration such as 90s, 30m or 2h, got '"
                    + Limits.shorten(value) + "'");
        }
        long n = Long.parseLong(m.group(1));
        return switch (m.group(2)) {
            case "s" -> Duration.ofSeconds(n);
            case "m" -> Duration.ofMinutes(n);
            default -> Duration.ofHours(n);
        };
    }

    /** The build fields as {@link BuildLimits}; IllegalArgumentException when the API would refuse them. */
    private static BuildLimits buildLimits(double cpus, ByteSize memory, Duration time) {
        try {
            return new BuildLimits(Optional.of(cpus), memory, time);
        } catch (io.paddock.SandboxException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
    }

    /** {@code build-time} as the tenants file writes it. */
    static String shown(Duration d) {
        long s = d.toSeconds();
        return s % 3600 == 0 ? s / 3600 + "h" : s % 60 == 0 ? s / 60 + "m" : s + "s";
    }
}
