package io.paddock.client.internal;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.ErrorCode;
import io.paddock.Image;
import io.paddock.ImageInfo;
import io.paddock.ImageListener;
import io.paddock.Images;
import io.paddock.RegistryAuth;
import io.paddock.SandboxException;
import io.paddock.wire.ImageWire;
import io.paddock.wire.Wire;

import java.io.IOException;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicReference;

/**
 * {@link Images} of a Paddock daemon: the same store and the same operations as the embedded engine's, over
 * {@code /v1/images} and {@code /v1/image} ({@code openapi.json}).
 *
 * <ul>
 *   <li><b>Progress.</b> Pulls, pushes and builds always ask for the streamed answer
 *       ({@code application/x-ndjson}): the listener hears the daemon's events on the calling thread as they
 *       arrive, in order, and the daemon's heartbeats keep a long, quiet step's connection open. A listener's
 *       exception is dropped (the operation runs in the daemon and goes on).</li>
 *   <li><b>Credentials.</b> {@link RegistryCredentials}: a config file is read here, and only the credentials of
 *       the registry the request goes to are sent.</li>
 *   <li><b>Builds.</b> The context directory is sent as a tar that streams from the disk as the daemon reads it
 *       ({@link TarStream}): symlinks are sent as symlinks and never followed, special files are left out (the
 *       listener is told), and the whole directory goes: the daemon applies {@code .dockerignore}. The
 *       Dockerfile must be inside the context. An {@link Image} is sent as its steps ({@code image.json},
 *       {@link ImageWire#json(Image)}) and its local sources (each followed once, since the caller named it,
 *       then sent as a file or a tree) in one tar, to {@code /v1/images/build-spec}.</li>
 * </ul>
 *
 * <p>Errors come back as the same {@link SandboxException} codes; a file of the context that cannot be read is
 * {@code INVALID_ARGUMENT} naming it. Thread-safe: it holds no mutable state.
 */
final class RemoteImages implements Images {
    /** How long a pull, push or build may take in all (the daemon's heartbeats keep the connection meanwhile). */
    static final Duration OPERATION_LIMIT = Duration.ofHours(24);

    private final Http http;

    RemoteImages(Http http) {
        this.http = http;
    }

    @Override
    public ImageInfo pull(String reference, RegistryAuth auth, ImageListener listener) {
        Objects.requireNonNull(reference, "reference");
        RegistryAuth sent = RegistryCredentials.resolve(Objects.requireNonNull(auth, "auth"), reference);
        return json("/v1/images/pull", ImageWire.pullRequest(reference, sent), listener);
    }

    @Override
    public ImageInfo push(String reference, String target, RegistryAuth auth, ImageListener listener) {
        Objects.requireNonNull(reference, "reference");
        Objects.requireNonNull(target, "target");
        RegistryAuth sent = RegistryCredentials.resolve(Objects.requireNonNull(auth, "auth"), target);
        return json("/v1/images/push", ImageWire.pushRequest(reference, target, sent), listener);
    }

    @Override
    public ImageInfo build(Path context, String dockerfile, Map<String, String> buildArgs, List<String> tags,
                           ImageListener listener) {
        Objects.requireNonNull(context, "context");
        Path root;
        try {
            root = context.toRealPath();
        } catch (IOException e) {
            throw SandboxException.invalid("context", "'" + context + "' cannot be opened: " + e.getMessage());
        }
        if (!Files.isDirectory(root)) {
            throw SandboxException.invalid("context", "'" + context + "' is not a directory");
        }
        Http.Query q = tags(tags);
        if (dockerfile != null) {
            q.add("dockerfile", relativeDockerfile(context, root, dockerfile));
        }
        if (buildArgs != null) {
            buildArgs.forEach((k, v) -> {
                if (k == null || k.isEmpty() || k.indexOf('=') >= 0 || v == null) {
                    throw SandboxException.invalid("build_arg", "'" + k + "' is not a build argument name with a value");
                }
                q.add("build_arg", k + "=" + v);
            });
        }
        return sendTar("/v1/images/build", q, TarStream.builder().tree("", root), listener, "context");
    }

    @Override
    public ImageInfo build(Image image, List<String> tags, ImageListener listener) {
        Objects.requireNonNull(image, "image");
        Http.Query q = tags(tags);
        TarStream.Builder tar = TarStream.builder().bytes(ImageWire.IMAGE_ENTRY, Wire.bytes(ImageWire.json(image)));
        for (Map.Entry<String, Path> source : image.localSources().entrySet()) {
            Path real;
            try {
                real = source.getValue().toRealPath(); // the caller named it: a link is followed, once, here
            } catch (IOException e) {
                throw SandboxException.invalid("COPY", "the local source " + source.getValue() + " cannot be read: " + e);
            }
            if (!Files.isDirectory(real) && !Files.isRegularFile(real)) {
                throw SandboxException.invalid("COPY", "the local source " + source.getValue() + " is not a file or directory");
            }
            tar.tree(source.getKey(), real);
        }
        return sendTar("/v1/images/build-spec", q, tar, listener, "COPY");
    }

    @Override
    public List<ImageInfo> list() {
        return ImageWire.imageList(http.call("GET", "/v1/images", null, null, Http.CONTROL_TIMEOUT));
    }

    @Override
    public ImageInfo inspect(String reference) {
        Objects.requireNonNull(reference, "reference");
        return ImageWire.imageInfo(http.call("GET", "/v1/image", new Http.Query().add("ref", reference), null,
                Http.CONTROL_TIMEOUT));
    }

    @Override
    public void remove(String reference) {
        Objects.requireNonNull(reference, "reference");
        http.call("DELETE", "/v1/image", new Http.Query().add("ref", reference), null, Http.CONTROL_TIMEOUT);
    }

    @Override
    public long prune() {
        return ImageWire.pruned(http.call("POST", "/v1/images/prune", null, null, OPERATION_LIMIT));
    }

    // ---- transport ----

    private ImageInfo json(String path, JsonNode body, ImageListener listener) {
        ImageListener l = listener == null ? ImageListener.NONE : listener;
        return http.stream(path, null, HttpRequest.BodyPublishers.ofByteArray(Wire.bytes(body)), "application/json", false,
                ImageWire.STREAM_TYPE, OPERATION_LIMIT, event -> ImageWire.deliver(event, l), ImageWire::imageInfo);
    }

    /**
     * Streams the tar as the body; when the request fails because a file could not be read here, that is the
     * error ({@code INVALID_ARGUMENT} naming {@code field} and the file), not the transport's. The special files
     * the tar leaves out are told to the listener as log lines on the calling thread, like the daemon's events
     * (the tar is read on the HTTP client's thread; the daemon reads all of it before its first event).
     */
    private ImageInfo sendTar(String path, Http.Query query, TarStream.Builder tar, ImageListener listener, String field) {
        ImageListener l = listener == null ? ImageListener.NONE : listener;
        Queue<String> leftOut = new ConcurrentLinkedQueue<>();
        tar.onSkipped(name -> leftOut.add(field + ": left out '" + name + "', a special file (FIFO, socket or device)"));
        Runnable tell = () -> {
            for (String line; (line = leftOut.poll()) != null; ) {
                quietly(l, line);
            }
        };
        AtomicReference<TarStream> opened = new AtomicReference<>();
        HttpRequest.BodyPublisher body = HttpRequest.BodyPublishers.ofInputStream(() -> {
            TarStream s = tar.open(); // a fresh walk for each attempt to send
            opened.set(s);
            return s;
        });
        try {
            ImageInfo built = http.stream(path, query, body, ImageWire.TAR_TYPE, true, ImageWire.STREAM_TYPE, OPERATION_LIMIT,
                    event -> {
                        tell.run();
                        return ImageWire.deliver(event, l);
                    }, ImageWire::imageInfo);
            tell.run();
            return built;
        } catch (SandboxException e) {
            tell.run();
            TarStream s = opened.get();
            if (s != null && s.failure() != null) {
                throw new SandboxException(ErrorCode.INVALID_ARGUMENT, field + ": " + s.failure().getMessage(), s.failure());
            }
            throw e;
        } finally {
            TarStream s = opened.get();
            if (s != null) {
                s.close();
            }
        }
    }

    private static void quietly(ImageListener listener, String line) {
        try {
            listener.log(line);
        } catch (RuntimeException e) {
            // a listener's failure does not change the build
        }
    }

    private static Http.Query tags(List<String> tags) {
        if (tags == null || tags.isEmpty()) {
            throw SandboxException.invalid("tag", "name the image: at least one -t NAME[:TAG]");
        }
        Http.Query q = new Http.Query();
        for (String t : tags) {
            q.add("tag", Objects.requireNonNull(t, "tag"));
        }
        return q;
    }

    /** The Dockerfile relative to the context, {@code /}-separated; INVALID_ARGUMENT when it is outside it. */
    private static String relativeDockerfile(Path context, Path root, String dockerfile) {
        Path file = context.toAbsolutePath().resolve(dockerfile).normalize();
        Path base = context.toAbsolutePath().normalize();
        if (!file.startsWith(base) || file.equals(base)) {
            // the context as given, or as resolved (a context reached through a link)
            file = root.resolve(dockerfile).normalize();
            base = root;
        }
        if (!file.startsWith(base) || file.equals(base)) {
            throw SandboxException.invalid("file", "'" + dockerfile + "' is outside the build context " + context
                    + "; a remote build sends only the context, so the Dockerfile must be in it");
        }
        StringBuilder rel = new StringBuilder();
        for (Path part : base.relativize(file)) {
            if (rel.length() > 0) {
                rel.append('/');
            }
            rel.append(part);
        }
        return rel.toString();
    }
}
