package io.paddock.client.internal;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.ErrorCode;
import io.paddock.RegistryAuth;
import io.paddock.SandboxException;
import io.paddock.wire.Wire;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Base64;
import java.util.Iterator;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * What a remote pull or push sends for {@link RegistryAuth}: {@code insecure}, and the credentials of the one
 * registry the request goes to. A {@link RegistryAuth#configFile() config file} is this host's: the daemon
 * never reads a path a client names (that would be its own host's file), so it is read here and only the
 * matching entry's user name and password travel. Explicit {@link RegistryAuth#credentials credentials} win
 * over the file, as in the embedded engine.
 *
 * <p>The file is Docker's client configuration, read by the rules the embedded engine uses
 * ({@code DockerConfigCredentials} in paddock-image): {@code auths} keys may carry a scheme and a path and
 * are reduced to {@code host[:port]}, Docker Hub's aliases to {@code docker.io}; an entry gives
 * {@code auth} (base64 of {@code user:password}) or {@code username} and {@code password}; entries with
 * neither (a credential helper holds the secret) are ignored, as are {@code credsStore} and
 * {@code credHelpers}. A missing file means no credentials. Messages name the file and the registry, never a
 * secret. Stateless.
 */
final class RegistryCredentials {
    private static final long MAX_FILE_BYTES = 1 << 20;
    private static final String DOCKER_HUB = "docker.io";

    private RegistryCredentials() {
    }

    /** {@code auth} as it goes on the wire for a request to the registry of {@code reference}: no file, at most one pair. */
    static RegistryAuth resolve(RegistryAuth auth, String reference) {
        RegistryAuth out = auth.isInsecure() ? RegistryAuth.none().insecure() : RegistryAuth.none();
        if (auth.username().isPresent()) {
            return out.credentials(auth.username().get(), auth.password().orElse(""));
        }
        if (auth.configFile().isEmpty()) {
            return out;
        }
        Optional<String[]> pair = lookup(auth.configFile().get(), registryOf(reference));
        return pair.isPresent() ? out.credentials(pair.get()[0], pair.get()[1]) : out;
    }

    /**
     * The registry part of a reference as {@code docker pull} reads it: the first component when it has a
     * {@code .} or {@code :} or is {@code localhost}, else Docker Hub; lower-cased, Hub aliases folded.
     */
    static String registryOf(String reference) {
        int slash = reference.indexOf('/');
        if (slash > 0) {
            String first = reference.substring(0, slash);
            if (first.contains(".") || first.contains(":") || first.equals("localhost")) {
                return normalize(first);
            }
        }
        return DOCKER_HUB;
    }

    /** {@code https://Host:5000/v1/} → {@code host:5000}; Docker Hub's names → {@code docker.io}. */
    static String normalize(String key) {
        String k = key.strip();
        int scheme = k.indexOf("://");
        if (scheme >= 0) {
            k = k.substring(scheme + 3);
        }
        int slash = k.indexOf('/');
        if (slash >= 0) {
            k = k.substring(0, slash);
        }
        k = k.toLowerCase(Locale.ROOT);
        return switch (k) {
            case "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com" -> DOCKER_HUB;
            default -> k;
        };
    }

    /** The user name and password the file gives {@code registry}, if any. */
    private static Optional<String[]> lookup(Path file, String registry) {
        byte[] bytes;
        try {
            if (Files.size(file) > MAX_FILE_BYTES) {
                throw SandboxException.invalid(file.toString(), "is larger than " + MAX_FILE_BYTES + " bytes");
            }
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INVALID_ARGUMENT, "cannot read " + file + ": " + e.getMessage(), e);
        }
        JsonNode root;
        try {
            root = Wire.JSON.readTree(bytes);
        } catch (IOException e) {
            // Jackson's message can quote the input, which may hold a secret: say only that it is broken.
            throw SandboxException.invalid(file.toString(), "is not valid JSON");
        }
        if (root == null || !root.isObject()) {
            throw SandboxException.invalid(file.toString(), "is not a JSON object");
        }
        JsonNode auths = root.path("auths");
        if (!auths.isMissingNode() && !auths.isObject()) {
            throw SandboxException.invalid(file.toString(), "'auths' is not an object");
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = auths.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            if (normalize(e.getKey()).equals(registry)) {
                Optional<String[]> pair = entry(file, registry, e.getValue());
                if (pair.isPresent()) {
                    return pair;
                }
            }
        }
        return Optional.empty();
    }

    private static Optional<String[]> entry(Path file, String registry, JsonNode node) {
        String problem = "the entry for " + registry + " ";
        String auth = node.path("auth").asText("");
        if (!auth.isEmpty()) {
            String decoded;
            try {
                decoded = new String(Base64.getDecoder().decode(auth.strip()), StandardCharsets.UTF_8);
            } catch (IllegalArgumentException e) {
                throw SandboxException.invalid(file.toString(), problem + "has an 'auth' that is not base64");
            }
            int colon = decoded.indexOf(':');
            if (colon <= 0) {
                throw SandboxException.invalid(file.toString(), problem + "has an 'auth' that is not base64(user:password)");
            }
            return Optional.of(new String[] {decoded.substring(0, colon), decoded.substring(colon + 1)});
        }
        String user = node.path("username").asText("");
        String password = node.path("password").asText("");
        if (user.isEmpty() || password.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(new String[] {user, password});
    }
}
