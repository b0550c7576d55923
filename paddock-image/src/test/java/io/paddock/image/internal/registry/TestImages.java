package io.paddock.image.internal.registry;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.image.internal.oci.Descriptor;
import io.paddock.image.internal.oci.Digest;
import io.paddock.image.internal.oci.MediaTypes;
import io.paddock.image.internal.store.BlobStore;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.zip.GZIPOutputStream;

/** Small, unique images built in a {@link BlobStore}, for push and pull tests. */
final class TestImages {
    static final ObjectMapper JSON = new ObjectMapper();

    /** An image in a store: its manifest and the blobs that manifest names. */
    record Built(Digest manifest, String mediaType, byte[] manifestBytes, Descriptor config, List<Descriptor> layers) {
        List<Descriptor> blobs() {
            List<Descriptor> all = new ArrayList<>();
            all.add(config);
            all.addAll(layers);
            return all;
        }

        Descriptor descriptor() {
            return new Descriptor(mediaType, manifest, manifestBytes.length);
        }
    }

    private TestImages() {
    }

    /** An OCI image for linux/{@code arch} with {@code layerCount} unique gzip layers. */
    static Built oci(BlobStore store, String arch, int layerCount) {
        return build(store, arch, layerCount, MediaTypes.OCI_MANIFEST, MediaTypes.OCI_CONFIG, MediaTypes.OCI_LAYER_GZIP);
    }

    /** The same in Docker schema 2 media types. */
    static Built docker(BlobStore store, String arch, int layerCount) {
        return build(store, arch, layerCount, MediaTypes.DOCKER_MANIFEST, MediaTypes.DOCKER_CONFIG, MediaTypes.DOCKER_LAYER_GZIP);
    }

    private static Built build(BlobStore store, String arch, int layerCount, String manifestType, String configType,
                               String layerType) {
        List<Descriptor> layers = new ArrayList<>();
        ArrayNode diffIds = JSON.createArrayNode();
        for (int i = 0; i < layerCount; i++) {
            byte[] tar = tar(Map.of("file" + i + ".txt", "layer " + i + " " + UUID.randomUUID() + "\n"));
            diffIds.add(Digest.of(tar).toString());
            byte[] gz = gzip(tar);
            layers.add(new Descriptor(layerType, store.put(gz), gz.length));
        }
        ObjectNode config = JSON.createObjectNode();
        config.put("architecture", arch);
        config.put("os", "linux");
        config.putObject("config").putArray("Cmd").add("/bin/sh");
        ObjectNode rootfs = config.putObject("rootfs");
        rootfs.put("type", "layers");
        rootfs.set("diff_ids", diffIds);
        byte[] configBytes = bytes(config);
        Descriptor configDesc = new Descriptor(configType, store.put(configBytes), configBytes.length);
        byte[] manifest = manifest(manifestType, configDesc, layers);
        return new Built(store.put(manifest), manifestType, manifest, configDesc, layers);
    }

    static byte[] manifest(String mediaType, Descriptor config, List<Descriptor> layers) {
        ObjectNode m = JSON.createObjectNode();
        m.put("schemaVersion", 2);
        m.put("mediaType", mediaType);
        m.set("config", descriptor(config));
        ArrayNode l = m.putArray("layers");
        layers.forEach(d -> l.add(descriptor(d)));
        return bytes(m);
    }

    /** An index (or manifest list) of {@code entries}, each with its platform {@code os/arch}; stored. */
    static Built index(BlobStore store, String mediaType, List<Map.Entry<Built, String>> entries) {
        ObjectNode idx = JSON.createObjectNode();
        idx.put("schemaVersion", 2);
        idx.put("mediaType", mediaType);
        ArrayNode ms = idx.putArray("manifests");
        entries.forEach(e -> {
            ObjectNode d = descriptor(e.getKey().descriptor());
            String[] p = e.getValue().split("/");
            ObjectNode pn = d.putObject("platform");
            pn.put("os", p[0]);
            pn.put("architecture", p[1]);
            if (p.length > 2) {
                pn.put("variant", p[2]);
            }
            ms.add(d);
        });
        byte[] b = bytes(idx);
        return new Built(store.put(b), mediaType, b, null, List.of());
    }

    static ObjectNode descriptor(Descriptor d) {
        ObjectNode n = JSON.createObjectNode();
        n.put("mediaType", d.mediaType());
        n.put("digest", d.digest().toString());
        n.put("size", d.size());
        return n;
    }

    static byte[] tar(Map<String, String> files) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (TarArchiveOutputStream tar = new TarArchiveOutputStream(out)) {
            for (Map.Entry<String, String> f : files.entrySet()) {
                byte[] content = f.getValue().getBytes(StandardCharsets.UTF_8);
                TarArchiveEntry e = new TarArchiveEntry(f.getKey());
                e.setSize(content.length);
                e.setMode(0644);
                tar.putArchiveEntry(e);
                tar.write(content);
                tar.closeArchiveEntry();
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }

    static byte[] gzip(byte[] b) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (GZIPOutputStream gz = new GZIPOutputStream(out)) {
            gz.write(b);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }

    static byte[] bytes(Object json) {
        try {
            return JSON.writeValueAsBytes(json);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
