package io.paddock.engine.internal;

import io.paddock.SandboxId;
import io.paddock.SandboxSpec;
import io.paddock.init.internal.InitClient;
import io.paddock.runtime.RuntimeSandbox;
import io.paddock.runtime.SandboxRuntime;
import io.paddock.runtime.StartRequest;

import java.io.ByteArrayOutputStream;
import java.nio.channels.Channels;
import java.time.Duration;

/**
 * Starts and destroys the warm pool's sandboxes on the engine's runtimes, exactly as a cold create starts
 * one (same runtime call, same owner token, same HELLO), with no entrypoint and no tenant data, and with
 * the init's own deadline set to the pool's maximum idle age (re-armed to the tenant's timeout on claim).
 * Pooled sandboxes are not recorded in the engine's store, so a restarted daemon removes leftovers as
 * unrecorded instead of adopting them.
 */
final class WarmStarter implements WarmPool.Starter {
    private final Runtimes runtimes;
    private final java.util.function.Function<SandboxSpec, SandboxRoot> roots;
    private final String owner;
    private final boolean orphanDie;

    WarmStarter(Runtimes runtimes, java.util.function.Function<SandboxSpec, SandboxRoot> roots, String owner,
                boolean orphanDie) {
        this.runtimes = runtimes;
        this.roots = roots;
        this.owner = owner;
        this.orphanDie = orphanDie;
    }

    @Override
    public WarmPool.Warm start(SandboxSpec shape, Duration maxIdle) {
        SandboxRuntime runtime = runtimes.require(shape.runtime().orElseThrow());
        SandboxId id = Ids.newSandboxId();
        byte[] nonce = Ids.nonce();
        ByteArrayOutputStream hello = new ByteArrayOutputStream();
        InitClient.writeHello(Channels.newChannel(hello), nonce, orphanDie);
        RuntimeSandbox rt = null;
        try {
            SandboxRoot root = roots.apply(shape);
            rt = runtime.start(new StartRequest(id, shape, owner, hello.toByteArray(), root.rootfs()));
            InitClient client = InitClient.attach(rt.fromInit(), rt.toInit(), nonce, SandboxManager.ATTACH_TIMEOUT, id.value());
            client.setDeadline(maxIdle.plus(SandboxManager.INIT_DEADLINE_GRACE));
            warmUp(client, shape, root);
            return new WarmPool.Warm(id, shape, rt, client, System.nanoTime(), root);
        } catch (RuntimeException e) {
            if (rt != null) {
                rt.closeChannel();
            }
            try {
                runtime.destroy(id);
            } catch (RuntimeException cleanup) {
                e.addSuppressed(cleanup);
            }
            throw e;
        }
    }

    /**
     * Runs {@code /usr/bin/env true} once, as the sandbox user with the tenant's environment, so that the tenant's
     * first command does not pay for the sandbox's first fork and first file reads: the init's first fork in the
     * new pid namespace and memory cgroup, the first page-ins through the new mount namespace, and under gVisor
     * the Sentry's first walks and opens through the gofer of the dynamic loader, the C library and the locale
     * the environment names ({@code env} calls {@code setlocale(LC_ALL, "")}, as echo, bash and most programs do;
     * {@code true} alone does not: its first {@code echo} still paid about 15 ms of locale files on runsc). It
     * leaves nothing behind: no file, no process, no output; the tenant's own commands still start from a clean
     * environment.
     */
    private static void warmUp(InitClient client, SandboxSpec shape, SandboxRoot root) {
        io.paddock.ExecRequest request = io.paddock.ExecRequest.of("/usr/bin/env", "true");
        io.paddock.ExecResult r = client.run(io.paddock.init.internal.SpawnRequest.builder(request.argv())
                .env(ExecEnvironment.build(root.env(), shape, request.env()))
                .cwd(root.workdir())
                .user(root.uid(), root.gid())
                .timeout(Duration.ofSeconds(10))
                .stdoutCap(0).stderrCap(4096)
                .rlimit(SandboxManager.RLIMIT_NOFILE, shape.openFiles(), shape.openFiles())
                .rlimit(SandboxManager.RLIMIT_CORE, 0, 0)
                .build(), null);
        // An image may have no /usr/bin/env or true (distroless, busybox without the applet): the fork and the exec
        // attempt are what warm the sandbox up, so "not found" is as good as success there.
        boolean notFound = root.rootfs().isPresent() && r.exitCode() == 127;
        if (!r.success() && !notFound) {
            throw new io.paddock.SandboxException(io.paddock.ErrorCode.INTERNAL, "a new pooled sandbox failed its"
                    + " warm-up command: " + r.status() + " " + r.stderrText());
        }
    }

    @Override
    public void destroy(WarmPool.Warm warm) {
        warm.client().fail(new io.paddock.SandboxException(io.paddock.ErrorCode.FAILED_PRECONDITION,
                "pooled sandbox " + warm.id() + " removed"));
        warm.runtime().closeChannel();
        runtimes.require(warm.shape().runtime().orElseThrow()).destroy(warm.id());
    }
}
