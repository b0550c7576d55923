package io.paddock.runtime.internal.runc;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.runtime.RuntimeRecord;
import io.paddock.runtime.RuntimeSandbox;
import io.paddock.runtime.SandboxRuntime;
import io.paddock.runtime.StartRequest;
import io.paddock.runtime.internal.host.Cgroups;
import io.paddock.runtime.internal.host.Fifos;
import io.paddock.runtime.internal.host.HostFacts;
import io.paddock.runtime.internal.host.Runc;
import io.paddock.runtime.internal.image.HostImage;
import io.paddock.runtime.internal.oci.BundlePlan;
import io.paddock.runtime.internal.oci.OciSpec;
import io.paddock.runtime.internal.oci.OciSpecBuilder;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.List;
import java.util.stream.Stream;

/**
 * The runc tier: each sandbox is a runc container with its own user namespace and host uid range, its
 * own cgroups, the seccomp allowlist, a read-only root and Paddock's init as PID 1.
 *
 * <p>Layout under the state directory:
 * <pre>
 *   sandboxes/&lt;id&gt;/      bundle: config.json, to-init and from-init FIFOs, init.log, owner, slot
 *   runc/                   runc's --root
 *   uids/&lt;slot&gt;          uid-range leases
 *   images/host-&lt;hash&gt;/  the shared root directory of the host image
 * </pre>
 *
 * <p>The channel to the init is a pair of FIFOs rather than pipes: runc exits right after starting the
 * container, and the JDK drains and closes a child's pipes when the child exits, so the init's stdio must
 * not belong to a {@link Process}. FIFOs also let a restarted engine re-open the channel.
 */
public final class RuncRuntime implements SandboxRuntime {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final String CGROUP_PARENT = "/paddock/";

    private final Path sandboxesDir;
    private final Runc runc;
    private final Cgroups cgroups;
    private final BundlePlan.HostFacts facts;
    private final HostImage hostImage;
    private final UidLeases uids;

    private RuncRuntime(Path sandboxesDir, Runc runc, Cgroups cgroups, BundlePlan.HostFacts facts, HostImage hostImage,
                        UidLeases uids) {
        this.sandboxesDir = sandboxesDir;
        this.runc = runc;
        this.cgroups = cgroups;
        this.facts = facts;
        this.hostImage = hostImage;
        this.uids = uids;
    }

    /**
     * Checks the host (root, runc, cgroups), prepares the state directory and the host image.
     *
     * @throws SandboxException FAILED_PRECONDITION with how to fix it, when the host cannot run sandboxes
     */
    public static RuncRuntime open(Path stateDir, Path initBinary) {
        if (!HostFacts.isRoot()) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION,
                    "the local Paddock engine must run as root: it gives every sandbox its own user namespace and"
                            + " host uid range, cgroups and mounts. Run as root (sudo), or connect to a Paddock daemon.");
        }
        Path runcBinary = Runc.locate();
        Cgroups cgroups = Cgroups.detect();
        try {
            Files.createDirectories(stateDir);
            Files.setPosixFilePermissions(stateDir, PosixFilePermissions.fromString("rwx--x--x"));
            for (String d : List.of("sandboxes", "runc", "uids")) {
                Files.createDirectories(stateDir.resolve(d));
                Files.setPosixFilePermissions(stateDir.resolve(d), PosixFilePermissions.fromString("rwx------"));
            }
            Files.createDirectories(stateDir.resolve("images"));
            Files.setPosixFilePermissions(stateDir.resolve("images"), PosixFilePermissions.fromString("rwx--x--x"));
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "cannot create the state directory " + stateDir + ": " + e);
        }
        HostImage image = HostImage.prepare(stateDir.resolve("images"), initBinary, Path.of("/"));
        return new RuncRuntime(stateDir.resolve("sandboxes"), new Runc(runcBinary, stateDir.resolve("runc")), cgroups,
                HostFacts.probe(cgroups), image, new UidLeases(stateDir.resolve("uids"), UidLeases.DEFAULT_BASE,
                UidLeases.DEFAULT_SLOTS));
    }

    @Override
    public String name() {
        return "runc";
    }

    @Override
    public String describe() {
        return runc.version() + ", " + cgroups;
    }

    public Cgroups cgroups() {
        return cgroups;
    }

    static String cgroupsPath(SandboxId id) {
        return CGROUP_PARENT + id.value();
    }

    @Override
    public RuntimeSandbox start(StartRequest request) {
        SandboxId id = request.id();
        Deque<Runnable> undo = new ArrayDeque<>();
        Path bundle = sandboxesDir.resolve(id.value());
        FileChannel inRw = null;
        FileChannel outRw = null;
        try {
            // The bundle appears under its final name only with its owner recorded, so that a reconciler in
            // another engine never sees an ownerless bundle it could take for an orphan.
            Path staging = sandboxesDir.resolve("." + id.value());
            Files.createDirectory(staging);
            undo.push(() -> deleteTree(staging));
            Files.setPosixFilePermissions(staging, PosixFilePermissions.fromString("rwx------"));
            Files.writeString(staging.resolve("owner"), request.owner(), StandardCharsets.UTF_8);
            Files.move(staging, bundle, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            undo.push(() -> deleteTree(bundle));
            int slot = uids.acquire(id);
            undo.push(() -> uids.release(slot, id));
            Files.writeString(bundle.resolve("slot"), Integer.toString(slot), StandardCharsets.UTF_8);

            BundlePlan plan = new BundlePlan(request.spec(), hostImage.root().toString(), hostImage.mounts(),
                    uids.firstId(slot), cgroupsPath(id), facts);
            OciSpec spec = OciSpecBuilder.build(plan);
            Files.write(bundle.resolve("config.json"), JSON.writeValueAsBytes(spec));

            Path toInit = bundle.resolve("to-init");
            Path fromInit = bundle.resolve("from-init");
            Path log = bundle.resolve("init.log");
            Fifos.create(toInit, fromInit);
            // Opening a FIFO read-write never blocks, so both ends exist before runc opens them.
            inRw = new RandomAccessFile(toInit.toFile(), "rw").getChannel();
            outRw = new RandomAccessFile(fromInit.toFile(), "rw").getChannel();
            writeFully(inRw, request.preamble());

            undo.push(() -> runc.deleteForce(id.value()));
            undo.push(() -> cgroups.killAndRemove(cgroupsPath(id)));
            runc.runDetached(id.value(), bundle, toInit, fromInit, log);

            // Now the init holds its ends: switch to one-directional ends so that its death reads as end of
            // file and writes to a dead init fail instead of filling the pipe.
            FileChannel in = FileChannel.open(toInit, StandardOpenOption.WRITE);
            FileChannel out = FileChannel.open(fromInit, StandardOpenOption.READ);
            inRw.close();
            outRw.close();
            return new RuncSandbox(id, in, out);
        } catch (IOException | RuntimeException e) {
            closeQuietly(inRw);
            closeQuietly(outRw);
            List<Throwable> cleanupFailures = new ArrayList<>();
            while (!undo.isEmpty()) {
                try {
                    undo.pop().run();
                } catch (RuntimeException ce) {
                    cleanupFailures.add(ce);
                }
            }
            SandboxException ex = e instanceof SandboxException se ? se
                    : new SandboxException(ErrorCode.INTERNAL, "creating sandbox " + id + " failed: " + e, e);
            cleanupFailures.forEach(ex::addSuppressed);
            throw ex;
        }
    }

    @Override
    public RuntimeSandbox reattach(SandboxId id, byte[] preamble) {
        Path bundle = sandboxesDir.resolve(id.value());
        Path toInit = bundle.resolve("to-init");
        Path fromInit = bundle.resolve("from-init");
        if (!runc.hasState(id.value()) || !Files.exists(toInit) || !Files.exists(fromInit)) {
            throw new SandboxException(ErrorCode.NOT_FOUND, "sandbox " + id + " is not running on this host");
        }
        // As in start(): read-write opens never block, whether or not the init is still there.
        try (FileChannel inRw = new RandomAccessFile(toInit.toFile(), "rw").getChannel();
             FileChannel outRw = new RandomAccessFile(fromInit.toFile(), "rw").getChannel()) {
            writeFully(inRw, preamble);
            FileChannel in = FileChannel.open(toInit, StandardOpenOption.WRITE);
            FileChannel out = FileChannel.open(fromInit, StandardOpenOption.READ);
            return new RuncSandbox(id, in, out);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot re-open the channel of sandbox " + id + ": " + e, e);
        }
    }

    @Override
    public void destroy(SandboxId id) {
        Path bundle = sandboxesDir.resolve(id.value());
        runc.deleteForce(id.value());
        // If runc's state was lost (ATTACKS.md R6) the cgroups may still hold processes: kill by path.
        cgroups.killAndRemove(cgroupsPath(id));
        Integer slot = readSlot(bundle);
        deleteTree(bundle);
        if (slot != null) {
            uids.release(slot, id);
        } else {
            uids.releaseAll(id);
        }
    }

    @Override
    public List<RuntimeRecord> records() {
        List<RuntimeRecord> out = new ArrayList<>();
        try (Stream<Path> dirs = Files.list(sandboxesDir)) {
            for (Path dir : dirs.sorted().toList()) {
                String name = dir.getFileName().toString();
                if (!SandboxId.isValid(name)) {
                    continue;
                }
                String owner;
                try {
                    owner = Files.readString(dir.resolve("owner"), StandardCharsets.UTF_8).trim();
                } catch (IOException e) {
                    owner = "";
                }
                out.add(new RuntimeRecord(new SandboxId(name), owner));
            }
        } catch (NoSuchFileException e) {
            return List.of();
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot list " + sandboxesDir + ": " + e);
        }
        return out;
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

    private static void closeQuietly(FileChannel ch) {
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // nothing to do
            }
        }
    }

    static void deleteTree(Path dir) {
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

    private final class RuncSandbox implements RuntimeSandbox {
        private final SandboxId id;
        private final FileChannel toInit;
        private final FileChannel fromInit;

        RuncSandbox(SandboxId id, FileChannel toInit, FileChannel fromInit) {
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
            return cgroups.oomKills(cgroupsPath(id));
        }

        @Override
        public void closeChannel() {
            closeQuietly(toInit);
            closeQuietly(fromInit);
        }
    }
}
