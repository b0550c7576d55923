package io.paddock.image.internal.registry;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Objects;

/**
 * A user name and password (or access token used as a password) for one registry. {@link #toString()}
 * never shows the password, and no exception or log line of the registry client contains it.
 *
 * @param username not empty and without {@code ':'}, which HTTP Basic authentication cannot carry
 * @param password the password or token; never null
 */
public record Credentials(String username, String password) {
    public Credentials {
        Objects.requireNonNull(username, "username");
        Objects.requireNonNull(password, "password");
        if (username.isEmpty() || username.indexOf(':') >= 0) {
            throw new IllegalArgumentException("a registry user name must be non-empty and must not contain ':'");
        }
    }

    /** The value of an {@code Authorization} header for HTTP Basic authentication. */
    String basicAuthorization() {
        return "Basic " + Base64.getEncoder().encodeToString((username + ":" + password).getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public String toString() {
        return "Credentials[username=" + username + ", password=***]";
    }
}
