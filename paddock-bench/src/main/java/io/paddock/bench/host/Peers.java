package io.paddock.bench.host;

import io.paddock.ByteSize;
import io.paddock.SandboxSpec;
import io.paddock.runtime.internal.host.Cgroups;
import io.paddock.runtime.internal.host.HostFacts;
import io.paddock.runtime.internal.image.HostImage;
import io.paddock.runtime.internal.oci.BundlePlan;
import io.paddock.runtime.internal.oci.OciSpec;
import io.paddock.runtime.internal.oci.OciSpecBuilder;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The peers measured beside Paddock, run the way a user without Paddock would run them: a bare spawn,
 * and runc itself on a bundle with the same isolation settings as a Paddock sandbox (same OCI spec
 * builder, user namespace, seccomp and mounts) whose process is the command itself instead of the init.
 */
public final class Peers implements AutoCloseable {
    private final Path runc;
    private final Path root;
    private final Path bundle;
    private int counter;

    public Peers(Path stateDir, Path initBinary, Path runc) throws IOException {
        this.runc = runc;
        this.root = Files.createTempDirectory("paddock-bench-");
        this.bundle = root.resolve("bundle");
        Files.createDirectories(bundle);
        HostImage image = HostImage.prepare(stateDir.resolve("images"), initBinary, Path.of("/"));
        Cgroups cgroups = Cgroups.detect();
        SandboxSpec spec = SandboxSpec.builder().memory(ByteSize.mib(256)).build();
        BundlePlan plan = new BundlePlan(spec, image.root().toString(), image.mounts(),
                0x4000_0000L + 16000L * 65536, "/paddock-bench/peer", HostFacts.probe(cgroups));
        OciSpec oci = OciSpecBuilder.build(plan);
        OciSpec.Process p = oci.process();
        OciSpec.Process tenant = new OciSpec.Process(false, new OciSpec.User(1000, 1000), List.of("/bin/echo", "hi"),
                p.env(), "/workspace", new OciSpec.Capabilities(List.of(), List.of(), List.of(), List.of(), List.of()),
                p.rlimits(), true);
        OciSpec peer = new OciSpec(oci.ociVersion(), tenant, oci.root(), oci.hostname(), oci.mounts(), oci.linux());
        Files.write(bundle.resolve("config.json"), new ObjectMapper().writeValueAsBytes(peer));
    }

    /** Spawns /bin/echo hi and waits for its first output byte and its exit; returns nanoseconds to the first byte. */
    public static long bareSpawn() throws IOException, InterruptedException {
        return timeToFirstByte(new ProcessBuilder("/bin/echo", "hi"));
    }

    /** {@code runc run} of the peer bundle (one-shot container running echo hi); nanoseconds to the first byte. */
    public long runcOneShot() throws IOException, InterruptedException {
        String id = "paddock-bench-" + (counter++);
        return timeToFirstByte(new ProcessBuilder(runc.toString(), "--root", root.resolve("runc").toString(), "run",
                "--bundle", bundle.toString(), id));
    }

    /** Starts a long-running container for {@link #runcExec}. */
    public String startRunning() throws IOException, InterruptedException {
        String id = "paddock-bench-exec";
        OciSpec base = new ObjectMapper().readValue(bundle.resolve("config.json").toFile(), OciSpec.class);
        OciSpec.Process p = base.process();
        Path b2 = root.resolve("bundle-exec");
        Files.createDirectories(b2);
        OciSpec sleeper = new OciSpec(base.ociVersion(), new OciSpec.Process(false, p.user(), List.of("/bin/sleep", "3600"),
                p.env(), p.cwd(), p.capabilities(), p.rlimits(), true), base.root(), base.hostname(), base.mounts(),
                new OciSpec.Linux(base.linux().uidMappings(), base.linux().gidMappings(), base.linux().resources(),
                        "/paddock-bench/exec", base.linux().namespaces(), base.linux().seccomp(),
                        base.linux().maskedPaths(), base.linux().readonlyPaths()));
        Files.write(b2.resolve("config.json"), new ObjectMapper().writeValueAsBytes(sleeper));
        Process pr = new ProcessBuilder(runc.toString(), "--root", root.resolve("runc").toString(), "run", "-d",
                "--bundle", b2.toString(), id).redirectInput(new File("/dev/null")).redirectOutput(new File("/dev/null"))
                .redirectError(new File("/dev/null")).start();
        pr.waitFor();
        return id;
    }

    /** {@code runc exec ID /bin/echo hi}; nanoseconds to the first byte. */
    public long runcExec(String id) throws IOException, InterruptedException {
        return timeToFirstByte(new ProcessBuilder(runc.toString(), "--root", root.resolve("runc").toString(), "exec",
                id, "/bin/echo", "hi"));
    }

    private static long timeToFirstByte(ProcessBuilder pb) throws IOException, InterruptedException {
        pb.redirectError(new File("/dev/null"));
        long t0 = System.nanoTime();
        Process p = pb.start();
        long first;
        try (InputStream in = p.getInputStream()) {
            if (in.read() < 0) {
                throw new IOException("no output from " + pb.command());
            }
            first = System.nanoTime() - t0;
            in.readAllBytes();
        }
        if (p.waitFor() != 0) {
            throw new IOException(pb.command() + " exited with " + p.exitValue());
        }
        return first;
    }

    public String runcVersion() throws IOException {
        Process p = new ProcessBuilder(runc.toString(), "--version").start();
        return new String(p.getInputStream().readAllBytes()).lines().findFirst().orElse("?");
    }

    @Override
    public void close() throws IOException, InterruptedException {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < counter; i++) {
            ids.add("paddock-bench-" + i);
        }
        ids.add("paddock-bench-exec");
        for (String id : ids) {
            new ProcessBuilder(runc.toString(), "--root", root.resolve("runc").toString(), "delete", "-f", id)
                    .redirectOutput(new File("/dev/null")).redirectError(new File("/dev/null")).start().waitFor();
        }
        Cgroups.detect().killAndRemove("/paddock-bench/exec");
        for (Path dir : Cgroups.detect().dirs("/paddock-bench")) {
            Files.deleteIfExists(dir);
        }
        try (var walk = Files.walk(root)) {
            for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
