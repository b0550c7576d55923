package io.paddock.image.internal.store;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.image.internal.oci.Descriptor;
import io.paddock.image.internal.oci.Digest;
import io.paddock.image.internal.oci.ImageConfig;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Predicate;
import java.util.stream.Stream;

/**
 * The images of one host: their configurations and compressed layers as blobs ({@link BlobStore}), each
 * layer unpacked once into a directory that every sandbox of every image using it shares, the images'
 * records, and the names that point at them.
 *
 * <pre>
 *   &lt;root&gt;/blobs/sha256/&lt;hex&gt;     configs, manifests, compressed layers (what registries serve)
 *   &lt;root&gt;/layers/&lt;32 hex&gt;/        an unpacked layer, named by its diff_id (the uncompressed tar's digest)
 *   &lt;root&gt;/layers/host-&lt;hash&gt;/      the host image's root, under the layers of images based on it
 *   &lt;root&gt;/images/&lt;hex&gt;.json      an image: its config digest (its id), config summary, layer blobs
 *   &lt;root&gt;/names.json              name:tag -> image id
 *   &lt;root&gt;/cache/&lt;hex&gt;             build cache: a step's key -> the layer it made, and when
 *   &lt;root&gt;/layer-blobs/&lt;hex&gt;       a layer's diff_id -> its compressed blob, when one was made or pulled
 *   &lt;root&gt;/owners.json             a layer's diff_id -> the owner whose pull or build brought it in, and its bytes;
 *                                  a name -> the owner whose pull or build wrote it
 * </pre>
 *
 * <p>Every write goes to a temporary name and is renamed into place, so a crash leaves no half image, and
 * mutations of the records take a file lock, so engines and CLIs sharing the store agree. Layers are
 * immutable once in place.
 */
public final class ImageStore {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Hex digits of a diff_id in its layer directory's name: 128 bits, and 120 layers fit one overlay mount. */
    static final int LAYER_NAME_HEX = 32;
    static final long MAX_RECORD = 4 << 20;
    /**
     * The host image's root directories generated in the layer directory ({@code host-<hash>}) for images based
     * on it (see {@link ImageConfig#BASE_LABEL}); never a layer's name, which is hex.
     */
    public static final String HOST_ROOT_PREFIX = "host-";

    private final Path root;
    private final BlobStore blobs;
    private final Path layers;
    private final Path images;
    private final Path cache;
    private final Path layerBlobs;
    private final LayerOwners owners;

    /** A stored image. {@code layers} are the compressed blobs when known (pulled or pushed), else empty. */
    public record StoredImage(Digest id, ImageConfig config, List<Descriptor> layers, Instant stored, long size) {
        public StoredImage {
            layers = List.copyOf(layers);
        }
    }

    public ImageStore(Path root) {
        this.root = root;
        try {
            Files.createDirectories(root);
            Files.setPosixFilePermissions(root, PosixFilePermissions.fromString("rwx--x--x"));
            this.layers = Files.createDirectories(root.resolve("layers"));
            Files.setPosixFilePermissions(layers, PosixFilePermissions.fromString("rwx--x--x"));
            this.images = Files.createDirectories(root.resolve("images"));
            this.cache = Files.createDirectories(root.resolve("cache"));
            this.layerBlobs = Files.createDirectories(root.resolve("layer-blobs"));
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "cannot create the image store " + root + ": " + e, e);
        }
        this.blobs = new BlobStore(root.resolve("blobs"));
        this.owners = new LayerOwners(root);
    }

    public Path root() {
        return root;
    }

    public BlobStore blobs() {
        return blobs;
    }

    /** The directory holding every unpacked layer (what sandboxes mount). */
    public Path layersDir() {
        return layers;
    }

    /** The name of the directory of the layer with this diff_id, inside {@link #layersDir()}. */
    public static String layerName(Digest diffId) {
        return diffId.shortHex(LAYER_NAME_HEX);
    }

    public Path layerPath(Digest diffId) {
        return layers.resolve(layerName(diffId));
    }

    public boolean hasLayer(Digest diffId) {
        return Files.isDirectory(layerPath(diffId), LinkOption.NOFOLLOW_LINKS);
    }

    /** A fresh temporary directory inside the layer directory, for unpacking or committing a layer. */
    public Path newLayerStaging() {
        try {
            Path p = Files.createTempDirectory(layers, ".tmp-");
            Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
            return p;
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot create a layer directory in " + layers + ": " + e, e);
        }
    }

    /**
     * Moves a complete staging directory into place as the layer {@code diffId}. If another writer put it
     * there first, the staging directory is deleted: layers with one diff_id are identical.
     */
    public Path commitLayer(Path staging, Digest diffId) {
        Path target = layerPath(diffId);
        if (hasLayer(diffId)) {
            deleteTree(staging);
            return target;
        }
        try {
            Files.move(staging, target, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            deleteTree(staging);
            if (!hasLayer(diffId)) { // else another writer put the same layer there first
                throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot store layer " + diffId + ": " + e, e);
            }
        }
        return target;
    }

    // ---- images and names ----

    /** Records an image (its config blob must be in the blob store) and points {@code names} at it. */
    public StoredImage put(Digest configDigest, List<Descriptor> layerBlobs, List<String> names) {
        return put(configDigest, layerBlobs, names, Optional.empty());
    }

    /**
     * {@link #put(Digest, List, List)}, with {@code names} recorded as written by {@code owner}'s pull or build (or,
     * empty, by nobody: whoever wrote them before no longer owns them).
     */
    public StoredImage put(Digest configDigest, List<Descriptor> layerBlobs, List<String> names, Optional<String> owner) {
        ImageConfig config = ImageConfig.parse(blobs.read(configDigest, 8 << 20));
        for (Digest d : config.diffIds()) {
            if (!hasLayer(d)) {
                throw new SandboxException(ErrorCode.INTERNAL, "layer " + d + " of image " + configDigest + " is not unpacked");
            }
        }
        long size = layerBlobs.stream().mapToLong(Descriptor::size).sum();
        StoredImage image = new StoredImage(configDigest, config, layerBlobs, Instant.now(), size);
        withLock(() -> {
            Optional<StoredImage> old = readRecord(configDigest);
            StoredImage toWrite = old.isPresent() && !old.get().layers().isEmpty() && layerBlobs.isEmpty()
                    ? old.get() : image;
            writeAtomically(images.resolve(configDigest.hex() + ".json"), recordJson(toWrite));
            Map<String, String> n = readNames();
            for (String name : names) {
                n.put(name, configDigest.toString());
            }
            writeNames(n);
            LayerOwners.Records r = owners.read();
            boolean changed = false;
            for (String name : names) {
                changed |= owner.isPresent() ? !owner.get().equals(r.names().put(name, owner.get()))
                        : r.names().remove(name) != null;
            }
            if (changed) {
                owners.write(r);
            }
            return null;
        });
        return readRecord(configDigest).orElseThrow();
    }

    /** Records the compressed blobs of an image's layers (after a push made them). */
    public void recordLayerBlobs(Digest id, List<Descriptor> layerBlobs) {
        withLock(() -> {
            StoredImage img = readRecord(id).orElseThrow(() -> new SandboxException(ErrorCode.NOT_FOUND, "no image " + id));
            StoredImage updated = new StoredImage(id, img.config(), layerBlobs, img.stored(),
                    layerBlobs.stream().mapToLong(Descriptor::size).sum());
            writeAtomically(images.resolve(id.hex() + ".json"), recordJson(updated));
            return null;
        });
    }

    /**
     * The image a reference names: a name in {@link #names()} (as given, then with {@code :latest}), a full
     * id ({@code sha256:<hex>}) or an unambiguous id prefix of at least 12 hex digits.
     */
    public Optional<StoredImage> find(String reference) {
        Map<String, String> n = readNames();
        String id = n.get(reference);
        if (id == null && !hasTag(reference)) {
            id = n.get(reference + ":latest");
        }
        if (id != null) {
            return readRecord(Digest.parse(id));
        }
        String hex = reference.startsWith("sha256:") ? reference.substring(7) : reference;
        if (hex.matches("[0-9a-f]{12,64}")) {
            List<Digest> matches = ids().stream().filter(d -> d.hex().startsWith(hex)).toList();
            if (matches.size() == 1) {
                return readRecord(matches.get(0));
            }
            if (matches.size() > 1) {
                throw SandboxException.invalid("image", "'" + reference + "' names more than one image; give more digits");
            }
        }
        return Optional.empty();
    }

    static boolean hasTag(String reference) {
        int slash = reference.lastIndexOf('/');
        return reference.indexOf(':', slash + 1) >= 0 || reference.contains("@");
    }

    /** Every name and the image id it points at, sorted by name. */
    public Map<String, Digest> names() {
        Map<String, Digest> out = new TreeMap<>();
        readNames().forEach((k, v) -> out.put(k, Digest.parse(v)));
        return out;
    }

    public List<Digest> ids() {
        List<Digest> out = new ArrayList<>();
        try (Stream<Path> s = Files.list(images)) {
            s.map(p -> p.getFileName().toString()).filter(f -> f.matches("[0-9a-f]{64}\\.json"))
                    .sorted().forEach(f -> out.add(new Digest(f.substring(0, 64))));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
    }

    public List<StoredImage> list() {
        List<StoredImage> out = new ArrayList<>();
        for (Digest id : ids()) {
            readRecord(id).ifPresent(out::add);
        }
        return out;
    }

    /**
     * Removes a name; when no name is left on its image (or {@code reference} is an id), the image's record
     * too, unless {@code inUse} says a sandbox runs it (FAILED_PRECONDITION, saying so). Layers and blobs stay
     * until {@link #prune()}.
     *
     * @return the ids of the images whose records were removed
     */
    public List<Digest> remove(String reference, Predicate<Digest> inUse) {
        return withLock(() -> {
            StoredImage img = find(reference).orElseThrow(() -> new SandboxException(ErrorCode.NOT_FOUND,
                    "no image '" + reference + "'"));
            Map<String, String> n = readNames();
            boolean byName = n.containsKey(reference) || n.containsKey(reference + ":latest");
            String key = n.containsKey(reference) ? reference : reference + ":latest";
            long otherNames = n.entrySet().stream().filter(e -> e.getValue().equals(img.id().toString())
                    && !(byName && e.getKey().equals(key))).count();
            if (byName && otherNames > 0) {
                n.remove(key);
                writeNames(n);
                forgetNameOwners(Set.of(key));
                return List.of();
            }
            if (inUse.test(img.id())) {
                throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "image '" + reference
                        + "' is in use by a sandbox or a warm pool; destroy those first");
            }
            Set<String> gone = new HashSet<>();
            n.forEach((k, v) -> {
                if (v.equals(img.id().toString())) {
                    gone.add(k);
                }
            });
            n.keySet().removeAll(gone);
            writeNames(n);
            forgetNameOwners(gone);
            Files.deleteIfExists(images.resolve(img.id().hex() + ".json"));
            return List.of(img.id());
        });
    }

    /** A build-cache entry: the layer a step made, and when. */
    public record CacheEntry(Digest layer, Instant made) {
    }

    /** The build cache: the layer a step with this key made, if it is still here. */
    public Optional<CacheEntry> cachedEntry(Digest stepKey) {
        Path p = cache.resolve(stepKey.hex());
        try {
            String[] lines = Files.readString(p, StandardCharsets.UTF_8).trim().split("\n");
            Digest d = Digest.parse(lines[0].trim());
            Instant made = lines.length > 1 ? Instant.parse(lines[1].trim()) : Instant.EPOCH;
            return hasLayer(d) ? Optional.of(new CacheEntry(d, made)) : Optional.empty();
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    public void cache(Digest stepKey, Digest layer, Instant made) {
        writeAtomically(cache.resolve(stepKey.hex()), (layer + "\n" + made + "\n").getBytes(StandardCharsets.UTF_8));
    }

    /** Records the compressed blob of a layer (what a push sends), by the layer's diff_id. */
    public void recordLayerBlob(Digest diffId, Descriptor blob) {
        ObjectNode o = JSON.createObjectNode().put("mediaType", blob.mediaType()).put("digest", blob.digest().toString())
                .put("size", blob.size());
        try {
            writeAtomically(layerBlobs.resolve(diffId.hex()), JSON.writeValueAsBytes(o));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The compressed blob recorded for a layer, if any and still stored. */
    public Optional<Descriptor> layerBlob(Digest diffId) {
        try {
            JsonNode o = JSON.readTree(Files.readAllBytes(layerBlobs.resolve(diffId.hex())));
            Descriptor d = new Descriptor(o.path("mediaType").asText(), Digest.parse(o.path("digest").asText()),
                    o.path("size").asLong());
            return blobs.has(d.digest()) ? Optional.of(d) : Optional.empty();
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /** What {@link #prune()} freed. */
    public record Pruned(int layers, int blobs, int cacheEntries, long bytes) {
    }

    /**
     * Deletes what no image record names: layer directories, blobs, build-cache entries whose layer is gone,
     * unnamed images (a build's intermediates) and leftovers of interrupted writes. {@code keepImages} are kept
     * with their layers, named or not (images a running sandbox or a build in progress uses).
     */
    public Pruned prune(Set<Digest> keepImages) {
        return prune(keepImages, Set.of());
    }

    /** As {@link #prune(Set)}, also keeping the layer directories named {@code keepLayerNames}. */
    public Pruned prune(Set<Digest> keepImages, Set<String> keepLayerNames) {
        Set<Digest> keepLayers = new HashSet<>();
        for (Digest id : keepImages) {
            readRecord(id).ifPresent(img -> keepLayers.addAll(img.config().diffIds()));
        }
        return withLock(() -> {
            Set<String> liveLayers = new HashSet<>(keepLayerNames);
            Set<Digest> liveBlobs = new HashSet<>();
            keepLayers.forEach(d -> liveLayers.add(layerName(d)));
            Map<String, Digest> named = names();
            boolean hostBased = false;
            for (StoredImage img : list()) {
                if (!named.containsValue(img.id()) && !keepImages.contains(img.id())) {
                    // an unnamed image is a build's intermediate: it goes, and with it what only it used
                    Files.deleteIfExists(images.resolve(img.id().hex() + ".json"));
                    continue;
                }
                hostBased |= img.config().hostBased();
                img.config().diffIds().forEach(d -> {
                    liveLayers.add(layerName(d));
                    layerBlob(d).ifPresent(b -> liveBlobs.add(b.digest()));
                });
                liveBlobs.add(img.id());
                img.layers().forEach(l -> liveBlobs.add(l.digest()));
            }
            try (Stream<Path> s = Files.list(layerBlobs)) {
                for (Path p : s.toList()) {
                    String name = p.getFileName().toString();
                    if (!name.matches("[0-9a-f]{64}") || !liveLayers.contains(name.substring(0, LAYER_NAME_HEX))) {
                        Files.deleteIfExists(p);
                    }
                }
            }
            int nl = 0;
            int nb = 0;
            int nc = 0;
            long bytes = 0;
            try (Stream<Path> s = Files.list(layers)) {
                for (Path p : s.toList()) {
                    String name = p.getFileName().toString();
                    // The host image's roots (HOST_ROOT_PREFIX) that images based on it stack on are kept while
                    // any such image is; a removed one is generated again by the next sandbox that needs it.
                    if (!liveLayers.contains(name) && !(hostBased && name.startsWith(HOST_ROOT_PREFIX))) {
                        deleteTree(p);
                        nl++;
                    }
                }
            }
            for (Digest d : blobs.list()) {
                if (!liveBlobs.contains(d)) {
                    bytes += blobs.size(d);
                    blobs.delete(d);
                    nb++;
                }
            }
            blobs.removeTemporaries();
            try (Stream<Path> s = Files.list(cache)) {
                for (Path p : s.toList()) {
                    if (!p.getFileName().toString().matches("[0-9a-f]{64}")) {
                        Files.deleteIfExists(p);
                        continue;
                    }
                    if (cachedEntry(new Digest(p.getFileName().toString())).isEmpty()) {
                        Files.deleteIfExists(p);
                        nc++;
                    }
                }
            }
            forgetOwnersOfGoneLayers();
            return new Pruned(nl, nb, nc, bytes);
        });
    }

    // ---- owners ----

    /**
     * Records that {@code owner}'s pull or build brought the stored layer {@code diffId} into the store, holding
     * {@code bytes} there; a layer already charged keeps its first owner.
     *
     * @return whether it is now charged to {@code owner} by this call
     */
    public boolean charge(Digest diffId, String owner, long bytes) {
        return withLock(() -> {
            LayerOwners.Records r = owners.read();
            if (r.layers().containsKey(diffId) || !hasLayer(diffId)) {
                return false;
            }
            r.layers().put(diffId, new LayerOwners.Charge(owner, bytes));
            owners.write(r);
            return true;
        });
    }

    /** The owner whose pull or build last wrote the name {@code name} (exactly as stored), if one did. */
    public Optional<String> nameOwner(String name) {
        return readNames().containsKey(name) ? Optional.ofNullable(owners.read().names().get(name)) : Optional.empty();
    }

    /** Called holding the lock. */
    private void forgetNameOwners(Set<String> names) {
        LayerOwners.Records r = owners.read();
        if (r.names().keySet().removeAll(names)) {
            owners.write(r);
        }
    }

    /** The stored layers charged to {@code owner}, with the bytes each holds. */
    public Map<Digest, Long> owned(String owner) {
        Map<Digest, Long> out = new TreeMap<>(Comparator.comparing(Digest::hex));
        owners.read().layers().forEach((d, c) -> {
            if (c.owner().equals(owner) && hasLayer(d)) {
                out.put(d, c.bytes());
            }
        });
        return out;
    }

    /** What the stored layers charged to {@code owner} hold, in all. */
    public long ownedBytes(String owner) {
        return owned(owner).values().stream().mapToLong(Long::longValue).sum();
    }

    private void forgetOwnersOfGoneLayers() {
        LayerOwners.Records r = owners.read();
        if (r.layers().keySet().removeIf(d -> !hasLayer(d))) {
            owners.write(r);
        }
    }

    /**
     * Deletes those of {@code layers} (with their compressed blobs) and of {@code blobs} that no named image,
     * no image of {@code keepImages} and no layer directory named in {@code keepLayerNames} needs, with the unnamed
     * images (a build's intermediates) that stacked a deleted layer: what a failed pull or build brought in, or an
     * owner's layers once its image is removed. The rest of the store is left to {@link #prune}.
     *
     * @return the bytes freed, as charged (a layer charged to no owner counts its compressed blob)
     */
    public long collect(java.util.Collection<Digest> layers, java.util.Collection<Digest> blobDigests,
                        Set<Digest> keepImages, Set<String> keepLayerNames) {
        return withLock(() -> {
            Set<String> liveLayers = new HashSet<>(keepLayerNames);
            Set<Digest> liveBlobs = new HashSet<>();
            Map<String, Digest> named = names();
            List<StoredImage> unnamed = new ArrayList<>();
            for (StoredImage img : list()) {
                if (!named.containsValue(img.id()) && !keepImages.contains(img.id())) {
                    unnamed.add(img);
                    continue;
                }
                img.config().diffIds().forEach(d -> {
                    liveLayers.add(layerName(d));
                    layerBlob(d).ifPresent(b -> liveBlobs.add(b.digest()));
                });
                liveBlobs.add(img.id());
                img.layers().forEach(l -> liveBlobs.add(l.digest()));
            }
            LayerOwners.Records records = owners.read();
            Map<Digest, LayerOwners.Charge> charges = records.layers();
            Set<Digest> deleted = new HashSet<>();
            long bytes = 0;
            for (Digest d : new java.util.LinkedHashSet<>(layers)) {
                if (!hasLayer(d) || liveLayers.contains(layerName(d))) {
                    continue;
                }
                Optional<Descriptor> blob = layerBlob(d);
                deleteTree(layerPath(d));
                Files.deleteIfExists(layerBlobs.resolve(d.hex()));
                LayerOwners.Charge c = charges.remove(d);
                bytes += c != null ? c.bytes() : blob.map(Descriptor::size).orElse(0L);
                if (blob.isPresent() && !liveBlobs.contains(blob.get().digest())) {
                    blobs.delete(blob.get().digest());
                }
                deleted.add(d);
            }
            for (Digest b : blobDigests) {
                if (!liveBlobs.contains(b) && blobs.has(b)) {
                    bytes += blobs.size(b);
                    blobs.delete(b);
                }
            }
            for (StoredImage img : unnamed) {
                if (img.config().diffIds().stream().anyMatch(deleted::contains)) {
                    Files.deleteIfExists(images.resolve(img.id().hex() + ".json"));
                }
            }
            if (!deleted.isEmpty()) {
                owners.write(records);
            }
            return bytes;
        });
    }

    // ---- records ----

    public Optional<StoredImage> get(Digest id) {
        return readRecord(id);
    }

    private Optional<StoredImage> readRecord(Digest id) {
        Path p = images.resolve(id.hex() + ".json");
        try {
            JsonNode r = JSON.readTree(Files.readAllBytes(p));
            List<Descriptor> ls = new ArrayList<>();
            for (JsonNode l : r.path("layers")) {
                ls.add(new Descriptor(l.path("mediaType").asText(), Digest.parse(l.path("digest").asText()),
                        l.path("size").asLong()));
            }
            ImageConfig config = ImageConfig.parse(blobs.read(id, 8 << 20));
            return Optional.of(new StoredImage(id, config, ls, Instant.parse(r.path("stored").asText()),
                    r.path("size").asLong()));
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException | RuntimeException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "the record of image " + id + " is unreadable: " + e.getMessage(), e);
        }
    }

    private static byte[] recordJson(StoredImage img) {
        ObjectNode r = JSON.createObjectNode();
        r.put("id", img.id().toString());
        r.put("stored", img.stored().toString());
        r.put("size", img.size());
        ArrayNode ls = r.putArray("layers");
        for (Descriptor d : img.layers()) {
            ls.addObject().put("mediaType", d.mediaType()).put("digest", d.digest().toString()).put("size", d.size());
        }
        try {
            return JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(r);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private Map<String, String> readNames() {
        Path p = root.resolve("names.json");
        Map<String, String> out = new TreeMap<>();
        try {
            JsonNode n = JSON.readTree(Files.readAllBytes(p));
            n.fields().forEachRemaining(e -> out.put(e.getKey(), e.getValue().asText()));
        } catch (NoSuchFileException e) {
            return out;
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "the image names in " + p + " are unreadable: " + e.getMessage(), e);
        }
        return out;
    }

    private void writeNames(Map<String, String> names) {
        ObjectNode n = JSON.createObjectNode();
        new TreeMap<>(names).forEach(n::put);
        try {
            writeAtomically(root.resolve("names.json"), JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(n));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    static void writeAtomically(Path target, byte[] content) {
        try {
            Path tmp = Files.createTempFile(target.getParent(), ".tmp-", "");
            Files.write(tmp, content);
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot write " + target + ": " + e, e);
        }
    }

    private interface LockedWork<T> {
        T run() throws IOException;
    }

    private <T> T withLock(LockedWork<T> work) {
        synchronized (this) {
            try (FileChannel ch = FileChannel.open(root.resolve("lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
                 FileLock ignored = ch.lock()) {
                return work.run();
            } catch (IOException e) {
                throw new SandboxException(ErrorCode.UNAVAILABLE, "image store " + root + ": " + e, e);
            }
        }
    }

    /** Deletes a tree without following symbolic links. */
    public static void deleteTree(Path dir) {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            // Files.walk does not follow links; read-only directories in a layer are no obstacle to root.
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (NoSuchFileException e) {
            // gone already
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot remove " + dir + ": " + e, e);
        }
    }
}
