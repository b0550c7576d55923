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
    private final List<String> ids = new ArrayList<>();

    private EngineProcess(Process process) {
        this.process = process;
    }

    /**
     * Starts a child engine on {@code dataDir} creating one sandbox per plan entry ({@code plain},
     * {@code named:NAME}, {@code entrypoint} (prints a tick five times a second), {@code short}: a 6-second
     * lifetime), or destroying one ({@code destroy:ID}); {@code pool:N} gives the child a warm pool of N
     * sandboxes of the plans' shape, filled before the first plan (so plain creates are pool hits). With a failpoint, the child dies when it reaches it.
     */
    public static EngineProcess start(Path dataDir, String failpoint, String... plan) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path")));
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
        BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        long deadline = System.nanoTime() + timeout.toNanos();
        String line;
        while (System.nanoTime() < deadline && (line = r.readLine()) != null) {
            if (line.startsWith("SANDBOX ")) {
                ids.add(line.substring("SANDBOX ".length()).trim());
            } else if (line.equals("READY")) {
                return List.copyOf(ids);
            }
        }
        return List.copyOf(ids);
    }

    /** SIGKILL, as a crash or the OOM killer would: no shutdown hook runs. */
    public void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }

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
            if (args[i].startsWith("pool:")) {
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
        SandboxSpec.Builder base = SandboxSpec.builder().memory(ByteSize.mib(128)).pids(64).disk(ByteSize.mib(64))
                .timeout(Duration.ofMinutes(3));
        for (int i = 1; i < args.length; i++) {
            String plan = args[i];
            if (plan.startsWith("pool:")) {
                continue;
            }
            if (plan.startsWith("destroy:")) {
                paddock.get(plan.substring(8)).destroy();
                continue;
            }
            SandboxSpec spec;
            if (plan.startsWith("named:")) {
                spec = base.name(plan.substring(6)).build();
            } else if (plan.equals("entrypoint")) {
                spec = base.entrypoint("sh", "-c", "while true; do echo tick; sleep 0.2; done").build();
            } else if (plan.equals("short")) {
                spec = base.timeout(Duration.ofSeconds(6)).build();
            } else {
                spec = base.build();
            }
            base = SandboxSpec.builder().memory(ByteSize.mib(128)).pids(64).disk(ByteSize.mib(64)).timeout(Duration.ofMinutes(3));
            Sandbox sb = paddock.create(spec);
            sb.files().writeString("/workspace/marker", sb.id().value());
            sb.start(ExecRequest.builder().argv("sleep", "600").build());
            System.out.println("SANDBOX " + sb.id());
            System.out.flush();
        }
        System.out.println("READY");
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
