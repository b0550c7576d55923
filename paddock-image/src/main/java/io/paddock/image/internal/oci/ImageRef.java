package io.paddock.image.internal.oci;

import io.paddock.SandboxException;

import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * A docker-style image reference, {@code [registry[:port]/]repository[:tag][@sha256:digest]}, parsed and
 * normalised as docker's reference grammar does:
 * <ul>
 *   <li>the first path component names a registry only when it contains {@code .} or {@code :} or is
 *       {@code localhost}; otherwise the registry is {@value #DEFAULT_REGISTRY} (the name is kept for naming
 *       even though Paddock never reaches Docker Hub), and a single-component repository gets the
 *       {@code library/} prefix;</li>
 *   <li>repository components are lowercase {@code [a-z0-9]+} joined by {@code .}, {@code _}, {@code __} or
 *       runs of {@code -}; the name (registry and repository as written) is at most 255 characters;</li>
 *   <li>a tag is {@code [\w][\w.-]{0,127}}; a reference with neither tag nor digest gets the tag
 *       {@value #DEFAULT_TAG}; a digest is sha256 only.</li>
 * </ul>
 * An instance is always valid: the constructor checks every component, and {@link #parse} refuses bad
 * input with INVALID_ARGUMENT naming the field {@code image} and saying what is wrong. Immutable.
 *
 * @param registry    the registry host, with a port when one was given: {@code 127.0.0.1:5000},
 *                    {@code docker.io}
 * @param repository  the repository path inside the registry: {@code acc/busy}, {@code library/alpine}
 * @param tag         the tag; empty only when a digest pins the reference
 * @param digest      the manifest (or index) digest the reference pins, if any
 * @param isLocalName true when the reference was written without a registry component ({@code myimage},
 *                    {@code acc-img:1}); such names are how Paddock's image store names locally built images.
 *                    Two references that differ only in this flag name the same registry image but are not
 *                    {@code equals}.
 */
public record ImageRef(String registry, String repository, Optional<String> tag, Optional<Digest> digest,
                       boolean isLocalName) {
    public static final String DEFAULT_REGISTRY = "docker.io";
    public static final String DEFAULT_TAG = "latest";
    /** Docker's limit on the length of a name: registry and repository as written. */
    public static final int MAX_NAME_LENGTH = 255;

    private static final String FIELD = "image";
    private static final Pattern COMPONENT = Pattern.compile("[a-z0-9]++(?:(?:[._]|__|-++)[a-z0-9]++)*+");
    private static final Pattern TAG = Pattern.compile("[\\w][\\w.-]{0,127}");
    private static final String DOMAIN_COMPONENT = "[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?";
    private static final Pattern HOST = Pattern.compile(
            "(?:" + DOMAIN_COMPONENT + "(?:\\." + DOMAIN_COMPONENT + ")*|\\[[0-9a-fA-F:.]+\\])(?::([0-9]{1,5}))?");
    private static final Pattern HEX64 = Pattern.compile("[0-9a-f]{64}");

    public ImageRef {
        Objects.requireNonNull(registry, "registry");
        Objects.requireNonNull(repository, "repository");
        Objects.requireNonNull(tag, "tag");
        Objects.requireNonNull(digest, "digest");
        checkRegistry(registry);
        checkRepository(repository);
        tag.ifPresent(ImageRef::checkTag);
        if (tag.isEmpty() && digest.isEmpty()) {
            throw SandboxException.invalid(FIELD, "a reference needs a tag or a digest");
        }
        if (isLocalName && !DEFAULT_REGISTRY.equals(registry)) {
            throw SandboxException.invalid(FIELD, "a local name has no registry, yet '" + registry + "' was given");
        }
    }

    /**
     * Parses a reference as {@code docker pull} would.
     *
     * @throws SandboxException INVALID_ARGUMENT ({@code image: …}) saying what is wrong
     */
    public static ImageRef parse(String reference) {
        if (reference == null || reference.isEmpty()) {
            throw SandboxException.invalid(FIELD, "the reference is empty");
        }
        if (reference.length() > MAX_NAME_LENGTH + 1 + 128 + 1 + 71) {
            throw SandboxException.invalid(FIELD, "the reference is " + reference.length() + " characters long, too long to be valid");
        }
        for (int i = 0; i < reference.length(); i++) {
            char c = reference.charAt(i);
            if (Character.isWhitespace(c) || Character.isISOControl(c)) {
                throw SandboxException.invalid(FIELD, "'" + reference + "' contains whitespace or control characters");
            }
        }
        String rest = reference;
        Optional<Digest> digest = Optional.empty();
        int at = rest.indexOf('@');
        if (at >= 0) {
            String d = rest.substring(at + 1);
            if (!d.startsWith(Digest.ALGORITHM + ":") || !HEX64.matcher(d.substring(Digest.ALGORITHM.length() + 1)).matches()) {
                throw SandboxException.invalid(FIELD, "the digest '" + d + "' in '" + reference
                        + "' is not sha256:<64 lowercase hex digits>");
            }
            digest = Optional.of(Digest.parse(d, FIELD));
            rest = rest.substring(0, at);
        }
        Optional<String> tag = Optional.empty();
        int colon = rest.lastIndexOf(':');
        if (colon > rest.lastIndexOf('/')) {
            tag = Optional.of(rest.substring(colon + 1));
            rest = rest.substring(0, colon);
            checkTag(tag.get());
        }
        String name = rest;
        if (name.isEmpty()) {
            throw SandboxException.invalid(FIELD, "'" + reference + "' has no repository name");
        }
        if (name.length() > MAX_NAME_LENGTH) {
            throw SandboxException.invalid(FIELD, "the name is " + name.length() + " characters long; at most "
                    + MAX_NAME_LENGTH + " are allowed");
        }
        String registry;
        String path;
        boolean local;
        int slash = name.indexOf('/');
        String first = slash < 0 ? "" : name.substring(0, slash);
        if (slash > 0 && (first.contains(".") || first.contains(":") || first.equals("localhost"))) {
            registry = first;
            path = name.substring(slash + 1);
            local = false;
            checkRegistry(registry);
            if (registry.equals("index.docker.io")) {
                registry = DEFAULT_REGISTRY;
            }
        } else {
            registry = DEFAULT_REGISTRY;
            path = name;
            local = true;
            if (HEX64.matcher(name).matches()) {
                throw SandboxException.invalid(FIELD, "'" + name + "' is a 64-digit hex string, which docker reserves for "
                        + "image ids; write sha256:… after an @ to pin a digest");
            }
        }
        checkRepository(path);
        if (registry.equals(DEFAULT_REGISTRY) && path.indexOf('/') < 0) {
            path = "library/" + path;
        }
        if (tag.isEmpty() && digest.isEmpty()) {
            tag = Optional.of(DEFAULT_TAG);
        }
        return new ImageRef(registry, path, tag, digest, local);
    }

    /** {@code registry/repository}, without tag or digest. */
    public String name() {
        return registry + "/" + repository;
    }

    /** What the registry API takes after {@code /manifests/}: the digest when one is pinned, else the tag. */
    public String reference() {
        return digest.map(Digest::toString).orElseGet(tag::orElseThrow);
    }

    /** This reference pinned to {@code d}, keeping the tag. */
    public ImageRef withDigest(Digest d) {
        return new ImageRef(registry, repository, tag, Optional.of(d), isLocalName);
    }

    /** Docker's short form: without {@code docker.io/} and {@code library/} ({@code alpine:3}). */
    public String familiar() {
        String n = name();
        if (registry.equals(DEFAULT_REGISTRY)) {
            n = repository.startsWith("library/") && repository.indexOf('/', 8) < 0 ? repository.substring(8) : repository;
        }
        return n + suffix();
    }

    /** The canonical form: {@code 127.0.0.1:5000/acc/busy:2}, {@code docker.io/library/alpine:3@sha256:…}. */
    @Override
    public String toString() {
        return name() + suffix();
    }

    private String suffix() {
        return tag.map(t -> ":" + t).orElse("") + digest.map(d -> "@" + d).orElse("");
    }

    private static void checkRegistry(String registry) {
        var m = HOST.matcher(registry);
        if (!m.matches()) {
            throw SandboxException.invalid(FIELD, "'" + registry + "' is not a valid registry host[:port]");
        }
        if (m.group(1) != null && Integer.parseInt(m.group(1)) > 65535) {
            throw SandboxException.invalid(FIELD, "the registry port " + m.group(1) + " is out of range");
        }
    }

    private static void checkRepository(String path) {
        if (path.isEmpty()) {
            throw SandboxException.invalid(FIELD, "the repository name is empty");
        }
        if (!path.toLowerCase(Locale.ROOT).equals(path)) {
            throw SandboxException.invalid(FIELD, "the repository name '" + path + "' must be lowercase");
        }
        for (String component : path.split("/", -1)) {
            if (component.isEmpty()) {
                throw SandboxException.invalid(FIELD, "the repository name '" + path + "' has an empty path component");
            }
            if (!COMPONENT.matcher(component).matches()) {
                throw SandboxException.invalid(FIELD, "'" + component + "' in '" + path + "' is not a valid repository "
                        + "path component: lowercase letters and digits, separated by '.', '_', '__' or dashes, "
                        + "starting and ending with a letter or digit");
            }
        }
    }

    private static void checkTag(String tag) {
        if (!TAG.matcher(tag).matches()) {
            throw SandboxException.invalid(FIELD, tag.isEmpty() ? "the tag after ':' is empty"
                    : "the tag '" + tag + "' is not valid: up to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'");
        }
    }
}
