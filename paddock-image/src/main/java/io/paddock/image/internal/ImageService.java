package io.paddock.image.internal;

import io.paddock.DestinationRule;
import io.paddock.ErrorCode;
import io.paddock.ImageListener;
import io.paddock.SandboxException;
import io.paddock.Image;
import io.paddock.ImageInfo;
import io.paddock.RegistryAuth;
import io.paddock.image.internal.build.BuildContext;
import io.paddock.image.internal.build.Dockerfile;
import io.paddock.image.internal.build.ParsedDockerfile;
import io.paddock.image.internal.layer.LayerBlob;
import io.paddock.image.internal.layer.LayerExtractor;
import io.paddock.image.internal.layer.LayerWriter;
import io.paddock.image.internal.oci.Descriptor;
import io.paddock.image.internal.oci.ImageRef;
import io.paddock.image.internal.registry.Credentials;
import io.paddock.image.internal.registry.CredentialsProvider;
import io.paddock.image.internal.registry.DockerConfigCredentials;
import io.paddock.image.internal.registry.PullListener;
import io.paddock.image.internal.registry.Pulled;
import io.paddock.image.internal.registry.PushListener;
import io.paddock.image.internal.registry.RegistryClient;
import io.paddock.image.internal.layer.LayerResult;
import io.paddock.image.internal.oci.Digest;
import io.paddock.image.internal.oci.ImageConfig;
import io.paddock.image.internal.oci.MediaTypes;
import io.paddock.image.internal.store.ImageStore;
import io.paddock.runtime.internal.host.ImageTools;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The image subsystem as the engine sees it: turns a reference into the layers a sandbox runs on
 * ({@link #forSandbox}), building Debian bases on first use, and stores what pulls and builds bring.
 * Thread-safe; concurrent requests for the same Debian base build it once.
 */
public final class ImageService {
    static final Duration DEBIAN_TIMEOUT = Duration.ofMinutes(30);

    private final ImageStore store;
    private final LayerExtractor extractor;
    /** Where Debian bases come from: the host's apt mirror, read at each build (empty: mmdebstrap's default). */
    private final java.util.function.Supplier<Optional<String>> debianMirror;
    private final ConcurrentHashMap<String, java.util.concurrent.locks.ReentrantLock> building = new ConcurrentHashMap<>();
    /** The layers of the builds and pulls running in this process, by operation: kept by collect and prune. */
    private final ConcurrentHashMap<Object, java.util.Collection<Digest>> pinned = new ConcurrentHashMap<>();

    public ImageService(Path root) {
        this(root, () -> DebianBase.hostMirror(Path.of("/etc/apt")));
    }

    /** An image service whose Debian bases come from {@code debianMirror} (a URL mmdebstrap takes). */
    public ImageService(Path root, String debianMirror) {
        this(root, () -> Optional.of(debianMirror));
    }

    private ImageService(Path root, java.util.function.Supplier<Optional<String>> debianMirror) {
        this.store = new ImageStore(root);
        this.extractor = new LayerExtractor(io.paddock.image.internal.layer.Whiteouts.MKNOD);
        this.debianMirror = debianMirror;
    }

    public ImageStore store() {
        return store;
    }

    public LayerExtractor extractor() {
        return extractor;
    }

    /**
     * The stored image a reference names; a Debian base ({@link DebianBase}) not stored yet is built first.
     *
     * @throws SandboxException NOT_FOUND saying how to get the image, when it is not here
     */
    public ImageStore.StoredImage require(String reference, ImageListener listener) {
        return require(reference, listener, ImageCharge.NONE, DEBIAN_TIMEOUT);
    }

    /**
     * {@link #require(String, ImageListener)}, a Debian base built (or waited for, while another request builds it)
     * within {@code within} at most, and never past {@link #DEBIAN_TIMEOUT}: a build's FROM with what is left of
     * its time.
     *
     * @throws SandboxException DEADLINE_EXCEEDED when the base is not built within it (mmdebstrap is stopped)
     */
    public ImageStore.StoredImage require(String reference, ImageListener listener, Duration within) {
        return require(reference, listener, ImageCharge.NONE, within);
    }

    /** {@link #require(String, ImageListener)}, a Debian base it builds charged to {@code charge}'s owner. */
    ImageStore.StoredImage require(String reference, ImageListener listener, ImageCharge charge) {
        return require(reference, listener, charge, DEBIAN_TIMEOUT);
    }

    /** {@link #require(String, ImageListener, Duration)}, a Debian base it builds charged to {@code charge}'s owner. */
    ImageStore.StoredImage require(String reference, ImageListener listener, ImageCharge charge, Duration within) {
        Optional<ImageStore.StoredImage> found = find(reference);
        if (found.isPresent()) {
            return found.get();
        }
        Optional<DebianBase> debian = DebianBase.parse(reference);
        if (debian.isPresent()) {
            return debian(debian.get(), listener, charge, within);
        }
        throw new SandboxException(ErrorCode.NOT_FOUND, "image '" + reference + "' is not here; pull it"
                + " (paddock image pull " + reference + ") or build it (paddock image build -t " + reference + " DIR)");
    }

    /** What a sandbox of this image runs on. */
    public SandboxImage forSandbox(String reference, ImageListener listener) {
        return SandboxImage.of(store, require(reference, listener));
    }

    /** The same for an image already resolved to its id (a restarted engine re-adopting a sandbox). */
    public Optional<SandboxImage> forSandbox(Digest id) {
        return store.get(id).map(img -> SandboxImage.of(store, img));
    }

    /**
     * Builds (or returns the stored) Debian base with mmdebstrap, from the host's Debian mirror: one layer,
     * the environment Docker's Debian images have, {@code bash} as the command.
     */
    public ImageStore.StoredImage debian(DebianBase base, ImageListener listener) {
        return debian(base, listener, ImageCharge.NONE, DEBIAN_TIMEOUT);
    }

    private ImageStore.StoredImage debian(DebianBase base, ImageListener listener, ImageCharge charge, Duration within) {
        long deadline = System.nanoTime() + Math.min(within.toNanos(), DEBIAN_TIMEOUT.toNanos());
        java.util.concurrent.locks.ReentrantLock lock = building.computeIfAbsent(base.name() + base.packages(),
                k -> new java.util.concurrent.locks.ReentrantLock());
        try {
            if (!lock.tryLock(Math.max(0, deadline - System.nanoTime()), java.util.concurrent.TimeUnit.NANOSECONDS)) {
                throw new SandboxException(ErrorCode.DEADLINE_EXCEEDED, "the Debian base " + base.name() + " that"
                        + " another request is building was not ready within " + within);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SandboxException(ErrorCode.UNAVAILABLE, "interrupted while waiting for the Debian base " + base.name());
        }
        try {
            Optional<ImageStore.StoredImage> found = base.packages().isEmpty() ? store.find(base.name()) : Optional.empty();
            if (found.isPresent()) {
                return found.get();
            }
            listener.log("building " + base.name() + " from Debian's packages with mmdebstrap (once; later uses reuse it)");
            Path tar = store.root().resolve(".debian-" + Long.toHexString(System.nanoTime()) + ".tar");
            try {
                List<String> packages = base.packages();
                Duration left = Duration.ofNanos(deadline - System.nanoTime());
                if (left.isNegative() || left.isZero()) {
                    throw new SandboxException(ErrorCode.DEADLINE_EXCEEDED, "no time was left to build the Debian base "
                            + base.name());
                }
                ImageTools.mmdebstrap(base.suite(), "minbase", packages, debianMirror.get(), tar, left, listener::log,
                        slimOptions(base));
                ImageConfig config = ImageConfig.empty()
                        .withEnv(List.of("PATH=" + SandboxImage.DEFAULT_PATH))
                        .withCmd(List.of("bash"))
                        .withLabels(Map.of("io.paddock.debian.suite", base.suite(),
                                "io.paddock.debian.packages", String.join(",", packages)))
                        .withCreated(Optional.of(Instant.now()));
                ImageStore.StoredImage img = importLayers(List.of(tar), config,
                        base.packages().isEmpty() ? List.of(base.name()) : List.of(), charge);
                Digest configDigest = img.id();
                listener.log("built " + base.name() + " (" + configDigest.shortHex(12) + ")");
                return img;
            } finally {
                try {
                    Files.deleteIfExists(tar);
                } catch (IOException ignored) {
                    // prune removes it
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Stores an image made of uncompressed layer tars (bottom first) and a configuration whose layers are set
     * from them; names it {@code names}.
     */
    public ImageStore.StoredImage importLayers(List<Path> tars, ImageConfig config, List<String> names) {
        return importLayers(tars, config, names, ImageCharge.NONE);
    }

    /** {@link #importLayers(List, ImageConfig, List)}, each layer it brings in charged to {@code charge}'s owner. */
    ImageStore.StoredImage importLayers(List<Path> tars, ImageConfig config, List<String> names, ImageCharge charge) {
        List<Digest> diffIds = new java.util.ArrayList<>();
        for (Path tar : tars) {
            Path work = store.newLayerStaging();
            try (InputStream in = Files.newInputStream(tar)) {
                extractor.extract(in, MediaTypes.OCI_LAYER, work, LayerExtractor.Limits.DEFAULT);
                // Named by the tar Paddock writes of it (kept as its blob), not by the tar it came in: so that
                // pushing it later sends exactly the layer its configuration names.
                WrittenLayer written = writeBlob(work);
                Digest diffId = written.diffId();
                boolean had = store.hasLayer(diffId);
                store.commitLayer(work, diffId);
                diffIds.add(diffId);
                if (!had) {
                    charge.layerStored(diffId, written.blob().size());
                }
            } catch (IOException e) {
                throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot read layer " + tar + ": " + e, e);
            } finally {
                ImageStore.deleteTree(work);
            }
        }
        Digest configDigest = store.blobs().put(config.withLayers(diffIds).toJson());
        return store.put(configDigest, List.of(), names, charge.owner());
    }

    // ---- names ----

    /**
     * The name an image is stored under: Docker's familiar form with its tag ({@code 127.0.0.1:5000/acc/busy:2},
     * {@code busybox:latest}, {@code myapp:1}).
     */
    public static String canonicalName(String reference) {
        ImageRef ref = ImageRef.parse(reference);
        return ref.familiar();
    }

    /** Finds an image by a reference as the user wrote it, or by its canonical name. */
    public Optional<ImageStore.StoredImage> find(String reference) {
        Optional<ImageStore.StoredImage> found = store.find(reference);
        if (found.isPresent()) {
            return found;
        }
        try {
            return store.find(canonicalName(reference));
        } catch (SandboxException e) {
            return Optional.empty();
        }
    }

    public ImageInfo info(ImageStore.StoredImage img) {
        List<String> names = new java.util.ArrayList<>();
        store.names().forEach((n, id) -> {
            if (id.equals(img.id())) {
                names.add(n);
            }
        });
        ImageConfig c = img.config();
        // Compressed layer sizes as a registry would count them: from the record when pulled, else from the
        // blobs written for built and imported layers.
        long size = img.size() > 0 ? img.size()
                : c.diffIds().stream().mapToLong(d -> store.layerBlob(d).map(Descriptor::size).orElse(0L)).sum();
        return new ImageInfo(img.id().toString(), names, size, c.diffIds().size(), c.created(), c.env(), c.user(),
                c.workingDir(), c.entrypoint(), c.cmd(), c.labels(), c.exposedPorts());
    }

    public List<ImageInfo> list() {
        return store.list().stream().map(this::info).filter(i -> !i.names().isEmpty()).toList();
    }

    public ImageInfo inspect(String reference) {
        return info(find(reference).orElseThrow(() -> new SandboxException(ErrorCode.NOT_FOUND, "no image '" + reference + "'")));
    }

    /**
     * The lower-layer lists of the overlays mounted on this host right now, each as the sandbox's mount
     * names them ({@code <layer>:<layer>…}, topmost first): every engine's sandboxes, a daemon's included,
     * whichever process asks. An image or layer in one of them is in use, whoever created the sandbox.
     */
    static List<String> mountedLayerLists(Path mountinfo) {
        List<String> out = new java.util.ArrayList<>();
        try {
            for (String line : Files.readAllLines(mountinfo)) {
                int dash = line.indexOf(" - overlay ");
                int at = line.indexOf("lowerdir=", Math.max(dash, 0));
                if (dash < 0 || at < 0) {
                    continue;
                }
                String value = line.substring(at + 9);
                int end = value.indexOf(',');
                out.add(end < 0 ? value.trim() : value.substring(0, end));
            }
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot read " + mountinfo + ": " + e, e);
        }
        return out;
    }

    /** Whether a sandbox anywhere on this host runs the image {@code id} (its exact layers are mounted). */
    public boolean mountedOnHost(Digest id) {
        Optional<ImageStore.StoredImage> img = store.get(id);
        if (img.isEmpty() || img.get().config().diffIds().isEmpty()) {
            return false;
        }
        List<String> names = new java.util.ArrayList<>();
        img.get().config().diffIds().forEach(d -> names.add(0, ImageStore.layerName(d)));
        String lowers = String.join(":", names);
        // An image based on the host image has a host root below its layers (ImageStore.HOST_ROOT_PREFIX).
        return mountedLayerLists(Path.of("/proc/self/mountinfo")).stream().anyMatch(l -> l.equals(lowers)
                || img.get().config().hostBased() && l.startsWith(lowers + ":" + ImageStore.HOST_ROOT_PREFIX));
    }

    /**
     * Prunes the store, keeping {@code keepImages} and every layer a mounted overlay on this host stacks, so
     * that pruning from one engine (the CLI's) never pulls a layer from under another's running sandbox.
     */
    public ImageStore.Pruned prune(java.util.Set<Digest> keepImages) {
        return store.prune(keepImages, busyLayerNames());
    }

    public void remove(String reference, java.util.function.Predicate<Digest> inUse) {
        Optional<ImageStore.StoredImage> img = find(reference);
        if (img.isEmpty()) {
            throw new SandboxException(ErrorCode.NOT_FOUND, "no image '" + reference + "'");
        }
        String key = store.find(reference).isPresent() ? reference : canonicalName(reference);
        store.remove(key, inUse);
    }

    // ---- registries ----

    private static RegistryClient client(RegistryAuth auth, DestinationRule destinations) {
        CredentialsProvider config = auth.configFile().map(f -> (CredentialsProvider) DockerConfigCredentials.load(f))
                .orElse(r -> Optional.empty());
        CredentialsProvider provider = auth.username().isPresent()
                ? r -> Optional.of(new Credentials(auth.username().get(), auth.password().orElse("")))
                : config;
        return RegistryClient.builder().insecure(auth.isInsecure()).credentials(provider).destinations(destinations)
                .proxy(destinations.proxy().orElse(null)).build();
    }

    /** Pulls linux/amd64 of {@code reference}, unpacks its layers (each verified against its diff_id) and names it. */
    public ImageStore.StoredImage pull(String reference, RegistryAuth auth, ImageListener listener) {
        return pull(reference, auth, listener, DestinationRule.ANYWHERE);
    }

    /**
     * {@link #pull(String, RegistryAuth, ImageListener)}, with {@code destinations} called on every URL before a
     * request goes there (the registry, its redirects, its token realm); it throws to refuse one.
     */
    public ImageStore.StoredImage pull(String reference, RegistryAuth auth, ImageListener listener,
                                       DestinationRule destinations) {
        return pull(reference, auth, listener, destinations, ImageCharge.NONE);
    }

    /**
     * {@link #pull(String, RegistryAuth, ImageListener, DestinationRule)}, each layer it unpacks into the store
     * charged to {@code charge}'s owner (RESOURCE_EXHAUSTED past its maximum, checked after each layer; the blobs it
     * fetched are in {@link ImageCharge#blobs()} for {@link #collect}).
     */
    public ImageStore.StoredImage pull(String reference, RegistryAuth auth, ImageListener listener,
                                       DestinationRule destinations, ImageCharge charge) {
        ImageRef ref = ImageRef.parse(reference);
        if (ref.isLocalName()) {
            throw SandboxException.invalid("image", "'" + reference + "' names no registry; pull needs one, e.g."
                    + " 127.0.0.1:5000/" + ref.familiar());
        }
        Pulled pulled = client(auth, destinations).pull(ref, "linux/amd64", store.blobs(), new PullListener() {
            @Override
            public void layerProgress(Descriptor layer, long bytesDone) {
                listener.layer(layer.digest().toString(), bytesDone, layer.size(), false, false);
            }

            @Override
            public void layerDone(Descriptor layer, boolean cached) {
                if (!cached) {
                    charge.blobFetched(layer.digest());
                }
                listener.layer(layer.digest().toString(), layer.size(), layer.size(), true, cached);
            }
        });
        ImageConfig config = ImageConfig.parse(store.blobs().read(pulled.config(), 8 << 20));
        Object op = new Object();
        pin(op, config.diffIds());
        try {
            return storePulled(reference, ref, pulled, config, charge);
        } finally {
            unpin(op);
        }
    }

    private ImageStore.StoredImage storePulled(String reference, ImageRef ref, Pulled pulled, ImageConfig config,
                                               ImageCharge charge) {
        if (config.diffIds().size() != pulled.layers().size()) {
            throw new SandboxException(ErrorCode.INVALID_ARGUMENT, "image " + reference + " names "
                    + pulled.layers().size() + " layers but its configuration " + config.diffIds().size());
        }
        charge.checkAdding(charge.blobs().stream().filter(store.blobs()::has).mapToLong(store.blobs()::size).sum(),
                charge.blobs().size() == 1 ? "the layer the pull fetched" : "the layers the pull fetched");
        for (int i = 0; i < pulled.layers().size(); i++) {
            Descriptor blob = pulled.layers().get(i);
            Digest diffId = config.diffIds().get(i);
            if (!store.hasLayer(diffId)) {
                Path staging = store.newLayerStaging();
                try (InputStream in = store.blobs().open(blob.digest())) {
                    LayerResult r = extractor.extract(in, blob.mediaType(), staging, LayerExtractor.Limits.DEFAULT);
                    if (!r.diffId().equals(diffId)) {
                        throw new SandboxException(ErrorCode.INVALID_ARGUMENT, "layer " + blob.digest()
                                + " of " + reference + " unpacks to " + r.diffId() + ", not the diff_id its image names ("
                                + diffId + ")");
                    }
                    store.commitLayer(staging, diffId);
                } catch (IOException e) {
                    throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot read layer " + blob.digest() + ": " + e, e);
                } finally {
                    ImageStore.deleteTree(staging);
                }
                store.recordLayerBlob(diffId, blob);
                charge.layerStored(diffId, blob.size());
                continue;
            }
            store.recordLayerBlob(diffId, blob);
        }
        return store.put(pulled.config(), pulled.layers(), List.of(ref.familiar()), charge.owner());
    }

    /**
     * Pushes a stored image to {@code target}: layers that have no compressed blob yet (built here) are written
     * as gzip'd tars first; then blobs the registry lacks and an OCI manifest.
     */
    public ImageStore.StoredImage push(String reference, String target, RegistryAuth auth, ImageListener listener) {
        return push(reference, target, auth, listener, DestinationRule.ANYWHERE);
    }

    /** {@link #push(String, String, RegistryAuth, ImageListener)}, with every destination checked as for a pull. */
    public ImageStore.StoredImage push(String reference, String target, RegistryAuth auth, ImageListener listener,
                                       DestinationRule destinations) {
        ImageStore.StoredImage img = find(reference).orElseThrow(() -> new SandboxException(ErrorCode.NOT_FOUND,
                "no image '" + reference + "'"));
        ImageRef ref = ImageRef.parse(target);
        if (ref.isLocalName()) {
            throw SandboxException.invalid("target", "'" + target + "' names no registry, e.g. 127.0.0.1:5000/"
                    + ref.familiar());
        }
        List<Descriptor> layers = new java.util.ArrayList<>();
        for (Digest diffId : img.config().diffIds()) {
            Optional<Descriptor> blob = store.layerBlob(diffId);
            layers.add(blob.isPresent() ? blob.get() : compress(diffId, listener));
        }
        long configSize = store.blobs().size(img.id());
        com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
        com.fasterxml.jackson.databind.node.ObjectNode m = json.createObjectNode();
        m.put("schemaVersion", 2);
        m.put("mediaType", MediaTypes.OCI_MANIFEST);
        m.putObject("config").put("mediaType", MediaTypes.OCI_CONFIG).put("digest", img.id().toString()).put("size", configSize);
        com.fasterxml.jackson.databind.node.ArrayNode ls = m.putArray("layers");
        for (Descriptor d : layers) {
            ls.addObject().put("mediaType", d.mediaType()).put("digest", d.digest().toString()).put("size", d.size());
        }
        byte[] manifest;
        try {
            manifest = json.writeValueAsBytes(m);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        Digest manifestDigest = store.blobs().put(manifest);
        List<Descriptor> blobs = new java.util.ArrayList<>();
        blobs.add(new Descriptor(MediaTypes.OCI_CONFIG, img.id(), configSize));
        blobs.addAll(layers);
        client(auth, destinations).push(ref, store.blobs(), manifestDigest, MediaTypes.OCI_MANIFEST, blobs, new PushListener() {
            @Override
            public void blobDone(Descriptor blob, boolean alreadyPresent) {
                listener.layer(blob.digest().toString(), blob.size(), blob.size(), true, alreadyPresent);
            }
        });
        store.recordLayerBlobs(img.id(), layers);
        return store.get(img.id()).orElseThrow();
    }

    /** Writes a stored layer as a gzip'd tar blob and records it. */
    private Descriptor compress(Digest diffId, ImageListener listener) {
        WrittenLayer w = writeBlob(store.layerPath(diffId));
        Descriptor desc = w.blob();
        Digest written = w.diffId();
        if (!written.equals(diffId)) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "layer " + diffId + " does not re-tar to the"
                    + " same content (" + written + "); it cannot be pushed as is");
        }
        listener.log("compressed layer " + diffId.shortHex(12) + " (" + desc.size() / 1024 + " KiB)");
        return desc;
    }

    /** A layer directory written as a blob: the tar's diff_id and the stored compressed blob. */
    record WrittenLayer(Digest diffId, Descriptor blob) {
    }

    /** Writes a layer directory (0-based ids) as a gzip'd tar blob, stored and recorded under its diff_id. */
    WrittenLayer writeBlob(Path dir) {
        Path tmp = null;
        try {
            tmp = Files.createTempFile(store.root(), ".layer-", ".tar.gz");
            LayerBlob blob;
            try (java.io.OutputStream out = Files.newOutputStream(tmp)) {
                blob = new LayerWriter().write(dir, out, true, 0);
            }
            Digest d;
            try (InputStream in = Files.newInputStream(tmp)) {
                d = store.blobs().put(in, Long.MAX_VALUE, blob.digest());
            }
            Descriptor desc = new Descriptor(MediaTypes.OCI_LAYER_GZIP, d, blob.size());
            store.recordLayerBlob(blob.diffId(), desc);
            return new WrittenLayer(blob.diffId(), desc);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot write a layer blob of " + dir + ": " + e, e);
        } finally {
            if (tmp != null) {
                try {
                    Files.deleteIfExists(tmp);
                } catch (IOException ignored) {
                    // prune sweeps temporaries
                }
            }
        }
    }

    // ---- layers from sandboxes ----

    /**
     * Turns a sandbox's writable layer ({@code upper}, files owned by host ids from {@code uidBase}) into a stored
     * layer, less {@code paddockFiles} (what Paddock put there: see the runtime's {@code WritableLayer}), without
     * changing it: a build's RUN step and a snapshot. Returns the layer's diff_id.
     */
    public Digest commitUpper(Path upper, long uidBase, java.util.Set<String> paddockFiles) {
        return storeLayer(upper, uidBase, paddockFiles, ImageCharge.NONE, 0L);
    }

    /**
     * {@link #commitUpper(Path, long, java.util.Set)} within {@code within} (empty: no limit): past it, the commit
     * stops where it is, at the next block it writes or reads, leaving nothing behind (its temporary tar, blob and
     * staging directory are removed, as on any failure).
     *
     * @throws SandboxException DEADLINE_EXCEEDED when it does not end within it
     */
    public Digest commitUpper(Path upper, long uidBase, java.util.Set<String> paddockFiles,
                              Optional<Duration> within) {
        return storeLayer(upper, uidBase, paddockFiles, ImageCharge.NONE, within);
    }

    /** {@link #commitUpper(Path, long, java.util.Set)}, the layer charged to {@code charge}'s owner if it is new. */
    public Digest commitUpper(Path upper, long uidBase, java.util.Set<String> paddockFiles, ImageCharge charge) {
        return storeLayer(upper, uidBase, paddockFiles, charge, 0L);
    }

    /** {@link #commitUpper(Path, long, java.util.Set, Optional)}, charged as {@link #commitUpper(Path, long, java.util.Set, ImageCharge)}. */
    Digest commitUpper(Path upper, long uidBase, java.util.Set<String> paddockFiles, ImageCharge charge,
                       Optional<Duration> within) {
        return storeLayer(upper, uidBase, paddockFiles, charge, within);
    }

    /** {@link #storeLayer(Path, long, java.util.Set)} within {@code within}, as {@link #commitUpper} with one. */
    Digest storeLayer(Path dir, long uidShift, java.util.Set<String> excluded, Optional<Duration> within) {
        return storeLayer(dir, uidShift, excluded, ImageCharge.NONE, within);
    }

    /** {@link #storeLayer(Path, long, java.util.Set, Optional)}, the layer charged to {@code charge}'s owner if it is new. */
    Digest storeLayer(Path dir, long uidShift, java.util.Set<String> excluded, ImageCharge charge,
                      Optional<Duration> within) {
        return storeLayer(dir, uidShift, excluded, charge,
                within.map(d -> System.nanoTime() + Math.max(1, d.toNanos())).orElse(0L));
    }

    /** Throws DEADLINE_EXCEEDED once {@code deadline} (System.nanoTime(); 0: none) has passed. */
    private static void checkDeadline(long deadline) {
        if (deadline != 0 && System.nanoTime() - deadline > 0) {
            throw new SandboxException(ErrorCode.DEADLINE_EXCEEDED, "the step's layer was still being stored when the"
                    + " build's time ran out; storing it was stopped");
        }
    }

    /** {@code out}, checking {@code deadline} at every write. */
    private static java.io.OutputStream bounded(java.io.OutputStream out, long deadline) {
        if (deadline == 0) {
            return out;
        }
        return new java.io.FilterOutputStream(out) {
            @Override
            public void write(int b) throws IOException {
                checkDeadline(deadline);
                out.write(b);
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                checkDeadline(deadline);
                out.write(b, off, len);
            }
        };
    }

    /** {@code in}, checking {@code deadline} at every read. */
    private static InputStream bounded(InputStream in, long deadline) {
        if (deadline == 0) {
            return in;
        }
        return new java.io.FilterInputStream(in) {
            @Override
            public int read() throws IOException {
                checkDeadline(deadline);
                return in.read();
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                checkDeadline(deadline);
                return in.read(b, off, len);
            }
        };
    }

    /**
     * Tars {@code dir} (ids shifted down by {@code uidShift}, {@code excluded} left out) into a gzip'd blob, and
     * unpacks that blob as a stored layer, so that the stored layer is exactly what a push sends.
     */
    Digest storeLayer(Path dir, long uidShift, java.util.Set<String> excluded) {
        return storeLayer(dir, uidShift, excluded, ImageCharge.NONE, 0L);
    }

    /** {@link #storeLayer(Path, long, java.util.Set)}, the layer charged to {@code charge}'s owner if it is new. */
    Digest storeLayer(Path dir, long uidShift, java.util.Set<String> excluded, ImageCharge charge) {
        return storeLayer(dir, uidShift, excluded, charge, 0L);
    }

    /**
     * {@link #storeLayer(Path, long, java.util.Set, ImageCharge)} stopped (DEADLINE_EXCEEDED) past {@code deadline}
     * (System.nanoTime(); 0: none).
     */
    private Digest storeLayer(Path dir, long uidShift, java.util.Set<String> excluded, ImageCharge charge, long deadline) {
        Path tmp = null;
        try {
            tmp = Files.createTempFile(store.root(), ".layer-", ".tar.gz");
            LayerBlob blob;
            try (java.io.OutputStream out = bounded(Files.newOutputStream(tmp), deadline)) {
                blob = new LayerWriter().write(dir, out, true, uidShift, excluded);
            }
            Digest digest;
            try (InputStream in = bounded(Files.newInputStream(tmp), deadline)) {
                digest = store.blobs().put(in, Long.MAX_VALUE, blob.digest());
            }
            store.recordLayerBlob(blob.diffId(), new Descriptor(MediaTypes.OCI_LAYER_GZIP, digest, blob.size()));
            if (!store.hasLayer(blob.diffId())) {
                Path staging = store.newLayerStaging();
                try (InputStream in = bounded(store.blobs().open(digest), deadline)) {
                    extractor.extract(in, MediaTypes.OCI_LAYER_GZIP, staging, LayerExtractor.Limits.DEFAULT);
                    checkDeadline(deadline);
                    store.commitLayer(staging, blob.diffId());
                } finally {
                    ImageStore.deleteTree(staging);
                }
                charge.layerStored(blob.diffId(), blob.size());
            }
            return blob.diffId();
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot store a layer: " + e, e);
        } finally {
            if (tmp != null) {
                try {
                    Files.deleteIfExists(tmp);
                } catch (IOException ignored) {
                    // prune's temporaries sweep gets it
                }
            }
        }
    }

    /**
     * The configuration of a snapshot of a {@code host} sandbox before its layer: based on the host image
     * ({@link ImageConfig#BASE_LABEL}), its user ({@code uid}:{@code gid}), working directory and environment.
     */
    public static ImageConfig hostBase(List<String> env, int uid, int gid, String workdir) {
        return ImageConfig.empty().withEnv(env).withUser(uid + ":" + gid).withWorkingDir(workdir)
                .withLabels(Map.of(ImageConfig.BASE_LABEL, ImageConfig.HOST_BASE));
    }

    /**
     * A snapshot: {@code layer} (a sandbox's writable layer, committed with {@link #commitUpper}) on top of the
     * layers of {@code base} (the sandbox's image's configuration, or {@link #hostBase}), with its configuration,
     * stored and named {@code tag}.
     */
    public ImageStore.StoredImage snapshot(ImageConfig base, Digest layer, String tag) {
        List<Digest> layers = new java.util.ArrayList<>(base.diffIds());
        layers.add(layer);
        ImageConfig config = base.withLayers(layers).withCreated(Optional.of(Instant.now()));
        Digest configDigest = store.blobs().put(config.toJson());
        return store.put(configDigest, List.of(), List.of(tag));
    }

    // ---- builds ----

    /** Builds from a Dockerfile in {@code context}. */
    public ImageStore.StoredImage build(Path context, String dockerfile, Map<String, String> buildArgs, List<String> tags,
                                        BuildHost host, ImageListener listener) {
        return build(context, dockerfile, buildArgs, tags, host, listener, ImageCharge.NONE);
    }

    /**
     * {@link #build(Path, String, Map, List, BuildHost, ImageListener)}, each layer it brings into the store charged
     * to {@code charge}'s owner: RESOURCE_EXHAUSTED once they pass its maximum, or when a RUN step whose writable
     * layer was cut to what the owner had left ({@link BuildHost.BuildSandbox#quotaDisk()}) fails having filled it.
     */
    public ImageStore.StoredImage build(Path context, String dockerfile, Map<String, String> buildArgs, List<String> tags,
                                        BuildHost host, ImageListener listener, ImageCharge charge) {
        if (!Files.isDirectory(context)) {
            throw SandboxException.invalid("context", "'" + context + "' is not a directory");
        }
        Path file = context.resolve(dockerfile == null ? "Dockerfile" : dockerfile).normalize();
        if (!Files.isRegularFile(file)) {
            throw SandboxException.invalid("file", "no Dockerfile at " + file);
        }
        ParsedDockerfile parsed = Dockerfile.read(file, buildArgs);
        parsed.warnings().forEach(w -> listener.log("warning: " + w));
        return new ImageBuilder(this, host, charge).build(parsed.steps(), parsed.lines(), BuildContext.open(context),
                names(tags), listener);
    }

    /** Builds an image described in Java. */
    public ImageStore.StoredImage build(Image image, List<String> tags, BuildHost host, ImageListener listener) {
        return build(image, tags, host, listener, ImageCharge.NONE);
    }

    /** {@link #build(Image, List, BuildHost, ImageListener)} charged as the Dockerfile build above. */
    public ImageStore.StoredImage build(Image image, List<String> tags, BuildHost host, ImageListener listener,
                                        ImageCharge charge) {
        return new ImageBuilder(this, host, charge).build(image.steps(), List.of(),
                BuildContext.local(image.localSources()), names(tags), listener);
    }

    // ---- owners ----

    /** A charge to {@code owner}, who may hold {@code max} of this store. */
    public ImageCharge charge(String owner, io.paddock.ByteSize max) {
        return ImageCharge.of(store, owner, max);
    }

    /**
     * The owner ({@link ImageCharge}) whose pull or build last wrote the name a reference gives (as the user wrote it,
     * or its canonical form); empty for a name written by no owner, an id, or no name.
     */
    public Optional<String> nameOwner(String reference) {
        if (store.names().containsKey(reference)) {
            return store.nameOwner(reference);
        }
        try {
            return store.nameOwner(canonicalName(reference));
        } catch (SandboxException e) {
            return Optional.empty();
        }
    }

    /** Keeps {@code layers} from {@link #collect} and {@link #prune} until {@link #unpin}: an operation's, running. */
    void pin(Object operation, java.util.Collection<Digest> layers) {
        pinned.put(operation, layers);
    }

    void unpin(Object operation) {
        pinned.remove(operation);
    }

    /** The layer directories of the running operations and of every mounted overlay on this host. */
    private java.util.Set<String> busyLayerNames() {
        java.util.Set<String> busy = new java.util.HashSet<>();
        for (String list : mountedLayerLists(Path.of("/proc/self/mountinfo"))) {
            busy.addAll(List.of(list.split(":")));
        }
        pinned.values().forEach(ls -> ls.forEach(d -> busy.add(ImageStore.layerName(d))));
        return busy;
    }

    /**
     * Deletes what a failed charged pull or build brought in ({@link ImageCharge#layers()}, {@link
     * ImageCharge#blobs()}) that no image needs: no named one, none of {@code keepImages}, no mounted overlay, no
     * running build or pull of this process. Returns the bytes freed.
     */
    public long collect(ImageCharge charge, java.util.Set<Digest> keepImages) {
        return store.collect(charge.layers(), charge.blobs(), keepImages, busyLayerNames());
    }

    /** As {@link #collect(ImageCharge, java.util.Set)}, for every layer charged to {@code owner}. */
    public long collectOwned(String owner, java.util.Set<Digest> keepImages) {
        return store.collect(store.owned(owner).keySet(), List.of(), keepImages, busyLayerNames());
    }

    private static List<String> names(List<String> tags) {
        if (tags.isEmpty()) {
            throw SandboxException.invalid("tag", "name the image: at least one -t NAME[:TAG]");
        }
        List<String> out = new java.util.ArrayList<>();
        for (String t : tags) {
            out.add(canonicalName(t));
        }
        return out;
    }

    private static List<String> slimOptions(DebianBase base) {
        if (!base.slim()) {
            return List.of();
        }
        return List.of("--dpkgopt=path-exclude=/usr/share/man/*", "--dpkgopt=path-exclude=/usr/share/doc/*",
                "--dpkgopt=path-include=/usr/share/doc/*/copyright", "--dpkgopt=path-exclude=/usr/share/locale/*",
                "--dpkgopt=path-exclude=/usr/share/info/*");
    }
}
