package io.paddock.engine.host;

import io.paddock.ByteSize;
import io.paddock.ExecRequest;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A persistent engine in its own JVM, so that tests can kill it with SIGKILL as a crash would. The child
 * creates sandboxes as its arguments say, prints {@code SANDBOX <id>} for each, {@code READY}, then waits
 * to be killed. The test process plays the restarted engine.
 */
public final class EngineProcess implements AutoCloseable {
    private final Process process;
    private final BufferedReader output;
    private final List<String> ids = new ArrayList<>();

    private EngineProcess(Process process) {
        this.process = process;
        this.output = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    }

    /**
     * Starts a child engine on {@code dataDir} creating one sandbox per plan entry ({@code plain},
     * {@code named:NAME}, {@code entrypoint} (prints a tick five times a second), {@code short}: a 6-second
     * lifetime, {@code short:N}: N seconds, {@code image:REF}: of that image, {@code paused}: paused once made; parts joined with {@code +} make one sandbox), or destroying one ({@code destroy:ID}); {@code pool:N} gives the child a warm pool of N
     * sandboxes of the plans' shape, filled before the first plan (so plain creates are pool hits);
     * {@code runtime:NAME} makes NAME the child's default tier. After READY, an {@code after:upload},
     * {@code after:download} or {@code after:oom} entry makes the child stall in the middle of an upload to
     * (or a download of) {@code /workspace/big} in its first sandbox, printing {@code UPLOADING} or
     * {@code DOWNLOADING} once several MiB went through, or fill its heap until the JVM dies. With a
     * failpoint, the child dies when it reaches it.
     */
    public static EngineProcess start(Path dataDir, String failpoint, String... plan) throws IOException {
        return start(List.of(), dataDir, failpoint, plan);
    }

    /** As {@link #start(Path, String, String...)}, with extra JVM options for the child (a heap limit). */
    public static EngineProcess start(List<String> jvmOptions, Path dataDir, String failpoint, String... plan)
            throws IOException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path")));
        cmd.addAll(jvmOptions);
        if (failpoint != null) {
            cmd.add("-Dpaddock.failpoint=" + failpoint);
        }
        cmd.add(EngineProcess.class.getName());
        cmd.add(dataDir.toString());
        cmd.addAll(List.of(plan));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT);
        return new EngineProcess(pb.start());
    }

    /** Reads the child's output until READY (or its death); returns the sandbox ids it created. */
    public List<String> awaitReady(Duration timeout) throws IOException {
        awaitLine("READY", timeout);
        return List.copyOf(ids);
    }

    /** Reads the child's output until a line equal to {@code expected}; false if it died or the time ran out first. */
    public boolean awaitLine(String expected, Duration timeout) throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        String line;
        while (System.nanoTime() < deadline && (line = output.readLine()) != null) {
            if (line.startsWith("SANDBOX ")) {
                ids.add(line.substring("SANDBOX ".length()).trim());
            } else if (line.equals(expected)) {
                return true;
            }
        }
        return false;
    }

    /**
     * SIGSTOP: the engine still runs as far as the host can tell, but does nothing (its deadlines do not fire), so
     * that its sandboxes stay as they are for another engine to find. {@link #kill} ends it.
     */
    public void suspend() throws IOException, InterruptedException {
        if (new ProcessBuilder("kill", "-STOP", Long.toString(process.pid())).inheritIO().start().waitFor() != 0) {
            throw new IOException("cannot stop the child engine " + process.pid());
        }
    }

    /** SIGKILL, as a crash or the OOM killer would: no shutdown hook runs. */
    public void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }

    /** The child's exit status; fails (IllegalThreadStateException) if it still runs after a minute. */
    public int awaitExit() throws InterruptedException {
        process.waitFor(60, TimeUnit.SECONDS);
        return process.exitValue();
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            process.destroyForcibly();
            try {
                process.waitFor(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        Path dataDir = Path.of(args[0]);
        LocalOptions.Builder options = LocalOptions.builder().dataDir(dataDir);
        int pooled = 0;
        for (int i = 1; i < args.length; i++) {
            if (args[i].startsWith("runtime:")) {
                options.defaultRuntime(args[i].substring("runtime:".length()));
            } else if (args[i].startsWith("pool:")) {
                // a warm pool of the plans' shape, filled before anything else happens
                pooled = Integer.parseInt(args[i].substring(5));
                options.warmPool(io.paddock.PoolConfig.builder().size(pooled).shape(SandboxSpec.builder()
                        .memory(ByteSize.mib(128)).pids(64).disk(ByteSize.mib(64)).build()).build());
            }
        }
        Paddock paddock = Paddock.local(options.build());
        long until = System.nanoTime() + 60_000_000_000L;
        while (pooled > 0 && ((io.paddock.engine.internal.LocalPaddock) paddock).poolStats().get(0).idle() < pooled
                && System.nanoTime() < until) {
            Thread.sleep(20);
        }
        List<Sandbox> created = new ArrayList<>();
        SandboxSpec.Builder base = SandboxSpec.builder().memory(ByteSize.mib(128)).pids(64).disk(ByteSize.mib(64))
                .timeout(Duration.ofMinutes(3));
        for (int i = 1; i < args.length; i++) {
            String plan = args[i];
            if (plan.startsWith("pool:") || plan.startsWith("runtime:") || plan.startsWith("after:")) {
                continue;
            }
            if (plan.startsWith("destroy:")) {
                paddock.get(plan.substring(8)).destroy();
                continue;
            }
            // parts joined with '+' make one sandbox of them all: short:3+networked+image:REF
            for (String part : plan.split("\\+")) {
                if (part.startsWith("named:")) {
                    base.name(part.substring(6));
                } else if (part.equals("entrypoint")) {
                    base.entrypoint("sh", "-c", "while true; do echo tick; sleep 0.2; done");
                } else if (part.equals("networked")) {
                    base.network(io.paddock.NetworkPolicy.allow("198.18.12.2/32")).port(8000);
                } else if (part.equals("short")) {
                    base.timeout(Duration.ofSeconds(6));
                } else if (part.startsWith("short:")) {
                    base.timeout(Duration.ofSeconds(Long.parseLong(part.substring(6))));
                } else if (part.startsWith("image:")) {
                    base.image(part.substring(6));
                }
            }
            boolean paused = java.util.Arrays.asList(plan.split("\\+")).contains("paused");
            SandboxSpec spec = base.build();
            base = SandboxSpec.builder().memory(ByteSize.mib(128)).pids(64).disk(ByteSize.mib(64)).timeout(Duration.ofMinutes(3));
            Sandbox sb = paddock.create(spec);
            sb.files().writeString("/workspace/marker", sb.id().value());
            sb.start(ExecRequest.builder().argv("sleep", "600").build());
            if (paused) {
                sb.pause();
            }
            created.add(sb);
            System.out.println("SANDBOX " + sb.id());
            System.out.flush();
        }
        System.out.println("READY");
        System.out.flush();
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "after:upload" -> created.get(0).files().write("/workspace/big", new StallingStream("UPLOADING"));
                case "after:download" -> {
                    Sandbox sb = created.get(0);
                    sb.files().write("/workspace/big", new byte[STALL_AFTER * 2]);
                    try (java.io.InputStream in = sb.files().openRead("/workspace/big")) {
                        in.readNBytes(STALL_AFTER);
                        announce("DOWNLOADING");
                        Thread.sleep(Long.MAX_VALUE);
                    }
                }
                case "after:oom" -> {
                    List<byte[]> hog = new ArrayList<>();
                    while (true) {
                        hog.add(new byte[1 << 20]);
                    }
                }
                default -> {
                }
            }
        }
        Thread.sleep(Long.MAX_VALUE);
    }

    /** How much of an upload or download goes through before the child stalls (and the test kills it). */
    private static final int STALL_AFTER = 8 << 20;

    private static void announce(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** An upload source that gives {@link #STALL_AFTER} bytes, announces it, then never ends. */
    private static final class StallingStream extends java.io.InputStream {
        private final String announcement;
        private long given;

        StallingStream(String announcement) {
            this.announcement = announcement;
        }

        @Override
        public int read() {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) {
            if (given >= STALL_AFTER) {
                announce(announcement);
                try {
                    Thread.sleep(Long.MAX_VALUE);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return -1;
            }
            int n = (int) Math.min(len, STALL_AFTER - given);
            java.util.Arrays.fill(b, off, off + n, (byte) 'x');
            given += n;
            return n;
        }
    }
}
