package io.paddock.image.internal.registry;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Base64;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Credentials read from docker's client configuration ({@code ~/.docker/config.json}):
 * <pre>{"auths": {"registry.example:5000": {"auth": "base64(user:password)"},
 *           "https://other.example": {"username": "u", "password": "p"}}}</pre>
 * Keys may carry a scheme and a path ({@code https://index.docker.io/v1/}); they are reduced to
 * {@code host[:port]}, and Docker Hub's aliases to {@code docker.io}. Entries with neither an {@code auth}
 * nor a user name and password (such as those {@code docker login} leaves when a credential helper holds the
 * secret) are ignored: {@code credsStore} and {@code credHelpers} are not supported, since running helper
 * programs is not this package's business. The file is read once, at {@link #load}; immutable and
 * thread-safe afterwards.
 */
public final class DockerConfigCredentials implements CredentialsProvider {
    private static final long MAX_FILE_BYTES = 1 << 20;
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Map<String, Credentials> byRegistry;

    private DockerConfigCredentials(Map<String, Credentials> byRegistry) {
        this.byRegistry = Map.copyOf(byRegistry);
    }

    /**
     * Reads {@code configJson}. A missing file means no credentials, as for docker itself.
     *
     * @throws SandboxException INVALID_ARGUMENT when the file is not a docker configuration (the message
     *                          names the file and the entry, never a secret); INTERNAL when it cannot be read
     */
    public static DockerConfigCredentials load(Path configJson) {
        byte[] bytes;
        try {
            if (Files.size(configJson) > MAX_FILE_BYTES) {
                throw SandboxException.invalid(configJson.toString(), "is larger than " + MAX_FILE_BYTES + " bytes");
            }
            bytes = Files.readAllBytes(configJson);
        } catch (NoSuchFileException e) {
            return new DockerConfigCredentials(Map.of());
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot read " + configJson + ": " + e.getMessage(), e);
        }
        JsonNode root;
        try {
            root = JSON.readTree(bytes);
        } catch (IOException e) {
            // Jackson's message can quote the input, which may hold a secret: say only where it broke.
            throw SandboxException.invalid(configJson.toString(), "is not valid JSON");
        }
        if (root == null || !root.isObject()) {
            throw SandboxException.invalid(configJson.toString(), "is not a JSON object");
        }
        Map<String, Credentials> out = new LinkedHashMap<>();
        JsonNode auths = root.path("auths");
        if (!auths.isMissingNode() && !auths.isObject()) {
            throw SandboxException.invalid(configJson.toString(), "'auths' is not an object");
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = auths.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            String registry = normalize(e.getKey());
            entry(configJson, registry, e.getValue()).ifPresent(c -> out.putIfAbsent(registry, c));
        }
        return new DockerConfigCredentials(out);
    }

    /** Reads {@code $DOCKER_CONFIG/config.json}, or {@code ~/.docker/config.json} without that variable. */
    public static DockerConfigCredentials loadDefault() {
        String dir = System.getenv("DOCKER_CONFIG");
        Path base = dir != null && !dir.isEmpty() ? Path.of(dir) : Path.of(System.getProperty("user.home"), ".docker");
        return load(base.resolve("config.json"));
    }

    @Override
    public Optional<Credentials> credentialsFor(String registry) {
        return Optional.ofNullable(byRegistry.get(normalize(registry)));
    }

    /** The registries (normalised {@code host[:port]}) that have credentials. */
    public Set<String> registries() {
        return byRegistry.keySet();
    }

    private static Optional<Credentials> entry(Path file, String registry, JsonNode node) {
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
            return Optional.of(new Credentials(decoded.substring(0, colon), decoded.substring(colon + 1)));
        }
        String user = node.path("username").asText("");
        String password = node.path("password").asText("");
        if (user.isEmpty() || password.isEmpty()) {
            return Optional.empty();
        }
        if (user.indexOf(':') >= 0) {
            throw SandboxException.invalid(file.toString(), problem + "has a user name containing ':'");
        }
        return Optional.of(new Credentials(user, password));
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
            case "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com" -> "docker.io";
            default -> k;
        };
    }
}
