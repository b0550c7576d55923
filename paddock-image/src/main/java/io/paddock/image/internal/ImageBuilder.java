package io.paddock.image.internal;

import io.paddock.ErrorCode;
import io.paddock.FileType;
import io.paddock.ImageListener;
import io.paddock.ImageStep;
import io.paddock.SandboxException;
import io.paddock.image.internal.build.BuildContext;
import io.paddock.image.internal.build.ContextEntry;
import io.paddock.image.internal.build.ResolvedSource;
import io.paddock.image.internal.oci.Digest;
import io.paddock.image.internal.oci.ImageConfig;
import io.paddock.image.internal.store.ImageStore;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Runs a build's steps ({@link ImageStep}, from a Dockerfile or the Java {@link io.paddock.Image} builder):
 * configuration steps change the image's configuration; RUN (and apt, pip, npm) runs in a sandbox of the
 * image built so far and its writable layer becomes the step's layer; COPY writes the context's files into
 * a new layer on the host without running anything.
 *
 * <p>Every layer step has a cache key: the hash of the previous key (which starts from the base image's
 * id), the step's canonical text and, for COPY, the hash of its input files. A key seen before reuses its
 * layer, so an unchanged rebuild runs nothing, and changing one COPY input rebuilds from that step on.
 */
public final class ImageBuilder {

    private final ImageService images;
    private final BuildHost host;
    private final ImageCharge charge;

    ImageBuilder(ImageService images, BuildHost host, ImageCharge charge) {
        this.images = images;
        this.host = host;
        this.charge = charge;
    }

    /** Where a build stands between steps. */
    private static final class State {
        ImageConfig config = ImageConfig.empty();
        /** Read by collect and prune in other threads (pinned), so copied on write. */
        final List<Digest> layers = new java.util.concurrent.CopyOnWriteArrayList<>();
        Digest chain;
        Instant newest = Instant.EPOCH;
        final Map<String, String> args = new LinkedHashMap<>();
    }

    /**
     * Runs {@code steps} ({@code lines} their Dockerfile lines, 0 when there is none) with {@code context}
     * for COPY sources, and stores the result under {@code tags}.
     */
    public ImageStore.StoredImage build(List<ImageStep> steps, List<Integer> lines, BuildContext context,
                                        List<String> tags, ImageListener listener) {
        if (steps.isEmpty() || !(steps.get(0) instanceof ImageStep.From)) {
            throw SandboxException.invalid("steps", "a build starts with FROM");
        }
        State s = new State();
        images.pin(s, s.layers);
        try {
            return run(steps, lines, context, tags, listener, s);
        } finally {
            images.unpin(s);
        }
    }

    private ImageStore.StoredImage run(List<ImageStep> steps, List<Integer> lines, BuildContext context,
                                       List<String> tags, ImageListener listener, State s) {
        ImageStore store = images.store();
        charge.checkBefore("this build");
        int n = steps.size();
        for (int i = 0; i < n; i++) {
            ImageStep step = steps.get(i);
            int line = i < lines.size() ? lines.get(i) : 0;
            String where = "step " + (i + 1) + (line > 0 ? " (Dockerfile line " + line + ")" : "");
            if (step instanceof ImageStep.From f) {
                listener.step(i + 1, n, step.describe(), false);
                java.util.Optional<java.time.Duration> left = host.timeLeft();
                ImageStore.StoredImage base = images.require(f.base(), listener, charge,
                        left.orElse(ImageService.DEBIAN_TIMEOUT));
                s.config = base.config().withCreated(Optional.empty());
                s.layers.addAll(base.config().diffIds());
                s.chain = hash("from " + base.id());
                s.newest = base.config().created().orElse(Instant.EPOCH);
            } else if (step instanceof ImageStep.Env e) {
                configStep(s, i, n, step, listener, c -> {
                    List<String> env = new ArrayList<>();
                    Map<String, String> m = new LinkedHashMap<>(c.envMap());
                    m.put(e.key(), e.value());
                    m.forEach((k, v) -> env.add(k + "=" + v));
                    return c.withEnv(env);
                });
            } else if (step instanceof ImageStep.Workdir w) {
                configStep(s, i, n, step, listener, c -> c.withWorkingDir(w.path()));
            } else if (step instanceof ImageStep.User u) {
                configStep(s, i, n, step, listener, c -> c.withUser(u.user()));
            } else if (step instanceof ImageStep.Label l) {
                configStep(s, i, n, step, listener, c -> {
                    Map<String, String> m = new LinkedHashMap<>(c.labels());
                    m.put(l.key(), l.value());
                    return c.withLabels(m);
                });
            } else if (step instanceof ImageStep.Cmd c) {
                configStep(s, i, n, step, listener, x -> x.withCmd(c.argv()));
            } else if (step instanceof ImageStep.Entrypoint e) {
                configStep(s, i, n, step, listener, x -> x.withEntrypoint(e.argv()));
            } else if (step instanceof ImageStep.Expose e) {
                configStep(s, i, n, step, listener, x -> {
                    List<String> ports = new ArrayList<>(x.exposedPorts());
                    if (!ports.contains(e.portProto())) {
                        ports.add(e.portProto());
                    }
                    return x.withExposedPorts(ports);
                });
            } else if (step instanceof ImageStep.Arg a) {
                a.defaultValue().ifPresent(v -> s.args.put(a.name(), v));
                configStep(s, i, n, step, listener, x -> x);
            } else if (step instanceof ImageStep.Copy c) {
                copyStep(s, i, n, c, line, context, where, listener);
            } else if (step instanceof ImageStep.Run r) {
                runStep(s, i, n, step, r.argv(), where, listener);
            } else if (step instanceof ImageStep.Apt a) {
                requireRoot(s, where, "apt");
                runStep(s, i, n, step, List.of("/bin/sh", "-c", "apt-get update && DEBIAN_FRONTEND=noninteractive"
                        + " apt-get install -y --no-install-recommends " + String.join(" ", a.packages())
                        + " && rm -rf /var/lib/apt/lists/*"), where, listener);
            } else if (step instanceof ImageStep.Pip p) {
                List<String> argv = new ArrayList<>(List.of("python3", "-m", "pip", "install", "--no-cache-dir",
                        "--break-system-packages", "--disable-pip-version-check"));
                p.indexUrl().ifPresent(u -> argv.addAll(List.of("--index-url", u)));
                p.findLinks().forEach(f -> argv.addAll(List.of("--find-links", f)));
                // pip ignores a plain-http index unless its host is trusted: the image's author named it.
                java.util.stream.Stream.concat(p.indexUrl().stream(), p.findLinks().stream())
                        .filter(u -> u.startsWith("http://")).map(u -> java.net.URI.create(u).getHost())
                        .filter(java.util.Objects::nonNull).distinct()
                        .forEach(h -> argv.addAll(List.of("--trusted-host", h)));
                argv.addAll(p.packages());
                runStep(s, i, n, step, argv, where, listener);
            } else if (step instanceof ImageStep.Npm p) {
                List<String> argv = new ArrayList<>(List.of("npm", "install", "-g", "--no-fund", "--no-audit"));
                argv.addAll(p.packages());
                runStep(s, i, n, step, argv, where, listener);
            } else {
                throw SandboxException.invalid(where, "unknown step " + step.describe());
            }
        }
        ImageConfig result = s.config.withLayers(s.layers)
                .withCreated(Optional.of(s.newest.equals(Instant.EPOCH) ? Instant.now() : s.newest));
        Digest configDigest = store.blobs().put(result.toJson());
        return store.put(configDigest, List.of(), tags, charge.owner());
    }

    private static void requireRoot(State s, String where, String what) {
        String u = s.config.user();
        if (!(u.isEmpty() || u.equals("root") || u.equals("0") || u.startsWith("0:") || u.startsWith("root:"))) {
            throw SandboxException.invalid(where, what + " installs system packages as root; put it before USER " + u);
        }
    }

    private static void configStep(State s, int i, int n, ImageStep step, ImageListener listener,
                                   java.util.function.UnaryOperator<ImageConfig> change) {
        listener.step(i + 1, n, step.describe(), false);
        s.config = change.apply(s.config);
        s.chain = hash(s.chain + "\n" + step.cacheKey());
    }

    private void runStep(State s, int i, int n, ImageStep step, List<String> argv, String where, ImageListener listener) {
        StringBuilder key = new StringBuilder(s.chain + "\n" + step.cacheKey());
        s.args.forEach((k, v) -> key.append("\narg ").append(k).append('=').append(v));
        Digest stepKey = hash(key.toString());
        Optional<ImageStore.CacheEntry> hit = images.store().cachedEntry(stepKey);
        listener.step(i + 1, n, step.describe(), hit.isPresent());
        if (hit.isPresent()) {
            useLayer(s, stepKey, hit.get());
            return;
        }
        ImageStore store = images.store();
        // The sandbox runs the image built so far: an unnamed image, removed by prune once nothing needs it.
        Digest current = store.blobs().put(s.config.withLayers(s.layers).toJson());
        store.put(current, List.of(), List.of());
        Digest layer;
        try (BuildHost.BuildSandbox sb = host.start(current.toString(), true)) {
            List<String> command = new ArrayList<>();
            if (!s.args.isEmpty()) {
                // Build arguments are in RUN's environment only, as with Docker; never in the image.
                command.add("env");
                s.args.forEach((k, v) -> command.add(k + "=" + v));
            }
            command.addAll(argv);
            int exit = sb.run(command, listener::log);
            java.util.OptionalLong cut = sb.quotaDisk();
            if (exit != 0 && cut.isPresent() && ImageCharge.treeBytes(sb.upper()) >= cut.getAsLong() / 2) {
                // It filled (or nearly: the filesystem's own blocks count too) a layer cut to what its owner has left.
                throw charge.exhausted(where + ": " + step.describe() + " (failed with exit code " + exit + " having"
                        + " filled its writable layer, cut to the " + ImageCharge.human(cut.getAsLong()) + " left)");
            }
            if (exit != 0) {
                throw new SandboxException(ErrorCode.INVALID_ARGUMENT, where + ": " + step.describe()
                        + " failed with exit code " + exit);
            }
            layer = images.commitUpper(sb.upper(), sb.uidBase(), sb.paddockFiles(), charge, host.timeLeft());
        }
        Instant now = Instant.now();
        store.cache(stepKey, layer, now);
        useLayer(s, stepKey, new ImageStore.CacheEntry(layer, now));
    }

    private static void useLayer(State s, Digest stepKey, ImageStore.CacheEntry entry) {
        s.layers.add(entry.layer());
        s.chain = stepKey;
        if (entry.made().isAfter(s.newest)) {
            s.newest = entry.made();
        }
    }

    private void copyStep(State s, int i, int n, ImageStep.Copy c, int line, BuildContext context, String where,
                          ImageListener listener) {
        List<ResolvedSource> sources = context.resolve(c, line);
        String inputs = context.inputsHash(sources);
        Digest stepKey = hash(s.chain + "\n" + c.cacheKey() + "\ninputs " + inputs);
        Optional<ImageStore.CacheEntry> hit = images.store().cachedEntry(stepKey);
        listener.step(i + 1, n, c.describe(), hit.isPresent());
        if (hit.isPresent()) {
            useLayer(s, stepKey, hit.get());
            return;
        }
        String workdir = s.config.workingDir().isEmpty() ? "/" : s.config.workingDir();
        String dest = ImageStep.Copy.resolveDest(workdir, c.dest());
        int[] owner = c.chown().isPresent()
                ? SandboxImage.resolveUser(c.chown().get(), images.store().layersDir(), topFirst(s.layers))
                : new int[]{0, 0};
        ImageStore store = images.store();
        Path staging = store.newLayerStaging();
        try {
            boolean intoDir = dest.endsWith("/") || sources.size() > 1;
            for (ResolvedSource src : sources) {
                String target;
                if (src.isDirectory()) {
                    target = dest;
                } else {
                    target = intoDir ? dest + (dest.endsWith("/") ? "" : "/") + Path.of(src.name()).getFileName() : dest;
                }
                for (ContextEntry e : context.entries(src)) {
                    String rel = e.relativePath().isEmpty() ? target : join(target, e.relativePath());
                    write(staging, rel, e, owner, src.isDirectory() && e.relativePath().isEmpty());
                }
            }
            Digest layer = images.storeLayer(staging, 0, java.util.Set.of(), charge, host.timeLeft());
            Instant now = Instant.now();
            store.cache(stepKey, layer, now);
            useLayer(s, stepKey, new ImageStore.CacheEntry(layer, now));
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, where + ": " + c.describe() + " failed: " + e, e);
        } finally {
            ImageStore.deleteTree(staging);
        }
    }

    private static String join(String dir, String rel) {
        return (dir.endsWith("/") ? dir : dir + "/") + rel;
    }

    /**
     * Puts one context entry at {@code path} (absolute, inside the image) under {@code staging}: parents are
     * made as root-owned 0755 directories; never follows a link in {@code staging}, which only this build
     * writes.
     */
    private static void write(Path staging, String path, ContextEntry e, int[] owner, boolean sourceDirItself)
            throws IOException {
        String clean = path.replaceAll("/+", "/").replaceAll("^/", "").replaceAll("/$", "");
        if (clean.isEmpty()) {
            return; // COPY dir / : the root's own attributes are the image's
        }
        for (String part : clean.split("/")) {
            if (part.equals("..") || part.equals(".")) {
                throw SandboxException.invalid("COPY", "destination '" + path + "' is not a plain path");
            }
        }
        Path target = staging.resolve(clean);
        Path parent = target.getParent();
        Path p = staging;
        for (Path part : staging.relativize(parent)) {
            p = p.resolve(part);
            if (!Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
                Files.createDirectory(p);
                Files.setAttribute(p, "unix:mode", 0755);
            } else if (!Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                throw SandboxException.invalid("COPY", "'" + path + "' lies under a file the same COPY wrote");
            }
        }
        if (Files.exists(target, LinkOption.NOFOLLOW_LINKS) && !(e.type() == FileType.DIRECTORY
                && Files.isDirectory(target, LinkOption.NOFOLLOW_LINKS))) {
            ImageStore.deleteTree(target);
        }
        switch (e.type()) {
            case DIRECTORY -> {
                if (!Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
                    Files.createDirectory(target);
                }
                Files.setAttribute(target, "unix:mode", sourceDirItself ? 0755 : e.mode());
            }
            case FILE -> {
                Files.copy(e.path(), target, StandardCopyOption.REPLACE_EXISTING, LinkOption.NOFOLLOW_LINKS);
                Files.setAttribute(target, "unix:mode", e.mode());
                Files.setLastModifiedTime(target, Files.getLastModifiedTime(e.path(), LinkOption.NOFOLLOW_LINKS));
            }
            case SYMLINK -> Files.createSymbolicLink(target, Path.of(e.symlinkTarget().orElseThrow()));
            default -> throw new IllegalStateException("unexpected " + e.type());
        }
        Files.setAttribute(target, "unix:uid", owner[0], LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(target, "unix:gid", owner[1], LinkOption.NOFOLLOW_LINKS);
    }

    private static List<String> topFirst(List<Digest> layers) {
        List<String> out = new ArrayList<>();
        for (Digest d : layers) {
            out.add(0, ImageStore.layerName(d));
        }
        return out;
    }

    static Digest hash(String text) {
        MessageDigest md = Digest.sha256();
        md.update(text.getBytes(StandardCharsets.UTF_8));
        return Digest.of(md);
    }

    static FileTime unused() {
        return null;
    }
}
