package io.paddock;

import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;

/**
 * How to reach a registry: plain HTTP allowed or not, and the credentials (a user name and password, or a
 * Docker-style {@code config.json} with an {@code auths} section). Credentials are never logged or shown.
 */
public final class RegistryAuth {
    private static final RegistryAuth NONE = new RegistryAuth(false, null, null, null);

    private final boolean insecure;
    private final String username;
    private final String password;
    private final Path configFile;

    private RegistryAuth(boolean insecure, String username, String password, Path configFile) {
        this.insecure = insecure;
        this.username = username;
        this.password = password;
        this.configFile = configFile;
    }

    /** HTTPS, no credentials (anonymous, or a token the registry hands out to anyone). */
    public static RegistryAuth none() {
        return NONE;
    }

    /** Allows plain HTTP: for a registry on loopback or a private network only. */
    public RegistryAuth insecure() {
        return new RegistryAuth(true, username, password, configFile);
    }

    public RegistryAuth credentials(String user, String pass) {
        if (user == null || user.isEmpty() || pass == null) {
            throw SandboxException.invalid("credentials", "a user name and a password are both needed");
        }
        return new RegistryAuth(insecure, user, pass, configFile);
    }

    /** A Docker-style {@code config.json} whose {@code auths} entry for the registry supplies the credentials. */
    public RegistryAuth configFile(Path file) {
        Objects.requireNonNull(file, "configFile");
        return new RegistryAuth(insecure, username, password, file);
    }

    public boolean isInsecure() {
        return insecure;
    }

    public Optional<String> username() {
        return Optional.ofNullable(username);
    }

    public Optional<String> password() {
        return Optional.ofNullable(password);
    }

    public Optional<Path> configFile() {
        return Optional.ofNullable(configFile);
    }

    @Override
    public String toString() {
        return "RegistryAuth{insecure=" + insecure + ", user=" + (username == null ? "-" : username)
                + ", password=" + (password == null ? "-" : "(redacted)") + ", config=" + configFile + "}";
    }
}
