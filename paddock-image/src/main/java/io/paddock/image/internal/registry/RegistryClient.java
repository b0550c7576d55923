package io.paddock.image.internal.registry;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.image.internal.oci.Descriptor;
import io.paddock.image.internal.oci.Digest;
import io.paddock.image.internal.oci.ImageRef;
import io.paddock.image.internal.oci.MediaTypes;
import io.paddock.image.internal.store.BlobStore;

import java.io.FileNotFoundException;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.Set;

/**
 * A client of the OCI distribution API (docker-registry, Harbor, GHCR, …) that pulls images into a
 * {@link BlobStore} and pushes them from one.
 *
 * <p>What it guarantees:
 * <ul>
 *   <li><b>Verified content.</b> Everything pulled is checked against its digest and its descriptor's size
 *       before it lands in the store (the store keeps nothing partial or wrong): a manifest against the
 *       registry's {@code Docker-Content-Digest} and against the reference's pinned digest, a platform's
 *       manifest against its index entry, the config and layers against the manifest. Sizes are bounded by
 *       {@link Limits}. A mismatch is INVALID_ARGUMENT ("digest mismatch" or "size mismatch"), an exceeded
 *       limit RESOURCE_EXHAUSTED.</li>
 *   <li><b>Secure by default.</b> Only https, with the JDK's certificate checks, unless the builder's
 *       {@link Builder#insecure(boolean)} allows plain http. Credentials go only to the registry's own
 *       scheme, host and port (redirects are followed by this class, since java.net.http would carry the
 *       Authorization header to any host a redirect names) and to the token service a registry's Bearer
 *       challenge names. No exception message contains a password or a token.</li>
 *   <li><b>Errors in {@link ErrorCode}s.</b> Refused credentials are PERMISSION_DENIED, a missing image
 *       NOT_FOUND, an unreachable registry UNAVAILABLE (with a hint when https meets a plain-http registry),
 *       a registry too slow to answer DEADLINE_EXCEEDED; other HTTP failures are UNAVAILABLE with the status
 *       and the registry's error code.</li>
 * </ul>
 *
 * <p>Blobs are downloaded one at a time. A download that stalls after its response started is not timed
 * out (java.net.http offers no read timeout); interrupting the pulling thread does not stop it either.
 *
 * <p>Thread-safe: one client serves concurrent pulls and pushes, sharing its HTTP connections and its
 * cache of Bearer tokens.
 */
public final class RegistryClient {
    private final boolean insecure;
    private final CredentialsProvider credentials;
    private final Duration timeout;
    private final Limits limits;
    private final HttpClient http;
    private final Consumer<URI> destinations;
    private final TokenCache tokens = new TokenCache(Clock.systemUTC());

    /**
     * Size limits for what a pull accepts.
     *
     * @param maxManifestBytes the largest manifest or index (4 MiB by default, as docker-registry's own limit)
     * @param maxConfigBytes   the largest image configuration (8 MiB by default)
     * @param maxBlobBytes     the largest layer (16 GiB by default)
     */
    public record Limits(long maxManifestBytes, long maxConfigBytes, long maxBlobBytes) {
        public static final Limits DEFAULT = new Limits(4L << 20, 8L << 20, 16L << 30);

        public Limits {
            if (maxManifestBytes <= 0 || maxConfigBytes <= 0 || maxBlobBytes <= 0) {
                throw new IllegalArgumentException("limits must be positive");
            }
        }

        /** These limits with another largest layer size. */
        public Limits withMaxBlobBytes(long bytes) {
            return new Limits(maxManifestBytes, maxConfigBytes, bytes);
        }
    }

    private RegistryClient(Builder b) {
        this.insecure = b.insecure;
        this.credentials = b.credentials;
        this.timeout = b.timeout;
        this.limits = b.limits;
        this.destinations = b.destinations;
        if (b.httpClient != null) {
            this.http = b.httpClient;
        } else {
            HttpClient.Builder hb = HttpClient.newBuilder()
                    .followRedirects(HttpClient.Redirect.NEVER)
                    .connectTimeout(b.connectTimeout)
                    .version(HttpClient.Version.HTTP_1_1);
            if (b.proxy != null) {
                hb.proxy(b.proxy);
            }
            this.http = hb.build();
        }
    }

    /** A builder with the defaults: https only, anonymous, 10 s to connect, 60 s to answer, {@link Limits#DEFAULT}. */
    public static Builder builder() {
        return new Builder();
    }

    /** Options of a {@link RegistryClient}. Not thread-safe; each {@link #build()} makes an independent client. */
    public static final class Builder {
        private boolean insecure;
        private CredentialsProvider credentials = CredentialsProvider.none();
        private Duration connectTimeout = Duration.ofSeconds(10);
        private Duration timeout = Duration.ofSeconds(60);
        private Limits limits = Limits.DEFAULT;
        private HttpClient httpClient;
        private Consumer<URI> destinations = uri -> { };
        private java.net.ProxySelector proxy;

        private Builder() {
        }

        /**
         * Talk plain http to registries instead of https (for a local or test registry). Everything, credentials
         * included, then travels unencrypted, and https token services may redirect down to http. Off by default.
         */
        public Builder insecure(boolean allowPlainHttp) {
            this.insecure = allowPlainHttp;
            return this;
        }

        /** Where credentials come from, asked once per pull or push; anonymous ({@link CredentialsProvider#none()}) by default. */
        public Builder credentials(CredentialsProvider provider) {
            this.credentials = Objects.requireNonNull(provider, "provider");
            return this;
        }

        /** How long to wait for a TCP (and TLS) connection; 10 s by default. Ignored with {@link #httpClient}. */
        public Builder connectTimeout(Duration d) {
            this.connectTimeout = positive(d);
            return this;
        }

        /** How long to wait for each response's headers (not for a whole blob to arrive); 60 s by default. */
        public Builder timeout(Duration d) {
            this.timeout = positive(d);
            return this;
        }

        /**
         * Called with every URL before a request goes to it: the registry's own, each redirect's target and each
         * token realm. It throws (a {@code SandboxException}) to refuse the destination, so that a registry cannot
         * send the client where its caller may not connect (a tenant's pull to the host's own addresses). By
         * default every destination is allowed.
         */
        public Builder destinations(Consumer<URI> check) {
            this.destinations = Objects.requireNonNull(check, "check");
            return this;
        }

        /**
         * The proxy every connection goes through ({@code CONNECT} for https), for a gate that connects only to an
         * address it checked itself ({@code io.paddock.DestinationRule#proxy()}); null (the default) connects
         * directly. Ignored with {@link #httpClient}.
         */
        public Builder proxy(java.net.ProxySelector selector) {
            this.proxy = selector;
            return this;
        }

        /** Size limits for what pulls accept; {@link Limits#DEFAULT} by default. */
        public Builder limits(Limits l) {
            this.limits = Objects.requireNonNull(l, "limits");
            return this;
        }

        /**
         * The HTTP client to use (for example one with its own SSLContext). It must not follow redirects
         * ({@link HttpClient.Redirect#NEVER}): this class follows them itself so that credentials never follow a
         * redirect to another host.
         */
        public Builder httpClient(HttpClient client) {
            if (client.followRedirects() != HttpClient.Redirect.NEVER) {
                throw new IllegalArgumentException("the registry client follows redirects itself; give it an HttpClient "
                        + "built with followRedirects(Redirect.NEVER)");
            }
            this.httpClient = client;
            return this;
        }

        public RegistryClient build() {
            return new RegistryClient(this);
        }

        private static Duration positive(Duration d) {
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException("a timeout must be positive: " + d);
            }
            return d;
        }
    }

    /**
     * Pulls {@code ref} for {@code platform} into {@code store}: the manifest (chosen from the index when
     * {@code ref} names an index or Docker manifest list; the index is stored too), the configuration and the
     * layers. Blobs already in the store are not fetched again. When {@code ref} names a single manifest whose
     * configuration declares another platform, the pull fails as for an index without the platform.
     *
     * @param platform {@code os/architecture[/variant]}, for example {@code linux/amd64}
     * @throws SandboxException NOT_FOUND when the image or the platform is missing (the message lists the
     *                          platforms the image has), INVALID_ARGUMENT on a digest or size mismatch or a
     *                          malformed manifest, FAILED_PRECONDITION for manifests that are not container
     *                          images, RESOURCE_EXHAUSTED past a {@link Limits} value, and the codes of the class
     *                          comment for transport and authentication failures
     */
    public Pulled pull(ImageRef ref, String platform, BlobStore store, PullListener listener) {
        Objects.requireNonNull(ref, "ref");
        Objects.requireNonNull(store, "store");
        Objects.requireNonNull(listener, "listener");
        Platform want = Platform.parse(platform);
        RegistrySession s = session(ref, "pull");
        Fetched top = fetchManifest(s, ref, ref.reference(), ref.digest(), -1, "the manifest of " + ref);
        Fetched chosen = top;
        Optional<Digest> index = Optional.empty();
        if (MediaTypes.isIndex(top.mediaType())) {
            Descriptor d = Manifests.choose(Manifests.entries(top.json(), "the index of " + ref), want, ref.toString());
            if (d.size() > limits.maxManifestBytes()) {
                throw tooLarge("the " + want + " manifest of " + ref, d.size(), limits.maxManifestBytes());
            }
            String what = "the " + want + " manifest of " + ref;
            chosen = fetchManifest(s, ref, d.digest().toString(), Optional.of(d.digest()), d.size(), what);
            if (!MediaTypes.isManifest(chosen.mediaType())) {
                throw new SandboxException(ErrorCode.INVALID_ARGUMENT, what + " (" + d.digest() + ") is a "
                        + chosen.mediaType() + ", not an image manifest");
            }
            store.put(top.bytes());
            index = Optional.of(top.digest());
        }
        Manifests.Image image = Manifests.image(chosen.json(), "the manifest of " + ref);
        Descriptor config = image.config();
        if (config.size() > limits.maxConfigBytes()) {
            throw tooLarge("the configuration of " + ref, config.size(), limits.maxConfigBytes());
        }
        for (Descriptor layer : image.layers()) {
            if (layer.size() > limits.maxBlobBytes()) {
                throw tooLarge("layer " + layer.digest() + " of " + ref, layer.size(), limits.maxBlobBytes());
            }
        }
        store.put(chosen.bytes());
        if (!store.has(config.digest())) {
            fetchBlob(s, ref, config, store, null);
        }
        if (index.isEmpty()) {
            byte[] configBytes = store.read(config.digest(), limits.maxConfigBytes());
            Manifests.configPlatform(configBytes, "the configuration of " + ref).ifPresent(p -> {
                if (!want.matches(p)) {
                    throw new SandboxException(ErrorCode.NOT_FOUND, "no " + want + " image in " + ref + "; it has: " + p);
                }
            });
        }
        for (Descriptor layer : image.layers()) {
            listener.layerStarted(layer);
            boolean cached = store.has(layer.digest());
            if (!cached) {
                fetchBlob(s, ref, layer, store, listener);
            }
            listener.layerDone(layer, cached);
        }
        return new Pulled(chosen.digest(), chosen.mediaType(), config.digest(), image.layers(), index);
    }

    /**
     * Pushes {@code blobs} (the configuration and layers of an image manifest; none for an index, whose
     * manifests are pushed first by digest) and then the manifest {@code manifest} from {@code store} to
     * {@code target}: to its tag, or to its digest when it pins one and has no tag. Blobs the registry already
     * has in the repository are not uploaded again. Each upload is monolithic: one PUT streamed from the store.
     *
     * @param manifestMediaType the manifest's media type, sent as its Content-Type: one of the OCI or Docker
     *                          manifest or index types
     * @throws SandboxException NOT_FOUND when a blob or the manifest is not in {@code store}, INVALID_ARGUMENT
     *                          when a descriptor's size does not match the stored blob or {@code target} pins
     *                          another digest, and the codes of the class comment for registry failures
     */
    public void push(ImageRef target, BlobStore store, Digest manifest, String manifestMediaType, List<Descriptor> blobs,
                     PushListener listener) {
        Objects.requireNonNull(target, "target");
        Objects.requireNonNull(store, "store");
        Objects.requireNonNull(manifest, "manifest");
        Objects.requireNonNull(listener, "listener");
        if (!MediaTypes.isManifest(manifestMediaType) && !MediaTypes.isIndex(manifestMediaType)) {
            throw SandboxException.invalid("manifestMediaType", "'" + manifestMediaType
                    + "' is not an OCI or Docker manifest or index media type");
        }
        if (target.digest().isPresent() && !target.digest().get().equals(manifest)) {
            throw SandboxException.invalid("image", target + " pins a digest, but the manifest to push is " + manifest);
        }
        byte[] manifestBytes = store.read(manifest, limits.maxManifestBytes());
        for (Descriptor b : blobs) {
            if (!store.has(b.digest())) {
                throw new SandboxException(ErrorCode.NOT_FOUND, "blob " + b.digest() + " to push to " + target
                        + " is not in the local store");
            }
            long size = store.size(b.digest());
            if (size != b.size()) {
                throw SandboxException.invalid("blobs", "size mismatch: blob " + b.digest() + " is " + size
                        + " bytes, its descriptor says " + b.size());
            }
        }
        RegistrySession s = session(target, "pull,push");
        Set<Digest> seen = new HashSet<>();
        for (Descriptor b : blobs) {
            if (!seen.add(b.digest())) {
                continue;
            }
            listener.blobStarted(b);
            boolean present = blobExists(s, target, b);
            if (!present) {
                upload(s, target, b, store);
            }
            listener.blobDone(b, present);
        }
        HttpResponse<InputStream> r = s.send("PUT", s.url("manifests/" + target.tag().orElse(manifest.toString())),
                Map.of("Content-Type", manifestMediaType), HttpRequest.BodyPublishers.ofByteArray(manifestBytes));
        if (r.statusCode() != 201 && r.statusCode() != 200) {
            throw s.failure(r, "pushing the manifest of " + target);
        }
        checkDigestHeader(r, manifest, "the manifest of " + target);
        RegistrySession.close(r);
        listener.manifestPushed(target, manifest);
    }

    private RegistrySession session(ImageRef ref, String actions) {
        Optional<Credentials> c = Objects.requireNonNullElse(credentials.credentialsFor(ref.registry()), Optional.empty());
        return new RegistrySession(http, timeout, insecure, ref.registry(), ref.repository(), actions, c, tokens,
                destinations);
    }

    /** A manifest or index as fetched: its bytes, their digest, its media type and its parsed JSON. */
    private record Fetched(byte[] bytes, Digest digest, String mediaType, Manifests.ManifestJson json) {
    }

    private Fetched fetchManifest(RegistrySession s, ImageRef ref, String reference, Optional<Digest> expected,
                                  long expectedSize, String what) {
        HttpResponse<InputStream> r = s.send("GET", s.url("manifests/" + reference), Map.of("Accept", Manifests.ACCEPT), null);
        if (r.statusCode() == 404) {
            String detail = RegistrySession.errorDetail(r);
            throw new SandboxException(ErrorCode.NOT_FOUND, (reference.equals(ref.reference()) ? "image " + ref
                    : "manifest " + reference + " of " + ref) + " not found in registry " + s.registry()
                    + (detail.isEmpty() ? "" : " (" + detail + ")"));
        }
        if (r.statusCode() != 200) {
            throw s.failure(r, "fetching " + what);
        }
        String contentType = r.headers().firstValue("Content-Type").orElse("");
        Optional<String> headerDigest = r.headers().firstValue("Docker-Content-Digest");
        byte[] bytes = s.readBody(r, limits.maxManifestBytes(), what + " is larger than the limit of "
                + limits.maxManifestBytes() + " bytes", "registry " + s.registry());
        Digest actual = Digest.of(bytes);
        if (expected.isPresent() && !expected.get().equals(actual)) {
            throw new SandboxException(ErrorCode.INVALID_ARGUMENT, "digest mismatch: " + what + " should be "
                    + expected.get() + ", registry " + s.registry() + " sent content with digest " + actual);
        }
        if (headerDigest.isPresent()) {
            String h = headerDigest.get().strip().toLowerCase(Locale.ROOT);
            if (h.startsWith(Digest.ALGORITHM + ":") && !h.equals(actual.toString())) {
                throw new SandboxException(ErrorCode.INVALID_ARGUMENT, "digest mismatch: registry " + s.registry()
                        + " says " + what + " is " + RegistrySession.truncate(h, 80) + ", but its content is " + actual);
            }
        }
        if (expectedSize >= 0 && bytes.length != expectedSize) {
            throw new SandboxException(ErrorCode.INVALID_ARGUMENT, "size mismatch: " + what + " is " + bytes.length
                    + " bytes, its index entry says " + expectedSize);
        }
        Manifests.ManifestJson json = Manifests.read(bytes, what);
        return new Fetched(bytes, actual, Manifests.mediaType(json, contentType, what), json);
    }

    /** Streams one blob into the store, checked against {@code d}; reports progress when {@code listener} is set. */
    private void fetchBlob(RegistrySession s, ImageRef ref, Descriptor d, BlobStore store, PullListener listener) {
        String what = "blob " + d.digest() + " of " + ref;
        HttpResponse<InputStream> r = s.send("GET", s.url("blobs/" + d.digest()), Map.of(), null);
        if (r.statusCode() == 404) {
            RegistrySession.close(r);
            throw new SandboxException(ErrorCode.NOT_FOUND, what + " not found in registry " + s.registry());
        }
        if (r.statusCode() != 200) {
            throw s.failure(r, "fetching " + what);
        }
        long declared = r.headers().firstValueAsLong("Content-Length").orElse(-1);
        if (declared >= 0 && declared != d.size()) {
            RegistrySession.close(r);
            throw new SandboxException(ErrorCode.INVALID_ARGUMENT, "size mismatch: registry " + s.registry() + " has "
                    + declared + " bytes for " + what + ", the manifest says " + d.size());
        }
        try (InputStream in = new CheckedBlobStream(r.body(), d, what, s, listener)) {
            store.put(in, d.size(), d.digest());
        } catch (IOException e) {
            // closing a fully read response body; nothing is lost
        }
    }

    private boolean blobExists(RegistrySession s, ImageRef target, Descriptor b) {
        HttpResponse<InputStream> r = s.send("HEAD", s.url("blobs/" + b.digest()), Map.of(), null);
        RegistrySession.close(r);
        return switch (r.statusCode()) {
            case 200 -> true;
            case 404 -> false;
            default -> throw s.failure(r, "checking for blob " + b.digest() + " in " + target.repository());
        };
    }

    private void upload(RegistrySession s, ImageRef target, Descriptor b, BlobStore store) {
        String what = "blob " + b.digest() + " to " + target.repository();
        HttpResponse<InputStream> r = s.send("POST", s.url("blobs/uploads/"), Map.of(), null);
        if (r.statusCode() != 202) {
            throw s.failure(r, "starting the upload of " + what);
        }
        String location = r.headers().firstValue("Location").orElse("");
        URI started = r.uri();
        RegistrySession.close(r);
        if (location.isEmpty()) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "registry " + s.registry() + " started the upload of "
                    + what + " without saying where to send it (no Location)");
        }
        URI uploadUri = s.resolve(started, location, "registry " + s.registry());
        String u = uploadUri.toString();
        URI put = URI.create(u + (uploadUri.getRawQuery() == null ? "?" : "&") + "digest="
                + URLEncoder.encode(b.digest().toString(), StandardCharsets.UTF_8));
        HttpRequest.BodyPublisher body;
        try {
            body = HttpRequest.BodyPublishers.ofFile(store.path(b.digest()));
        } catch (FileNotFoundException e) {
            throw new SandboxException(ErrorCode.NOT_FOUND, "blob " + b.digest() + " is no longer in the local store", e);
        }
        r = s.send("PUT", put, Map.of("Content-Type", "application/octet-stream"), body);
        if (r.statusCode() != 201) {
            throw s.failure(r, "uploading " + what);
        }
        checkDigestHeader(r, b.digest(), what);
        RegistrySession.close(r);
    }

    private static void checkDigestHeader(HttpResponse<InputStream> r, Digest expected, String what) {
        Optional<String> h = r.headers().firstValue("Docker-Content-Digest");
        if (h.isPresent() && !h.get().strip().equalsIgnoreCase(expected.toString())) {
            RegistrySession.close(r);
            throw new SandboxException(ErrorCode.UNAVAILABLE, "the registry stored " + what + " as "
                    + RegistrySession.truncate(h.get(), 80) + ", not " + expected);
        }
    }

    private static SandboxException tooLarge(String what, long size, long limit) {
        return new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, what + " is " + size
                + " bytes, more than the limit of " + limit + " bytes");
    }

    /**
     * A blob's response body that refuses to run past the descriptor's size or end short of it (a lying
     * registry is caught before the digest is), reports progress, and turns a broken connection into
     * UNAVAILABLE. Its exceptions pass through {@link BlobStore#put}, which then keeps nothing.
     */
    private static final class CheckedBlobStream extends FilterInputStream {
        private static final long PROGRESS_STEP = 1 << 20;
        private final Descriptor d;
        private final String what;
        private final RegistrySession s;
        private final PullListener listener;
        private long count;
        private long nextReport = PROGRESS_STEP;

        CheckedBlobStream(InputStream in, Descriptor d, String what, RegistrySession s, PullListener listener) {
            super(in);
            this.d = d;
            this.what = what;
            this.s = s;
            this.listener = listener;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            int n = read(one, 0, 1);
            return n <= 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) {
            int n;
            try {
                n = in.read(b, off, len);
            } catch (IOException e) {
                throw new SandboxException(ErrorCode.UNAVAILABLE, "the download of " + what + " from registry "
                        + s.registry() + " broke off after " + count + " bytes: " + RegistrySession.truncate(
                        e.getClass().getSimpleName() + (e.getMessage() == null ? "" : " " + e.getMessage()), 200), e);
            }
            if (n < 0) {
                if (count != d.size()) {
                    throw new SandboxException(ErrorCode.INVALID_ARGUMENT, "size mismatch: " + what + " ended after "
                            + count + " bytes, its descriptor says " + d.size());
                }
                if (listener != null) {
                    listener.layerProgress(d, count);
                }
                return n;
            }
            count += n;
            if (count > d.size()) {
                throw new SandboxException(ErrorCode.INVALID_ARGUMENT, "size mismatch: " + what
                        + " is larger than the " + d.size() + " bytes its descriptor says");
            }
            if (listener != null && count >= nextReport) {
                listener.layerProgress(d, count);
                nextReport = count + PROGRESS_STEP;
            }
            return n;
        }

        @Override
        public long skip(long n) {
            throw new UnsupportedOperationException("a checked blob stream is read, not skipped");
        }
    }
}
