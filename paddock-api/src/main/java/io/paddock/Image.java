package io.paddock;

import io.paddock.internal.Validate;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * An image to build, described in Java: a base image and the steps that follow it.
 *
 * <pre>{@code
 * Image image = Image.debianSlim("bookworm")
 *         .apt("git", "jq")
 *         .pip("numpy", "pandas>=2")
 *         .copy(Path.of("app.py"), "/app/app.py")
 *         .workdir("/app")
 *         .env("PYTHONUNBUFFERED", "1")
 *         .cmd("python", "app.py");
 * }</pre>
 *
 * <p>Every method returns a new image with one more step; an image is an immutable, thread-safe value
 * (equal by its steps and local sources), so a shared base can be extended in several ways. Nothing is
 * built or read from disk here: this is the description; the build runs each step in a sandbox and caches
 * its layer. The steps are the same {@link ImageStep} records a Dockerfile is parsed into, so the same image
 * written either way is the same value and shares the cache.
 *
 * <p>Relative paths given to {@link #workdir(String)} and {@link #copy(Path, String)} are resolved against
 * the working directory set so far in this image (starting at {@code /}), as a Dockerfile's are.
 */
public final class Image {
    private static final Pattern DEBIAN_SUITE = Pattern.compile("[a-z]+");

    private final List<ImageStep> steps;
    private final Map<String, Path> localSources;
    /** The working directory the steps so far leave; derived from {@link #steps}, so not part of equality. */
    private final String workdir;

    private Image(List<ImageStep> steps, Map<String, Path> localSources, String workdir) {
        this.steps = steps;
        this.localSources = localSources;
        this.workdir = workdir;
    }

    /** An image built on a registry image, such as {@code registry:5000/team/base:1} or {@code python:3.12-slim}. */
    public static Image from(String base) {
        return new Image(List.of(new ImageStep.From(base)), Map.of(), "/");
    }

    /** {@code debian:<suite>}, for example {@code debian("bookworm")}; the suite is lower-case letters ({@code stable}, {@code sid}). */
    public static Image debian(String suite) {
        return from("debian:" + suite(suite));
    }

    /** {@code debian:<suite>-slim}: Debian without documentation and locales, about half the size. */
    public static Image debianSlim(String suite) {
        return from("debian:" + suite(suite) + "-slim");
    }

    // --- package managers --------------------------------------------------------------------------------

    /** Installs Debian packages with apt ({@link ImageStep.Apt}): {@code git}, {@code curl=7.88.1-10}. */
    public Image apt(String... packages) {
        return apt(list("packages", packages));
    }

    public Image apt(List<String> packages) {
        return with(new ImageStep.Apt(packages));
    }

    /** Installs Python packages from PyPI with pip ({@link ImageStep.Pip}): {@code numpy}, {@code torch>=2.1}. */
    public Image pip(String... packages) {
        return pip(PipOptions.defaults(), list("packages", packages));
    }

    public Image pip(List<String> packages) {
        return pip(PipOptions.defaults(), packages);
    }

    /**
     * Installs Python packages with pip from another index or with extra places to look, for example
     * {@code pip(PipOptions.defaults().withIndexUrl("https://download.pytorch.org/whl/cpu"), "torch")}.
     */
    public Image pip(PipOptions options, String... packages) {
        return pip(options, list("packages", packages));
    }

    public Image pip(PipOptions options, List<String> packages) {
        if (options == null) {
            throw SandboxException.invalid("options", "missing (use PipOptions.defaults())");
        }
        return with(new ImageStep.Pip(packages, options.indexUrl(), options.findLinks()));
    }

    /** Installs Node packages globally with npm ({@link ImageStep.Npm}): {@code left-pad}, {@code @scope/x@1.2.3}. */
    public Image npm(String... packages) {
        return npm(list("packages", packages));
    }

    public Image npm(List<String> packages) {
        return with(new ImageStep.Npm(packages));
    }

    // --- Dockerfile instructions -------------------------------------------------------------------------

    /** {@code RUN command}: runs {@code command} with {@code /bin/sh -c}. */
    public Image run(String command) {
        return with(ImageStep.Run.shell(command));
    }

    /** {@code RUN ["program", "arg", …]}: runs a program with its arguments, no shell. */
    public Image runArgv(List<String> argv) {
        return with(ImageStep.Run.exec(argv));
    }

    public Image runArgv(String... argv) {
        return runArgv(list("argv", argv));
    }

    /**
     * Copies a local file or directory into the image, as {@code COPY} does: a file to {@code dest} (into it
     * when {@code dest} ends with {@code /}), a directory's contents into {@code dest}. The path is recorded
     * as an absolute path in {@link #localSources()} under a synthetic name ({@code local-<n>/<file name>})
     * that the step's {@link ImageStep.Copy#sources()} uses; it is read only when the image is built, which
     * hashes its content for the cache. A relative {@code dest} is resolved against the working directory.
     */
    public Image copy(Path local, String dest) {
        return copy(local, dest, Optional.empty());
    }

    /** {@link #copy(Path, String)} with the copied files owned by {@code chown} ({@code user[:group]}). */
    public Image copy(Path local, String dest, String chown) {
        if (chown == null) {
            throw SandboxException.invalid("chown", "missing");
        }
        return copy(local, dest, Optional.of(chown));
    }

    private Image copy(Path local, String dest, Optional<String> chown) {
        if (local == null) {
            throw SandboxException.invalid("local", "missing");
        }
        Path absolute = local.toAbsolutePath().normalize();
        Path fileName = absolute.getFileName();
        if (fileName == null) {
            throw SandboxException.invalid("local", "'" + local + "' names no file (the root directory cannot be copied"
                    + " whole; copy a directory under it)");
        }
        String name = "local-" + localSources.size() + "/" + fileName;
        ImageStep.Copy step = new ImageStep.Copy(List.of(name), ImageStep.Copy.resolveDest(workdir, dest), chown, false);
        Map<String, Path> sources = new LinkedHashMap<>(localSources);
        sources.put(name, absolute);
        return new Image(append(step), Collections.unmodifiableMap(sources), workdir);
    }

    /** {@code ENV key=value}: a variable for later steps and for every process of the sandbox. */
    public Image env(String key, String value) {
        return with(new ImageStep.Env(key, value));
    }

    /** {@code WORKDIR path}: the working directory of later steps and of the image; relative to the current one. */
    public Image workdir(String path) {
        ImageStep.Workdir step = ImageStep.Workdir.resolve(workdir, path);
        return new Image(append(step), localSources, step.path());
    }

    /** {@code USER user[:group]}: who later steps and the image's processes run as. */
    public Image user(String user) {
        return with(new ImageStep.User(user));
    }

    /** {@code LABEL key=value} in the image's configuration. */
    public Image label(String key, String value) {
        return with(new ImageStep.Label(key, value));
    }

    /** {@code CMD ["program", "arg", …]}: the image's default command. */
    public Image cmd(String... argv) {
        return cmd(list("argv", argv));
    }

    public Image cmd(List<String> argv) {
        return with(new ImageStep.Cmd(argv));
    }

    /** {@code ENTRYPOINT ["program", "arg", …]}. */
    public Image entrypoint(String... argv) {
        return entrypoint(list("argv", argv));
    }

    public Image entrypoint(List<String> argv) {
        return with(new ImageStep.Entrypoint(argv));
    }

    /** {@code EXPOSE port} (TCP). */
    public Image expose(int port) {
        return with(ImageStep.Expose.port(port));
    }

    /** {@code EXPOSE port/protocol}, for example {@code "53/udp"}. */
    public Image expose(String portProto) {
        return with(new ImageStep.Expose(portProto));
    }

    // --- the description ---------------------------------------------------------------------------------

    /** The steps in order; the first is always the {@link ImageStep.From} base. */
    public List<ImageStep> steps() {
        return steps;
    }

    /** The base image reference. */
    public String base() {
        return ((ImageStep.From) steps.get(0)).base();
    }

    /**
     * The local files and directories {@link #copy(Path, String)} steps read, by the synthetic source name
     * their {@link ImageStep.Copy} uses ({@code local-0/app.py}), as absolute paths, in order.
     */
    public Map<String, Path> localSources() {
        return localSources;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Image other && steps.equals(other.steps) && localSources.equals(other.localSources);
    }

    @Override
    public int hashCode() {
        return Objects.hash(steps, localSources);
    }

    /** The steps as their log lines, for example {@code Image[FROM debian:bookworm; RUN echo hi]}. */
    @Override
    public String toString() {
        return steps.stream().map(ImageStep::describe).collect(Collectors.joining("; ", "Image[", "]"));
    }

    private Image with(ImageStep step) {
        return new Image(append(step), localSources, workdir);
    }

    private List<ImageStep> append(ImageStep step) {
        List<ImageStep> next = new ArrayList<>(steps.size() + 1);
        next.addAll(steps);
        next.add(step);
        return List.copyOf(next);
    }

    private static String suite(String suite) {
        if (suite == null || !DEBIAN_SUITE.matcher(suite).matches()) {
            throw SandboxException.invalid("suite", "'" + Validate.shorten(suite)
                    + "' is not a Debian suite (lower-case letters, such as bookworm, trixie or stable)");
        }
        return suite;
    }

    private static List<String> list(String field, String[] values) {
        if (values == null) {
            throw SandboxException.invalid(field, "missing");
        }
        // Arrays.asList keeps nulls so that the step's validation names them
        return Arrays.asList(values.clone());
    }

    /**
     * Where {@link #pip(PipOptions, String...)} looks for packages: {@code indexUrl} replaces PyPI
     * ({@code pip --index-url}); {@code findLinks} are extra URLs or absolute paths in the image to look in
     * ({@code pip --find-links}). Immutable; {@code with*} methods return copies.
     */
    public record PipOptions(Optional<String> indexUrl, List<String> findLinks) {
        public PipOptions {
            if (indexUrl == null) {
                throw SandboxException.invalid("indexUrl", "missing (use Optional.empty())");
            }
            if (findLinks == null) {
                throw SandboxException.invalid("findLinks", "missing");
            }
            findLinks = Collections.unmodifiableList(new ArrayList<>(findLinks));
            new ImageStep.Pip(List.of("pip"), indexUrl, findLinks); // the step's rules, checked now
        }

        /** PyPI, nothing else. */
        public static PipOptions defaults() {
            return new PipOptions(Optional.empty(), List.of());
        }

        /** A copy that installs from {@code url} instead of PyPI, such as {@code https://download.pytorch.org/whl/cpu}. */
        public PipOptions withIndexUrl(String url) {
            if (url == null) {
                throw SandboxException.invalid("indexUrl", "missing");
            }
            return new PipOptions(Optional.of(url), findLinks);
        }

        /** A copy that also looks in {@code urls} for packages. */
        public PipOptions withFindLinks(String... urls) {
            List<String> links = new ArrayList<>(findLinks);
            links.addAll(list("findLinks", urls));
            return new PipOptions(indexUrl, links);
        }
    }
}
