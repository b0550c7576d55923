package io.paddock.image.internal.registry;

import io.paddock.SandboxException;

import java.util.Locale;
import java.util.Objects;

/**
 * An OS and CPU architecture as image indexes name them ({@code linux/amd64}, {@code linux/arm/v7}), with
 * docker's matching rules: the variant is ignored for amd64, {@code arm64} and {@code arm64/v8} are the same,
 * and a missing variant on either side matches any.
 */
record Platform(String os, String architecture, String variant) {
    Platform {
        Objects.requireNonNull(os, "os");
        Objects.requireNonNull(architecture, "architecture");
        Objects.requireNonNull(variant, "variant");
        architecture = switch (architecture) {
            case "x86_64", "x86-64" -> "amd64";
            case "aarch64" -> "arm64";
            default -> architecture;
        };
    }

    /** Parses {@code os/architecture[/variant]}; INVALID_ARGUMENT naming {@code platform} otherwise. */
    static Platform parse(String s) {
        String[] p = s == null ? new String[0] : s.toLowerCase(Locale.ROOT).split("/", -1);
        if (p.length < 2 || p.length > 3 || p[0].isBlank() || p[1].isBlank() || (p.length == 3 && p[2].isBlank())) {
            throw SandboxException.invalid("platform", "'" + s + "' is not os/architecture[/variant], for example linux/amd64");
        }
        return new Platform(p[0], p[1], p.length == 3 ? p[2] : "");
    }

    boolean matches(Platform candidate) {
        if (!os.equals(candidate.os) || !architecture.equals(candidate.architecture)) {
            return false;
        }
        String a = comparableVariant();
        String b = candidate.comparableVariant();
        return a.isEmpty() || b.isEmpty() || a.equals(b);
    }

    /** True when both name the same variant, so that an exact entry wins over a variant-less one. */
    boolean sameVariant(Platform candidate) {
        return comparableVariant().equals(candidate.comparableVariant());
    }

    private String comparableVariant() {
        if (architecture.equals("amd64") || (architecture.equals("arm64") && variant.equals("v8"))) {
            return "";
        }
        return variant;
    }

    @Override
    public String toString() {
        return os + "/" + architecture + (variant.isEmpty() ? "" : "/" + variant);
    }
}
