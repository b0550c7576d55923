package io.paddock;

import io.paddock.internal.Validate;

import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Objects;

/**
 * A secret the sandbox uses without ever holding it: inside, the environment variable {@code key} holds only
 * {@link #placeholder()}; Paddock's egress proxy puts {@code value} in its place in the headers of HTTP(S)
 * requests bound for {@code host}, and for that host only. The value never appears in {@link #toString()},
 * logs or listings.
 *
 * @param key         the environment variable the sandbox sees
 * @param host        the one host name whose requests get the value (exact, as in the allowlist)
 * @param value       the secret
 * @param placeholder what the sandbox sees instead: random, made when the secret is declared
 */
public record EgressSecret(String key, String host, String value, String placeholder) {
    private static final SecureRandom RANDOM = new SecureRandom();
    public static final String PLACEHOLDER_PREFIX = "paddock-egress-";

    public EgressSecret {
        Validate.envKey("egressSecrets", key);
        Objects.requireNonNull(value, "value");
        if (value.isEmpty() || value.length() > 8192 || value.chars().anyMatch(c -> (c < 0x20 && c != '\t') || c > 0x7e)) {
            throw SandboxException.invalid("egressSecrets", key + ": the value must be 1 to 8192 characters of"
                    + " printable ASCII (it goes into an HTTP header)");
        }
        NetworkPolicy named;
        try {
            named = NetworkPolicy.allow(Objects.requireNonNull(host, "host"));
        } catch (SandboxException e) {
            throw SandboxException.invalid("egressSecrets", key + "@" + host + ": the host must be a domain name,"
                    + " such as api.example.com");
        }
        if (named.domains().size() != 1 || named.domains().get(0).startsWith("*.")) {
            throw SandboxException.invalid("egressSecrets", key + "@" + host + ": the host must be one domain name,"
                    + " such as api.example.com (not an address or a wildcard)");
        }
        host = named.domains().get(0).toLowerCase(Locale.ROOT);
        if (placeholder == null || !placeholder.startsWith(PLACEHOLDER_PREFIX) || placeholder.length() < 40) {
            throw SandboxException.invalid("egressSecrets", key + ": bad placeholder");
        }
    }

    /** Declares a secret with a fresh random placeholder. */
    public static EgressSecret of(String key, String host, String value) {
        byte[] b = new byte[16];
        RANDOM.nextBytes(b);
        return new EgressSecret(key, host, value, PLACEHOLDER_PREFIX + HexFormat.of().formatHex(b));
    }

    @Override
    public String toString() {
        return key + "@" + host + " (value redacted)";
    }
}
