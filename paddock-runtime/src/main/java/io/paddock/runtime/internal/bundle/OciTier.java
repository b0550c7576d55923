package io.paddock.runtime.internal.bundle;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.SandboxSpec;
import io.paddock.runtime.ImageRootfs;
import io.paddock.runtime.NetworkMaker;
import io.paddock.runtime.NetworkNamespace;
import io.paddock.runtime.SandboxMount;
import io.paddock.runtime.RuntimeRecord;
import io.paddock.runtime.RuntimeSandbox;
import io.paddock.runtime.SandboxRuntime;
import io.paddock.runtime.StartRequest;
import io.paddock.runtime.internal.host.Cgroups;
import io.paddock.runtime.internal.host.Fifos;
import io.paddock.runtime.internal.host.Runsc;
import io.paddock.runtime.internal.host.WritableLayers;
import io.paddock.runtime.internal.image.HostImage;
import io.paddock.runtime.internal.oci.BundlePlan;
import io.paddock.runtime.internal.oci.OciSpec;
import io.paddock.runtime.internal.oci.OciSpecBuilder;
import io.paddock.runtime.internal.oci.SeccompProfile;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * What the OCI tiers (runc, runsc) share: the bundle (staged under a hidden name, then renamed with its
 * owner and tier recorded, so that no reconciler ever sees an ownerless bundle), the uid-range lease, the
 * {@code config.json} from {@link OciSpecBuilder}, the FIFO channel to the init, and destroy by cgroup path
 * when the runtime's own state is gone. A tier supplies only how its binary starts, checks and removes a
 * sandbox.
 *
 * <p>The channel to the init is a pair of FIFOs rather than pipes: the runtime exits right after starting
 * the sandbox, and the JDK drains and closes a child's pipes when the child exits, so the init's stdio must
 * not belong to a {@link Process}. FIFOs also let a restarted engine re-open the channel. runc hands them to
 * the init directly; runsc hands them to the Sentry, which gives them to the init as its stdio.
 */
public abstract class OciTier implements SandboxRuntime {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final String CGROUP_PARENT = "/paddock/";
    /** How much of init.log a report of a dead sandbox quotes. */
    private static final int LOG_TAIL_BYTES = 2048;
    /** Bundles written before tiers were recorded have no {@code runtime} file: they are runc's. */
    static final String LEGACY_TIER = "runc";
    private static final String STAGING_OWNER = "@";
    /** The bundle's link to the user namespace a sandbox joins, when its tier prepares one. */
    public static final String USERNS_LINK = "userns";
    /** Where the runc launcher mounts a networked sandbox's sysfs for a moment (see userns_run.c). */
    static final String SYSFS_DIR = "sysfs";
    /**
     * Where an image sandbox's root is mounted: {@code <state>/roots/<id>/root}. {@code <state>/roots} must stay
     * passable (0711: runc's init reaches the root as the sandbox's own root id), and the mounted root keeps the
     * modes the sandbox sees, so {@code <id>} is the sandbox's range root's own, mode 0700 ({@link #makeRootfs};
     * ATTACKS.md A85): no other host uid reads the sandbox's root through it. An engine before this one mounted
     * the root at {@code <id>} itself; {@link #removeImageRoot} still removes such a one.
     */
    Path rootfsOf(SandboxId id) {
        return host.rootsDir().resolve(id.value()).resolve("root");
    }

    /** Makes {@link #rootfsOf}'s directory and its private parent. */
    private Path makeRootfs(SandboxId id, long uidBase) throws IOException {
        Path dir = Files.createDirectory(rootfsOf(id).getParent());
        try {
            privateTo(dir, uidBase);
            return Files.createDirectory(rootfsOf(id));
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(dir);
            throw e;
        }
    }

    protected final OciHost host;

    protected OciTier(OciHost host) {
        this.host = host;
    }

    public Cgroups cgroups() {
        return host.cgroups();
    }

    public static String cgroupsPath(SandboxId id) {
        return CGROUP_PARENT + id.value();
    }

    /** Starts the sandbox of a prepared bundle (made from {@code plan}), its init's stdio connected to the FIFOs. */
    protected abstract void launch(SandboxId id, Path bundle, BundlePlan plan, Path toInit, Path fromInit, Path log);

    /** Whether the tier's runtime still knows this sandbox. */
    protected abstract boolean hasState(SandboxId id);

    /** Kills the sandbox and removes the runtime's state for it; succeeds if there is none. */
    protected abstract void removeFromRuntime(SandboxId id);

    /** The image this tier's sandboxes run (the host image, shared by all their sandboxes). */
    protected HostImage image() {
        return host.image();
    }

    /**
     * A library every dynamically linked program of an image sandbox preloads ({@code /etc/ld.so.preload} in
     * its writable layer, the file bound read-only under {@code /.paddock}); none unless the tier says so.
     */
    protected Optional<Path> preloadLibrary() {
        return Optional.empty();
    }

    /** The sandbox cgroup's {@code pids.max} (see {@link BundlePlan#hostPids()}). */
    protected long hostPids(SandboxSpec spec) {
        return spec.pids();
    }

    /** Who applies the spec's seccomp filter: the host kernel unless the tier says otherwise. */
    protected SeccompProfile.Dialect seccompDialect() {
        return SeccompProfile.Dialect.KERNEL;
    }

    /** The spec as this tier's runtime gets it ({@link OciSpecBuilder}'s, annotated): unchanged unless the tier says otherwise. */
    protected OciSpec runtimeSpec(OciSpec spec) {
        return spec;
    }

    /** The spec's annotations, for the runtime: none unless the tier says otherwise. */
    protected java.util.Map<String, String> annotations(BundlePlan plan) {
        return java.util.Map.of();
    }

    /**
     * The user namespace a sandbox's network namespace is made in, held while it is made ({@link NetworkMaker}).
     */
    protected interface NetworkOwner extends AutoCloseable {
        /** The host's: the network layer makes the namespace as the host's root. */
        NetworkOwner HOST = () -> Optional.empty();

        /** The user namespace's file; empty for the host's. */
        Optional<Path> userns();

        @Override
        default void close() {
        }
    }

    /**
     * Who must own the network namespace of the sandbox whose uid range starts at {@code uidBase}: the host's
     * user namespace unless the tier says otherwise.
     */
    protected NetworkOwner networkOwner(long uidBase) {
        return NetworkOwner.HOST;
    }

    /**
     * Whether the sandbox joins a user namespace made for it beforehand (at {@link #USERNS_LINK} in its bundle;
     * see {@link BundlePlan#userns()}), rather than one its runtime creates. False unless the tier says otherwise.
     */
    protected boolean joinsPreparedUserns() {
        return false;
    }

    /**
     * The bundle plan: the same for every OCI tier but for {@link #image()}, {@link #hostPids}, the filter's
     * dialect and {@link #joinsPreparedUserns()}.
     */
    private BundlePlan plan(StartRequest request, long uidBase, Path bundle) {
        BundlePlan plan = new BundlePlan(request.spec(), image().root().toString(), image().mounts(), uidBase,
                cgroupsPath(request.id()), host.facts(), hostPids(request.spec()), seccompDialect());
        return joinsPreparedUserns() ? plan.joiningUserns(bundle.resolve(USERNS_LINK).toString()) : plan;
    }

    @Override
    public RuntimeSandbox start(StartRequest request) {
        SandboxId id = request.id();
        Deque<Runnable> undo = new ArrayDeque<>();
        Path bundle = bundle(id);
        // The runtime moves the sandbox's first processes into new cgroups during its start (Cgroups#attachLockWarm).
        try (Cgroups.Warm warm = host.cgroups().attachLockWarm()) {
            int slot = createBundle(id, request.owner(), undo);
            BundlePlan plan = plan(request, host.uids().firstId(slot), bundle);
            // Made first, so that the network layer configures the rest of it while the root is made and the runtime
            // starts (the caller removes it on failure).
            Optional<NetworkNamespace> network = Optional.empty();
            if (request.network().isPresent()) {
                try (NetworkOwner owner = networkOwner(plan.uidBase())) {
                    network = Optional.of(request.network().get().make(owner.userns()));
                }
            }
            if (request.image().isPresent()) {
                plan = mountImageRoot(id, request, plan, undo);
            } else {
                plan = mountHostRoot(id, request, plan, undo);
            }
            if (!request.mounts().isEmpty()) {
                plan = mountExtras(id, request, plan, undo);
            }
            if (network.isPresent()) {
                Path resolv = host.resolvDir().resolve(id.value());
                undo.push(() -> deleteQuietly(resolv));
                Files.writeString(resolv, network.get().resolvConf(), StandardCharsets.UTF_8);
                Files.setPosixFilePermissions(resolv, PosixFilePermissions.fromString("rw-r--r--"));
                Path sysfs = Files.createDirectory(bundle.resolve(SYSFS_DIR));
                String caBundle = null;
                if (network.get().trustedCa().isPresent()) {
                    Optional<String> own = readRootFile(Path.of(plan.rootfs()), OciSpecBuilder.CA_BUNDLE);
                    if (own.isPresent()) {
                        Path ca = host.resolvDir().resolve(id.value() + ".ca");
                        undo.push(() -> deleteQuietly(ca));
                        Files.writeString(ca, own.get() + (own.get().endsWith("\n") ? "" : "\n")
                                + network.get().trustedCa().get(), StandardCharsets.UTF_8);
                        Files.setPosixFilePermissions(ca, PosixFilePermissions.fromString("rw-r--r--"));
                        caBundle = ca.toString();
                    }
                }
                plan = plan.inNetns(new BundlePlan.Netns(network.get().path().toString(), resolv.toString(),
                        sysfs.toString(), caBundle));
            }
            OciSpec spec = runtimeSpec(OciSpecBuilder.build(plan).withAnnotations(annotations(plan)));
            Files.write(bundle.resolve("config.json"), JSON.writeValueAsBytes(spec));
            BundlePlan built = plan;
            // The FIFOs were made with the root (mountImageRoot, mountHostRoot), in the same process.
            return runWithChannel(id, bundle, request.preamble(), undo, false,
                    (toInit, fromInit, log) -> launch(id, bundle, built, toInit, fromInit, log));
        } catch (IOException | RuntimeException e) {
            throw unwind(e, undo, "creating sandbox " + id);
        }
    }

    /**
     * A new sandbox's bundle, root's only: it appears under its final name only with its owner recorded, so that
     * a reconciler in another engine never sees an ownerless bundle it could take for an orphan; then its uid
     * range is leased. Returns the lease's slot; each step pushes its undo. Until the rename the directory is
     * {@link #staging} and holds nothing but its owner and tier: one left by a crash is a record of its owner
     * ({@link #records}), removed as the owner's orphan.
     */
    private int createBundle(SandboxId id, String owner, Deque<Runnable> undo) throws IOException {
        Path bundle = bundle(id);
        Path staging = staging(id, owner);
        Files.createDirectory(staging);
        undo.push(() -> deleteTree(staging));
        Files.setPosixFilePermissions(staging, PosixFilePermissions.fromString("rwx------"));
        Files.writeString(staging.resolve("owner"), owner, StandardCharsets.UTF_8);
        Files.writeString(staging.resolve("runtime"), name(), StandardCharsets.UTF_8);
        Files.move(staging, bundle, StandardCopyOption.ATOMIC_MOVE);
        undo.push(() -> deleteTree(bundle));
        UidLeases uids = host.uids();
        int slot = uids.acquire(id);
        undo.push(() -> uids.release(slot, id));
        Files.writeString(bundle.resolve("slot"), Integer.toString(slot), StandardCharsets.UTF_8);
        return slot;
    }

    /**
     * Where a new bundle is made before it is renamed to {@link #bundle}: {@code .<id>@<owner>}, its owner in its
     * name from the moment it exists (an engine killed before it wrote the owner file would otherwise leave a
     * directory nobody could tell its own).
     */
    private Path staging(SandboxId id, String owner) {
        return host.sandboxesDir().resolve("." + id.value() + STAGING_OWNER + owner.replace('/', '_'));
    }

    /** The FIFOs of the init's channel in a new sandbox's bundle: to the init, from the init. */
    private List<Path> fifos(SandboxId id) {
        return List.of(bundle(id).resolve("to-init"), bundle(id).resolve("from-init"));
    }

    /** Starts the runtime of a prepared bundle with the init's stdio connected to the FIFOs (launch or restore). */
    @FunctionalInterface
    private interface Launcher {
        void run(Path toInit, Path fromInit, Path log) throws IOException;
    }

    /**
     * The init's channel around {@code launcher}: the FIFOs (made here with {@code makeFifos}, else made already
     * with the sandbox's root) held read-write (opening a FIFO read-write never blocks, so both ends exist before the runtime opens them) with {@code preamble} written first; once the
     * init holds its ends, one-directional ends replace them, so that its death reads as end of file and writes to
     * a dead init fail instead of filling the pipe. Pushes the runtime's undo.
     */
    private RuntimeSandbox runWithChannel(SandboxId id, Path bundle, byte[] preamble, Deque<Runnable> undo,
                                          boolean makeFifos, Launcher launcher) throws IOException {
        Path toInit = bundle.resolve("to-init");
        Path fromInit = bundle.resolve("from-init");
        if (makeFifos) {
            Fifos.create(toInit, fromInit);
        }
        try (FileChannel inRw = new RandomAccessFile(toInit.toFile(), "rw").getChannel();
             FileChannel outRw = new RandomAccessFile(fromInit.toFile(), "rw").getChannel()) {
            writeFully(inRw, preamble);
            undo.push(() -> removeFromRuntime(id));
            undo.push(() -> host.cgroups().killAndRemove(cgroupsPath(id)));
            launcher.run(toInit, fromInit, bundle.resolve("init.log"));
            return openChannel(id, toInit, fromInit);
        }
    }

    /** Runs every undo (newest first) of a failed start or fork and returns the failure to throw, undo failures suppressed. */
    private static SandboxException unwind(Exception e, Deque<Runnable> undo, String what) {
        List<Throwable> cleanupFailures = new ArrayList<>();
        while (!undo.isEmpty()) {
            try {
                undo.pop().run();
            } catch (RuntimeException ce) {
                cleanupFailures.add(ce);
            }
        }
        SandboxException ex = e instanceof SandboxException se ? se
                : new SandboxException(ErrorCode.INTERNAL, what + " failed: " + e, e);
        cleanupFailures.forEach(ex::addSuppressed);
        return ex;
    }

    /**
     * An image sandbox's root: a btrfs subvolume limited to the spec's {@code disk} holds the overlay's upper
     * and work directories; the overlay of the image's id-mapped layers is mounted at {@code <state>/roots/<id>}.
     * Each step pushes its undo.
     */
    private BundlePlan mountImageRoot(SandboxId id, StartRequest request, BundlePlan plan, Deque<Runnable> undo)
            throws IOException {
        ImageRootfs image = request.image().orElseThrow();
        WritableLayers writable = host.writable();
        Optional<Path> preload = preloadLibrary();
        // Outside the bundle, which is root's only: the runtime reaches the root as the sandbox's own root id.
        Path rootfs = makeRootfs(id, plan.uidBase());
        undo.push(() -> writable.delete(id));
        undo.push(() -> removeImageRoot(id));
        List<String> lowers = new ArrayList<>(image.layers());
        List<String> entries = new ArrayList<>(ImageRoots.upperEntries(plan.uidBase(), image, preload.map(ImageRoots::preloadPath)));
        List<OciSpec.Mount> mounts = new ArrayList<>();
        if (image.onHostRoot()) {
            // An image based on the host image: its layers stack on this tier's host root, generated in the
            // image's layer directory so that one overlay names them all; the host's /usr etc. as for `host`.
            HostImage base = image().preparedIn(image.layersDir());
            lowers.add(base.layerName());
            entries.add(ImageRoots.userOpt(plan.uidBase(), image.uid(), image.gid()));
            mounts.addAll(base.mounts());
        }
        mounts.addAll(ImageRoots.mounts(host.initBinary(), preload));
        // One process makes the writable layer (a subvolume limited to `disk`), its first entries and the mount.
        writable.claim(id, host.stateDir());
        host.rootfsTool().create(fifos(id), plan.uidBase(), writable.of(id), request.spec().disk().bytes(), image.layersDir(),
                lowers, rootfs, entries);
        Filesystems.recordRoot(bundle(id), image.layersDir(), lowers);
        return plan.withImageRoot(rootfs.toString(), mounts,
                new BundlePlan.RootUser(image.uid(), image.gid(), image.workdir(), true,
                        image.buildStep() ? OciSpecBuilder.BUILD_CAPABILITIES : List.of(), image.onHostRoot()));
    }

    /**
     * A {@code host} sandbox's root: as an image's ({@link #mountImageRoot}), with the tier's host root directory
     * as the only, id-mapped, lower layer (named in its parent directory), so that the root is writable into a
     * layer limited to the spec's {@code disk} and discarded on destroy, while the host's {@code /usr},
     * {@code /bin} and {@code /lib*} stay read-only bind mounts and {@code /tmp} and {@code /workspace} tmpfs.
     */
    private BundlePlan mountHostRoot(SandboxId id, StartRequest request, BundlePlan plan, Deque<Runnable> undo)
            throws IOException {
        HostImage base = image();
        WritableLayers writable = host.writable();
        Path rootfs = makeRootfs(id, plan.uidBase());
        undo.push(() -> writable.delete(id));
        undo.push(() -> removeImageRoot(id));
        BundlePlan.RootUser user = BundlePlan.hostUserOnWritableRoot(request.spec());
        writable.claim(id, host.stateDir());
        host.rootfsTool().create(fifos(id), plan.uidBase(), writable.of(id), request.spec().disk().bytes(), base.root().getParent(),
                List.of(base.layerName()), rootfs, ImageRoots.hostUpperEntries(plan.uidBase(), user.uid(), user.gid(),
                        base.root(), request.spec().workdir()));
        Filesystems.recordRoot(bundle(id), base.root().getParent(), List.of(base.layerName()));
        return plan.withImageRoot(rootfs.toString(), base.mounts(), user);
    }

    /**
     * Makes a sandbox's directory of mount points its range root's own, mode 0700 (ATTACKS.md A85): the mounts
     * in it (its volumes, its codebase's view and layer) keep the modes the sandbox sees, and {@code <state>/mounts}
     * must stay passable, so without this any host uid knowing the id (mountinfo names it) read them. The
     * range's root is what runc's init (in the sandbox's user namespace) and runsc's gofer run as.
     */
    private static void privateTo(Path dir, long uidBase) throws IOException {
        Files.setAttribute(dir, "unix:uid", (int) uidBase, java.nio.file.LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(dir, "unix:gid", (int) uidBase, java.nio.file.LinkOption.NOFOLLOW_LINKS);
        Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
    }

    /** Where a sandbox's extra mounts are mounted on the host: {@code <state>/mounts/<id>/<index>}. */
    Path mountsOf(SandboxId id) {
        return host.mountsDir().resolve(id.value());
    }

    /**
     * The sandbox's extra mounts (StartRequest#mounts), each mounted on the host under {@link #mountsOf} and
     * bound into the sandbox by the spec. A layered mount's writable layer is a directory of the sandbox's
     * writable subvolume, made here with the spec's {@code disk} when the image has none (the host image).
     */
    private BundlePlan mountExtras(SandboxId id, StartRequest request, BundlePlan plan, Deque<Runnable> undo)
            throws IOException {
        Path dir = mountsOf(id);
        Files.createDirectory(dir);
        undo.push(() -> removeExtras(id));
        privateTo(dir, plan.uidBase());
        Path subvol = host.writable().of(id);
        List<OciSpec.Mount> binds = new ArrayList<>();
        for (int i = 0; i < request.mounts().size(); i++) {
            SandboxMount m = request.mounts().get(i);
            Path point = Files.createDirectory(dir.resolve(Integer.toString(i)));
            if (m instanceof SandboxMount.Shared shared) {
                host.rootfsTool().bind(plan.uidBase(), shared.dir(), point, shared.readOnly());
                binds.add(new OciSpec.Mount(m.target(), "bind", point.toString(),
                        List.of("rbind", shared.readOnly() ? "ro" : "rw", "nosuid", "nodev")));
            } else if (m instanceof SandboxMount.Layered layered) {
                if (!Files.exists(subvol, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                    undo.push(() -> host.writable().delete(id));
                    host.writable().claim(id, host.stateDir());
                    host.rootfsTool().createSubvolume(subvol, request.spec().disk().bytes());
                }
                long uid = layered.rootUid() < 0 ? 0 : plan.uidBase() + layered.rootUid();
                long gid = layered.rootGid() < 0 ? 0 : plan.uidBase() + layered.rootGid();
                host.rootfsTool().overlay(plan.uidBase(), layered.lower(), subvol.resolve("m" + i), point,
                        List.of("d::" + Integer.toOctalString(layered.rootMode()) + ":" + uid + ":" + gid));
                binds.add(new OciSpec.Mount(m.target(), "bind", point.toString(), List.of("rbind", "rw", "nosuid", "nodev")));
            }
        }
        Filesystems.recordMounts(bundle(id), request.mounts());
        return plan.withExtraMounts(binds);
    }

    /**
     * A fork's filesystems, before its restore: a snapshot of the source's writable subvolume (limited to the
     * spec's disk) whose files move from the source's uid range to the fork's, the root's overlay and the extra
     * mounts mounted again at the fork's own paths, which its retargeted config.json names. The checkpoint finds
     * the same files at the same paths inside the sandbox. Each step pushes its undo.
     */
    private void forkFilesystems(SandboxId source, SandboxId id, StartRequest request, long sourceBase, long forkBase,
                                 Deque<Runnable> undo) throws IOException {
        Filesystems fs = Filesystems.read(bundle(source));
        Path from = host.writable().of(source);
        Path to = host.writable().of(id);
        if (Files.exists(from, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            undo.push(() -> host.writable().delete(id));
            host.writable().claim(id, host.stateDir());
            host.rootfsTool().snapshot(from, to, request.spec().disk().bytes());
            Filesystems.moveIds(to, sourceBase, forkBase);
        }
        if (fs.root().isPresent()) {
            Path rootfs = makeRootfs(id, forkBase);
            undo.push(() -> removeImageRoot(id));
            Filesystems.freshWork(to.resolve("work"));
            host.rootfsTool().mount(forkBase, fs.root().get().layersDir(), fs.root().get().lowers(), to.resolve("upper"),
                    to.resolve("work"), rootfs);
        }
        if (!fs.mounts().isEmpty()) {
            Path dir = Files.createDirectory(mountsOf(id));
            undo.push(() -> removeExtras(id));
            privateTo(dir, forkBase);
            for (int i = 0; i < fs.mounts().size(); i++) {
                SandboxMount m = fs.mounts().get(i);
                Path point = Files.createDirectory(dir.resolve(Integer.toString(i)));
                if (m instanceof SandboxMount.Shared shared) {
                    host.rootfsTool().bind(forkBase, shared.dir(), point, shared.readOnly());
                } else if (m instanceof SandboxMount.Layered layered) {
                    Path layer = to.resolve("m" + i);
                    Filesystems.freshWork(layer.resolve("work"));
                    host.rootfsTool().mount(forkBase, layered.lower().getParent(),
                            List.of(layered.lower().getFileName().toString()), layer.resolve("upper"), layer.resolve("work"), point);
                }
            }
        }
    }

    /** Unmounts and removes a sandbox's extra mount points. Idempotent. */
    private void removeExtras(SandboxId id) {
        Path dir = mountsOf(id);
        if (!Files.isDirectory(dir, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (java.util.stream.Stream<Path> points = Files.list(dir)) {
            for (Path p : points.toList()) {
                host.rootfsTool().unmount(p);
                Files.deleteIfExists(p);
            }
            Files.deleteIfExists(dir);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot remove the mounts of " + id + ": " + e, e);
        }
    }

    @Override
    public Optional<WritableLayer> mountLayer(SandboxId id, int index) {
        Path upper = host.writable().of(id).resolve("m" + index).resolve("upper");
        Integer slot = readSlot(bundle(id));
        if (slot == null || !Files.isDirectory(upper, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            return Optional.empty();
        }
        return Optional.of(new WritableLayer(upper, host.uids().firstId(slot)));
    }

    @Override
    public Optional<WritableLayer> writableLayer(SandboxId id) {
        Path upper = host.storageDir().resolve("writable").resolve(id.value()).resolve("upper");
        Integer slot = readSlot(bundle(id));
        if (slot == null || !Files.isDirectory(upper, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            return Optional.empty();
        }
        java.util.Set<String> paddockFiles = new java.util.HashSet<>(WritableLayer.PADDOCK_FILES);
        preloadLibrary().ifPresent(lib -> paddockFiles.add("etc/ld.so.preload"));
        return Optional.of(new WritableLayer(upper, host.uids().firstId(slot), paddockFiles));
    }

    @Override
    public java.util.Optional<io.paddock.ResourceUsage> usage(SandboxId id) {
        return host.cgroups().usage(cgroupsPath(id));
    }

    /**
     * Whether its cgroups hold a process (every process of a sandbox is in them, on runsc the Sentry and gofer
     * too) and are not frozen: a paused sandbox does not run, and its init's own deadline never fires.
     */
    @Override
    public boolean running(SandboxId id) {
        String path = cgroupsPath(id);
        return host.cgroups().populated(path) && !host.cgroups().frozen(path);
    }

    /** Freezes the sandbox's cgroups (every process of it: on runsc the Sentry and gofer too). */
    @Override
    public AutoCloseable freeze(SandboxId id) {
        String path = cgroupsPath(id);
        host.cgroups().freeze(path);
        return () -> host.cgroups().thaw(path);
    }

    /**
     * Removes an image sandbox's root: the overlay mount, then its writable layer (one process when both are
     * there). Idempotent.
     */
    private void removeImageRoot(SandboxId id) {
        Path rootfs = rootfsOf(id);
        Path parent = rootfs.getParent();
        if (!Files.exists(rootfs, java.nio.file.LinkOption.NOFOLLOW_LINKS)
                && Files.exists(parent, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            rootfs = parent; // mounted by an engine before this one, at <id> itself
        }
        Path layer = host.storageDir().resolve("writable").resolve(id.value()); // host.writable() sets up on first use
        boolean hasLayer = Files.exists(layer, java.nio.file.LinkOption.NOFOLLOW_LINKS);
        if (Files.exists(rootfs, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            if (hasLayer) {
                host.rootfsTool().removeRoot(rootfs, layer);
                host.writable().forget(id);
                hasLayer = false;
            } else {
                host.rootfsTool().unmount(rootfs);
            }
            try {
                Files.deleteIfExists(rootfs);
                Files.deleteIfExists(parent);
            } catch (IOException e) {
                throw new SandboxException(ErrorCode.INTERNAL, "cannot remove " + rootfs + ": " + e, e);
            }
        }
        if (hasLayer) {
            host.writable().delete(id);
        } else {
            // claimed, but its engine stopped before it made the layer (without setting up the store for it)
            WritableLayers.forgetClaim(host.storageDir(), id);
        }
    }

    /**
     * Stops every process of a running sandbox without killing it; the FIFOs are held open meanwhile (see
     * {@link #pause}). Tiers that cannot say FAILED_PRECONDITION with the reason.
     */
    protected io.paddock.PauseMode suspendInRuntime(SandboxId id, Path bundle) {
        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, name() + " sandboxes cannot be paused");
    }

    /** Lets a sandbox {@link #suspendInRuntime} stopped run again, its init's stdio the FIFOs again. */
    protected void resumeInRuntime(SandboxId id, Path bundle, Path toInit, Path fromInit, Path log) {
        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, name() + " sandboxes cannot be resumed");
    }

    /** Where a paused sandbox's checkpoint is kept: on disk ({@code <storage>/checkpoints/<id>}), never in /run. */
    protected Path checkpointDir(SandboxId id) {
        return host.storageDir().resolve("checkpoints").resolve(id.value());
    }

    /**
     * Both FIFOs opened read-write by the engine while a sandbox is paused: the engine's own ends then never
     * read end of file nor fail a write when the init's side goes away with a checkpointed Sentry, so the
     * channel (and every exec on it) keeps its place until the restored init holds its ends again.
     */
    private final java.util.concurrent.ConcurrentHashMap<SandboxId, FileChannel[]> pausedHolds =
            new java.util.concurrent.ConcurrentHashMap<>();

    @Override
    public io.paddock.PauseMode pause(SandboxId id) {
        Path bundle = bundle(id);
        if (!hasState(id) || pausedHolds.containsKey(id)) {
            throw new SandboxException(ErrorCode.NOT_FOUND, "sandbox " + id + " is not running on this host");
        }
        FileChannel[] hold = holdFifos(id, bundle);
        try {
            io.paddock.PauseMode mode = suspendInRuntime(id, bundle);
            pausedHolds.put(id, hold);
            return mode;
        } catch (RuntimeException e) {
            closeQuietly(hold[0]);
            closeQuietly(hold[1]);
            throw e;
        }
    }

    /** A paused sandbox's held channel is closed: the next engine holds its own when it resumes it. */
    @Override
    public void detach(SandboxId id) {
        FileChannel[] hold = pausedHolds.remove(id);
        if (hold != null) {
            closeQuietly(hold[0]);
            closeQuietly(hold[1]);
        }
    }

    @Override
    public Optional<RuntimeSandbox> resume(SandboxId id, Optional<byte[]> preamble) {
        Path bundle = bundle(id);
        Path toInit = bundle.resolve("to-init");
        Path fromInit = bundle.resolve("from-init");
        FileChannel[] held = pausedHolds.remove(id);
        FileChannel[] hold = held != null ? held : holdFifos(id, bundle);
        try {
            if (preamble.isPresent()) {
                writeFully(hold[0], preamble.get());
            }
            resumeInRuntime(id, bundle, toInit, fromInit, bundle.resolve("init.log"));
            Optional<RuntimeSandbox> channel = preamble.isPresent() ? Optional.of(openChannel(id, toInit, fromInit))
                    : Optional.empty();
            closeQuietly(hold[0]);
            closeQuietly(hold[1]);
            return channel;
        } catch (IOException | RuntimeException e) {
            if (held != null) {
                pausedHolds.put(id, held); // still paused: the engine's channel keeps its place
            } else {
                closeQuietly(hold[0]);
                closeQuietly(hold[1]);
            }
            throw e instanceof SandboxException se ? se
                    : new SandboxException(ErrorCode.INTERNAL, "resuming sandbox " + id + " failed: " + e, e);
        }
    }

    /**
     * Why this tier cannot fork the sandbox of this bundle, if it cannot; the default: no memory checkpoints.
     */
    protected Optional<String> forkRefusal(SandboxId source, Path bundle) {
        return Optional.of(name() + " sandboxes cannot be forked: a fork is restored from a memory checkpoint, and"
                + " memory checkpoints need the gVisor tier (runtime runsc); runc's pause only freezes");
    }

    /**
     * Restores the checkpoint of the paused sandbox {@code source} as the new sandbox {@code id}, from its own
     * bundle, its init's stdio the given FIFOs.
     */
    protected void restoreForkInRuntime(SandboxId source, SandboxId id, Path bundle, Path toInit, Path fromInit, Path log) {
        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, forkRefusal(source, bundle(source)).orElse(
                name() + " sandboxes cannot be forked"));
    }

    @Override
    public void checkForkable(SandboxId source) {
        Path bundle = bundle(source);
        if (!Files.isRegularFile(bundle.resolve("config.json"))) {
            throw new SandboxException(ErrorCode.NOT_FOUND, "sandbox " + source + " is not on this host");
        }
        Optional<String> refusal = forkRefusal(source, bundle);
        if (refusal.isPresent()) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, refusal.get());
        }
    }

    /**
     * A fork: a bundle of its own (staged and owned as in {@link #start}), a uid range of its own, its
     * {@code config.json} the source's with the id (cgroup, paths named by it) and the uid and gid mappings moved
     * to the new sandbox's; then the tier restores the source's checkpoint into it behind a fresh HELLO. What the
     * spec names by a path inside the sandbox stays the same, which is what a restore matches its mounts by.
     */
    @Override
    public RuntimeSandbox fork(SandboxId source, StartRequest request) {
        checkForkable(source);
        SandboxId id = request.id();
        Deque<Runnable> undo = new ArrayDeque<>();
        Path bundle = bundle(id);
        try (Cgroups.Warm warm = host.cgroups().attachLockWarm()) {
            Integer sourceSlot = readSlot(bundle(source));
            if (sourceSlot == null) {
                throw new SandboxException(ErrorCode.NOT_FOUND, "sandbox " + source + " has no uid range on this host");
            }
            String config = Files.readString(bundle(source).resolve("config.json"), StandardCharsets.UTF_8);
            int slot = createBundle(id, request.owner(), undo);
            UidLeases uids = host.uids();
            Files.write(bundle.resolve("config.json"), ForkSpec.retarget(config, source.value(), id.value(),
                    uids.firstId(sourceSlot), uids.firstId(slot)));
            forkFilesystems(source, id, request, uids.firstId(sourceSlot), uids.firstId(slot), undo);
            if (Files.isRegularFile(bundle(source).resolve(Filesystems.FILE))) {
                Files.copy(bundle(source).resolve(Filesystems.FILE), bundle.resolve(Filesystems.FILE));
            }
            return runWithChannel(id, bundle, request.preamble(), undo, true,
                    (toInit, fromInit, log) -> restoreForkInRuntime(source, id, bundle, toInit, fromInit, log));
        } catch (IOException | RuntimeException e) {
            throw unwind(e, undo, "forking sandbox " + source + " as " + id);
        }
    }

    private FileChannel[] holdFifos(SandboxId id, Path bundle) {
        Path toInit = bundle.resolve("to-init");
        Path fromInit = bundle.resolve("from-init");
        if (!Files.exists(toInit) || !Files.exists(fromInit)) {
            throw new SandboxException(ErrorCode.NOT_FOUND, "sandbox " + id + " has no channel on this host");
        }
        FileChannel in = null;
        try {
            in = new RandomAccessFile(toInit.toFile(), "rw").getChannel();
            return new FileChannel[] {in, new RandomAccessFile(fromInit.toFile(), "rw").getChannel()};
        } catch (IOException e) {
            closeQuietly(in);
            throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot hold the channel of sandbox " + id + ": " + e, e);
        }
    }

    @Override
    public RuntimeSandbox reattach(SandboxId id, byte[] preamble) {
        Path bundle = bundle(id);
        Path toInit = bundle.resolve("to-init");
        Path fromInit = bundle.resolve("from-init");
        if (!hasState(id) || !Files.exists(toInit) || !Files.exists(fromInit)) {
            throw new SandboxException(ErrorCode.NOT_FOUND, "sandbox " + id + " is not running on this host");
        }
        // As in start(): read-write opens never block, whether or not the init is still there.
        try (FileChannel inRw = new RandomAccessFile(toInit.toFile(), "rw").getChannel();
             FileChannel outRw = new RandomAccessFile(fromInit.toFile(), "rw").getChannel()) {
            writeFully(inRw, preamble);
            return openChannel(id, toInit, fromInit);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot re-open the channel of sandbox " + id + ": " + e, e);
        }
    }

    private RuntimeSandbox openChannel(SandboxId id, Path toInit, Path fromInit) throws IOException {
        FileChannel in = FileChannel.open(toInit, StandardOpenOption.WRITE);
        try {
            return new FifoSandbox(id, in, FileChannel.open(fromInit, StandardOpenOption.READ));
        } catch (IOException | RuntimeException e) {
            closeQuietly(in);
            throw e;
        }
    }

    @Override
    public void destroy(SandboxId id) {
        Path bundle = bundle(id);
        removeFromRuntime(id);
        // If the runtime's state was lost (ATTACKS.md R6) the cgroups may still hold processes: kill by path.
        host.cgroups().killAndRemove(cgroupsPath(id));
        // Unmounted before the bundle is deleted: the walk must never enter a mounted root.
        removeExtras(id);
        removeImageRoot(id);
        FileChannel[] hold = pausedHolds.remove(id);
        if (hold != null) {
            closeQuietly(hold[0]);
            closeQuietly(hold[1]);
        }
        deleteTree(checkpointDir(id));
        deleteQuietly(host.resolvDir().resolve(id.value()));
        deleteQuietly(host.resolvDir().resolve(id.value() + ".ca"));
        // The launcher detaches the sysfs it mounted as soon as runc exits; one left by a crash in between
        // must not be walked into.
        Path sysfs = bundle.resolve(SYSFS_DIR);
        if (isMountPoint(sysfs)) {
            host.rootfsTool().unmount(sysfs);
        }
        Integer slot = readSlot(bundle);
        if (!Files.exists(bundle, LinkOption.NOFOLLOW_LINKS)) {
            deleteStaging(id);
        }
        deleteTree(bundle);
        if (slot != null) {
            host.uids().release(slot, id);
        } else {
            host.uids().releaseAll(id);
        }
    }

    /** The staging directories ({@link #staging}) of a sandbox whose bundle never got its final name. */
    private void deleteStaging(SandboxId id) {
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(host.sandboxesDir(), "." + id.value() + STAGING_OWNER + "*")) {
            dirs.forEach(OciTier::deleteTree);
        } catch (NoSuchFileException e) {
            // no sandboxes directory: nothing staged
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot list " + host.sandboxesDir() + ": " + e);
        }
    }

    /**
     * The bundles of this tier, whoever started them, and the staging directories ({@link #staging}) that a crash
     * left before their rename: the owner in their name, their tier the one they name or else runc's.
     */
    @Override
    public List<RuntimeRecord> records() {
        List<RuntimeRecord> out = new ArrayList<>();
        try (Stream<Path> dirs = Files.list(host.sandboxesDir())) {
            for (Path dir : dirs.sorted().toList()) {
                String dirName = dir.getFileName().toString();
                int at = dirName.indexOf(STAGING_OWNER);
                if (dirName.startsWith(".") && at > 1 && SandboxId.isValid(dirName.substring(1, at))
                        && name().equals(tierOf(dir))) {
                    out.add(new RuntimeRecord(new SandboxId(dirName.substring(1, at)), dirName.substring(at + 1)));
                    continue;
                }
                if (!SandboxId.isValid(dirName) || !name().equals(tierOf(dir))) {
                    continue;
                }
                out.add(new RuntimeRecord(new SandboxId(dirName), readTrimmed(dir.resolve("owner"))));
            }
        } catch (NoSuchFileException e) {
            return List.of();
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot list " + host.sandboxesDir() + ": " + e);
        }
        return out;
    }

    /** The tier a bundle was started on: its {@code runtime} file, or runc for bundles from before tiers. */
    static String tierOf(Path bundle) {
        String tier = readTrimmed(bundle.resolve("runtime"));
        return tier.isEmpty() ? LEGACY_TIER : tier;
    }

    protected Path bundle(SandboxId id) {
        return host.sandboxesDir().resolve(id.value());
    }

    private static String readTrimmed(Path file) {
        try {
            return Files.readString(file, StandardCharsets.UTF_8).trim();
        } catch (IOException e) {
            return "";
        }
    }

    /** The first host id of the uid range leased to the sandbox of {@code bundle} (its {@code slot} file). */
    protected long uidBase(Path bundle) {
        Integer slot = readSlot(bundle);
        if (slot == null) {
            throw new SandboxException(ErrorCode.INTERNAL, "the bundle " + bundle + " records no uid range");
        }
        return host.uids().firstId(slot);
    }

    private static Integer readSlot(Path bundle) {
        try {
            return Integer.parseInt(Files.readString(bundle.resolve("slot")).trim());
        } catch (IOException | NumberFormatException e) {
            return null;
        }
    }

    private static void writeFully(WritableByteChannel ch, byte[] bytes) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(bytes);
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    /**
     * A regular file of a sandbox's root, read without following any link (an image's layers are hostile
     * input: a planted link must never make the engine read a host file); empty when absent, a link, or
     * over 8 MiB.
     */
    static Optional<String> readRootFile(Path root, String absolute) throws IOException {
        Path p = root;
        for (String part : absolute.substring(1).split("/")) {
            p = p.resolve(part);
            java.nio.file.attribute.BasicFileAttributes a;
            try {
                a = Files.readAttributes(p, java.nio.file.attribute.BasicFileAttributes.class,
                        java.nio.file.LinkOption.NOFOLLOW_LINKS);
            } catch (NoSuchFileException e) {
                return Optional.empty();
            }
            if (a.isSymbolicLink()) {
                return Optional.empty();
            }
        }
        if (!Files.isRegularFile(p, java.nio.file.LinkOption.NOFOLLOW_LINKS) || Files.size(p) > (8 << 20)) {
            return Optional.empty();
        }
        try (java.nio.channels.SeekableByteChannel ch = Files.newByteChannel(p, StandardOpenOption.READ,
                java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
            ByteBuffer buf = ByteBuffer.allocate(65536);
            while (ch.read(buf) > 0 && out.size() <= (8 << 20)) {
                out.write(buf.array(), 0, buf.position());
                buf.clear();
            }
            return Optional.of(out.toString(StandardCharsets.UTF_8));
        }
    }

    private static boolean isMountPoint(Path dir) {
        try {
            return Files.isDirectory(dir, java.nio.file.LinkOption.NOFOLLOW_LINKS)
                    && !Files.getAttribute(dir, "unix:dev").equals(Files.getAttribute(dir.getParent(), "unix:dev"));
        } catch (IOException | UnsupportedOperationException e) {
            return false;
        }
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot remove " + file + ": " + e, e);
        }
    }

    private static void closeQuietly(FileChannel ch) {
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // nothing to do
            }
        }
    }

    /** Whether the sandbox of this bundle was started in a network namespace of its own. */
    protected static boolean networked(Path bundle) {
        return Files.isDirectory(bundle.resolve(SYSFS_DIR), java.nio.file.LinkOption.NOFOLLOW_LINKS);
    }

    protected static void deleteTree(Path dir) {
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (NoSuchFileException e) {
            // already gone
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot remove " + dir + ": " + e);
        }
    }

    /** A started sandbox: the engine's ends of the FIFOs, and the OOM counter of its memory cgroup. */
    private final class FifoSandbox implements RuntimeSandbox {
        private final SandboxId id;
        private final FileChannel toInit;
        private final FileChannel fromInit;
        /** The memory cgroup's OOM counter file, found on the first read (every exec reads it). */
        private volatile Optional<Path> oomFile;

        FifoSandbox(SandboxId id, FileChannel toInit, FileChannel fromInit) {
            this.id = id;
            this.toInit = toInit;
            this.fromInit = fromInit;
        }

        @Override
        public SandboxId id() {
            return id;
        }

        @Override
        public ReadableByteChannel fromInit() {
            return fromInit;
        }

        @Override
        public WritableByteChannel toInit() {
            return toInit;
        }

        @Override
        public long oomKills() {
            Optional<Path> file = oomFile;
            if (file == null) {
                oomFile = file = host.cgroups().oomKillsFile(cgroupsPath(id));
            }
            return file.map(Cgroups::oomKillsIn).orElse(0L);
        }

        @Override
        public long processLimitHits() {
            return host.cgroups().pidsLimitHits(cgroupsPath(id));
        }

        /**
         * The start of the runtime's fatal-error log where there is one (runsc's {@code panic.log}: what killed the
         * Sentry comes first), then the end of init.log (the runtime's stderr and the init's own messages).
         */
        @Override
        public String logTail() {
            Path bundle = bundle(id);
            String panic = excerpt(bundle.resolve(Runsc.PANIC_LOG), false);
            String log = excerpt(bundle.resolve("init.log"), true);
            return panic.isEmpty() ? log : panic + "\n[...]\n" + log;
        }

        /** Up to {@link #LOG_TAIL_BYTES} of a log, its start or its end, control characters shown as '?'. */
        private static String excerpt(Path file, boolean end) {
            try (FileChannel ch = FileChannel.open(file)) {
                long size = ch.size();
                ByteBuffer buf = ByteBuffer.allocate((int) Math.min(size, LOG_TAIL_BYTES));
                ch.read(buf, end ? size - buf.capacity() : 0);
                String text = new String(buf.array(), 0, buf.position(), StandardCharsets.UTF_8);
                return text.replaceAll("[\\p{Cntrl}&&[^\n\t]]", "?").strip();
            } catch (IOException e) {
                return "";
            }
        }

        @Override
        public void closeChannel() {
            closeQuietly(toInit);
            closeQuietly(fromInit);
        }
    }
}
