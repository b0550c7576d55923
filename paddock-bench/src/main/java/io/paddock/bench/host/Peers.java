package io.paddock.bench.host;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.paddock.ByteSize;
import io.paddock.SandboxSpec;
import io.paddock.runtime.internal.host.Cgroups;
import io.paddock.runtime.internal.host.HostFacts;
import io.paddock.runtime.internal.image.HostImage;
import io.paddock.runtime.internal.oci.BundlePlan;
import io.paddock.runtime.internal.oci.OciSpec;
import io.paddock.runtime.internal.oci.OciSpecBuilder;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The peers measured beside Paddock, run the way a user without Paddock would run them: a bare spawn from
 * the JVM, bubblewrap, podman, and runc and runsc themselves on a bundle with the same isolation settings as
 * a Paddock sandbox (same OCI spec builder, user namespace, seccomp and mounts) whose process is the command
 * itself instead of Paddock's init.
 */
public final class Peers implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    public static final List<String> BWRAP = List.of("bwrap", "--unshare-all", "--die-with-parent", "--new-session",
            "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
            "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin", "--proc", "/proc", "--dev", "/dev",
            "--tmpfs", "/tmp");

    private final Path runc;
    private final Path runsc;
    private final Path root;
    private final OciSpec base;
    private final Path oneShot;
    private final Path runscOneShot;
    private final Set<String> containers = ConcurrentHashMap.newKeySet();
    private final Set<String> runscContainers = ConcurrentHashMap.newKeySet();
    private final Set<String> cgroups = ConcurrentHashMap.newKeySet();
    private final List<Process> idle = new ArrayList<>();
    private final AtomicInteger counter = new AtomicInteger();

    public Peers(Path stateDir, Path initBinary, Path runc, Path runscOrNull) throws IOException {
        this.runc = runc;
        this.runsc = runscOrNull;
        this.root = Files.createTempDirectory("paddock-bench-");
        HostImage image = HostImage.prepare(stateDir.resolve("images"), initBinary, Path.of("/"));
        Cgroups cg = Cgroups.detect();
        SandboxSpec spec = SandboxSpec.builder().memory(ByteSize.mib(256)).build();
        BundlePlan plan = new BundlePlan(spec, image.root().toString(), image.mounts(),
                0x4000_0000L + 16000L * 65536, "/paddock-bench/peer", HostFacts.probe(cg));
        this.base = OciSpecBuilder.build(plan);
        this.oneShot = bundle("bundle", List.of("/bin/echo", "hi"), "/paddock-bench/peer");
        this.runscOneShot = bundle("bundle-runsc", List.of("/bin/echo", "hi"), "/paddock-bench/peer", COMMAND_ENV);
    }

    /**
     * The environment Paddock gives every command on the host image (the engine's {@code ExecEnvironment.BASE}).
     * The runsc peer runs its echo with it, as Paddock's echo always does: {@code LANG=C.UTF-8} makes echo load
     * the locale. Before the host image carried a locale archive that was 13 files through the gofer, about 19 ms
     * of a one-shot here (p50 118 ms with the init's bare PATH, 137 ms with this, n = 20 each, alternating); it is
     * one file now.
     */
    static final List<String> COMMAND_ENV = List.of("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME=/workspace", "USER=sandbox", "LOGNAME=sandbox", "SHELL=/bin/bash", "LANG=C.UTF-8", "TMPDIR=/tmp",
            "HOSTNAME=sandbox");

    /** A bundle whose process is argv run as the sandbox user, in its own cgroup. */
    private Path bundle(String name, List<String> argv, String cgroupsPath) throws IOException {
        return bundle(name, argv, cgroupsPath, base.process().env());
    }

    /** As {@link #bundle(String, List, String)}, with this environment. */
    private Path bundle(String name, List<String> argv, String cgroupsPath, List<String> env) throws IOException {
        Path dir = root.resolve(name);
        Files.createDirectories(dir);
        OciSpec.Process p = base.process();
        OciSpec.Process tenant = new OciSpec.Process(false, new OciSpec.User(1000, 1000), argv, env, "/workspace",
                new OciSpec.Capabilities(List.of(), List.of(), List.of(), List.of(), List.of()), p.rlimits(), true);
        OciSpec.Linux l = base.linux();
        OciSpec spec = new OciSpec(base.ociVersion(), tenant, base.root(), base.hostname(), base.mounts(),
                new OciSpec.Linux(l.uidMappings(), l.gidMappings(), l.resources(), cgroupsPath, l.namespaces(),
                        l.seccomp(), l.maskedPaths(), l.readonlyPaths()));
        Files.write(dir.resolve("config.json"), JSON.writeValueAsBytes(spec));
        cgroups.add(cgroupsPath);
        return dir;
    }

    // ---- one-shot peers: nanoseconds to the first byte of `echo hi` ----

    /** {@code ProcessBuilder} start of /bin/echo hi from this JVM; nanoseconds to its first byte. */
    public static long jvmSpawn() throws IOException, InterruptedException {
        return timeToFirstByte(new ProcessBuilder("/bin/echo", "hi"));
    }

    /** {@code head -c SIZE /dev/zero} read by this JVM from a {@code ProcessBuilder} pipe; the bytes it read. */
    public static long hostPipe(long size) throws IOException, InterruptedException {
        Process pr = zeroes(size);
        byte[] buf = new byte[1 << 16];
        long total = 0;
        int k;
        try (InputStream in = pr.getInputStream()) {
            while ((k = in.read(buf)) > 0) {
                total += k;
            }
        }
        pr.waitFor();
        return total;
    }

    /** {@code head -c size /dev/zero} on the host, started: P7's command, read from its stdout. */
    public static Process zeroes(long size) throws IOException {
        return new ProcessBuilder("head", "-c", Long.toString(size), "/dev/zero").start();
    }

    /** {@code ProcessBuilder} start of /bin/true from this JVM; nanoseconds to its exit. */
    public static long jvmSpawnTrue() throws IOException, InterruptedException {
        long t0 = System.nanoTime();
        Process p = new ProcessBuilder("/bin/true").redirectErrorStream(true).start();
        p.getInputStream().readAllBytes();
        p.waitFor();
        return System.nanoTime() - t0;
    }

    /** {@code bwrap --unshare-all …} of /bin/echo hi. */
    public static long bwrapOneShot() throws IOException, InterruptedException {
        List<String> argv = new ArrayList<>(BWRAP);
        argv.addAll(List.of("/bin/echo", "hi"));
        return timeToFirstByte(new ProcessBuilder(argv));
    }

    /** {@code runc run} of the peer bundle (one-shot container running echo hi). */
    public long runcOneShot() throws IOException, InterruptedException {
        String id = "paddock-bench-" + counter.incrementAndGet();
        containers.add(id);
        long t = timeToFirstByte(new ProcessBuilder(runc.toString(), "--root", root.resolve("runc").toString(), "run",
                "--bundle", oneShot.toString(), id));
        containers.remove(id);
        return t;
    }

    /** {@code runsc run} of the same bundle, with the environment Paddock gives commands (default platform, never kvm). */
    public long runscOneShot() throws IOException, InterruptedException {
        if (runsc == null) {
            throw new IOException("runsc is not installed (apt-get install -y runsc)");
        }
        String id = "paddock-bench-sc-" + counter.incrementAndGet();
        runscContainers.add(id);
        long t = timeToFirstByte(new ProcessBuilder(runsc.toString(), "--root", root.resolve("runsc").toString(),
                "--network=none", "--oci-seccomp", "run", "--bundle", runscOneShot.toString(), id));
        runscContainers.remove(id);
        return t;
    }

    /**
     * {@code runsc exec} of {@code echo hi} into a running runsc sandbox (one of the engine's: its runsc state
     * directory and id), as the sandbox user with the locale Paddock's commands get: what running a command in an
     * existing gVisor sandbox costs without Paddock's init.
     */
    public long runscExec(Path runscRoot, String id) throws IOException, InterruptedException {
        if (runsc == null) {
            throw new IOException("runsc is not installed (apt-get install -y runsc)");
        }
        return timeToFirstByte(new ProcessBuilder(runsc.toString(), "--root", runscRoot.toString(), "exec",
                "--user", "1000:1000", "--cwd", "/workspace", "--env", "LANG=C.UTF-8", id, "/bin/echo", "hi"));
    }

    /**
     * {@code podman --runtime runc run --rm --network=none IMAGE /bin/echo hi}. podman's default open-files and
     * process rlimits are above this host's hard limits (no CAP_SYS_RESOURCE: runc fails "error setting rlimit
     * type 7"), so they are set to Paddock's defaults.
     */
    public static long podmanOneShot(String image) throws IOException, InterruptedException {
        return timeToFirstByte(new ProcessBuilder("podman", "--runtime", "runc", "run", "--rm", "--network=none",
                "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096", image, "/bin/echo", "hi"));
    }

    /** Starts a long-running container for {@link #runcExec}. */
    public String startRunning() throws IOException, InterruptedException {
        String id = "paddock-bench-exec";
        if (containers.contains(id)) {
            return id;
        }
        Path b = bundle("bundle-exec", List.of("/bin/sleep", "3600"), "/paddock-bench/exec");
        runDetached(id, b);
        return id;
    }

    private void runDetached(String id, Path bundle) throws IOException, InterruptedException {
        containers.add(id);
        Process pr = new ProcessBuilder(runc.toString(), "--root", root.resolve("runc").toString(), "run", "-d",
                "--bundle", bundle.toString(), id).redirectInput(new File("/dev/null")).redirectOutput(new File("/dev/null"))
                .redirectErrorStream(true).start();
        if (pr.waitFor() != 0) {
            throw new IOException("runc run -d " + id + " failed (exit " + pr.exitValue() + ")");
        }
    }

    /** {@code runc exec ID /bin/echo hi}; nanoseconds to the first byte. */
    public long runcExec(String id) throws IOException, InterruptedException {
        return timeToFirstByte(new ProcessBuilder(runc.toString(), "--root", root.resolve("runc").toString(), "exec",
                id, "/bin/echo", "hi"));
    }

    // ---- churn and density peers ----

    /** A worker's own bundle for create+destroy churn: {@code runc run} of /bin/true in its own cgroup. */
    public Path churnBundle(int worker) throws IOException {
        return bundle("bundle-churn-" + worker, List.of("/bin/true"), "/paddock-bench/churn-" + worker);
    }

    /** {@code runc run} (create, start, wait, delete) of /bin/true; nanoseconds. */
    public long runcChurn(Path bundle) throws IOException, InterruptedException {
        String id = "paddock-bench-churn-" + counter.incrementAndGet();
        containers.add(id);
        long t0 = System.nanoTime();
        Process p = new ProcessBuilder(runc.toString(), "--root", root.resolve("runc").toString(), "run", "--bundle",
                bundle.toString(), id).redirectInput(new File("/dev/null")).redirectOutput(new File("/dev/null"))
                .redirectErrorStream(true).start();
        if (p.waitFor() != 0) {
            throw new IOException("runc run failed (exit " + p.exitValue() + ")");
        }
        containers.remove(id);
        return System.nanoTime() - t0;
    }

    /** n idle runc containers (sleep) with the sandbox settings, each in its own cgroup; {@link #close} removes them. */
    public void runcIdle(int n) throws IOException, InterruptedException {
        for (int i = 0; i < n; i++) {
            Path b = bundle("bundle-idle-" + i, List.of("/bin/sleep", "3600"), "/paddock-bench/idle-" + i);
            runDetached("paddock-bench-idle-" + i, b);
        }
    }

    public void runcIdleRemove(int n) throws InterruptedException, IOException {
        for (int i = 0; i < n; i++) {
            delete("paddock-bench-idle-" + i);
            Cgroups.detect().killAndRemove("/paddock-bench/idle-" + i);
        }
    }

    /** n idle bubblewrap sandboxes (sleep); {@link #bwrapIdleRemove} kills them. */
    public void bwrapIdle(int n) throws IOException {
        for (int i = 0; i < n; i++) {
            List<String> argv = new ArrayList<>(BWRAP);
            argv.addAll(List.of("/bin/sleep", "3600"));
            idle.add(new ProcessBuilder(argv).redirectInput(new File("/dev/null")).redirectOutput(new File("/dev/null"))
                    .redirectError(new File("/dev/null")).start());
        }
    }

    public void bwrapIdleRemove() throws InterruptedException {
        for (Process p : idle) {
            p.destroyForcibly();
        }
        for (Process p : idle) {
            p.waitFor();
        }
        idle.clear();
    }

    private static long timeToFirstByte(ProcessBuilder pb) throws IOException, InterruptedException {
        pb.redirectError(new File("/dev/null"));
        long t0 = System.nanoTime();
        Process p = pb.start();
        long first;
        try (InputStream in = p.getInputStream()) {
            if (in.read() < 0) {
                p.waitFor();
                throw new IOException("no output from " + String.join(" ", pb.command()) + " (exit " + p.exitValue() + ")");
            }
            first = System.nanoTime() - t0;
            in.readAllBytes();
        }
        if (p.waitFor() != 0) {
            throw new IOException(pb.command().get(0) + " exited with " + p.exitValue());
        }
        return first;
    }

    public String runcVersion() {
        return Host.version(runc.toString());
    }

    public String runscVersion() {
        return runsc == null ? "unavailable: runsc is not installed" : Host.version(runsc.toString(), "--version");
    }

    private void delete(String id) throws IOException, InterruptedException {
        new ProcessBuilder(runc.toString(), "--root", root.resolve("runc").toString(), "delete", "-f", id)
                .redirectOutput(new File("/dev/null")).redirectError(new File("/dev/null")).start().waitFor();
        containers.remove(id);
    }

    @Override
    public void close() throws IOException, InterruptedException {
        bwrapIdleRemove();
        for (String id : List.copyOf(containers)) {
            delete(id);
        }
        if (runsc != null) {
            for (String id : List.copyOf(runscContainers)) {
                Host.run(Duration.ofSeconds(30), runsc.toString(), "--root", root.resolve("runsc").toString(), "delete",
                        "--force", id);
            }
        }
        Cgroups cg = Cgroups.detect();
        for (String path : cgroups) {
            cg.killAndRemove(path);
        }
        for (Path dir : cg.dirs("/paddock-bench")) {
            try {
                Files.deleteIfExists(dir);
            } catch (java.nio.file.FileSystemException e) {
                // busy: another bench on this host has its peers in it now; the last one out removes it
            }
        }
        Host.deleteTree(root);
    }
}
