package io.paddock.server.internal;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.Image;
import io.paddock.ImageInfo;
import io.paddock.ImageListener;
import io.paddock.Images;
import io.paddock.Paddock;
import io.paddock.SandboxException;
import io.paddock.image.internal.ImageService;
import io.paddock.wire.ImageWire;
import io.paddock.wire.Wire;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The image endpoints ({@code /v1/images…}, {@code /v1/image}): translates requests to the engine's
 * {@link Images} and back, with the tenants' rules of {@link Tenancy} checked first. A pull, push or build is
 * returned as an {@link Operation} for the handler to run, answered as one {@code ImageInfo} or streamed as
 * events ({@link ImageStream}).
 *
 * <p>Builds take their context as a tar body ({@link ContextTar}). {@code POST /v1/images/build} is a
 * Dockerfile build of that context. {@code POST /v1/images/build-spec} builds an {@link Image} described in
 * Java: the tar holds {@value ImageWire#IMAGE_ENTRY} (its steps, {@link ImageWire#json(Image)}) and, beside
 * it, its local sources under their synthetic names ({@code local-0/app.py}); the image is rebuilt here
 * through {@link Image}'s own methods with those files as its sources. Thread-safe: it holds no state.
 */
final class ImageApi {
    /** A pull, push or build ready to run: given the listener that hears its progress, returns the image. */
    @FunctionalInterface
    interface Operation {
        ImageInfo run(ImageListener listener);
    }

    /** What a build request's query says: the names, the Dockerfile (null: {@code Dockerfile}) and build args. */
    record BuildRequest(List<String> tags, String dockerfile, Map<String, String> buildArgs) {
    }

    /** A local source's synthetic name, as {@link Image#copy} makes them. */
    private static final Pattern LOCAL_SOURCE = Pattern.compile("local-(0|[1-9][0-9]{0,5})/([^/]+)");

    private final Paddock paddock;
    private final Tenancy tenancy;
    private final Limits limits;

    ImageApi(Paddock paddock, Tenancy tenancy, Limits limits) {
        this.paddock = paddock;
        this.tenancy = tenancy;
        this.limits = limits;
    }

    private Images images() {
        return paddock.images();
    }

    JsonNode list() {
        return ImageWire.imageList(images().list());
    }

    JsonNode inspect(String ref) {
        return ImageWire.json(images().inspect(ref));
    }

    void remove(Caller caller, String ref) {
        tenancy.checkImageRemove(caller, ref);
        tenancy.images(caller).remove(ref); // a tenant's: its layers no image needs go with the name
    }

    JsonNode prune(Caller caller) {
        tenancy.checkImagePrune(caller);
        return ImageWire.pruned(images().prune());
    }

    Operation pull(Caller caller, JsonNode body) {
        ImageWire.PullRequest r = ImageWire.pullRequest(body);
        tenancy.checkImagePull(caller, r.ref());
        tenancy.checkRegistryAuth(caller, r.auth());
        tenancy.checkRegistryAddress(caller, r.ref());
        return listener -> tenancy.registry(caller, rule -> tenancy.chargeImages(caller, images -> images.pull(r.ref(),
                r.auth(), listener, rule)));
    }

    Operation push(Caller caller, JsonNode body) {
        ImageWire.PushRequest r = ImageWire.pushRequest(body);
        tenancy.checkRegistryAuth(caller, r.auth());
        tenancy.checkRegistryAddress(caller, r.target());
        return listener -> tenancy.registry(caller, rule -> images().push(r.ref(), r.target(), r.auth(), listener, rule));
    }

    /**
     * The query of a build, checked before its body is read: at least one valid tag the caller may write,
     * a Dockerfile path inside the context, build args {@code KEY=VALUE} with distinct keys.
     */
    BuildRequest buildRequest(Caller caller, List<String> tags, String dockerfile, List<String> buildArgs) {
        if (tags.isEmpty()) {
            throw SandboxException.invalid("tag", "name the image: at least one tag=NAME[:TAG] query parameter");
        }
        for (String t : tags) {
            ImageService.canonicalName(t); // INVALID_ARGUMENT naming what is wrong
        }
        tenancy.checkImageTags(caller, tags);
        if (dockerfile != null) {
            relativePath("dockerfile", dockerfile);
        }
        Map<String, String> args = new LinkedHashMap<>();
        for (String kv : buildArgs) {
            int eq = kv.indexOf('=');
            if (eq <= 0) {
                throw SandboxException.invalid("build_arg", "KEY=VALUE is expected, got '" + Limits.shorten(kv) + "'");
            }
            if (args.put(kv.substring(0, eq), kv.substring(eq + 1)) != null) {
                throw SandboxException.invalid("build_arg", "'" + Limits.shorten(kv.substring(0, eq)) + "' is given twice");
            }
        }
        return new BuildRequest(List.copyOf(tags), dockerfile, Map.copyOf(args));
    }

    /**
     * A Dockerfile build of an unpacked context. The engine reads the Dockerfile and {@code .dockerignore}
     * itself, following symlinks, so both must lead to regular files inside the context (a link to a host
     * file would be read, and could be quoted back in a parse error).
     */
    Operation build(Caller caller, BuildRequest r, ContextTar context) {
        Path root = context.root();
        String file = r.dockerfile() == null ? "Dockerfile" : r.dockerfile();
        Path dockerfile = root.resolve(file);
        if (!ContextTar.exists(dockerfile)) {
            throw SandboxException.invalid("dockerfile", "no Dockerfile at '" + Limits.shorten(file) + "' in the build context");
        }
        insideContext(root, dockerfile, "dockerfile", file);
        Path ignore = root.resolve(".dockerignore");
        if (ContextTar.exists(ignore)) {
            insideContext(root, ignore, "context", ".dockerignore");
        }
        return listener -> tenancy.build(caller, limits -> tenancy.chargeImages(caller, images -> limits == null
                ? images.build(root, r.dockerfile(), r.buildArgs(), r.tags(), listener)
                : images.build(root, r.dockerfile(), r.buildArgs(), r.tags(), limits, listener)));
    }

    /** A build of the {@link Image} an unpacked {@code build-spec} context describes. */
    Operation buildSpec(Caller caller, List<String> tags, ContextTar context) {
        Path root = context.root();
        Path description = root.resolve(ImageWire.IMAGE_ENTRY);
        BasicFileAttributes a = attributes(description);
        if (a == null || !a.isRegularFile()) {
            throw SandboxException.invalid("context", "the tar has no regular file '" + ImageWire.IMAGE_ENTRY
                    + "' describing the image");
        }
        if (a.size() > limits.maxJsonBytes()) {
            throw SandboxException.invalid("context", "'" + ImageWire.IMAGE_ENTRY + "' is larger than "
                    + limits.maxJsonBytes() + " bytes");
        }
        byte[] json;
        try (InputStream in = Files.newInputStream(description, LinkOption.NOFOLLOW_LINKS)) {
            json = in.readNBytes((int) limits.maxJsonBytes() + 1);
        } catch (IOException e) {
            throw SandboxException.invalid("context", "cannot read '" + ImageWire.IMAGE_ENTRY + "': " + e.getMessage());
        }
        Image image = ImageWire.image(Wire.parse(json), name -> localSource(root, name));
        return listener -> tenancy.build(caller, limits -> tenancy.chargeImages(caller, images -> limits == null
                ? images.build(image, tags, listener) : images.build(image, tags, limits, listener)));
    }

    /**
     * The unpacked file or directory behind a copy's synthetic name: {@code local-<n>} must be a real
     * directory and the source a real file or directory, never a symlink (the engine resolves a local source
     * with {@code toRealPath}, so a link would copy a host path into the image).
     */
    private static Path localSource(Path root, String name) {
        var m = LOCAL_SOURCE.matcher(name);
        if (!m.matches() || m.group(2).equals(".") || m.group(2).equals("..")) {
            throw SandboxException.invalid("source", "'" + Limits.shorten(name) + "' is not a local source name"
                    + " (local-<n>/<file name>)");
        }
        Path dir = root.resolve("local-" + m.group(1));
        BasicFileAttributes d = attributes(dir);
        if (d == null || !d.isDirectory()) {
            throw SandboxException.invalid("source", "'" + name + "' is not in the build context tar"
                    + (d != null ? " ('local-" + m.group(1) + "' is not a directory)" : ""));
        }
        Path source = dir.resolve(m.group(2));
        BasicFileAttributes s = attributes(source);
        if (s == null) {
            throw SandboxException.invalid("source", "'" + name + "' is not in the build context tar");
        }
        if (!s.isRegularFile() && !s.isDirectory()) {
            throw SandboxException.invalid("source", "'" + name + "' is " + (s.isSymbolicLink() ? "a symlink" : "a special file")
                    + "; a local source is sent as the file or directory itself");
        }
        return source;
    }

    /** Refuses {@code path} unless it resolves (symlinks followed) to a regular file inside {@code root}. */
    private static void insideContext(Path root, Path path, String field, String shown) {
        Path real;
        try {
            real = path.toRealPath();
            if (!real.startsWith(root.toRealPath())) {
                throw SandboxException.invalid(field, "'" + Limits.shorten(shown) + "' leads outside the build context");
            }
        } catch (IOException e) {
            throw SandboxException.invalid(field, "'" + Limits.shorten(shown) + "' cannot be read in the build context"
                    + " (a dangling symlink?)");
        }
        if (!Files.isRegularFile(real, LinkOption.NOFOLLOW_LINKS)) {
            throw SandboxException.invalid(field, "'" + Limits.shorten(shown) + "' is not a regular file");
        }
    }

    /** A relative path inside the context: no leading '/', no '..', no NUL, not empty. */
    private static void relativePath(String field, String path) {
        if (path.isEmpty() || path.length() > Limits.MAX_PATH_CHARS || path.indexOf('\0') >= 0) {
            throw SandboxException.invalid(field, "a relative path of 1 to " + Limits.MAX_PATH_CHARS
                    + " characters is expected");
        }
        if (path.startsWith("/")) {
            throw SandboxException.invalid(field, "'" + Limits.shorten(path) + "' is absolute; give it relative to the"
                    + " build context");
        }
        for (String part : path.split("/")) {
            if (part.equals("..")) {
                throw SandboxException.invalid(field, "'" + Limits.shorten(path) + "' leaves the build context ('..')");
            }
        }
    }

    private static BasicFileAttributes attributes(Path p) {
        try {
            return Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (IOException e) {
            return null;
        }
    }

    /** The {@code ref} query parameter of {@code /v1/image}: required. */
    static String ref(String value) {
        if (value == null || value.isEmpty()) {
            throw SandboxException.invalid("ref", "missing (a query parameter: the image's name or id)");
        }
        if (value.length() > 1024) {
            throw SandboxException.invalid("ref", "longer than 1024 characters");
        }
        return value;
    }
}
