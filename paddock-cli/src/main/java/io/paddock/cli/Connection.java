package io.paddock.cli;

import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * How the commands that talk to a daemon find it: {@code --url}/{@code --token}, else {@code PADDOCK_URL}
 * and {@code PADDOCK_TOKEN}, else the local default {@code http://127.0.0.1:7070} with the token the
 * daemon stored in its default data directory (readable by root only).
 */
final class Connection {
    static final String DEFAULT_URL = "http://127.0.0.1:7070";
    static final Path DEFAULT_TOKEN_FILE = Path.of("/var/lib/paddock/token");

    @Option(names = "--url", paramLabel = "URL", description = "The daemon's URL (default: $PADDOCK_URL, else " + DEFAULT_URL + ").")
    String url;

    @Option(names = "--token", paramLabel = "TOKEN", description = "The daemon's token (default: $PADDOCK_TOKEN, else the local daemon's token file).")
    String token;

    Paddock connect() {
        String u = url();
        try {
            return Paddock.connect(URI.create(u), token());
        } catch (IllegalArgumentException e) {
            throw SandboxException.invalid("url", "not a URL: '" + u + "'");
        }
    }

    /** The daemon's URL: {@code --url}, else {@code PADDOCK_URL}, else the local default. */
    String url() {
        return url != null ? url : env("PADDOCK_URL", DEFAULT_URL);
    }

    /** The daemon's token: {@code --token}, else {@code PADDOCK_TOKEN}, else the local daemon's token file. */
    String token() {
        String t = token != null ? token : env("PADDOCK_TOKEN", null);
        if (t == null) {
            t = localToken();
        }
        if (t == null) {
            throw SandboxException.invalid("token", "no token: set PADDOCK_TOKEN (the daemon printed where it stored its"
                    + " token, by default " + DEFAULT_TOKEN_FILE + ")");
        }
        return t;
    }

    /** A sandbox by id, or by name when the argument is not an id. */
    static Sandbox find(Paddock paddock, String idOrName) {
        return SandboxId.isValid(idOrName) ? paddock.get(idOrName) : paddock.getByName(idOrName);
    }

    private static String env(String name, String dflt) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? dflt : v.trim();
    }

    private static String localToken() {
        try {
            return Files.isReadable(DEFAULT_TOKEN_FILE) ? Files.readString(DEFAULT_TOKEN_FILE).trim() : null;
        } catch (IOException e) {
            return null;
        }
    }
}
