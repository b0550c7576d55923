package io.paddock.image.internal.registry;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.image.internal.oci.Descriptor;
import io.paddock.image.internal.oci.Digest;
import io.paddock.image.internal.oci.MediaTypes;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Reading image manifests and indexes (OCI and Docker schema 2) into checked values. Unknown JSON fields
 * are ignored; missing or malformed required ones are INVALID_ARGUMENT naming what was being read; formats
 * Paddock does not run (Docker schema 1, OCI artifacts) are FAILED_PRECONDITION. Stateless.
 */
final class Manifests {
    static final String DOCKER_SCHEMA1 = "application/vnd.docker.distribution.manifest.v1+json";
    static final String DOCKER_SCHEMA1_SIGNED = "application/vnd.docker.distribution.manifest.v1+prettyjws";
    /** What a manifest GET accepts: the four types Paddock reads. */
    static final String ACCEPT = String.join(", ", MediaTypes.OCI_INDEX, MediaTypes.DOCKER_LIST,
            MediaTypes.OCI_MANIFEST, MediaTypes.DOCKER_MANIFEST);

    private static final ObjectMapper JSON = new ObjectMapper()
            .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

    record PlatformJson(String os, String architecture, String variant) {
    }

    record DescriptorJson(String mediaType, String digest, Long size, PlatformJson platform,
                          Map<String, String> annotations) {
    }

    record ManifestJson(Integer schemaVersion, String mediaType, DescriptorJson config, List<DescriptorJson> layers,
                        List<DescriptorJson> manifests) {
    }

    /** The part of an image configuration that says what it runs on. */
    record ConfigPlatformJson(String os, String architecture, String variant) {
    }

    /** A checked image manifest. */
    record Image(Descriptor config, List<Descriptor> layers) {
    }

    /** A checked index entry; {@code platform} is empty when the entry names none. */
    record Entry(Descriptor descriptor, Optional<Platform> platform, boolean attestation) {
    }

    private Manifests() {
    }

    static ManifestJson read(byte[] bytes, String what) {
        try {
            ManifestJson m = JSON.readValue(bytes, ManifestJson.class);
            if (m == null) {
                throw new SandboxException(ErrorCode.INVALID_ARGUMENT, what + " is empty JSON");
            }
            return m;
        } catch (JsonProcessingException e) {
            throw new SandboxException(ErrorCode.INVALID_ARGUMENT, what + " is not a valid manifest: "
                    + RegistrySession.truncate(e.getOriginalMessage(), 200));
        } catch (IOException e) {
            throw new IllegalStateException(e); // reading a byte array
        }
    }

    /**
     * The media type of a manifest: the one its JSON declares (that is covered by the digest), else the
     * registry's Content-Type, else what its fields say it is.
     */
    static String mediaType(ManifestJson m, String contentType, String what) {
        String ct = contentType == null ? "" : contentType.split(";", 2)[0].strip().toLowerCase(Locale.ROOT);
        if (DOCKER_SCHEMA1.equals(ct) || DOCKER_SCHEMA1_SIGNED.equals(ct)
                || (m.schemaVersion() != null && m.schemaVersion() == 1)) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, what + " is a Docker schema 1 manifest, which "
                    + "Paddock does not read; push the image again with a current docker, buildah or skopeo");
        }
        String type;
        if (m.mediaType() != null && known(m.mediaType())) {
            type = m.mediaType();
        } else if (m.mediaType() != null && !m.mediaType().isEmpty()) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, what + " has media type '"
                    + RegistrySession.truncate(m.mediaType(), 100) + "', which is not a container image");
        } else if (known(ct)) {
            type = ct;
        } else if (m.manifests() != null) {
            type = MediaTypes.OCI_INDEX;
        } else if (m.config() != null && m.layers() != null) {
            type = MediaTypes.OCI_MANIFEST;
        } else {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, what + " has media type '"
                    + RegistrySession.truncate(ct, 100) + "', which is not a container image");
        }
        if (m.schemaVersion() == null || m.schemaVersion() != 2) {
            throw new SandboxException(ErrorCode.INVALID_ARGUMENT, what + " has schemaVersion " + m.schemaVersion()
                    + "; 2 is expected");
        }
        return type;
    }

    private static boolean known(String type) {
        return MediaTypes.isIndex(type) || MediaTypes.isManifest(type);
    }

    static Image image(ManifestJson m, String what) {
        if (m.config() == null) {
            throw new SandboxException(ErrorCode.INVALID_ARGUMENT, what + " has no config");
        }
        if (m.layers() == null) {
            throw new SandboxException(ErrorCode.INVALID_ARGUMENT, what + " has no layers list");
        }
        Descriptor config = descriptor(m.config(), what + ", config");
        if (!config.mediaType().equals(MediaTypes.OCI_CONFIG) && !config.mediaType().equals(MediaTypes.DOCKER_CONFIG)) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, what + " is not a container image: its config "
                    + "has media type '" + RegistrySession.truncate(config.mediaType(), 100) + "'");
        }
        List<Descriptor> layers = new ArrayList<>();
        for (int i = 0; i < m.layers().size(); i++) {
            layers.add(descriptor(m.layers().get(i), what + ", layer " + i));
        }
        return new Image(config, layers);
    }

    static List<Entry> entries(ManifestJson m, String what) {
        if (m.manifests() == null) {
            throw new SandboxException(ErrorCode.INVALID_ARGUMENT, what + " has no manifests list");
        }
        List<Entry> out = new ArrayList<>();
        for (int i = 0; i < m.manifests().size(); i++) {
            DescriptorJson d = m.manifests().get(i);
            Descriptor desc = descriptor(d, what + ", entry " + i);
            Optional<Platform> p = Optional.empty();
            if (d.platform() != null && d.platform().os() != null && d.platform().architecture() != null) {
                p = Optional.of(new Platform(d.platform().os().toLowerCase(Locale.ROOT),
                        d.platform().architecture().toLowerCase(Locale.ROOT),
                        d.platform().variant() == null ? "" : d.platform().variant().toLowerCase(Locale.ROOT)));
            }
            boolean attestation = d.annotations() != null
                    && "attestation-manifest".equals(d.annotations().get("vnd.docker.reference.type"));
            out.add(new Entry(desc, p, attestation));
        }
        return out;
    }

    /**
     * The entry for {@code want}: one with the same variant if there is one, else the first that matches.
     *
     * @throws SandboxException NOT_FOUND listing the platforms the index has
     */
    static Descriptor choose(List<Entry> entries, Platform want, String ref) {
        Entry best = null;
        for (Entry e : entries) {
            if (e.attestation() || e.platform().isEmpty() || !want.matches(e.platform().get())
                    || !MediaTypes.isManifest(e.descriptor().mediaType())) {
                continue;
            }
            if (best == null || (!want.sameVariant(best.platform().get()) && want.sameVariant(e.platform().get()))) {
                best = e;
            }
        }
        if (best != null) {
            return best.descriptor();
        }
        Set<String> has = new LinkedHashSet<>();
        for (Entry e : entries) {
            if (!e.attestation()) {
                has.add(e.platform().map(Platform::toString).orElse("(no platform)"));
            }
        }
        throw new SandboxException(ErrorCode.NOT_FOUND, "no " + want + " image in " + ref + "; it has: "
                + (has.isEmpty() ? "nothing" : RegistrySession.truncate(String.join(", ", has), 300)));
    }

    /** The platform an image configuration declares, when it declares both os and architecture. */
    static Optional<Platform> configPlatform(byte[] config, String what) {
        ConfigPlatformJson c;
        try {
            c = JSON.readValue(config, ConfigPlatformJson.class);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INVALID_ARGUMENT, what + " is not valid JSON");
        }
        if (c == null || c.os() == null || c.architecture() == null || c.os().isEmpty() || c.architecture().isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(new Platform(c.os().toLowerCase(Locale.ROOT), c.architecture().toLowerCase(Locale.ROOT),
                c.variant() == null ? "" : c.variant().toLowerCase(Locale.ROOT)));
    }

    private static Descriptor descriptor(DescriptorJson d, String what) {
        if (d == null) {
            throw new SandboxException(ErrorCode.INVALID_ARGUMENT, what + " is null");
        }
        if (d.mediaType() == null || d.mediaType().isBlank()) {
            throw new SandboxException(ErrorCode.INVALID_ARGUMENT, what + " has no mediaType");
        }
        if (d.size() == null || d.size() < 0) {
            throw new SandboxException(ErrorCode.INVALID_ARGUMENT, what + " has no valid size");
        }
        Digest digest = Digest.parse(d.digest(), what + " digest");
        return new Descriptor(d.mediaType(), digest, d.size());
    }
}
