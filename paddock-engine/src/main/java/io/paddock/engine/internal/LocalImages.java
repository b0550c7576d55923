package io.paddock.engine.internal;

import io.paddock.BuildLimits;
import io.paddock.ByteSize;
import io.paddock.DestinationRule;
import io.paddock.ErrorCode;
import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.Image;
import io.paddock.ImageInfo;
import io.paddock.ImageListener;
import io.paddock.Images;
import io.paddock.NetworkPolicy;
import io.paddock.RegistryAuth;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import io.paddock.image.internal.BuildHost;
import io.paddock.image.internal.ImageCharge;
import io.paddock.image.internal.ImageService;
import io.paddock.image.internal.oci.Digest;
import io.paddock.runtime.SandboxRuntime;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

/**
 * The embedded engine's {@link Images}: the {@link ImageService} of its storage directory, with the engine
 * supplying what the image layer cannot: which images running sandboxes use (so they are not removed) and
 * sandboxes for build steps. {@link #chargedTo} is the same with each pull and build charged to an owner
 * ({@link ImageCharge}).
 */
final class LocalImages implements Images {
    /** What a build step's sandbox may use: generous, since package installs are big, and always bounded. */
    static final ByteSize BUILD_MEMORY = ByteSize.mib(2048);
    static final ByteSize BUILD_DISK = ByteSize.mib(16384);
    static final Duration BUILD_STEP_TIMEOUT = Duration.ofHours(1);
    /**
     * Added to what a build's owner has left when its step's disk is cut to it: the filesystem's own blocks count
     * against the step's disk, not against the owner's bytes (its files' apparent sizes and their blob).
     */
    static final ByteSize QUOTA_SLACK = ByteSize.mib(1);

    private static final System.Logger LOG = System.getLogger("io.paddock.engine");

    private final SandboxManager manager;
    private final ImageService images;
    /** Where RUN steps may connect to (BuildNetwork), decided when the engine starts. */
    private final NetworkPolicy buildNetwork;

    LocalImages(SandboxManager manager) {
        this.manager = manager;
        this.images = manager.images();
        this.buildNetwork = BuildNetwork.of(manager.options(), System.getenv(), Path.of("/etc/apt"));
        LOG.log(System.Logger.Level.INFO, "build RUN steps' network: " + describe(buildNetwork));
    }

    static String describe(NetworkPolicy p) {
        return p.isNone() ? "none" : p.mode() == io.paddock.NetworkMode.OPEN ? "open (every public address)"
                : p.entries().isEmpty() ? "an empty allowlist (no destination)" : "allow " + String.join(",", p.entries());
    }

    @Override
    public ImageInfo pull(String reference, RegistryAuth auth, ImageListener listener) {
        return pull(reference, auth, listener, DestinationRule.ANYWHERE);
    }

    @Override
    public ImageInfo pull(String reference, RegistryAuth auth, ImageListener listener, DestinationRule destinations) {
        return pull(reference, auth, listener, destinations, ImageCharge.NONE);
    }

    private ImageInfo pull(String reference, RegistryAuth auth, ImageListener listener, DestinationRule destinations,
                           ImageCharge charge) {
        long began = System.nanoTime();
        EngineEvents events = manager.events();
        try {
            ImageInfo pulled = images.info(charged(charge, () -> images.pull(reference, auth,
                    new Observed(listener, events), destinations, charge)));
            events.imagePulled(java.util.Optional.empty(), Duration.ofNanos(System.nanoTime() - began));
            return pulled;
        } catch (RuntimeException e) {
            events.imagePulled(java.util.Optional.of(GuardedEvents.codeOf(e)), Duration.ofNanos(System.nanoTime() - began));
            throw e;
        }
    }

    @Override
    public ImageInfo push(String reference, String target, RegistryAuth auth, ImageListener listener) {
        return push(reference, target, auth, listener, DestinationRule.ANYWHERE);
    }

    @Override
    public ImageInfo push(String reference, String target, RegistryAuth auth, ImageListener listener,
                          DestinationRule destinations) {
        return images.info(images.push(reference, target, auth, listener, destinations));
    }

    @Override
    public ImageInfo build(Path context, String dockerfile, Map<String, String> buildArgs, List<String> tags,
                           ImageListener listener) {
        return build(context, dockerfile, buildArgs, tags, null, listener, ImageCharge.NONE);
    }

    @Override
    public ImageInfo build(Image image, List<String> tags, ImageListener listener) {
        return build(image, tags, null, listener, ImageCharge.NONE);
    }

    @Override
    public ImageInfo build(Path context, String dockerfile, Map<String, String> buildArgs, List<String> tags,
                           BuildLimits limits, ImageListener listener) {
        return build(context, dockerfile, buildArgs, tags, java.util.Objects.requireNonNull(limits, "limits"), listener,
                ImageCharge.NONE);
    }

    @Override
    public ImageInfo build(Image image, List<String> tags, BuildLimits limits, ImageListener listener) {
        return build(image, tags, java.util.Objects.requireNonNull(limits, "limits"), listener, ImageCharge.NONE);
    }

    /** A Dockerfile build; {@code limits} null: the engine's defaults. */
    private ImageInfo build(Path context, String dockerfile, Map<String, String> buildArgs, List<String> tags,
                            BuildLimits limits, ImageListener listener, ImageCharge charge) {
        Host host = new Host(limits, charge);
        try {
            return images.info(charged(charge, () -> images.build(context, dockerfile, buildArgs, tags, host,
                    new Observed(listener, manager.events()), charge)));
        } catch (RuntimeException e) {
            throw host.overTime(e);
        }
    }

    private ImageInfo build(Image image, List<String> tags, BuildLimits limits, ImageListener listener,
                            ImageCharge charge) {
        Host host = new Host(limits, charge);
        try {
            return images.info(charged(charge, () -> images.build(image, tags, host,
                    new Observed(listener, manager.events()), charge)));
        } catch (RuntimeException e) {
            throw host.overTime(e);
        }
    }

    /** Runs a charged pull or build; when it fails, deletes what it brought in that no image needs. */
    private <T> T charged(ImageCharge charge, java.util.function.Supplier<T> operation) {
        try {
            return operation.get();
        } catch (RuntimeException e) {
            if (charge.owner().isPresent()) {
                try {
                    images.collect(charge, inUse());
                } catch (RuntimeException cleanup) {
                    e.addSuppressed(cleanup);
                }
            }
            throw e;
        }
    }

    private Set<Digest> inUse() {
        Set<Digest> keep = new HashSet<>();
        manager.imagesInUse().forEach(id -> keep.add(Digest.parse(id)));
        return keep;
    }

    @Override
    public ImageInfo snapshot(io.paddock.Sandbox sandbox, String tag) {
        return Snapshots.take(manager, manager.get(sandbox.id()), tag);
    }

    @Override
    public Images chargedTo(String owner, ByteSize maxBytes) {
        ImageCharge.of(images.store(), owner, maxBytes); // INVALID_ARGUMENT naming what is wrong
        return new Charged(owner, maxBytes);
    }

    @Override
    public ByteSize ownedBytes(String owner) {
        return ByteSize.bytes(images.store().ownedBytes(owner));
    }

    @Override
    public java.util.Optional<String> nameOwner(String reference) {
        return images.nameOwner(reference);
    }

    @Override
    public List<ImageInfo> list() {
        return images.list();
    }

    @Override
    public ImageInfo inspect(String reference) {
        return images.inspect(reference);
    }

    @Override
    public void remove(String reference) {
        // In use by this engine's sandboxes or pools, or mounted by any other engine's on this host.
        images.remove(reference, id -> manager.imageInUse(id.toString()) || images.mountedOnHost(id));
    }

    @Override
    public long prune() {
        return images.prune(inUse()).bytes();
    }

    /**
     * These images with each pull and build charged to {@code owner} (a fresh {@link ImageCharge} each), and a
     * remove that deletes the owner's layers no image needs any more.
     */
    private final class Charged implements Images {
        private final String owner;
        private final ByteSize max;

        Charged(String owner, ByteSize max) {
            this.owner = owner;
            this.max = max;
        }

        /** A fresh charge; an owner at its maximum first gives up its layers no image needs (its build cache). */
        private ImageCharge charge() {
            if (images.store().ownedBytes(owner) >= max.bytes()) {
                images.collectOwned(owner, inUse());
            }
            return images.charge(owner, max);
        }

        @Override
        public ImageInfo pull(String reference, RegistryAuth auth, ImageListener listener) {
            return pull(reference, auth, listener, DestinationRule.ANYWHERE);
        }

        @Override
        public ImageInfo pull(String reference, RegistryAuth auth, ImageListener listener, DestinationRule destinations) {
            ImageCharge c = charge();
            c.checkBefore("this pull");
            return LocalImages.this.pull(reference, auth, listener, destinations, c);
        }

        @Override
        public ImageInfo push(String reference, String target, RegistryAuth auth, ImageListener listener) {
            return LocalImages.this.push(reference, target, auth, listener);
        }

        @Override
        public ImageInfo push(String reference, String target, RegistryAuth auth, ImageListener listener,
                              DestinationRule destinations) {
            return LocalImages.this.push(reference, target, auth, listener, destinations);
        }

        @Override
        public ImageInfo build(Path context, String dockerfile, Map<String, String> buildArgs, List<String> tags,
                               ImageListener listener) {
            return LocalImages.this.build(context, dockerfile, buildArgs, tags, null, listener, charge());
        }

        @Override
        public ImageInfo build(Image image, List<String> tags, ImageListener listener) {
            return LocalImages.this.build(image, tags, null, listener, charge());
        }

        @Override
        public ImageInfo build(Path context, String dockerfile, Map<String, String> buildArgs, List<String> tags,
                               BuildLimits limits, ImageListener listener) {
            return LocalImages.this.build(context, dockerfile, buildArgs, tags,
                    java.util.Objects.requireNonNull(limits, "limits"), listener, charge());
        }

        @Override
        public ImageInfo build(Image image, List<String> tags, BuildLimits limits, ImageListener listener) {
            return LocalImages.this.build(image, tags, java.util.Objects.requireNonNull(limits, "limits"), listener,
                    charge());
        }

        @Override
        public ImageInfo snapshot(io.paddock.Sandbox sandbox, String tag) {
            ManagedSandbox sb = manager.get(sandbox.id());
            ImageCharge c = charge();
            c.checkBefore("this snapshot");
            return charged(c, () -> Snapshots.take(manager, sb, tag, c));
        }

        @Override
        public Images chargedTo(String other, ByteSize maxBytes) {
            return LocalImages.this.chargedTo(other, maxBytes);
        }

        @Override
        public ByteSize ownedBytes(String other) {
            return LocalImages.this.ownedBytes(other);
        }

        @Override
        public java.util.Optional<String> nameOwner(String reference) {
            return LocalImages.this.nameOwner(reference);
        }

        @Override
        public List<ImageInfo> list() {
            return LocalImages.this.list();
        }

        @Override
        public ImageInfo inspect(String reference) {
            return LocalImages.this.inspect(reference);
        }

        @Override
        public void remove(String reference) {
            LocalImages.this.remove(reference);
            images.collectOwned(owner, inUse());
        }

        @Override
        public long prune() {
            return LocalImages.this.prune();
        }
    }

    /**
     * A caller's listener, with the cache's answers also told to the engine's events: a pulled layer that was
     * already stored or had to be fetched, a build step whose layer was cached or had to run. Pushes are not
     * observed (a layer the registry has is no cache hit of ours).
     */
    private record Observed(ImageListener listener, EngineEvents events) implements ImageListener {
        @Override
        public void log(String line) {
            listener.log(line);
        }

        @Override
        public void step(int index, int count, String description, boolean cached) {
            events.buildStep(cached);
            listener.step(index, count, description, cached);
        }

        @Override
        public void layer(String digest, long done, long total, boolean complete, boolean cached) {
            if (complete) {
                events.imageLayerPulled(cached, cached ? 0 : done);
            }
            listener.layer(digest, done, total, complete, cached);
        }
    }

    /**
     * Build steps run in runc sandboxes of this engine; one that has network gets the build's policy
     * ({@link BuildNetwork}) as its sandbox network, behind the same resolver and deny list as any sandbox. With
     * limits, each step's sandbox has their CPUs and memory, and its lifetime and its command's timeout are what is
     * left of the build's time, so a step running at the deadline is stopped and its sandbox destroyed; no step
     * starts after it.
     */
    private final class Host implements BuildHost {
        private final BuildLimits limits;
        private final ImageCharge charge;
        private final long deadline;

        /**
         * @param limits null: each step with every host CPU, {@link #BUILD_MEMORY} and {@link #BUILD_STEP_TIMEOUT}
         * @param charge whose build it is: each step's disk is at most what its owner has left
         */
        Host(BuildLimits limits, ImageCharge charge) {
            this.limits = limits;
            this.charge = charge;
            this.deadline = limits == null ? 0 : System.nanoTime() + limits.time().toNanos();
        }

        /** What a step may still run: the step timeout, or without it what is left of the build's time. */
        private Duration left() {
            if (limits == null) {
                return BUILD_STEP_TIMEOUT;
            }
            long nanos = deadline - System.nanoTime();
            if (nanos <= 0) {
                throw overTime(null);
            }
            return Duration.ofNanos(Math.min(nanos, BUILD_STEP_TIMEOUT.toNanos()));
        }

        /** What is left of the build's time (DEADLINE_EXCEEDED when none is); empty without limits. */
        @Override
        public java.util.Optional<Duration> timeLeft() {
            if (limits == null) {
                return java.util.Optional.empty();
            }
            long nanos = deadline - System.nanoTime();
            if (nanos <= 0) {
                throw overTime(null);
            }
            return java.util.Optional.of(Duration.ofNanos(nanos));
        }

        /** {@code failure} as the build's, or DEADLINE_EXCEEDED when the build has run out of its time. */
        RuntimeException overTime(RuntimeException failure) {
            if (limits == null || deadline - System.nanoTime() > 0) {
                return failure;
            }
            return new SandboxException(ErrorCode.DEADLINE_EXCEEDED, "the build ran past its time limit of "
                    + limits.time() + "; its running step was stopped", failure);
        }

        @Override
        public BuildSandbox start(String imageId, boolean network) {
            Duration left = left();
            double cpus = limits == null ? Math.max(1, Runtime.getRuntime().availableProcessors())
                    : limits.cpus().orElse((double) Math.max(1, Runtime.getRuntime().availableProcessors()));
            // The step's layer holds at most what the build's owner may still bring into the store, and the
            // filesystem's own blocks (QUOTA_SLACK): what it writes past that fails the step; what passes the owner's
            // maximum by less fails the build when the layer is charged.
            long room = charge.remaining();
            if (room <= 0) {
                throw charge.exhausted("a RUN step");
            }
            java.util.OptionalLong cut = room < BUILD_DISK.bytes() - QUOTA_SLACK.bytes() // no owner: room is unbounded
                    ? java.util.OptionalLong.of(room + QUOTA_SLACK.bytes()) : java.util.OptionalLong.empty();
            ByteSize disk = cut.isPresent() ? ByteSize.bytes(cut.getAsLong()) : BUILD_DISK;
            // A sandbox lives at least a second: the command's own timeout (below) stops a step sooner.
            SandboxSpec spec = SandboxSpec.builder().image(imageId).runtime("runc")
                    .memory(limits == null ? BUILD_MEMORY : limits.memory()).disk(disk).cpus(cpus).pids(4096)
                    .timeout(left.compareTo(Duration.ofSeconds(1)) < 0 ? Duration.ofSeconds(1) : left)
                    .network(network ? buildNetwork : NetworkPolicy.none()).build();
            ManagedSandbox sb = manager.createBuildStep(spec);
            try {
                SandboxRuntime rt = manager.runtimeFor(sb);
                SandboxRuntime.WritableLayer layer = rt.writableLayer(sb.id()).orElseThrow(() ->
                        new SandboxException(ErrorCode.INTERNAL, "build sandbox " + sb.id() + " has no writable layer"));
                return new Step(sb, layer, this::left, cut);
            } catch (RuntimeException e) {
                sb.close();
                throw e;
            }
        }
    }

    private record Step(ManagedSandbox sb, SandboxRuntime.WritableLayer layer,
                        java.util.function.Supplier<Duration> left, java.util.OptionalLong quotaDisk)
            implements BuildHost.BuildSandbox {
        @Override
        public int run(List<String> argv, Consumer<String> output) {
            ExecRequest request = ExecRequest.builder().argv(argv).outputLimit(ExecRequest.UNLIMITED)
                    .timeout(left.get()).build();
            try (ExecProcess p = sb.start(request)) {
                p.closeStdin();
                Thread err = new Thread(() -> lines(p.stderr(), output), "paddock-build-stderr");
                err.setDaemon(true);
                err.start();
                lines(p.stdout(), output);
                err.join();
                return p.awaitExit().exitCode();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new SandboxException(ErrorCode.UNAVAILABLE, "interrupted during a build step");
            }
        }

        private static void lines(InputStream in, Consumer<String> output) {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    output.accept(line);
                }
            } catch (java.io.IOException | SandboxException e) { // the step's sandbox stopped (its time ran out)
                output.accept("(output ended: " + e.getMessage() + ")");
            }
        }

        @Override
        public Path upper() {
            return layer.upper();
        }

        @Override
        public long uidBase() {
            return layer.uidBase();
        }

        @Override
        public java.util.Set<String> paddockFiles() {
            return layer.paddockFiles();
        }

        @Override
        public void close() {
            sb.close();
        }
    }
}
